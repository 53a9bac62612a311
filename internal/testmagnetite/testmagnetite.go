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
	"syscall"
	"testing"
	"time"
)

// FreeAddr returns a loopback address with a port nothing listens on.
func FreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Serve builds `magnetite serve`, runs it on addr (host:port) with each
// dropIn as a conf.d file, waits until it answers GET /, and stops it at
// cleanup. When the test failed, the log's warnings, errors and end are
// shown.
func Serve(t *testing.T, addr string, dropIns ...string) {
	t.Helper()
	dir := t.TempDir()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" {
		t.Fatalf("find the module root: %v", err)
	}
	bin := filepath.Join(dir, "magnetite")
	build := exec.Command("go", "build", "-o", bin, "./cmd/magnetite")
	build.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/magnetite: %v\n%s", err, out)
	}
	confDir := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(confDir, 0o700); err != nil {
		t.Fatal(err)
	}
	main := fmt.Sprintf("[DEFAULT]\nstate_dir = %s\nhost = test-host\n", filepath.Join(dir, "state"))
	if err := os.WriteFile(filepath.Join(dir, "magnetite.conf"), []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, conf := range dropIns {
		if err := os.WriteFile(filepath.Join(confDir, fmt.Sprintf("%02d-test.conf", 20+i)), []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(dir, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file", filepath.Join(dir, "magnetite.conf"), "--config-dir", confDir, "serve", "--listen", addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Errorf("magnetite serve did not stop on SIGTERM within 15s")
		}
		if t.Failed() {
			t.Logf("magnetite serve log:\n%s", notable(logPath))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-exited:
			t.Fatalf("magnetite serve exited:\n%s", notable(logPath))
		default:
		}
		if res, err := client.Get("http://" + addr + "/"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("magnetite serve did not answer within 30s:\n%s", notable(logPath))
		}
		time.Sleep(50 * time.Millisecond)
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
