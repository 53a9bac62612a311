package testclient_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testclient"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

// debianCLI is the CLI for a parallel test of the full suite.
func debianCLI(t *testing.T) testclient.CLI {
	if testing.Short() {
		t.Skip("-short: needs Debian's openstack CLI; runs in the full suite")
	}
	testproc.Require(t, testclient.Python, testclient.Script)
	t.Parallel()
	return testclient.OpenStack(t)
}

// TestTheCLISeesItsOwnPackagesOnly: the CLI's path holds the client
// packages and what they depend on, and none of what the servers brought;
// it runs, and its magnum plugin answers.
func TestTheCLISeesItsOwnPackagesOnly(t *testing.T) {
	cli := debianCLI(t)
	var dir string
	for _, e := range cli.Env {
		if v, ok := strings.CutPrefix(e, "PYTHONPATH="); ok {
			dir = v
		}
	}
	if dir == "" {
		t.Fatalf("no PYTHONPATH in %q", cli.Env)
	}
	for _, want := range []string{"openstackclient", "magnumclient", "keystoneauth1", "osc_lib", "cliff", "requests"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("%s is not on the CLI's path: %v", want, err)
		}
	}
	// The servers' packages, installed on this machine for other tests.
	for _, unwanted := range []string{"osprofiler", "eventlet", "ironicclient", "keystone", "magnum"} {
		if _, err := os.Lstat(filepath.Join(dir, unwanted)); err == nil {
			t.Errorf("%s, which the client packages do not depend on, is on the CLI's path", unwanted)
		}
	}
	cmd := cli.Command(t.Context(), []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}, "coe", "cluster", "list", "--help")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "usage: openstack coe cluster list") {
		t.Fatalf("openstack coe cluster list --help: %v\n%s", err, out)
	}
	cmd = cli.Command(t.Context(), []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}, "baremetal", "node", "list", "--help")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("openstack baremetal (ironicclient's plugin, not a dependency of the client packages) answered:\n%s", out)
	}
}

// TestForkedCommandsAreTheScripts: a command Run forks from the CLI's
// interpreter prints what Debian's script run as a process of its own
// prints, to the same stream, and exits with its code: help, a usage
// error, a refused connection, a plugin the client machine lacks, and the
// settings each command's own environment and home give it, several at
// once.
func TestForkedCommandsAreTheScripts(t *testing.T) {
	cli := debianCLI(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".config", "openstack"), 0o700); err != nil {
		t.Fatal(err)
	}
	clouds := "clouds:\n  mine:\n    auth:\n      auth_url: http://keystone.example/v3\n      username: carol\n    region_name: RegionTwo\n"
	if err := os.WriteFile(filepath.Join(home, ".config", "openstack", "clouds.yaml"), []byte(clouds), 0o600); err != nil {
		t.Fatal(err)
	}
	type run struct {
		env  []string
		args []string
		want string // in stdout or stderr, beside being the script's
	}
	// One environment for most runs (one interpreter forks them), and
	// two more that differ in their OS_* variables only.
	env := func(kv ...string) []string {
		return append([]string{"HOME=" + home, "PATH=/usr/bin:/bin", "SHELL=/bin/bash"}, kv...)
	}
	runs := []run{
		{env(), []string{"coe", "cluster", "list", "--help"}, "usage: openstack coe cluster list"},
		{env(), []string{"--os-auth-type", "none", "--os-endpoint", "http://" + refused + "/v1", "coe", "cluster", "list", "--no-such-option"},
			"openstack coe cluster list: error: unrecognized arguments: --no-such-option"},
		{env(), []string{"coe", "cluster", "list", "--no-such-option"}, "Missing value auth-url required for auth plugin password"},
		{env(), []string{"--os-auth-type", "none", "--os-endpoint", "http://" + refused + "/v1", "coe", "cluster", "list"}, refused},
		{env(), []string{"baremetal", "node", "list"}, "'baremetal node list' is not an openstack command"},
		{env(), []string{"--os-cloud", "mine", "configuration", "show", "-f", "json"}, `"region_name": "RegionTwo"`},
	}
	for _, user := range []string{"alice", "bob"} {
		runs = append(runs, run{env("OS_AUTH_URL=http://keystone.example/v3", "OS_USERNAME="+user, "OS_PASSWORD=secret", "OS_PROJECT_NAME="+user+"-project"),
			[]string{"configuration", "show", "-f", "json"}, `"auth.project_name": "` + user + `-project"`})
	}
	ctx := t.Context()
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			name := strings.Join(r.args, " ")
			forked, err := cli.Run(ctx, r.env, r.args...)
			if err != nil {
				t.Errorf("%s: forked: %v", name, err)
				return
			}
			cmd := cli.Command(ctx, r.env, r.args...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				if _, exited := err.(*exec.ExitError); !exited {
					t.Errorf("%s: the script: %v", name, err)
					return
				}
			}
			script := testclient.Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: cmd.ProcessState.ExitCode()}
			// Python objects' addresses in an error differ between
			// any two processes.
			for _, r := range []*testclient.Result{&forked, &script} {
				r.Stdout, r.Stderr = address.ReplaceAllString(r.Stdout, "0x…"), address.ReplaceAllString(r.Stderr, "0x…")
			}
			if forked != script {
				t.Errorf("%s: forked\n%+v\nthe script\n%+v", name, forked, script)
			}
			if !strings.Contains(forked.Stdout+forked.Stderr, r.want) {
				t.Errorf("%s: %q is not in its output\n%+v", name, r.want, forked)
			}
		})
	}
	wg.Wait()
}

var address = regexp.MustCompile(`0x[0-9a-f]{6,}`)

// TestAForkedCommandEndsWithItsCaller: a command whose caller gives up
// is killed (the server it waits on sees its connection close) and Run
// returns the context's error.
func TestAForkedCommandEndsWithItsCaller(t *testing.T) {
	cli := debianCLI(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := silent.Accept(); err == nil {
			accepted <- c
		}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cli.Run(ctx, []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"},
			"--os-auth-type", "none", "--os-endpoint", "http://"+silent.Addr().String()+"/v1", "coe", "cluster", "list")
		done <- err
	}()
	var conn net.Conn
	select {
	case conn = <-accepted:
	case err := <-done:
		t.Fatalf("the command ended before it connected: %v", err)
	}
	defer conn.Close()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}
	// The killed command's connection closes: reading its request ends
	// with EOF (a command left running would hold it open past the
	// deadline).
	if err := conn.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Errorf("the command's connection: %v; want EOF once it is killed", err)
	}
}
