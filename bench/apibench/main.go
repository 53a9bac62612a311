// Command apibench measures the Magnum v1 API side by side: a Magnetite
// (started here on a fresh SQLite database, or one already running), any
// Magnum endpoint given a token, and a ceiling server (a plain net/http
// handler in its own process sending Magnetite's answer, already encoded)
// — the same calls, in the same run, with ratios.
//
//	go run ./bench/apibench [-duration 10s]
//	go run ./bench/apibench -magnum http://magnum:9511 -token $(openstack token issue -f value -c id) \
//	    -image fedora-coreos-40 -flavor m1.small -external-network public -keypair default
//
// Each target is filled through its own API the same way: 50 templates,
// then 1,000, then the clusters (-clusters) of the detail listing, then the
// template-create case adds its own. Against a real Magnum the clusters are
// real (Heat or a Cluster API driver builds them): point it at a test cloud.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// serveBytesEnv makes this program the ceiling server: it serves the file
// named by the variable on the address in ceilingAddrEnv.
const (
	serveBytesEnv  = "APIBENCH_SERVE_BYTES"
	ceilingAddrEnv = "APIBENCH_LISTEN"
)

type options struct {
	duration   time.Duration
	bin        string
	endpoint   string
	pid        int
	magnum     string
	token      string
	clusters   int
	image      string
	flavor     string
	extNet     string
	keypair    string
	skipCreate bool
}

func main() {
	if path := os.Getenv(serveBytesEnv); path != "" {
		if err := serveCeiling(path, os.Getenv(ceilingAddrEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "apibench ceiling:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long each measurement runs")
	flag.StringVar(&o.bin, "magnetite", "", "magnetite binary to start (default: build ./cmd/magnetite)")
	flag.StringVar(&o.endpoint, "endpoint", "", "a running Magnetite to measure instead of starting one (its root URL)")
	flag.IntVar(&o.pid, "pid", 0, "with -endpoint: the process id whose memory to report")
	flag.StringVar(&o.magnum, "magnum", "", "a Magnum API root URL to measure beside Magnetite")
	flag.StringVar(&o.token, "token", "", "Keystone token sent as X-Auth-Token to -magnum and -endpoint")
	flag.IntVar(&o.clusters, "clusters", 200, "clusters in the /v1/clusters/detail case")
	flag.StringVar(&o.image, "image", "ubuntu-2204-kube-v1.31.2", "image_id of the templates made")
	flag.StringVar(&o.flavor, "flavor", "m1.large", "flavor_id of the templates made")
	flag.StringVar(&o.extNet, "external-network", "public", "external_network_id of the templates made")
	flag.StringVar(&o.keypair, "keypair", "", "keypair_id of the templates made (Magnum needs one)")
	flag.BoolVar(&o.skipCreate, "no-create", false, "leave out the template-create case")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "apibench:", err)
		os.Exit(1)
	}
}

// target is an API under measurement.
type target struct {
	name  string
	base  string
	token string
	pid   int
	c     *http.Client
}

// result is one measurement.
type result struct {
	rps      float64
	p50, p99 time.Duration
	failed   int
}

func (r result) String() string {
	s := fmt.Sprintf("%9.0f %9s %9s", r.rps, r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond))
	if r.failed > 0 {
		s += fmt.Sprintf(" (%d failed)", r.failed)
	}
	return s
}

// bench is one row of the table: a measurement on every target.
type bench struct {
	name    string
	results map[string]result
}

