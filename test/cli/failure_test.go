package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
)

// bootTime is how long the simulated machines of most tests boot ([driver]
// inmemory_boot_time): the tests wait for clusters to build, roll and
// heal, not for a demo's pace.
const bootTime = 2 * time.Second

// startConductor serves magnetite (testmagnetite.Build's binary) with its
// conductor on the management cluster of kubeconfig, its simulated
// machines booting in boot (0: the product's default), its project
// namespaces named apart from every other test's on a shared plane; the
// process stops at cleanup and its log is shown when the test failed.
func startConductor(t *testing.T, kubeconfig string, boot time.Duration) *serveProc {
	t.Helper()
	dir := t.TempDir()
	bin := testmagnetite.Build(t)
	conf := filepath.Join(dir, "magnetite.conf")
	prefix := testenv.NamespacePrefix(t)
	ini := fmt.Sprintf(`[DEFAULT]
state_dir = %s
[auth]
noauth_roles = admin,member
[management]
kubeconfig = %s
namespace_prefix = %s
[conductor]
infrastructure = inmemory
lease = 10s
`, filepath.Join(dir, "state"), kubeconfig, prefix)
	if boot > 0 {
		ini += fmt.Sprintf("[driver]\ninmemory_boot_time = %s\n", boot)
	}
	if err := os.WriteFile(conf, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{bin: bin, conf: conf, addr: freeAddr(t), log: filepath.Join(dir, "serve.log"), namespacePrefix: prefix}
	p.start(t)
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("magnetite serve log:\n%s", b)
		}
	})
	return p
}

// cliOnClusterAPI starts magnetite serve with its conductor on the
// package's shared Cluster API plane, and returns them with the openstack
// CLI pointed at it and a reader of one field of the named cluster. It
// skips under -short.
func cliOnClusterAPI(t *testing.T, cluster string) (*testenv.APIServer, *serveProc, *cli, func(string) string) {
	t.Helper()
	requireCLI(t) // skips under -short
	mgmt := testenv.SharedClusterAPI(t)
	p := startConductor(t, mgmt.KubeconfigFile(t), bootTime)
	c := newCLI(t, "http://"+p.addr+"/v1")
	field := func(name string) string {
		return strings.TrimSpace(c.ok(t, "coe", "cluster", "show", cluster, "-f", "value", "-c", name))
	}
	return mgmt, p, c, field
}

// TestClusterThatCannotComeUpFailsAndDeletes creates, through the openstack
// CLI on a real local Cluster API, a cluster whose machines can never
// boot: its Kubernetes version (kube_tag v1.0.0) passes the webhooks, but
// Cluster API's kubeadm bootstrap provider generates no bootstrap data for
// versions below v1.22.0, so the control plane never initializes. With
// create_timeout 1 it must reach CREATE_FAILED about a minute after the
// create, with the last Cluster API condition (type and reason) quoted in
// status_reason rather than sitting in CREATE_IN_PROGRESS, and then delete
// cleanly: 404 and nothing of it left in the management cluster.
func TestClusterThatCannotComeUpFailsAndDeletes(t *testing.T) {
	t.Parallel()
	mgmt, _, c, field := cliOnClusterAPI(t, "doomed")

	c.ok(t, "coe", "cluster", "template", "create", "mem-bad", "--coe", "kubernetes",
		"--image", "ubuntu-2204-kube-v1.31.2", "--external-network", "public", "--labels", "kube_tag=v1.0.0")
	c.ok(t, "coe", "cluster", "create", "doomed", "--cluster-template", "mem-bad",
		"--master-count", "1", "--node-count", "1", "--timeout", "1")
	uuid := field("uuid")
	created := time.Now()

	// create_timeout is one minute; allow the conductor a margin past it.
	c.waitStatus(t, "doomed", "CREATE_FAILED", 2*time.Minute)
	reason := field("status_reason")
	t.Logf("CREATE_FAILED after %s: %s", time.Since(created).Round(time.Second), reason)
	if !quotedTimeout.MatchString(reason) {
		t.Errorf("status_reason %q does not match %s: the timeout and the Cluster API condition it last saw", reason, quotedTimeout)
	}

	c.ok(t, "coe", "cluster", "delete", "doomed")
	c.waitGone(t, "doomed", 3*time.Minute)
	dc := mgmt.Dynamic(t)
	selector := "magnetite.io/cluster-uuid=" + uuid
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"},
		{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Resource: "kubeadmcontrolplanes"},
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments"},
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"},
		{Version: "v1", Resource: "secrets"}, {Version: "v1", Resource: "configmaps"},
	} {
		l, err := dc.Resource(gvr).Namespace("").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatalf("list %s: %v", gvr.Resource, err)
		}
		if n := len(l.Items); n != 0 {
			t.Errorf("%d %s of the deleted cluster are left", n, gvr.Resource)
		}
	}
}

// quotedTimeout is a create_timeout failure quoting a Cluster API
// condition as "Type (Reason): message", for example "control plane
// Available (NotAvailable): Control plane not yet initialized".
var quotedTimeout = regexp.MustCompile(`^Timed out after 1 minutes; last reported problem: .*[A-Za-z]+ \([A-Za-z]+\)(: .+)?$`)
