package cli

import (
	"context"
	"encoding/base64"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	clusterGVR     = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	mdGVR          = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments"}
	machineGVR     = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}
	autoscalerGVRs = map[string]schema.GroupVersionResource{
		"Deployment":     {Group: "apps", Version: "v1", Resource: "deployments"},
		"ServiceAccount": {Version: "v1", Resource: "serviceaccounts"},
		"Role":           {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
		"RoleBinding":    {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	}
)

// TestAutoscalingAndHealingOnRealClusterAPI drives one autoscaled cluster
// through the openstack CLI on a real local Cluster API (kube-apiserver,
// core and kubeadm managers, CAPD's in-memory backend): its cluster
// autoscaler's objects are created by the real API server and their RBAC
// is checked by it; scaling the machine deployment the way the autoscaler
// does moves node_count within a second; resizes stay inside the bounds;
// a node made NotReady in the in-memory workload API server is remediated
// by its machine health check and the cluster is HEALTHY again with the
// events recorded; turning autoscaling off removes the autoscaler, turning
// it on again with an upgrade brings the new minor's, and deleting the
// cluster removes it.
func TestAutoscalingAndHealingOnRealClusterAPI(t *testing.T) {
	t.Parallel()
	mgmt, p, c, field := cliOnClusterAPI(t, "elastic")
	api := magnetiteAPI{t: t, endpoint: "http://" + p.addr + "/v1"}
	ctx := context.Background()
	dc := mgmt.Dynamic(t)

	c.ok(t, "coe", "cluster", "template", "create", "mem-elastic", "--coe", "kubernetes",
		"--image", "ubuntu-2204-kube-v1.31.2", "--external-network", "public",
		"--labels", "kube_tag=v1.31.2,auto_scaling_enabled=true,min_node_count=1,max_node_count=3,node_unhealthy_timeout=5s")
	c.ok(t, "coe", "cluster", "template", "create", "mem-elastic-132", "--coe", "kubernetes",
		"--image", "ubuntu-2204-kube-v1.31.2", "--external-network", "public",
		"--labels", "kube_tag=v1.32.0,auto_scaling_enabled=true,min_node_count=1,max_node_count=3,node_unhealthy_timeout=5s")
	c.ok(t, "coe", "cluster", "template", "create", "mem-fixed", "--coe", "kubernetes",
		"--image", "ubuntu-2204-kube-v1.31.2", "--external-network", "public",
		"--labels", "kube_tag=v1.31.2,auto_scaling_enabled=false,node_unhealthy_timeout=5s")
	c.ok(t, "coe", "cluster", "create", "elastic", "--cluster-template", "mem-elastic", "--master-count", "1", "--node-count", "2")
	uuid := field("uuid")
	selector := "magnetite.io/cluster-uuid=" + uuid
	waitStatus := func(want string, limit time.Duration) {
		t.Helper()
		c.waitStatus(t, "elastic", want, limit)
	}
	// healthy waits until the API says the cluster is HEALTHY (and, with
	// status, in that status), then checks the CLI shows it so.
	healthy := func(what, status string, limit time.Duration) {
		t.Helper()
		c.waitCluster(t, "elastic", what, limit, false, func(cl *apitypes.Cluster) bool {
			return strings.HasPrefix(str(cl.HealthStatus), "HEALTHY") && (status == "" || cl.Status == status)
		})
		if h := field("health_status"); !strings.HasPrefix(h, "HEALTHY") {
			t.Errorf("openstack coe cluster show elastic: health_status %s once the API said HEALTHY (%s)", h, field("health_status_reason"))
		}
	}
	waitStatus("CREATE_COMPLETE", 5*time.Minute)

	clusters, err := dc.Resource(clusterGVR).Namespace("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(clusters.Items) != 1 {
		t.Fatalf("the cluster's Cluster object: %v, %v", clusters, err)
	}
	ns, stack := clusters.Items[0].GetNamespace(), clusters.Items[0].GetName()
	// Magnetite's labels, which the namespace clean-up rules look for.
	autoscalerSelector := selector + ",app.kubernetes.io/managed-by=magnetite,magnetite.io/component=cluster-autoscaler"
	autoscaler := func(kind string) []unstructured.Unstructured {
		t.Helper()
		l, err := dc.Resource(autoscalerGVRs[kind]).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: autoscalerSelector})
		if err != nil {
			t.Fatalf("list %s: %v", kind, err)
		}
		return l.Items
	}
	workerMD := func() *unstructured.Unstructured {
		t.Helper()
		l, err := dc.Resource(mdGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(l.Items) != 1 {
			t.Fatalf("the worker machine deployment: %v, %v", l, err)
		}
		return &l.Items[0]
	}
	nodeCounts := func() (group, cluster int) {
		var ng, cl struct {
			NodeCount int `json:"node_count"`
		}
		api.call("GET", "/clusters/elastic/nodegroups/default-worker", nil, &ng)
		api.call("GET", "/clusters/elastic", nil, &cl)
		return ng.NodeCount, cl.NodeCount
	}
	events := func() []string {
		var out struct {
			Events []struct{ Kind, Reason, Message string } `json:"events"`
		}
		api.call("GET", "/clusters/elastic/events", nil, &out)
		var lines []string
		for _, e := range out.Events {
			lines = append(lines, e.Reason+": "+e.Message)
		}
		return lines
	}
	hasEvent := func(parts ...string) bool {
		return slices.ContainsFunc(events(), func(e string) bool {
			for _, p := range parts {
				if !strings.Contains(e, p) {
					return false
				}
			}
			return true
		})
	}

	t.Run("the cluster autoscaler is created, scoped to the cluster", func(t *testing.T) {
		for kind := range autoscalerGVRs {
			if n := len(autoscaler(kind)); n != 1 {
				t.Fatalf("%d autoscaler %s objects in %s, want 1", n, kind, ns)
			}
		}
		dep := autoscaler("Deployment")[0]
		cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		container := cs[0].(map[string]any)
		if container["image"] != "registry.k8s.io/autoscaling/cluster-autoscaler:v1.31.5" {
			t.Errorf("autoscaler image %v, want the release of Kubernetes 1.31", container["image"])
		}
		args, _, _ := unstructured.NestedStringSlice(container, "args")
		if want := "--node-group-auto-discovery=clusterapi:namespace=" + ns + ",clusterName=" + stack; !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
		// The real API server's RBAC says what the autoscaler's account may do.
		account := autoscaler("ServiceAccount")[0].GetName()
		can := func(namespace, verb, group, resource, subresource string) bool {
			sar := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
				"spec": map[string]any{
					"user":   "system:serviceaccount:" + ns + ":" + account,
					"groups": []any{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
					"resourceAttributes": map[string]any{"namespace": namespace, "verb": verb, "group": group,
						"resource": resource, "subresource": subresource},
				},
			}}
			out, err := dc.Resource(schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}).
				Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("SubjectAccessReview: %v", err)
			}
			allowed, _, _ := unstructured.NestedBool(out.Object, "status", "allowed")
			return allowed
		}
		for _, tc := range []struct {
			namespace, verb, group, resource, subresource string
			want                                          bool
		}{
			{ns, "patch", "cluster.x-k8s.io", "machinedeployments", "scale", true},
			{ns, "list", "cluster.x-k8s.io", "machines", "", true},
			{"other-project", "patch", "cluster.x-k8s.io", "machinedeployments", "scale", false},
			{"", "list", "cluster.x-k8s.io", "machinedeployments", "", false},
			{ns, "get", "", "secrets", "", false},
			{ns, "delete", "cluster.x-k8s.io", "machines", "", false},
			{ns, "patch", "cluster.x-k8s.io", "clusters", "", false},
		} {
			if got := can(tc.namespace, tc.verb, tc.group, tc.resource, tc.subresource); got != tc.want {
				t.Errorf("autoscaler may %s %s/%s in %q: %v, want %v", tc.verb, tc.resource, tc.subresource, tc.namespace, got, tc.want)
			}
		}
	})

	t.Run("node_count follows the autoscaler", func(t *testing.T) {
		// Cluster API starts a new autoscaled machine deployment at its
		// minimum (1); the create asked for 2.
		md := workerMD()
		if r, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas"); r != 2 {
			t.Fatalf("the autoscaled group was created with %d replicas, want the node count asked for (2)", r)
		}
		if g, cl := nodeCounts(); g != 2 || cl != 2 {
			t.Fatalf("node_count %d (cluster %d) after the create, want 2", g, cl)
		}
		// What the autoscaler's Cluster API provider sends: a merge patch
		// of the scale subresource.
		_, err := dc.Resource(mdGVR).Namespace(ns).Patch(ctx, md.GetName(), types.MergePatchType, []byte(`{"spec":{"replicas":1}}`),
			metav1.PatchOptions{FieldManager: "cluster-autoscaler"}, "scale")
		if err != nil {
			t.Fatal(err)
		}
		// How soon it follows is measured, not asserted: the status pass
		// wakes on the machine deployment's watch event, and a loaded
		// machine delays it (BenchmarkStatusAtScale measures the lag).
		scaled := time.Now()
		testenv.WaitFor(t, "node_count to follow the autoscaler to 1", 30*time.Second, func() (bool, string) {
			group, cluster := nodeCounts()
			return group == 1 && cluster == 1, fmt.Sprintf("node_count %d (cluster %d)", group, cluster)
		})
		t.Logf("node_count followed the autoscaler after %s", time.Since(scaled).Round(time.Millisecond))
		// The event is written just after the node count.
		testenv.WaitFor(t, "an event saying node_count followed the autoscaler", 10*time.Second, func() (bool, string) {
			return hasEvent("autoscaler", "default-worker: node_count 2 -> 1", "cluster autoscaler"), strings.Join(events(), "\n")
		})
		healthy("to be HEALTHY and CREATE_COMPLETE after the scale down", "CREATE_COMPLETE", 3*time.Minute)
		if st := field("status"); st != "CREATE_COMPLETE" {
			t.Errorf("openstack coe cluster show elastic: status %s after the scale down", st)
		}
	})

	t.Run("a node group update moves the bounds and leaves the autoscaler's replicas alone", func(t *testing.T) {
		c.ok(t, "coe", "nodegroup", "update", "elastic", "default-worker", "replace", "max_node_count=4")
		waitStatus("UPDATE_COMPLETE", 3*time.Minute)
		md := workerMD()
		if got := md.GetAnnotations()["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"]; got != "4" {
			t.Errorf("max-size annotation %q after max_node_count=4", got)
		}
		if r, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas"); r != 1 {
			t.Errorf("replicas %d after the update, want the autoscaler's 1", r)
		}
		// The topology Magnetite applied leaves the size to the autoscaler,
		// so Cluster API never writes a size over the autoscaler's.
		cl, err := dc.Resource(clusterGVR).Namespace(ns).Get(ctx, stack, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
		for _, raw := range mds {
			if r, ok := raw.(map[string]any)["replicas"]; ok {
				t.Errorf("the Cluster's topology sets replicas %v for an autoscaled node group", r)
			}
		}
	})

	t.Run("a resize stays inside the bounds", func(t *testing.T) {
		msg := c.fails(t, "coe", "cluster", "resize", "elastic", "5")
		if !strings.Contains(msg, "outside the allowed range") || !strings.Contains(msg, "cluster autoscaler") {
			t.Errorf("resize past max_node_count: %s", msg)
		}
		c.ok(t, "coe", "cluster", "resize", "elastic", "3")
		waitStatus("UPDATE_COMPLETE", 3*time.Minute)
		md := workerMD()
		if r, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas"); r != 3 {
			t.Errorf("replicas %d after a resize to 3", r)
		}
		if g, cl := nodeCounts(); g != 3 || cl != 3 {
			t.Errorf("node_count %d (cluster %d) after a resize to 3", g, cl)
		}
		if got := md.GetAnnotations()["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"]; got != "1" {
			t.Errorf("a resize moved min-size to %q", got)
		}
	})

	t.Run("a machine health check replaces a NotReady node", func(t *testing.T) {
		healthy("to have every node ready", "", 3*time.Minute)
		workload := workloadClient(t, dc, ns, stack)
		machines, err := dc.Resource(machineGVR).Namespace(ns).List(ctx, metav1.ListOptions{
			LabelSelector: selector + ",!cluster.x-k8s.io/control-plane"})
		if err != nil || len(machines.Items) == 0 {
			t.Fatalf("worker machines: %v, %v", machines, err)
		}
		victim := machines.Items[0]
		node, _, _ := unstructured.NestedString(victim.Object, "status", "nodeRef", "name")
		if node == "" {
			t.Fatalf("machine %s has no node", victim.GetName())
		}
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletStopped","message":"the kubelet stopped posting status","lastTransitionTime":%q,"lastHeartbeatTime":%q}]}}`,
			time.Now().UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
		if _, err := workload.Resource(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}).
			Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("make node %s NotReady in the workload API server: %v", node, err)
		}
		testenv.WaitFor(t, "machine "+victim.GetName()+" to be replaced", 4*time.Minute, func() (bool, string) {
			_, err := dc.Resource(machineGVR).Namespace(ns).Get(ctx, victim.GetName(), metav1.GetOptions{})
			if err == nil {
				return false, "machine " + victim.GetName() + " is still there"
			}
			return true, ""
		})
		healthy("to be HEALTHY again after the remediation", "", 4*time.Minute)
		if !hasEvent("remediation", victim.GetName(), "failed its health check") {
			t.Errorf("no remediation event for %s: %q", victim.GetName(), events())
		}
		// Users read the history with `magnetite cluster events`.
		out, err := exec.Command(p.bin, "--os-endpoint", api.endpoint, "--os-token", "x",
			"cluster", "events", "elastic").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "failed its health check") {
			t.Errorf("magnetite cluster events: %v\n%s", err, out)
		}
		if g, _ := nodeCounts(); g != 3 {
			t.Errorf("node_count %d after the remediation, want 3", g)
		}
	})

	t.Run("turning autoscaling off removes the autoscaler", func(t *testing.T) {
		c.ok(t, "coe", "cluster", "upgrade", "elastic", "mem-fixed")
		waitStatus("UPDATE_COMPLETE", 4*time.Minute)
		for kind := range autoscalerGVRs {
			if objs := autoscaler(kind); len(objs) > 0 {
				t.Errorf("autoscaling is off but the autoscaler's %s %s is left", kind, objs[0].GetName())
			}
		}
		md := workerMD()
		if r, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas"); r != 3 {
			t.Errorf("replicas %d once autoscaling is off, want the size it had (3)", r)
		}
		if _, ok := md.GetAnnotations()["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"]; ok {
			t.Error("the machine deployment still carries the autoscaler's bounds")
		}
		if !hasEvent("removed the cluster autoscaler") {
			t.Errorf("no event says the autoscaler was removed: %q", events())
		}
	})

	t.Run("an upgrade brings the autoscaler of the new minor and a delete removes it", func(t *testing.T) {
		c.ok(t, "coe", "cluster", "upgrade", "elastic", "mem-elastic-132")
		testenv.WaitFor(t, "the autoscaler of Kubernetes 1.32", 2*time.Minute, func() (bool, string) {
			deps := autoscaler("Deployment")
			if len(deps) == 0 {
				return false, "no autoscaler Deployment"
			}
			cs, _, _ := unstructured.NestedSlice(deps[0].Object, "spec", "template", "spec", "containers")
			image := cs[0].(map[string]any)["image"]
			return image == "registry.k8s.io/autoscaling/cluster-autoscaler:v1.32.7", fmt.Sprint(image)
		})
		c.ok(t, "coe", "cluster", "delete", "elastic")
		c.waitGone(t, "elastic", 4*time.Minute)
		for kind := range autoscalerGVRs {
			if objs := autoscaler(kind); len(objs) > 0 {
				t.Errorf("the cluster is deleted but its autoscaler's %s %s is left", kind, objs[0].GetName())
			}
		}
	})
}

// workloadClient talks to the workload cluster's API server (the in-memory
// backend's) through the kubeconfig Cluster API wrote for it.
func workloadClient(t *testing.T, dc dynamic.Interface, ns, cluster string) dynamic.Interface {
	t.Helper()
	s, err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(ns).
		Get(context.Background(), cluster+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	val, _, _ := unstructured.NestedString(s.Object, "data", "value")
	raw, err := base64.StdEncoding.DecodeString(val)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return wc
}
