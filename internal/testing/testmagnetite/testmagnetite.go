// Package testmagnetite runs a real `magnetite serve` process for a test:
// the binary built from this module, a fresh state directory, the test's
// configuration as conf.d drop-ins, stopped when the test ends.
package testmagnetite

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

// FreeAddr returns a loopback address with a port nothing listens on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// FreePort returns a loopback TCP port nothing listens on, for the real
// services tests start (magnetite serve, Keystone, a browser).
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Serve builds `magnetite serve`, runs it on addr (host:port) with each
// dropIn as a conf.d file, waits until it answers GET /, and stops it at
// cleanup. When the test failed, the log's warnings, errors and end are
// shown.
func Serve(t *testing.T, addr string, dropIns ...string) {
	t.Helper()
	p, err := Start(t, Build(t), "test-host", addr, dropIns...)
	if err != nil {
		t.Fatal(err)
	}
	p.WaitReady(t, 30*time.Second)
}

// BinaryEnv names the environment variable holding the path of a magnetite
// binary built for the whole run: hack/test.sh builds it once, as the
// README installs it, so the packages that run it do not each link their
// own.
const BinaryEnv = "MAGNETITE_TEST_BINARY"

// built is the binary Build made for this test binary, when its TestMain
// calls testenv.Main.
var built struct {
	once      sync.Once
	bin, dir  string
	err       error
	buildTail []byte
}

// Build returns the path of a magnetite binary of this module, built as
// the README installs it: $MAGNETITE_TEST_BINARY when hack/test.sh built
// one for the run; otherwise it builds one, once for the test binary when
// the package's TestMain calls testenv.Main (removed after the last test),
// else for the test alone.
func Build(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(BinaryEnv); bin != "" {
		if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("$%s=%s is not an executable magnetite (%v); hack/test.sh builds it", BinaryEnv, bin, err)
		}
		return bin
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "magnetite-bin-")
		if err != nil {
			built.err = err
			return
		}
		if !testenv.AfterTests(func() { os.RemoveAll(dir) }) {
			// No TestMain to remove a shared build: each test builds its own.
			os.RemoveAll(dir)
			return
		}
		built.dir = dir
		built.bin, built.buildTail, built.err = build(dir)
	})
	if built.dir == "" && built.err == nil {
		bin, out, err := build(t.TempDir())
		if err != nil {
			t.Fatalf("go build ./cmd/magnetite: %v\n%s", err, out)
		}
		return bin
	}
	if built.err != nil {
		t.Fatalf("go build ./cmd/magnetite: %v\n%s", built.err, built.buildTail)
	}
	return built.bin
}

// build links cmd/magnetite into dir as the README installs it and returns
// its path, or the build's output with the error.
func build(dir string) (string, []byte, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" {
		return "", nil, fmt.Errorf("find the module root: %v", err)
	}
	bin := filepath.Join(dir, "magnetite")
	cmd := exec.Command("go", "build", "-tags", "kustomize_disable_go_plugin_support", "-o", bin, "./cmd/magnetite") // as README installs it
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	out, err := cmd.CombinedOutput()
	return bin, out, err
}

// Process is a running `magnetite serve`.
type Process struct {
	Name string
	// Base is its API's URL, http://addr.
	Base string
	// Log is the file its standard output and error go to.
	Log  string
	proc *testproc.Process
	stop func()
}

// Start runs bin's `magnetite serve` on addr, reporting host name, with a
// fresh state directory and each dropIn as a conf.d file, and stops it at
// cleanup (SIGTERM, then SIGKILL and an error after 15s). It does not wait
// for the API; it calls no Fatal, so tests may start several at once.
func Start(t *testing.T, bin, name, addr string, dropIns ...string) (*Process, error) {
	dir := t.TempDir()
	confDir := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(confDir, 0o700); err != nil {
		return nil, err
	}
	// A pool of one cluster's keys: the default (16) makes, at every
	// start, keys that a test's one or two clusters never take, about
	// 0.6 CPU-seconds of a busy machine per Magnetite. A drop-in may set
	// another size.
	main := fmt.Sprintf("[DEFAULT]\nstate_dir = %s\nhost = %s\n[api]\nkey_pool_size = 4\n", filepath.Join(dir, "state"), name)
	if err := os.WriteFile(filepath.Join(dir, "magnetite.conf"), []byte(main), 0o600); err != nil {
		return nil, err
	}
	for i, conf := range dropIns {
		if err := os.WriteFile(filepath.Join(confDir, fmt.Sprintf("%02d-test.conf", 20+i)), []byte(conf), 0o600); err != nil {
			return nil, err
		}
	}
	p := &Process{Name: name, Base: "http://" + addr, Log: filepath.Join(dir, "serve.log")}
	cmd := exec.Command(bin, "--config-file", filepath.Join(dir, "magnetite.conf"), "--config-dir", confDir, "serve", "--listen", addr)
	proc, err := testproc.Start(cmd, p.Log)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.proc = proc
	p.stop = func() {
		if !proc.Stop(15 * time.Second) {
			t.Errorf("%s did not stop on SIGTERM within 15s", name)
		}
	}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, notable(p.Log))
		}
	})
	return p, nil
}

// Stop sends SIGTERM and waits until the process has exited, as a
// rolling update stops a replica (SIGKILL and an error after 15s).
// Stopping twice is harmless.
func (p *Process) Stop() { p.stop() }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.proc.Exited() }

// WaitReady waits until the process answers GET / with 200, failing the
// test when it exits or does not answer within timeout.
func (p *Process) WaitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-p.proc.Exited():
			t.Fatalf("%s exited:\n%s", p.Name, notable(p.Log))
		default:
		}
		if res, err := client.Get(p.Base + "/"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within %s:\n%s", p.Name, timeout, notable(p.Log))
		}
		time.Sleep(50 * time.Millisecond) // polling interval while serve starts
	}
}

// notable returns the log's warnings and errors, then its end: a long test
// fills the log with INFO lines of requests.
func notable(path string) string {
	b, _ := os.ReadFile(path)
	var lines []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			lines = append(lines, line)
		}
	}
	const n = 6000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.Join(lines[max(0, len(lines)-60):], "\n") + "\n...\n" + string(b)
}

// KeystoneConf is the drop-in that puts serve behind Keystone (as
// docs/keystone.md configures it) with the service user "magnetite" of
// project "service".
func KeystoneConf(authURL, password, region string) string {
	return fmt.Sprintf(`[auth]
strategy = keystone

[keystone_authtoken]
auth_url = %s
username = magnetite
password = %s
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = %s
`, authURL, password, region)
}
