package capi_test

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
)

// autoscalerObjects returns the rendered autoscaler objects by kind.
func autoscalerObjects(res *driver.Result) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range res.Objects {
		if o.GetLabels()[driver.LabelComponent] == driver.ComponentAutoscaler {
			out[o.GetKind()] = o
		}
	}
	return out
}

func autoscalerContainer(t *testing.T, res *driver.Result) map[string]any {
	t.Helper()
	dep := autoscalerObjects(res)["Deployment"]
	if dep == nil {
		t.Fatal("no autoscaler Deployment rendered")
	}
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("autoscaler containers: %v", cs)
	}
	return cs[0].(map[string]any)
}

func TestAutoscalerRunsPerClusterScopedToItsNamespaceAndCluster(t *testing.T) {
	req := caseRequest(t, "autoscaling")
	req.Namespace = "magnetite-5f0a8e2f"
	res := mustRender(t, req)
	objs := autoscalerObjects(res)
	for _, kind := range driver.AutoscalerKinds {
		o := objs[kind]
		if o == nil {
			t.Fatalf("no autoscaler %s rendered", kind)
		}
		if o.GetNamespace() != req.Namespace || o.GetName() != "elastic-1b4e28ba-autoscaler" {
			t.Errorf("%s is %s/%s", kind, o.GetNamespace(), o.GetName())
		}
		if o.GetLabels()[capi.LabelClusterUUID] != req.Cluster.UUID {
			t.Errorf("%s labels %v lack the cluster's UUID", kind, o.GetLabels())
		}
	}
	// The autoscaler needs the kubeconfig Cluster API writes for the
	// Cluster: it is applied after it.
	kinds := make([]string, len(res.Objects))
	for i, o := range res.Objects {
		kinds[i] = o.GetKind()
	}
	if slices.Index(kinds, "Cluster") > slices.Index(kinds, "Deployment") {
		t.Errorf("apply order %v puts the autoscaler before the Cluster", kinds)
	}

	c := autoscalerContainer(t, res)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	for _, want := range []string{
		"--cloud-provider=clusterapi",
		"--kubeconfig=/etc/kubernetes/workload/value",
		"--clusterapi-cloud-config-authoritative",
		"--node-group-auto-discovery=clusterapi:namespace=magnetite-5f0a8e2f,clusterName=elastic-1b4e28ba",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	vols, _, _ := unstructured.NestedSlice(objs["Deployment"].Object, "spec", "template", "spec", "volumes")
	if name, _, _ := unstructured.NestedString(vols[0].(map[string]any), "secret", "secretName"); name != "elastic-1b4e28ba-kubeconfig" {
		t.Errorf("mounted Secret %q, want Cluster API's elastic-1b4e28ba-kubeconfig", name)
	}

	// A Role, never a ClusterRole, bound to the autoscaler's account in
	// the cluster's namespace only.
	rules, _, _ := unstructured.NestedSlice(objs["Role"].Object, "rules")
	canScale := false
	for _, r := range rules {
		res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
		verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
		if slices.Contains(res, "machinedeployments/scale") && slices.Contains(verbs, "patch") {
			canScale = true
		}
		if slices.Contains(verbs, "delete") || slices.Contains(verbs, "*") || slices.Contains(res, "*") || slices.Contains(res, "secrets") {
			t.Errorf("rule %v grants more than scaling needs", r)
		}
	}
	if !canScale {
		t.Errorf("the Role does not let the autoscaler scale machine deployments: %v", rules)
	}
	subj, _, _ := unstructured.NestedSlice(objs["RoleBinding"].Object, "subjects")
	if ns, _, _ := unstructured.NestedString(subj[0].(map[string]any), "namespace"); ns != req.Namespace {
		t.Errorf("RoleBinding subject namespace %q", ns)
	}
}

func TestAutoscalerImageFollowsKubeMinorTagAndPrefix(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"kube minor", nil, "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.5"},
		{"upgraded minor", map[string]string{"kube_tag": "v1.35.2"}, "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.1"},
		{"autoscaler_tag", map[string]string{"autoscaler_tag": "v1.33.2"}, "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.2"},
		{"mirror", map[string]string{"container_infra_prefix": "registry.example.com:5000/k8s/"}, "registry.example.com:5000/k8s/cluster-autoscaler:v1.33.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := caseRequest(t, "autoscaling")
			for k, v := range tc.labels {
				req.Cluster.Labels[k] = v
			}
			if got := autoscalerContainer(t, mustRender(t, req))["image"]; got != tc.want {
				t.Errorf("image %v, want %s", got, tc.want)
			}
		})
	}
}

func TestNoAutoscalerWithoutAutoscaling(t *testing.T) {
	req := caseRequest(t, "autoscaling")
	req.Cluster.Labels["auto_scaling_enabled"] = "false"
	if objs := autoscalerObjects(mustRender(t, req)); len(objs) > 0 {
		t.Errorf("autoscaling off still renders %v", objs)
	}
}
