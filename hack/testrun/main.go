// Command testrun runs the test suite the way hack/test.sh does: one
// Cluster API plane for the whole run, which every package's tests share
// (testenv.SharedClusterAPI connects to it through
// $MAGNETITE_CLUSTER_API_KUBECONFIG), the packages' test binaries linked
// first and then run as `go test -json` would run them (binaries.go),
// with a readable account of each package and each failing test. A test
// that needs a CAPD of its own skips on the run-wide plane, whose CAPD
// holds the machine's loopback ports; testrun runs it again as the skip
// comes, in a network namespace of its own (netns.go), beside the other
// packages, or once the plane has stopped where it cannot make one.
//
//	go run ./hack/testrun [--repeat N] [-p P] [--parallel P] [--timeout D] [--no-plane] [--json FILE] [packages]
//
// --repeat N runs it all N times, each on a fresh plane, and ends with how
// often each test failed: the flake gate. --json FILE keeps every event
// of `go test -json`, passing tests' log lines included, to read what a
// test logged about its margins (the CAPO stand-in test's refusal times,
// say) in a run of the whole suite.
//
// It ends with the slowest packages, the CPU each package's test binary and
// the processes it ran spent (the suite shares two cores in CI, so this is
// what a package costs the others; see cpu.go), and the slowest tests.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

