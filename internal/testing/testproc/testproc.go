// Package testproc runs the real services tests start (magnetite serve,
// Keystone's and Horizon's uwsgi, MariaDB, Ironic, ipmi_sim, chromedriver)
// each in its own process group, so that stopping one stops every process
// it started, and each killed by the kernel when the test process ends
// without stopping it.
package testproc

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Process is a started service.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Start starts cmd in its own process group, its standard output and
// error written to the file log (created) unless log is empty.
func Start(cmd *exec.Cmd, log string) (*Process, error) {
	var out *os.File
	if log != "" {
		f, err := os.Create(log)
		if err != nil {
			return nil, err
		}
		out = f
		cmd.Stdout, cmd.Stderr = f, f
	}
	// A test process that ends without its cleanups (killed, or
	// interrupted) takes the service with it (SIGKILL from the kernel).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		if out != nil {
			out.Close()
		}
		return nil, err
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		if out != nil {
			out.Close()
		}
		close(p.exited)
	}()
	return p, nil
}

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitErr says how the process ended once it has (an exit status 0 is an
// error too: a service must not end by itself); nil while it runs.
func (p *Process) ExitErr() error {
	select {
	case <-p.exited:
		if p.err == nil {
			return errors.New("exit status 0")
		}
		return p.err
	default:
		return nil
	}
}

// Stop sends SIGTERM to the process group and waits until the process has
// exited; when it has not within grace, it sends SIGKILL, waits, and
// reports false. Stopping twice is harmless.
func (p *Process) Stop(grace time.Duration) bool {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return true
	case <-time.After(grace):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		return false
	}
}

// Require fails the test unless each of names is installed, a path that
// exists or a program found on PATH, telling how to install the packages
// the suite needs. It returns their paths.
func Require(t testing.TB, names ...string) []string {
	t.Helper()
	paths := make([]string, len(names))
	for i, name := range names {
		var err error
		if strings.Contains(name, "/") {
			paths[i], err = name, statErr(name)
		} else {
			paths[i], err = exec.LookPath(name)
		}
		if err != nil {
			t.Fatalf("%s is missing: install the packages of hack/ci-packages.txt (bash hack/ci-deps.sh as root)", name)
		}
	}
	return paths
}

func statErr(path string) error {
	_, err := os.Stat(path)
	return err
}
