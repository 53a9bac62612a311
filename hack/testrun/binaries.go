package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// testrun links every package's test binary before the plane starts and
// then runs the binaries itself, as go test would run them: in the
// package's directory, with go test's flags, through test2json. Linked by
// go test, each binary would be linked as its package's turn comes,
// beside the tests already running (on a fresh machine, two to three
// minutes of CPU inside the test phase), and again for every --repeat and
// every test rerun on a CAPD of its own.

// binDir is where the test binaries go; git ignores _output.
const binDir = "_output/test/bin"

// testBinary is one package's linked test binary.
type testBinary struct {
	pkg  string // import path
	dir  string // the package's directory, where go test runs its binary
	path string // the binary
}

// listedPackage is what linkTests reads of go list.
type listedPackage struct {
	importPath, dir string
	tests           bool // the package has test files
}

// listPackages lists the packages patterns name, in go list's order.
func listPackages(patterns []string) ([]listedPackage, error) {
	cmd := exec.Command("go", append([]string{"list", "-e", "-f",
		"{{.ImportPath}}\t{{.Dir}}\t{{if or .TestGoFiles .XTestGoFiles}}tests{{end}}"}, patterns...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", strings.Join(patterns, " "), err)
	}
	var pkgs []listedPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			continue
		}
		pkgs = append(pkgs, listedPackage{importPath: f[0], dir: f[1], tests: f[2] == "tests"})
	}
	return pkgs, nil
}

// linkGroups splits the packages with tests into groups that one
// `go test -c -o dir/` can link: it names each binary after the last
// element of its import path and refuses two of one name in one command
// (internal/magnumimport and test/magnumimport, say).
func linkGroups(pkgs []listedPackage) [][]listedPackage {
	var groups [][]listedPackage
	var names []map[string]bool
	for _, p := range pkgs {
		if !p.tests {
			continue
		}
		name := path.Base(p.importPath)
		i := 0
		for i < len(groups) && names[i][name] {
			i++
		}
		if i == len(groups) {
			groups = append(groups, nil)
			names = append(names, map[string]bool{})
		}
		groups[i] = append(groups[i], p)
		names[i][name] = true
	}
	return groups
}

// linkTests links the test binaries of the packages patterns name into
// binDir (under root) and returns them by import path. A package whose
// binary could not be built is in failed, go's messages printed; packages
// without test files have no binary and are in neither.
func linkTests(root string, patterns []string) (bins map[string]testBinary, failed []string, err error) {
	pkgs, err := listPackages(patterns)
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(root, binDir)
	if err := os.RemoveAll(dir); err != nil {
		return nil, nil, err
	}
	bins = map[string]testBinary{}
	for i, group := range linkGroups(pkgs) {
		out := filepath.Join(dir, fmt.Sprint(i))
		args := []string{"test", "-c", "-o", out + "/",
			// hack/test.sh vets every package (all of vet's checks) before.
			"-vet=off",
			// Test binaries without DWARF link in half the CPU (stack
			// traces keep their files and lines).
			"-ldflags=-s -w"}
		for _, p := range group {
			args = append(args, p.importPath)
		}
		cmd := exec.Command("go", args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		linkErr := cmd.Run()
		for _, p := range group {
			b := testBinary{pkg: p.importPath, dir: p.dir, path: filepath.Join(out, path.Base(p.importPath)+".test")}
			if _, err := os.Stat(b.path); err != nil {
				if linkErr == nil {
					// go test -c writes no binary for a package whose
					// test files hold no tests to run (an external test
					// package of examples without output, say).
					continue
				}
				failed = append(failed, p.importPath+" (build)")
				continue
			}
			bins[p.importPath] = b
		}
	}
	return bins, failed, nil
}

// test2json is the path of go's test2json, which turns a test binary's
// -test.v=test2json output into go test -json's events.
func test2json() (string, error) {
	out, err := exec.Command("go", "tool", "-n", "test2json").Output()
	if err != nil {
		return "", fmt.Errorf("go tool -n test2json: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// lineWriter writes whole lines from several packages' event streams to
// one writer, a line at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) copyLines(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := append(bytes.Clone(sc.Bytes()), '\n')
		l.mu.Lock()
		_, _ = l.w.Write(line)
		l.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r) // a line longer than the buffer: let the binary go on
}

// runBinaries runs the test binaries of g's packages, at most r.packages
// at once in g's order, and writes their events to w as go test -json
// would. A package it could not run is in the returned failures.
func (r *runner) runBinaries(g goTestRun, w *lineWriter) []string {
	var (
		mu     sync.Mutex
		failed []string
		wg     sync.WaitGroup
	)
	fail := func(f string) {
		mu.Lock()
		failed = append(failed, f)
		mu.Unlock()
	}
	slots := make(chan struct{}, max(r.packages, 1))
	for _, pkg := range g.pkgs {
		b, ok := r.binaries[pkg]
		if !ok {
			continue // no test files, or a build failure linkTests reported
		}
		slots <- struct{}{}
		r.mu.Lock()
		stopping := r.stopping
		r.mu.Unlock()
		if stopping {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := r.runBinary(g, b, w); err != nil {
				fail(fmt.Sprintf("%s (%v)", b.pkg, err))
			}
		}()
	}
	wg.Wait()
	return failed
}

// runBinary runs one package's binary through test2json with go test's
// flags, in the package's directory, through testrun's CPU wrapper when
// the run keeps a CPU log. It returns an error only when the binary could
// not run: a failing test is in the events.
func (r *runner) runBinary(g goTestRun, b testBinary, w *lineWriter) error {
	args := []string{r.test2json, "-t", "-p", b.pkg}
	env := g.env
	self, selfErr := os.Executable()
	if r.cpuLog != "" && selfErr == nil {
		args = append(args, self, execCPUFlag)
		env = append(env[:len(env):len(env)], cpuLogEnv+"="+r.cpuLog)
	}
	args = append(args, b.path,
		"-test.paniconexit0", "-test.timeout="+r.timeout.String(), "-test.count=1",
		fmt.Sprintf("-test.parallel=%d", r.parallel), "-test.v=test2json")
	args = append(args, g.extra...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = b.dir
	cmd.Env = env
	cmd.Stderr = os.Stderr
	// Its own process group, so an interrupt reaches the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if g.netns {
		if selfErr != nil {
			return selfErr
		}
		inOwnNetns(cmd, self)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return fmt.Errorf("not run: the run is stopping")
	}
	if r.cmds == nil {
		r.cmds = map[*exec.Cmd]chan struct{}{}
	}
	r.cmds[cmd] = done
	r.mu.Unlock()
	// go test ends a binary that outlives its -test.timeout by a minute
	// (its own panic should have come first); so does testrun.
	kill := time.AfterFunc(r.timeout+time.Minute, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	w.copyLines(out)
	err = cmd.Wait()
	kill.Stop()
	close(done)
	r.mu.Lock()
	delete(r.cmds, cmd)
	r.mu.Unlock()
	if _, exit := err.(*exec.ExitError); exit {
		return nil // test2json ended the package's events with its fail
	}
	return err
}