func main() {
	if code, ok := subcommand(os.Args[1:]); ok {
		os.Exit(code)
	}
	suiteGOGC()
	repeat := flag.Int("repeat", 1, "run the packages this many times, each on a fresh plane, and report failures per test")
	parallel := flag.Int("parallel", 8, "each binary's -test.parallel: parallel tests mostly wait on processes, not on the CPU")
	packages := flag.Int("p", 4, "how many packages' test binaries run at once: twice the 2 cores of CI, as most tests wait on processes")
	timeout := flag.Duration("timeout", 60*time.Minute, "each binary's -test.timeout")
	noPlane := flag.Bool("no-plane", false, "start no run-wide plane: each package starts its own")
	jsonLog := flag.String("json", "", "append every event of go test -json, the passing tests' log lines included, to this file")
	saveOrderTo := flag.String("save-order", "", "after the run, write the packages that took a minute or more, longest first, to this file (hack/testrun/slowest.txt)")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	r := &runner{parallel: *parallel, packages: *packages, timeout: *timeout, failures: map[string]int{}}
	r.cpuLog = cpuLogPath()
	if *jsonLog != "" {
		f, err := os.OpenFile(*jsonLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		r.jsonLog = f // written unbuffered; closed as the run exits
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-stop
		r.interrupt(s)
	}()
	pkgs = ordered(pkgs, slowest())
	// The links run while the first plane starts, which mostly waits.
	linked := make(chan error, 1)
	go func() { linked <- r.link(pkgs) }()
	r.linked = func() {
		if err := <-linked; err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		r.linked = func() {}
	}
	for i := 1; i <= *repeat; i++ {
		if *repeat > 1 {
			fmt.Printf("== run %d of %d\n", i, *repeat)
		}
		r.runOnce(pkgs, !*noPlane)
	}
	r.mu.Lock()
	stopping := r.stopping
	r.mu.Unlock()
	if stopping {
		select {} // the interrupt stops the rest and exits
	}
	code := r.summary(*repeat)
	if *saveOrderTo != "" {
		if err := r.saveOrder(*saveOrderTo); err != nil {
			fmt.Println(err)
			code = 1
		}
	}
	os.Exit(code)
}

// suiteGOGC gives every Go program the run starts (the run-wide plane's
// servers, go test's compiles and links, the test binaries and what they
// start) the GOGC testenv gives kube-apiserver, unless the environment
// sets one: the suite is short of cores, not of memory. Measured in
// interleaved runs (the machine's pace drifts too much to compare two
// suites an hour apart), three sets of packages spent 7 to 11% less CPU
// in their binaries' process trees than at Go's default (docs/architecture.md),
// with the least free memory unchanged.
func suiteGOGC() {
	if os.Getenv("GOGC") == "" {
		_ = os.Setenv("GOGC", testenv.GOGCPercent)
	}
}

type runner struct {
	parallel int
	packages int
	timeout  time.Duration

	// mu guards plane, cmds and stopping against an interrupt.
	mu       sync.Mutex
	stopping bool
	plane    *testenv.PlaneRun
	// cmds are the go test commands running, each with a channel closed
	// once it has exited.
	cmds map[*exec.Cmd]chan struct{}

	// failures counts, per "package Test", the runs it failed in.
	failures map[string]int
	// times are each package's elapsed seconds, per run.
	times map[string][]float64
	order []string
	// testTimes is each top-level test's longest time over the runs.
	testTimes map[string]float64
	// cpuLog is the file the test binaries' CPU times go to, empty when
	// none can be kept.
	cpuLog string
	// spans are the last run's package start and end times.
	spans map[string][2]time.Time
	// jsonLog, when set, gets every line of go test -json.
	jsonLog io.Writer

	// binaries are the packages' linked test binaries, by import path.
	binaries map[string]testBinary
	// linkFailed are the packages whose test binary did not build.
	linkFailed []string
	// test2json is the path of go's test2json.
	test2json string
	// linked waits for the binaries, and ends the run if they could not
	// be linked.
	linked func()
}

// link links the test binaries of pkgs, before any plane starts.
func (r *runner) link(pkgs []string) error {
	start := time.Now()
	fmt.Println("== go test -c: the test binaries")
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if r.test2json, err = test2json(); err != nil {
		return err
	}
	if r.binaries, r.linkFailed, err = linkTests(root, pkgs); err != nil {
		return err
	}
	fmt.Printf("== %d test binaries linked in %s\n", len(r.binaries), time.Since(start).Round(time.Second))
	return nil
}

// cpuLogPath is a new, empty file for the run's CPU times, under _output
// (git ignores it) when testrun runs from the repository's root.
func cpuLogPath() string {
	dir := "_output/test"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	path, err := filepath.Abs(filepath.Join(dir, "cpu.log"))
	if err != nil || os.WriteFile(path, nil, 0o600) != nil {
		return ""
	}
	return path
}

// runOnce is one run of the suite: the packages on a run-wide plane,
// and the tests that asked for a CAPD of their own, each in a network
// namespace of its own while the packages run when testrun can make one,
// or else once the plane has stopped.
func (r *runner) runOnce(pkgs []string, withPlane bool) {
	env := os.Environ()
	own := &ownCAPDRuns{r: r, started: map[string]bool{}}
	if withPlane {
		start := time.Now()
		kubeconfig, err := r.startPlane()
		if err != nil {
			fmt.Println(err)
			r.failures["(run-wide Cluster API plane)"]++
			return
		}
		fmt.Printf("== run-wide Cluster API plane ready in %s\n", time.Since(start).Round(time.Second))
		env = append(env, testenv.ClusterAPIKubeconfigEnv+"="+kubeconfig)
		if err := netnsWorks(); err != nil {
			fmt.Printf("== tests that run a CAPD of their own wait for the plane to stop: testrun cannot give them a network namespace (%v)\n", err)
		} else {
			own.netns = true
		}
	}
	r.linked()
	stopWatch := watchMachine(5 * time.Second)
	res := r.goTest(goTestRun{env: env, pkgs: pkgs, ownCAPD: own.start})
	res.failed = append(res.failed, r.linkFailed...)
	fmt.Println(stopWatch())
	if withPlane {
		r.mu.Lock()
		plane := r.plane
		r.plane = nil
		r.mu.Unlock()
		plane.Stop(len(res.failed) > 0)
	}
	r.record(res)
	for _, o := range own.wait() {
		r.record(o)
	}
	after := map[string][]string{}
	for pkg, names := range res.ownCAPD {
		for _, n := range names {
			if !own.started[pkg+" "+n] {
				after[pkg] = append(after[pkg], n)
			}
		}
	}
	if len(after) == 0 {
		return
	}
	fmt.Println("== tests that run a CAPD of their own")
	for _, pkg := range sortedKeys(after) {
		r.record(r.goTest(goTestRun{env: withoutPlane(os.Environ()), pkgs: []string{pkg}, extra: runOnly(after[pkg]), phase: " (own CAPD)"}))
	}
}

// runOnly is the test binary's -test.run for exactly the top-level tests
// names.
func runOnly(names []string) []string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return []string{"-test.run=^(" + strings.Join(quoted, "|") + ")$"}
}