func run(o options) error {
	tmp, err := os.MkdirTemp("", "apibench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}
	mag := &target{name: "magnetite", base: strings.TrimRight(o.endpoint, "/"), token: o.token, pid: o.pid, c: client}
	if o.endpoint == "" {
		stop, err := startMagnetite(o, tmp, mag)
		if err != nil {
			return err
		}
		defer stop()
	}
	targets := []*target{mag}
	if o.magnum != "" {
		targets = append(targets, &target{name: "magnum", base: strings.TrimRight(o.magnum, "/"), token: o.token, c: client})
	}
	fmt.Printf("apibench: %s per measurement; req/s, p50, p99\n", o.duration)
	var rows []bench
	measure := func(name string, clients int, path string) error {
		row := bench{name: fmt.Sprintf("%s, %d conn", name, clients), results: map[string]result{}}
		for _, t := range targets {
			row.results[t.name] = load(clients, o.duration, func() error { return t.get(path) })
		}
		body, err := mag.body(path)
		if err != nil {
			return err
		}
		if row.results["ceiling"], err = measureCeiling(tmp, body, clients, o.duration, client); err != nil {
			return err
		}
		rows = append(rows, row)
		printRow(row)
		return nil
	}
	// Each step seeds every target, then measures a listing at each
	// number of connections.
	steps := []struct {
		seed  func(t *target) error
		name  string
		conns []int
		path  string
	}{
		{func(t *target) error { return t.seedTemplates(o, 0, 50) }, "GET /v1/clustertemplates, 50 templates", []int{32, 1}, "/v1/clustertemplates"},
		{func(t *target) error { return t.seedTemplates(o, 50, 1000) }, "GET /v1/clustertemplates, 1000 templates", []int{32}, "/v1/clustertemplates"},
		{func(t *target) error { return t.seedClusters(o.clusters) }, fmt.Sprintf("GET /v1/clusters/detail, %d clusters", o.clusters), []int{32}, "/v1/clusters/detail"},
	}
	for _, step := range steps {
		for _, t := range targets {
			if err := step.seed(t); err != nil {
				return err
			}
		}
		for _, conns := range step.conns {
			if err := measure(step.name, conns, step.path); err != nil {
				return err
			}
		}
	}
	if !o.skipCreate {
		row := bench{name: "POST /v1/clustertemplates, 4 clients", results: map[string]result{}}
		for _, t := range targets {
			var n atomic.Int64
			row.results[t.name] = load(4, o.duration, func() error {
				_, err := t.post("/v1/clustertemplates", t.templateBody(o, fmt.Sprintf("create-%d", n.Add(1))))
				return err
			})
		}
		rows = append(rows, row)
		printRow(row)
	}
	fmt.Println()
	printRatios(rows, targets)
	if mag.pid != 0 {
		m := memory(mag.pid)
		fmt.Printf("\nmagnetite RSS after the run: %s (peak %s); now %s anonymous, %s file-backed (the executable)\n",
			m["VmRSS"], m["VmHWM"], m["RssAnon"], m["RssFile"])
	}
	return nil
}

func printRow(b bench) {
	names := make([]string, 0, len(b.results))
	for n := range b.results {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Printf("%s\n", b.name)
	for _, n := range names {
		fmt.Printf("    %-10s %s\n", n, b.results[n])
	}
}

func printRatios(rows []bench, targets []*target) {
	fmt.Println("ratios (req/s):")
	for _, b := range rows {
		m := b.results["magnetite"].rps
		var parts []string
		if c, ok := b.results["ceiling"]; ok && m > 0 {
			parts = append(parts, fmt.Sprintf("ceiling/magnetite %.2f×", c.rps/m))
		}
		if len(targets) > 1 {
			if g := b.results["magnum"].rps; g > 0 {
				parts = append(parts, fmt.Sprintf("magnetite/magnum %.1f×", m/g))
			}
		}
		fmt.Printf("    %-52s %s\n", b.name, strings.Join(parts, ", "))
	}
}

func startMagnetite(o options, tmp string, t *target) (func(), error) {
	bin := o.bin
	if bin == "" {
		bin = filepath.Join(tmp, "magnetite")
		build := exec.Command("go", "build", "-tags", "kustomize_disable_go_plugin_support", "-o", bin, "./cmd/magnetite") // as README installs it
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(tmp, "magnetite.conf")
	cfg := fmt.Sprintf("[DEFAULT]\nstate_dir = %s\n[api]\nlisten = 127.0.0.1:%d\n[auth]\nnoauth_roles = admin\n[quotas]\nmax_clusters_per_project = 100000\n[log]\nlevel = warn\n", tmp, port)
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	srv := exec.Command(bin, "serve", "--config-file", conf)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.base, t.pid = fmt.Sprintf("http://127.0.0.1:%d", port), srv.Process.Pid
	if err := waitUp(t.base, exited); err != nil {
		srv.Process.Kill()
		return nil, err
	}
	return func() { srv.Process.Kill() }, nil
}

func (t *target) request(method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, t.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("OpenStack-API-Version", "container-infra latest")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t.token != "" {
		req.Header.Set("X-Auth-Token", t.token)
	}
	return req, nil
}

// body is the answer to GET path.
func (t *target) body(path string) ([]byte, error) {
	req, err := t.request(http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	res, err := t.c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s GET %s: %d %s", t.name, path, res.StatusCode, b)
	}
	return b, err
}

func (t *target) get(path string) error {
	req, err := t.request(http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	res, err := t.c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d", path, res.StatusCode)
	}
	return nil
}

func (t *target) post(path string, body any) (string, error) {
	req, err := t.request(http.MethodPost, path, body)
	if err != nil {
		return "", err
	}
	res, err := t.c.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		return "", fmt.Errorf("%s POST %s: %d %s", t.name, path, res.StatusCode, raw)
	}
	var out struct {
		UUID string `json:"uuid"`
	}
	_ = json.Unmarshal(raw, &out)
	return out.UUID, nil
}

func (t *target) templateBody(o options, name string) map[string]any {
	b := map[string]any{
		"name": name, "coe": "kubernetes", "image_id": o.image, "flavor_id": o.flavor,
		"master_flavor_id": o.flavor, "external_network_id": o.extNet, "network_driver": "calico",
		"labels": map[string]string{"kube_tag": "v1.31.2", "auto_healing_enabled": "true"},
	}
	if o.keypair != "" {
		b["keypair_id"] = o.keypair
	}
	return b
}

// seedTemplates makes templates number from to to-1, eight at a time.
func (t *target) seedTemplates(o options, from, to int) error {
	return parallel(8, from, to, func(i int) error {
		_, err := t.post("/v1/clustertemplates", t.templateBody(o, fmt.Sprintf("t-%04d", i)))
		return err
	})
}

func (t *target) seedClusters(n int) error {
	var tmpl struct {
		ClusterTemplates []struct {
			UUID string `json:"uuid"`
		} `json:"clustertemplates"`
	}
	b, err := t.body("/v1/clustertemplates?limit=1")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &tmpl); err != nil || len(tmpl.ClusterTemplates) == 0 {
		return fmt.Errorf("%s: no template to make clusters from", t.name)
	}
	id := tmpl.ClusterTemplates[0].UUID
	return parallel(8, 0, n, func(i int) error {
		_, err := t.post("/v1/clusters", map[string]any{
			"name": fmt.Sprintf("c-%04d", i), "cluster_template_id": id, "master_count": 1, "node_count": 2,
		})
		return err
	})
}

func parallel(workers, from, to int, fn func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := from; i < to; i++ {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err == nil {
		err = <-errs
	}
	return err
}

// load runs call from clients goroutines for d.
func load(clients int, d time.Duration, call func() error) result {
	var mu sync.Mutex
	var lat []time.Duration
	var failures int
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			bad := 0
			for ctx.Err() == nil {
				t0 := time.Now()
				if err := call(); err != nil {
					bad++
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			failures += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(p*float64(len(lat)-1))]
	}
	return result{rps: float64(len(lat)) / elapsed.Seconds(), p50: pct(0.5), p99: pct(0.99), failed: failures}
}

// measureCeiling serves body from a plain net/http handler in a process of
// its own (this program again) and loads it as the API was loaded.
func measureCeiling(tmp string, body []byte, clients int, d time.Duration, c *http.Client) (result, error) {
	file := filepath.Join(tmp, "ceiling-body.json")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		return result{}, err
	}
	port, err := freePort()
	if err != nil {
		return result{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), serveBytesEnv+"="+file, ceilingAddrEnv+"="+addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	base := "http://" + addr
	if err := waitUp(base, exited); err != nil {
		return result{}, err
	}
	t := &target{name: "ceiling", base: base, c: c}
	return load(clients, d, func() error { return t.get("/") }), nil
}

func serveCeiling(path, addr string) error {
	body, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	length := strconv.Itoa(len(body))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", length)
		w.Write(body)
	})
	err = http.ListenAndServe(addr, h)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func waitUp(base string, exited <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("server exited before answering: %v", err)
		case <-tick.C:
		}
	}
	return fmt.Errorf("server at %s did not answer within 30s", base)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// memory reads a process's resident set, its peak, and the resident set's
// anonymous part (heap, stacks, SQLite's caches) and file-backed part
// (mostly the executable's own pages), from /proc/<pid>/status.
func memory(pid int) map[string]string {
	out := map[string]string{"VmRSS": "?", "VmHWM": "?", "RssAnon": "?", "RssFile": "?"}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			if _, want := out[k]; want {
				out[k] = strings.TrimSpace(v)
			}
		}
	}
	return out
}
