package conductor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

var (
	machinesGVR         = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}
	openStackServersGVR = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Resource: "openstackservers"}
)

// capoRelease is how one CAPO release writes an OpenStackMachine
// (controllers/openstackmachine_controller.go at its tag) and its
// conditions (OpenStackServer at v1alpha1 in both).
type capoRelease struct {
	crds, machineVersion string
	spec                 map[string]any
	// waiting is the machine's status while its server is not ACTIVE
	// (v0.14.7 leaves what it said before; v0.15 copies the server's
	// refusal), provisioned once it is.
	waiting     func(refusal string) map[string]any
	provisioned func(id string) map[string]any
	cond        func(typ, status, reason, msg string) map[string]any
}

var capoReleases = []capoRelease{
	{crds: testenv.CAPOv014, machineVersion: "v1beta1",
		spec: map[string]any{"flavor": "m1.medium", "image": map[string]any{"filter": map[string]any{"name": "ubuntu"}}},
		waiting: func(string) map[string]any {
			return map[string]any{"ready": false, "conditions": []any{v1beta1Cond("InstanceReady", "False", "Info", "WaitingForBootstrapData", ""),
				v1beta1Cond("Ready", "False", "Info", "WaitingForBootstrapData", "")}}
		},
		provisioned: func(id string) map[string]any {
			return map[string]any{"ready": true, "instanceID": id, "initialization": map[string]any{"provisioned": true}}
		},
		cond: func(typ, status, reason, msg string) map[string]any {
			return v1beta1Cond(typ, status, "Error", reason, msg)
		},
	},
	{crds: testenv.CAPOv015, machineVersion: "v1beta2",
		spec: map[string]any{"flavor": map[string]any{"filter": map[string]any{"name": "m1.medium"}}, "image": map[string]any{"filter": map[string]any{"name": "ubuntu"}}},
		waiting: func(refusal string) map[string]any {
			if refusal == "" {
				return map[string]any{"conditions": []any{withTime(cond("Ready", "False", "InstanceNotReady", "Waiting for instance to be created"))}}
			}
			return map[string]any{"conditions": []any{withTime(cond("InstanceReady", "False", "InstanceStateError", refusal)),
				withTime(cond("Ready", "False", "InstanceStateError", refusal))}}
		},
		provisioned: func(id string) map[string]any {
			return map[string]any{"instanceID": id, "initialization": map[string]any{"provisioned": true},
				"conditions": []any{withTime(cond("Ready", "True", "Ready", ""))}}
		},
		cond: func(typ, status, reason, msg string) map[string]any { return withTime(cond(typ, status, reason, msg)) },
	},
}

func withTime(c map[string]any) map[string]any {
	c["lastTransitionTime"] = "2026-11-27T09:00:00Z"
	return c
}

func (r capoRelease) machines() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: r.machineVersion, Resource: "openstackmachines"}
}