// ownCAPDRuns runs each test that skipped for a CAPD of its own in a
// network namespace of its own as soon as the main go test reports the
// skip, with a temporary folder of its own (the machine-wide CAPD lock
// lives there), while the packages go on.
type ownCAPDRuns struct {
	r     *runner
	netns bool // testrun can make network namespaces

	wg      sync.WaitGroup
	mu      sync.Mutex
	started map[string]bool // "package Test", read once wg is done
	results []result
}

// start runs the test of pkg in a namespace of its own, once; it does
// nothing when testrun cannot make one.
func (o *ownCAPDRuns) start(pkg, test string) {
	if !o.netns {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started[pkg+" "+test] {
		return
	}
	o.started[pkg+" "+test] = true
	fmt.Printf("== %s %s runs a CAPD of its own in a network namespace of its own\n", pkg, test)
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		var res result
		if tmp, err := os.MkdirTemp("", "magnetite-own-capd-"); err != nil {
			res = result{failed: []string{pkg + " " + test + " (" + err.Error() + ")"}}
		} else {
			env := append(withoutPlane(os.Environ()), "TMPDIR="+tmp)
			res = o.r.goTest(goTestRun{env: env, pkgs: []string{pkg}, extra: runOnly([]string{test}), phase: " (own CAPD)", netns: true})
			_ = os.RemoveAll(tmp)
		}
		o.mu.Lock()
		o.results = append(o.results, res)
		o.mu.Unlock()
	}()
}

// wait waits for the tests started and returns what each go test said.
func (o *ownCAPDRuns) wait() []result {
	o.wg.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.results
}

// withoutPlane is env without a run-wide plane's kubeconfig.
func withoutPlane(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, testenv.ClusterAPIKubeconfigEnv+"=")
	})
}

// startPlane starts the run-wide plane and returns its kubeconfig's path.
func (r *runner) startPlane() (string, error) {
	plane := testenv.NewPlaneRun("run-wide Cluster API plane")
	r.mu.Lock()
	r.plane = plane
	r.mu.Unlock()
	s, err := plane.Start(testenv.StartClusterAPI)
	if err != nil {
		r.mu.Lock()
		r.plane = nil
		r.mu.Unlock()
		plane.Stop(true)
		return "", err
	}
	var kubeconfig string
	_, err = plane.Start(func(t testenv.TB) *testenv.APIServer {
		kubeconfig = testenv.WriteKubeconfig(t, filepath.Join(t.TempDir(), "kubeconfig"), s.Config, "", 0o600)
		return s
	})
	return kubeconfig, err
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
	Time       time.Time
}

// result is what one `go test` said.
type result struct {
	failed  []string // "package Test", or "package" when it failed outside any test
	elapsed map[string]float64
	// tests holds each top-level test's time, by "package Test".
	tests   map[string]float64
	ownCAPD map[string][]string // package: top-level tests that skipped for a CAPD of their own
	// spans are each package's first and last event times.
	spans map[string][2]time.Time
}

// goTestRun is one go test: its environment, packages and extra test
// binary flags,
// the phase its packages' times are named with ("" for the main run), in
// a network namespace of its own or not, and what to call when a test
// skips for a CAPD of its own.
type goTestRun struct {
	env, pkgs, extra []string
	phase            string
	netns            bool
	ownCAPD          func(pkg, test string)
}

// goTest runs the test binaries of g's packages and prints, as go test
// would, each package's end and the output of each failing test.
// Its packages' times are recorded under their names and phase.
func (r *runner) goTest(g goTestRun) result {
	return r.goTestTo(g, os.Stdout)
}

// goTestTo is goTest writing its account to w.
func (r *runner) goTestTo(g goTestRun, w io.Writer) result {
	pr, pw := io.Pipe()
	var events io.Reader = pr
	if r.jsonLog != nil {
		events = io.TeeReader(pr, r.jsonLog)
	}
	var notRun []string
	go func() {
		notRun = r.runBinaries(g, &lineWriter{w: pw})
		pw.Close()
	}()
	// Packages running at the same time share stdout: an *os.File
	// writes each Write whole before the next one starts, and parse
	// writes a failing test's output in one.
	res := parse(events, w, g.ownCAPD)
	res.failed = append(res.failed, notRun...)
	if g.phase != "" {
		named := make(map[string]float64, len(res.elapsed))
		for pkg, e := range res.elapsed {
			named[pkg+g.phase] = e
		}
		res.elapsed = named
		res.spans = nil // the timeline is the main phase's
	}
	return res
}

