// Command apibench measures the Magnum v1 API of a real `magnetite serve`
// process over loopback HTTP: requests per second and p50/p99 latency for the
// list calls clients poll most, at 1 and 32 concurrent clients, and the
// server's resident memory afterwards.
//
//	go run ./bench/apibench [-duration 5s]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	duration := flag.Duration("duration", 5*time.Second, "how long each measurement runs")
	bin := flag.String("magnetite", "", "magnetite binary (default: build ./cmd/magnetite)")
	flag.Parse()
	if err := run(*duration, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "apibench:", err)
		os.Exit(1)
	}
}

func run(d time.Duration, bin string) error {
	tmp, err := os.MkdirTemp("", "apibench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		bin = filepath.Join(tmp, "magnetite")
		build := exec.Command("go", "build", "-o", bin, "./cmd/magnetite")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build: %w", err)
		}
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	conf := filepath.Join(tmp, "magnetite.conf")
	cfg := fmt.Sprintf("[DEFAULT]\nstate_dir = %s\n[api]\nlisten = 127.0.0.1:%d\n[auth]\nnoauth_roles = admin\n[quotas]\nmax_clusters_per_project = 5000\n[log]\nlevel = warn\n", tmp, port)
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		return err
	}
	srv := exec.Command(bin, "serve", "--config-file", conf)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	defer srv.Process.Kill()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitUp(base, exited); err != nil {
		return err
	}
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	fmt.Printf("magnetite apibench: %s per measurement, server pid %d\n\n", d, srv.Process.Pid)
	fmt.Printf("%-40s %8s %10s %10s %10s\n", "call", "clients", "req/s", "p50", "p99")
	templateID := ""
	seedTemplates := func(n int) error {
		for i := 0; i < n; i++ {
			id, err := post(c, base+"/v1/clustertemplates", map[string]any{
				"name": fmt.Sprintf("t-%d-%d", n, i), "coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.31.2",
				"flavor_id": "m1.large", "external_network_id": "public", "network_driver": "calico",
				"labels": map[string]string{"kube_tag": "v1.31.2", "auto_healing_enabled": "true"},
			})
			if err != nil {
				return err
			}
			templateID = id
		}
		return nil
	}
	if err := seedTemplates(50); err != nil {
		return err
	}
	for _, n := range []int{1, 32} {
		report(c, "GET /v1/clustertemplates (50)", base+"/v1/clustertemplates", n, d)
	}
	if err := seedTemplates(950); err != nil {
		return err
	}
	for _, n := range []int{1, 32} {
		report(c, "GET /v1/clustertemplates (1000)", base+"/v1/clustertemplates", n, d)
	}
	for i := 0; i < 1000; i++ {
		if _, err := post(c, base+"/v1/clusters", map[string]any{
			"name": fmt.Sprintf("c%d", i), "cluster_template_id": templateID, "master_count": 1, "node_count": 2,
		}); err != nil {
			return err
		}
	}
	for _, n := range []int{1, 32} {
		report(c, "GET /v1/clusters/detail (1000)", base+"/v1/clusters/detail", n, d)
	}
	rss, hwm := memory(srv.Process.Pid)
	fmt.Printf("\nserver RSS after the run: %s (peak %s)\n", rss, hwm)
	return nil
}

func report(c *http.Client, name, url string, clients int, d time.Duration) {
	var mu sync.Mutex
	var lat []time.Duration
	var failures int
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			bad := 0
			for ctx.Err() == nil {
				t0 := time.Now()
				resp, err := c.Get(url)
				if err != nil {
					bad++
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
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
	fmt.Printf("%-40s %8d %10.0f %10s %10s", name, clients, float64(len(lat))/elapsed.Seconds(),
		pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond))
	if failures > 0 {
		fmt.Printf("  (%d failed)", failures)
	}
	fmt.Println()
}

func post(c *http.Client, url string, body any) (string, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "container-infra latest")
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return "", fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, raw)
	}
	var out struct {
		UUID string `json:"uuid"`
	}
	_ = json.Unmarshal(raw, &out)
	return out.UUID, nil
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
			return fmt.Errorf("magnetite serve exited before answering: %v", err)
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

// memory reads the resident and peak resident set of a process.
func memory(pid int) (rss, hwm string) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?", "?"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			hwm = strings.TrimSpace(v)
		}
	}
	return rss, hwm
}