// capoMachine makes, on the API server, a Machine of cluster with its
// OpenStackMachine and OpenStackServer in the state CAPO v0.14.7 leaves
// them: serverStatus is the OpenStackServer's status (nil for none yet),
// provisioned says whether the OpenStackMachine's server is ACTIVE.
func capoMachine(ctx context.Context, t *testing.T, dc dynamic.Interface, rel capoRelease, ns, cluster, name string, cp bool, serverStatus map[string]any, provisioned bool) {
	t.Helper()
	labels := map[string]any{labelClusterName: cluster, mgmt.LabelManagedBy: mgmt.ManagedByValue}
	if cp {
		labels[labelControlPlane] = ""
	}
	create := func(gvr schema.GroupVersionResource, obj map[string]any) *unstructured.Unstructured {
		u, err := dc.Resource(gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s %s: %v", gvr.Resource, name, err)
		}
		return u
	}
	setStatus := func(gvr schema.GroupVersionResource, u *unstructured.Unstructured, status map[string]any) {
		u.Object["status"] = status
		if _, err := dc.Resource(gvr).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("status of %s %s: %v", gvr.Resource, name, err)
		}
	}
	m := create(machinesGVR, map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
		"metadata": map[string]any{"name": name, "labels": labels},
		"spec": map[string]any{"clusterName": cluster, "bootstrap": map[string]any{"dataSecretName": name},
			"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackMachine", "name": name}}})
	osm := create(rel.machines(), map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/" + rel.machineVersion, "kind": "OpenStackMachine",
		"metadata": map[string]any{"name": name, "labels": labels, "ownerReferences": []any{map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": name, "uid": string(m.GetUID())}}},
		"spec": rel.spec})
	refusal := ""
	if serverStatus != nil && serverStatus["instanceState"] == "ERROR" {
		refusal = novaRefusal
	}
	osmStatus := rel.waiting(refusal)
	if provisioned {
		osmStatus = rel.provisioned("srv-" + name)
	}
	setStatus(rel.machines(), osm, osmStatus)
	if serverStatus == nil {
		return
	}
	oss := create(openStackServersGVR, map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "OpenStackServer",
		"metadata": map[string]any{"name": name, "labels": map[string]any{labelClusterName: cluster}, "ownerReferences": []any{map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/" + rel.machineVersion, "kind": "OpenStackMachine", "name": name, "uid": string(osm.GetUID())}}},
		"spec": map[string]any{"identityRef": map[string]any{"cloudName": "openstack", "name": "demo-cloud-config"},
			"image": map[string]any{"filter": map[string]any{"name": "ubuntu"}}, "flavor": "m1.medium", "ports": []any{map[string]any{}}, "sshKeyName": ""}})
	setStatus(openStackServersGVR, oss, serverStatus)
}

// TestFailedMachinesAreReplacedOnlyOnceAllowedAndOneControlPlaneMachineAtATime
// runs the conductor's reading, the retry's marks and the replacements
// against objects shaped as CAPO v0.14.7 and v0.15.0-beta.0 write them,
// on a real API server with each release's CRDs: two
// control-plane machines and a worker whose servers Nova refused, a
// control-plane machine whose server is building and a healthy worker.
func TestFailedMachinesAreReplacedOnlyOnceAllowedAndOneControlPlaneMachineAtATime(t *testing.T) {
	t.Parallel()
	for _, rel := range capoReleases {
		t.Run(rel.crds, func(t *testing.T) {
			t.Parallel() // each release on the package's plane with its CRDs
			failedMachinesAreReplaced(t, rel)
		})
	}
}

func failedMachinesAreReplaced(t *testing.T, rel capoRelease) {
	ctx := context.Background()
	env := managementPlane(t, rel.crds)
	mc, err := mgmt.NewForConfig(env.Config, mgmt.Options{Kinds: builtin.Kinds(), NamespacePrefix: testenv.NamespacePrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := mc.EnsureNamespace(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	dc := env.Dynamic(t)
	st, cluster, _ := clusterWithOperation(t, model.OpClusterResize)
	c := New(Options{Store: st, Mgmt: mc, Owner: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})

	demo := clusterObjectName(cluster)
	refused := map[string]any{"ready": false, "instanceState": "ERROR", "conditions": []any{
		rel.cond("InstanceReady", "False", "InstanceCreateFailed", novaRefusal),
		rel.cond("Ready", "False", "InstanceCreateFailed", novaRefusal)}}
	capoMachine(ctx, t, dc, rel, ns, demo, "demo-cp-a", true, refused, false)
	capoMachine(ctx, t, dc, rel, ns, demo, "demo-cp-b", true, refused, false)
	capoMachine(ctx, t, dc, rel, ns, demo, "demo-md-a", false, refused, false)
	capoMachine(ctx, t, dc, rel, ns, demo, "demo-md-ok", false, map[string]any{"ready": true, "instanceID": "srv-demo-md-ok", "instanceState": "ACTIVE"}, true)

	ms, err := c.machineServers(ctx, ns, demo)
	if err != nil {
		t.Fatal(err)
	}
	failures := c.serverFailures(ctx, cluster.UUID, ms)
	if len(failures) != 3 || failures["demo-cp-a"] != "OpenStack refused to create its server: Flavor 3 could not be found." || failures["demo-md-ok"] != "" {
		t.Fatalf("failures %v", failures)
	}
	// Status syncs that follow one another closely share one look at the
	// machines: the second lists nothing.
	waiting := Observed{Cluster: map[string]any{"metadata": map[string]any{"name": demo, "namespace": ns}},
		Machines: []map[string]any{{"metadata": map[string]any{"name": "demo-cp-a"}}}}
	first, second := waiting, waiting
	c.lookAtServers(ctx, cluster.UUID, &first)
	gets := mc.Requests()["GET"]
	c.lookAtServers(ctx, cluster.UUID, &second)
	if again := mc.Requests()["GET"] - gets; again != 0 || !maps.Equal(first.ServerFailures, second.ServerFailures) || len(second.ServerFailures) != 3 {
		t.Errorf("a second look right after the first sent %d GETs and found %v (first %v)", again, second.ServerFailures, first.ServerFailures)
	}

	observed := func() Observed {
		list, err := dc.Resource(machinesGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		obs := Observed{Cluster: map[string]any{"metadata": map[string]any{"name": demo, "namespace": ns}}, ServerFailures: failures}
		for _, m := range list.Items {
			obs.Machines = append(obs.Machines, m.Object)
		}
		return obs
	}
	current := Snapshot{Exists: true, TopologyCurrent: true, TopologyApplied: true, ObservedGeneration: 2}
	remaining := func() []string {
		var out []string
		for _, m := range observed().Machines {
			if nestedString(m, "metadata", "deletionTimestamp") == "" {
				out = append(out, name(m))
			}
		}
		slices.Sort(out)
		return out
	}
	replace := func() {
		ms, err := c.machineServers(ctx, ns, demo)
		if err != nil {
			t.Fatal(err)
		}
		c.replaceFailedMachines(ctx, cluster.UUID, observed(), current, ms, 2, false)
	}

	// Without the user's retry nothing is replaced.
	replace()
	if got := strings.Join(remaining(), ","); got != "demo-cp-a,demo-cp-b,demo-md-a,demo-md-ok" {
		t.Fatalf("machines replaced before the retry: %s left", got)
	}

	sc := &scope{cluster: cluster, namespace: ns, owner: mgmt.Owner{ClusterUUID: cluster.UUID, ProjectID: "p"}}
	if err := c.approveReplacements(ctx, sc, nil); err != nil {
		t.Fatal(err)
	}
	// Not while Cluster API has not rolled the retried state out.
	ms, _ = c.machineServers(ctx, ns, demo)
	c.replaceFailedMachines(ctx, cluster.UUID, observed(), current, ms, 3, false)
	c.replaceFailedMachines(ctx, cluster.UUID, observed(), current, ms, 2, true)
	if got := strings.Join(remaining(), ","); got != "demo-cp-a,demo-cp-b,demo-md-a,demo-md-ok" {
		t.Fatalf("machines replaced before Cluster API observed the retry: %s left", got)
	}

	replace()
	if got := strings.Join(remaining(), ","); got != "demo-cp-b,demo-md-ok" {
		t.Fatalf("after the retry: %s left, want the second failed control-plane machine waiting its turn and the healthy worker", got)
	}
	replace()
	if got := strings.Join(remaining(), ","); got != "demo-cp-b,demo-md-ok" {
		t.Fatalf("a second control-plane machine went before the first was made again: %s left", got)
	}
	// The control plane makes the first again; its server builds: still
	// one at a time.
	capoMachine(ctx, t, dc, rel, ns, demo, "demo-cp-c", true, map[string]any{"ready": false, "instanceID": "srv-c", "instanceState": "BUILD"}, false)
	replace()
	if got := strings.Join(remaining(), ","); got != "demo-cp-b,demo-cp-c,demo-md-ok" {
		t.Fatalf("a control-plane machine went while another was being built: %s left", got)
	}
	// Once it is up, the next goes.
	osm, err := dc.Resource(rel.machines()).Namespace(ns).Get(ctx, "demo-cp-c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	osm.Object["status"] = rel.provisioned("srv-c")
	if _, err := dc.Resource(rel.machines()).Namespace(ns).UpdateStatus(ctx, osm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	replace()
	if got := strings.Join(remaining(), ","); got != "demo-cp-c,demo-md-ok" {
		t.Fatalf("after the new control-plane machine came up: %s left", got)
	}
	// A port Neutron refuses is retried: CAPO v0.14.7 says why only in a
	// Warning event on the OpenStackServer.
	capoMachine(ctx, t, dc, rel, ns, demo, "demo-md-port", false, map[string]any{"ready": false}, false)
	portRefusal := `Failed to create port demo-md-port-0: Expected HTTP response code [201] when accessing [POST http://neutron/v2.0/ports], but got 400 instead: {"NeutronError": {"type": "PortSecurityAndIPRequiredForSecurityGroups", "message": "Port security must be enabled and port must have an IP address in order to use security groups.", "detail": ""}}`
	for i, msg := range []string{"Failed to create port demo-md-port-0: an older refusal", portRefusal} {
		ev := map[string]any{"apiVersion": "v1", "kind": "Event",
			"metadata":       map[string]any{"name": fmt.Sprintf("demo-md-port.%d", i)},
			"involvedObject": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "OpenStackServer", "name": "demo-md-port", "namespace": ns},
			"type":           "Warning", "reason": "Failedcreateport", "message": msg, "count": int64(1),
			"firstTimestamp": fmt.Sprintf("2026-11-27T10:0%d:00Z", i), "lastTimestamp": fmt.Sprintf("2026-11-27T10:0%d:00Z", i),
			"source": map[string]any{"component": "openstack-controller"}}
		if _, err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "events"}).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: ev}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ms, err = c.machineServers(ctx, ns, demo)
	if err != nil {
		t.Fatal(err)
	}
	retries := c.serverRetries(ctx, ns, ms)
	if len(retries) != 1 || retries["demo-md-port"] != "CAPO keeps trying to make its server: PortSecurityAndIPRequiredForSecurityGroups: Port security must be enabled and port must have an IP address in order to use security groups." {
		t.Errorf("retries %v, want Neutron's refusal of demo-md-port's port only", retries)
	}

	events, err := st.ListEvents(ctx, cluster.UUID, store.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var replaced []string
	for _, ev := range events {
		if ev.Reason == "failed machines" && strings.HasPrefix(ev.Message, "replaced") {
			replaced = append(replaced, ev.Message)
		}
	}
	if len(replaced) != 3 || !strings.Contains(strings.Join(replaced, "\n"), "Flavor 3 could not be found.") {
		t.Errorf("replacement events %q, want one per machine with OpenStack's message", replaced)
	}
}
