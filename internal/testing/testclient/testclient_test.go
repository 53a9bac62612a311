package testclient_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testclient"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

// TestTheCLISeesItsOwnPackagesOnly: the CLI's path holds the client
// packages and what they depend on, and none of what the servers brought;
// it runs, and its magnum plugin answers.
func TestTheCLISeesItsOwnPackagesOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs Debian's openstack CLI; runs in the full suite")
	}
	testproc.Require(t, testclient.Python, testclient.Script)
	t.Parallel()
	cli := testclient.OpenStack(t)
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
