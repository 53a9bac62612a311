package cli

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/client"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// noValidHost is Nova's fault of a server its scheduler could place
// nowhere (nova/scheduler/manager.py: NoValidHost).
const noValidHost = "No valid host was found. There are not enough hosts available."

// openStackServers are CAPO's OpenStackServers, v1alpha1 in every release.
var openStackServers = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Resource: "openstackservers"}

// TestNovasFaultOfAServerInErrorThroughTheCLI: released CAPO (v0.14.7)
// records nothing of why Nova put a server in ERROR, only that it is
// ("Instance is in ERROR state", reason InstanceStateError), and never
// looks at it again. A bare-metal cluster whose control-plane server Nova
// can place nowhere (the operator took the Ironic host out of Nova once the
// cluster was accepted) shows Nova's own fault, which Magnetite reads from
// Nova as the cluster, in status_reason and in the cluster's events. Once
// the host is back and the user retries (a resize to the same size),
// Magnetite replaces the failed machine and every machine of the cluster
// gets its server and node. Auto-healing is off, so only the retry can
// bring it back.
func TestNovasFaultOfAServerInErrorThroughTheCLI(t *testing.T) {
	requireCLI(t) // skips under -short
	t.Parallel()
	e := startCAPOCloud(t, testenv.CAPOv014)
	e.capo.Pause(true)
	e.createTemplates(t)
	e.c.ok(t, "coe", "cluster", "create", "nohost", "--cluster-template", "bm", "--master-count", "1", "--node-count", "1",
		"--merge-labels", "--labels", "auto_healing_enabled=false")
	ctx := t.Context()
	uuid := e.uuid(t, "nohost")
	clusterObjectName(ctx, t, e.dc, uuid)

	// Nova keeps one hypervisor and no Ironic host.
	e.cloud.SetComputeHosts(testcloud.ComputeHost{Name: "nova-compute-0", Zone: "nova"})
	e.capo.Pause(false)
	e.c.waitCluster(t, "nohost", "status_reason to show Nova's fault", 4*time.Minute, true, func(cl *apitypes.Cluster) bool {
		return strings.Contains(str(cl.StatusReason), noValidHost)
	})
	reason := e.field(t, "nohost", "status_reason")
	t.Logf("openstack coe cluster show nohost: status_reason %q", reason)
	var failedServer string
	for _, s := range e.cloud.Servers() {
		if s.Status == "ERROR" && strings.Contains(reason, "its server "+s.ID+" is in ERROR: "+noValidHost) {
			failedServer = s.ID
		}
	}
	if failedServer == "" {
		t.Fatalf("openstack coe cluster show nohost: status_reason %q names no server Nova put in ERROR (servers %+v)", reason, e.cloud.Servers())
	}

	// CAPO wrote none of Nova's words: what shows came from Nova.
	var failed []string
	for _, m := range clusterMachines(ctx, t, e.dc, e.capo, uuid) {
		failed = append(failed, m.GetName())
		srv, err := e.dc.Resource(openStackServers).Namespace(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
		if err != nil {
			continue // a worker's: CAPO waits for its bootstrap data
		}
		for _, o := range []*unstructured.Unstructured{&m, srv} {
			if strings.Contains(fmt.Sprint(o.Object["status"]), "No valid host") {
				t.Errorf("%s %s carries Nova's fault, which released CAPO never copies: %v", o.GetKind(), o.GetName(), o.Object["status"])
			}
		}
	}
	events, err := e.c.api(t).ListEvents(ctx, "nohost", client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events, func(ev apitypes.ClusterEvent) bool {
		return ev.Reason == "server failed" && strings.Contains(ev.Message, "its server "+failedServer+" is in ERROR: "+noValidHost)
	}) {
		t.Errorf("no event of the failed server with Nova's fault: %+v", events)
	}

	// The operator puts the Ironic host back; nothing changes until the
	// user retries.
	e.cloud.SetComputeZones("nova")
	e.c.ok(t, "coe", "cluster", "resize", "nohost", "1")
	testenv.WaitFor(t, "nohost's machines to have servers and nodes", 6*time.Minute, func() (bool, string) {
		ms := clusterMachines(ctx, t, e.dc, e.capo, uuid)
		if len(ms) < 2 {
			return false, e.state(t, "nohost")
		}
		for _, m := range ms {
			if id, _, _ := unstructured.NestedString(m.Object, "status", "instanceID"); id == "" || !hasNode(ctx, t, e.dc, m) {
				return false, m.GetName() + " has no server and node yet; " + e.state(t, "nohost")
			}
		}
		return true, ""
	})
	for _, m := range clusterMachines(ctx, t, e.dc, e.capo, uuid) {
		if _, cp := m.GetLabels()["cluster.x-k8s.io/control-plane"]; cp && slices.Contains(failed, m.GetName()) {
			t.Errorf("the control plane runs on %s, the machine whose server Nova put in ERROR; it was not replaced", m.GetName())
		}
	}
	if r := e.field(t, "nohost", "status_reason"); strings.Contains(r, noValidHost) {
		t.Errorf("status_reason %q still shows the fault once the machine was replaced", r)
	}

	e.c.ok(t, "coe", "cluster", "delete", "nohost")
	e.c.waitNoClusters(t, 5*time.Minute)
	e.cloud.CheckNothingLeft(t)
}