// parse reads go test -json from in and writes the readable account to w;
// it calls ownCAPD, when not nil, with each top-level test that skipped
// for a CAPD of its own as the skip comes.
func parse(in io.Reader, w io.Writer, ownCAPD func(pkg, test string)) result {
	res := result{elapsed: map[string]float64{}, tests: map[string]float64{}, ownCAPD: map[string][]string{}, spans: map[string][2]time.Time{}}
	// Output of each test (package + " " + test) and of each package
	// outside its tests, kept until the test or package ends.
	buf := map[string]*strings.Builder{}
	text := func(key string) *strings.Builder {
		if buf[key] == nil {
			buf[key] = &strings.Builder{}
		}
		return buf[key]
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(w, sc.Text()) // not an event: pass it on
			continue
		}
		key := e.Package + " " + e.Test
		if e.Package != "" && !e.Time.IsZero() {
			sp, seen := res.spans[e.Package]
			if !seen {
				sp[0] = e.Time
			}
			sp[1] = e.Time
			res.spans[e.Package] = sp
		}
		switch {
		case e.Action == "build-output":
			fmt.Fprint(w, e.Output)
		case e.Action == "build-fail":
			res.failed = append(res.failed, e.ImportPath+" (build)")
		case e.Action == "output":
			text(key).WriteString(e.Output)
		case e.Test != "" && e.Action == "fail":
			res.noteTest(e)
			fmt.Fprint(w, text(key).String())
			res.failed = append(res.failed, key)
			delete(buf, key)
		case e.Test != "" && e.Action == "skip":
			if strings.Contains(text(key).String(), testenv.OwnCAPDSkip) {
				top, _, _ := strings.Cut(e.Test, "/")
				if !slices.Contains(res.ownCAPD[e.Package], top) {
					res.ownCAPD[e.Package] = append(res.ownCAPD[e.Package], top)
					if ownCAPD != nil {
						ownCAPD(e.Package, top)
					}
				}
			}
			delete(buf, key)
		case e.Test != "" && e.Action == "pass":
			res.noteTest(e)
			delete(buf, key)
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			res.elapsed[e.Package] = e.Elapsed
			if e.Action == "fail" {
				// A panic or timeout ends tests without their own end:
				// show what they wrote, then the package's own lines.
				for k, b := range buf {
					if strings.HasPrefix(k, e.Package+" ") && k != key {
						fmt.Fprint(w, b.String())
						delete(buf, k)
					}
				}
				fmt.Fprint(w, text(key).String())
				if !slices.ContainsFunc(res.failed, func(f string) bool { return strings.HasPrefix(f, e.Package+" ") }) {
					res.failed = append(res.failed, e.Package)
				}
			} else if e.Action == "pass" {
				fmt.Fprintf(w, "ok  \t%s\t%.1fs\n", e.Package, e.Elapsed)
			} else {
				fmt.Fprintf(w, "?   \t%s\t[no test files]\n", e.Package)
			}
			delete(buf, key)
		}
	}
	return res
}

// noteTest records the time of a top-level test that ended.
func (res result) noteTest(e event) {
	if !strings.Contains(e.Test, "/") {
		res.tests[e.Package+" "+e.Test] = e.Elapsed
	}
}

func (r *runner) record(res result) {
	if res.spans != nil {
		r.spans = res.spans
	}
	for _, f := range res.failed {
		r.failures[f]++
	}
	if r.times == nil {
		r.times = map[string][]float64{}
	}
	if r.testTimes == nil {
		r.testTimes = map[string]float64{}
	}
	for test, s := range res.tests {
		r.testTimes[test] = max(r.testTimes[test], s)
	}
	for pkg, s := range res.elapsed {
		if _, ok := r.times[pkg]; !ok {
			r.order = append(r.order, pkg)
		}
		r.times[pkg] = append(r.times[pkg], s)
	}
}

