// Package testclient runs Debian's openstack CLI as a user's machine has
// it: python3-openstackclient and python3-magnumclient with what their
// packages depend on, and none of the Python packages the suite's servers
// bring beside them.
//
// The test machine also has Keystone, Ironic, Magnum and Horizon installed,
// and with them python3-osprofiler and python3-eventlet, which keystoneauth1
// imports when it can, and the CLI plugins of five more clients, which the
// CLI loads at every command. None of them is among the CLI's dependencies
// (`apt-cache depends --recurse` of the two client packages), so no client
// machine loads them. Run here, the CLI sees the Python packages of its
// own dependency closure only: the same interpreter, script and modules.
// `openstack coe cluster list --help` took 1.08 CPU-seconds with every
// package of the test machine and 0.62 so. CLI.Run forks each command from
// an interpreter that has imported the CLI once (forkserver.go).
package testclient

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const (
	// Python is Debian's interpreter, which the CLI's script names.
	Python = "/usr/bin/python3"
	// Script is Debian's openstack CLI.
	Script = "/usr/bin/openstack"
	// distPackages is where Debian's Python packages install their modules.
	distPackages = "/usr/lib/python3/dist-packages"
)

// clientPackages are what a user installs to run `openstack coe`.
var clientPackages = []string{"python3-openstackclient", "python3-magnumclient"}

// closure is the dist-packages entries (modules, packages and their
// metadata) of clientPackages' dependency closure, read once.
var closure struct {
	once    sync.Once
	entries []string
	err     error
}

// CLI is how a test runs the openstack CLI.
type CLI struct {
	// Argv is the command before the CLI's arguments.
	Argv []string
	// Env is what the command's environment needs besides the test's own.
	Env []string
	// servers are the interpreters Run forks commands from.
	servers *forkServers
}

// Command is the CLI with args, its environment env and Env, killed when
// ctx is done.
func (c CLI) Command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	if len(c.Argv) == 0 {
		panic("testclient: a CLI not made by OpenStack")
	}
	cmd := exec.CommandContext(ctx, c.Argv[0], append(slices.Clone(c.Argv[1:]), args...)...)
	cmd.Env = append(slices.Clone(env), c.Env...)
	return cmd
}

// OpenStack is the openstack CLI as a client machine has it: Debian's
// script run by Debian's python3 without its site directories (-S), with
// a folder of the test's own on its path holding the dist-packages
// entries of the client packages' dependency closure. It fails the test
// when the packages are not installed.
func OpenStack(t testing.TB) CLI {
	t.Helper()
	closure.once.Do(func() { closure.entries, closure.err = readClosure() })
	if closure.err != nil {
		t.Fatalf("testclient: the openstack CLI's packages: %v", closure.err)
	}
	dir := filepath.Join(t.TempDir(), "client-python")
	if err := linkClosure(dir); err != nil {
		t.Fatal(err)
	}
	servers := &forkServers{byEnv: map[string]*forkServer{}}
	t.Cleanup(servers.stop)
	return CLI{Argv: []string{Python, "-S", Script}, Env: []string{"PYTHONPATH=" + dir}, servers: servers}
}

// linkClosure makes dir a folder of links to the closure's entries.
func linkClosure(dir string) error {
	closure.once.Do(func() { closure.entries, closure.err = readClosure() })
	if closure.err != nil {
		return fmt.Errorf("testclient: the openstack CLI's packages: %w", closure.err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for _, e := range closure.entries {
		if err := os.Symlink(e, filepath.Join(dir, filepath.Base(e))); err != nil {
			return err
		}
	}
	return nil
}

// readClosure lists the dist-packages entries of every installed package
// clientPackages depend on (Depends and Pre-Depends, recursively).
func readClosure() ([]string, error) {
	args := append([]string{"depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
		"--no-breaks", "--no-replaces", "--no-enhances"}, clientPackages...)
	out, err := exec.Command("apt-cache", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("apt-cache %s: %w", strings.Join(args, " "), err)
	}
	var pkgs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// Packages start a line; their dependencies are indented, and
		// virtual packages are written <so>.
		if l := sc.Text(); l != "" && l[0] != ' ' && l[0] != '<' && !slices.Contains(pkgs, l) {
			pkgs = append(pkgs, l)
		}
	}
	for _, p := range clientPackages {
		if !slices.Contains(pkgs, p) {
			return nil, fmt.Errorf("apt-cache does not know %s", p)
		}
	}
	// dpkg-query -L lists the files of the installed ones and complains
	// about the rest (a dependency another package provides), so its
	// exit status is not the answer: the client packages' own files are.
	var stderr bytes.Buffer
	cmd := exec.Command("dpkg-query", append([]string{"-L"}, pkgs...)...)
	cmd.Stderr = &stderr
	files, _ := cmd.Output()
	var entries []string
	seen := map[string]bool{}
	sc = bufio.NewScanner(bytes.NewReader(files))
	for sc.Scan() {
		rel, ok := strings.CutPrefix(sc.Text(), distPackages+"/")
		if !ok || rel == "" {
			continue
		}
		top := filepath.Join(distPackages, strings.SplitN(rel, "/", 2)[0])
		if !seen[top] {
			seen[top] = true
			entries = append(entries, top)
		}
	}
	for _, m := range []string{"openstackclient", "magnumclient"} {
		if !seen[filepath.Join(distPackages, m)] {
			return nil, fmt.Errorf("%s is not installed (%s)", m, strings.TrimSpace(stderr.String()))
		}
	}
	slices.Sort(entries)
	return entries, nil
}
