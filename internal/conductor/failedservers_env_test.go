package conductor

import (
	"context"
	"io"
	"log/slog"
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
	"github.com/magnetite-io/magnetite/internal/testenv"
)

var (
	machinesGVR          = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}
	openStackMachinesGVR = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Resource: "openstackmachines"}
	openStackServersGVR  = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Resource: "openstackservers"}
)

// capoMachine makes, on the API server, a Machine of cluster with its
// OpenStackMachine and OpenStackServer in the state CAPO v0.14.7 leaves
// them: serverStatus is the OpenStackServer's status (nil for none yet),
// provisioned says whether the OpenStackMachine's server is ACTIVE.
func capoMachine(ctx context.Context, t *testing.T, dc dynamic.Interface, ns, cluster, name string, cp bool, serverStatus map[string]any, provisioned bool) {
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
	osm := create(openStackMachinesGVR, map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackMachine",
		"metadata": map[string]any{"name": name, "labels": labels, "ownerReferences": []any{map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": name, "uid": string(m.GetUID())}}},
		"spec": map[string]any{"flavor": "m1.medium", "image": map[string]any{"filter": map[string]any{"name": "ubuntu"}}}})
	osmStatus := map[string]any{"ready": false, "conditions": []any{v1beta1Cond("InstanceReady", "False", "Info", "WaitingForBootstrapData", ""),
		v1beta1Cond("Ready", "False", "Info", "WaitingForBootstrapData", "")}}
	if provisioned {
		osmStatus = map[string]any{"ready": true, "instanceID": "srv-" + name, "initialization": map[string]any{"provisioned": true}}
	}
	setStatus(openStackMachinesGVR, osm, osmStatus)
	if serverStatus == nil {
		return
	}
	oss := create(openStackServersGVR, map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "OpenStackServer",
		"metadata": map[string]any{"name": name, "labels": map[string]any{labelClusterName: cluster}, "ownerReferences": []any{map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackMachine", "name": name, "uid": string(osm.GetUID())}}},
		"spec": map[string]any{"identityRef": map[string]any{"cloudName": "openstack", "name": "demo-cloud-config"},
			"image": map[string]any{"filter": map[string]any{"name": "ubuntu"}}, "flavor": "m1.medium", "ports": []any{map[string]any{}}, "sshKeyName": ""}})
	setStatus(openStackServersGVR, oss, serverStatus)
}

// TestFailedMachinesAreReplacedOnlyOnceAllowedAndOneControlPlaneMachineAtATime
// runs the conductor's reading, the retry's marks and the replacements
// against CAPO v0.14.7-shaped objects on a real API server: two
// control-plane machines and a worker whose servers Nova refused, a
// control-plane machine whose server is building and a healthy worker.
func TestFailedMachinesAreReplacedOnlyOnceAllowedAndOneControlPlaneMachineAtATime(t *testing.T) {
	ctx := context.Background()
	env := startPlaneWithCAPO(t)
	mc, err := mgmt.NewForConfig(env.Config, mgmt.Options{Kinds: builtin.Kinds()})
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
		v1beta1Cond("InstanceReady", "False", "Error", "InstanceCreateFailed", novaRefusal),
		v1beta1Cond("Ready", "False", "Error", "InstanceCreateFailed", novaRefusal)}}
	capoMachine(ctx, t, dc, ns, demo, "demo-cp-a", true, refused, false)
	capoMachine(ctx, t, dc, ns, demo, "demo-cp-b", true, refused, false)
	capoMachine(ctx, t, dc, ns, demo, "demo-md-a", false, refused, false)
	capoMachine(ctx, t, dc, ns, demo, "demo-md-ok", false, map[string]any{"ready": true, "instanceID": "srv-demo-md-ok", "instanceState": "ACTIVE"}, true)

	ms, err := c.machineServers(ctx, ns, demo)
	if err != nil {
		t.Fatal(err)
	}
	failures := c.serverFailures(ctx, cluster.UUID, ms)
	if len(failures) != 3 || failures["demo-cp-a"] != "OpenStack refused to create its server: Flavor 3 could not be found." || failures["demo-md-ok"] != "" {
		t.Fatalf("failures %v", failures)
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
	capoMachine(ctx, t, dc, ns, demo, "demo-cp-c", true, map[string]any{"ready": false, "instanceID": "srv-c", "instanceState": "BUILD"}, false)
	replace()
	if got := strings.Join(remaining(), ","); got != "demo-cp-b,demo-cp-c,demo-md-ok" {
		t.Fatalf("a control-plane machine went while another was being built: %s left", got)
	}
	// Once it is up, the next goes.
	osm, err := dc.Resource(openStackMachinesGVR).Namespace(ns).Get(ctx, "demo-cp-c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	osm.Object["status"] = map[string]any{"ready": true, "instanceID": "srv-c", "initialization": map[string]any{"provisioned": true}}
	if _, err := dc.Resource(openStackMachinesGVR).Namespace(ns).UpdateStatus(ctx, osm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	replace()
	if got := strings.Join(remaining(), ","); got != "demo-cp-c,demo-md-ok" {
		t.Fatalf("after the new control-plane machine came up: %s left", got)
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

// startPlaneWithCAPO is an API server with Cluster API's and CAPO's CRDs.
func startPlaneWithCAPO(t *testing.T) *testenv.APIServer {
	t.Helper()
	env := testenv.Start(t)
	env.InstallClusterAPI(t)
	env.InstallProviders(t, "capo")
	return env
}