// summary prints the slowest packages and the failures per test, and
// returns the exit code.
func (r *runner) summary(runs int) int {
	sort.Slice(r.order, func(i, j int) bool { return slices.Max(r.times[r.order[i]]) > slices.Max(r.times[r.order[j]]) })
	fmt.Println("== slowest packages (seconds per run)")
	for i, pkg := range r.order {
		if i == 15 || slices.Max(r.times[pkg]) < 1 {
			break
		}
		var s []string
		for _, t := range r.times[pkg] {
			s = append(s, fmt.Sprintf("%.1f", t))
		}
		fmt.Printf("%-70s %s\n", pkg, strings.Join(s, " "))
	}
	r.printCPU()
	r.printTimeline(os.Stdout)
	tests := slices.Collect(maps.Keys(r.testTimes))
	sort.Slice(tests, func(i, j int) bool { return r.testTimes[tests[i]] > r.testTimes[tests[j]] })
	fmt.Println("== slowest tests (seconds, longest run)")
	for i, test := range tests {
		if i == 20 || r.testTimes[test] < 1 {
			break
		}
		fmt.Printf("%-100s %.1f\n", strings.TrimPrefix(test, "github.com/magnetite-io/magnetite/"), r.testTimes[test])
	}
	if len(r.failures) == 0 {
		fmt.Printf("== PASS (%d run(s))\n", runs)
		return 0
	}
	fmt.Printf("== FAIL: failures per test over %d run(s)\n", runs)
	for _, k := range sortedKeys(r.failures) {
		fmt.Printf("%d/%d\t%s\n", r.failures[k], runs, k)
	}
	return 1
}

// printTimeline prints when the last run's packages of a minute or more
// started and ended, counted from the first package's start, last to end
// first: what ran on alone at the end is what to shorten or start sooner.
func (r *runner) printTimeline(w io.Writer) {
	var first time.Time
	for _, sp := range r.spans {
		if first.IsZero() || sp[0].Before(first) {
			first = sp[0]
		}
	}
	pkgs := slices.DeleteFunc(slices.Collect(maps.Keys(r.spans)), func(p string) bool {
		return r.spans[p][1].Sub(r.spans[p][0]) < time.Minute
	})
	if len(pkgs) == 0 {
		return
	}
	slices.SortFunc(pkgs, func(a, b string) int { return r.spans[b][1].Compare(r.spans[a][1]) })
	fmt.Fprintln(w, "== when packages of a minute or more ran (seconds from the first start, last to end first)")
	for i, pkg := range pkgs {
		if i == 15 {
			break
		}
		sp := r.spans[pkg]
		fmt.Fprintf(w, "%-70s %6.0f %6.0f\n", pkg, sp[0].Sub(first).Seconds(), sp[1].Sub(first).Seconds())
	}
}

// interrupt stops go test and the plane, then exits.
func (r *runner) interrupt(s os.Signal) {
	fmt.Printf("== %s: stopping\n", s)
	r.mu.Lock()
	r.stopping = true // no package starts after this
	cmds, plane := maps.Clone(r.cmds), r.plane
	r.mu.Unlock()
	// The test binaries run their cleanups before the plane goes.
	for cmd := range cmds {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		}
	}
	deadline := make(chan struct{})
	time.AfterFunc(30*time.Second, func() { close(deadline) })
	for cmd, done := range cmds {
		select {
		case <-done:
		case <-deadline:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	if plane != nil {
		plane.Stop(false)
	}
	os.Exit(130)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// printCPU prints the CPU time the packages' test binaries and their
// processes spent, most first, and the whole run's.
func (r *runner) printCPU() {
	if r.cpuLog == "" {
		return
	}
	root, _ := os.Getwd()
	cpu, err := readCPU(r.cpuLog, root)
	if err != nil || len(cpu) == 0 {
		return
	}
	var total float64
	for _, c := range cpu {
		total += c.user + c.sys
	}
	fmt.Printf("== CPU of the test binaries and their processes (seconds: user+system, all runs): %.0f in all\n", total)
	for i, c := range cpu {
		if i == 20 || c.user+c.sys < 1 {
			break
		}
		fmt.Printf("%-70s %7.1f (%.1f + %.1f)\n", c.pkg, c.user+c.sys, c.user, c.sys)
	}
}
