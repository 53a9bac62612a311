package conductor

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/model"
)

// TestANodeGroupAddedToAnAdoptedMagnumCAPIHelmClusterIsMadeAsItsChartMakesOne:
// the MachineDeployment is the release's first node group's with the new
// group's name, node group label and selector, size and templates; its
// machines carry the new group's UUID, not the first group's; Helm's
// labels are not copied.
func TestANodeGroupAddedToAnAdoptedMagnumCAPIHelmClusterIsMadeAsItsChartMakesOne(t *testing.T) {
	chart := func(group string) map[string]any {
		return map[string]any{"capi.stackhpc.com/cluster": "web-x", "capi.stackhpc.com/component": "worker", "capi.stackhpc.com/node-group": group}
	}
	like := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
		"metadata": map[string]any{"name": "web-x-default-worker", "namespace": "magnum-p1",
			"labels": map[string]any{"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "openstack-cluster-0.27.0",
				"capi.stackhpc.com/cluster": "web-x", "capi.stackhpc.com/component": "worker", "capi.stackhpc.com/node-group": "default-worker"}},
		"spec": map[string]any{"clusterName": "web-x", "replicas": int64(3),
			"selector": map[string]any{"matchLabels": chart("default-worker")},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"capi.stackhpc.com/cluster": "web-x", "capi.stackhpc.com/component": "worker",
					"capi.stackhpc.com/node-group": "default-worker", LabelNodeGroupUUID: "ng-default"}},
				"spec": map[string]any{"clusterName": "web-x", "version": "v1.31.2",
					"bootstrap":         map[string]any{"configRef": map[string]any{"kind": "KubeadmConfigTemplate", "name": "web-x-default-worker-11111111"}},
					"infrastructureRef": map[string]any{"kind": "OpenStackMachineTemplate", "name": "web-x-default-worker-22222222"}}}},
		"status": map[string]any{"replicas": int64(3)}}}
	ng := &model.NodeGroup{UUID: "ng-gpu", Name: "GPU nodes", Role: "worker", NodeCount: 1}
	md, err := mchMachineDeployment(like, "web-x-gpu-nodes", "gpu-nodes", ng, "web-x-gpu-nodes-33333333", "web-x-gpu-nodes-44444444")
	if err != nil {
		t.Fatal(err)
	}
	templateLabels := chart("gpu-nodes")
	templateLabels[LabelNodeGroupUUID] = "ng-gpu"
	want := map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
		"metadata": map[string]any{"name": "web-x-gpu-nodes", "namespace": "magnum-p1", "labels": chart("gpu-nodes")},
		"spec": map[string]any{"clusterName": "web-x", "replicas": int64(1),
			"selector": map[string]any{"matchLabels": chart("gpu-nodes")},
			"template": map[string]any{
				"metadata": map[string]any{"labels": templateLabels},
				"spec": map[string]any{"clusterName": "web-x", "version": "v1.31.2",
					"bootstrap":         map[string]any{"configRef": map[string]any{"kind": "KubeadmConfigTemplate", "name": "web-x-gpu-nodes-44444444"}},
					"infrastructureRef": map[string]any{"kind": "OpenStackMachineTemplate", "name": "web-x-gpu-nodes-33333333"}}}}}
	if !reflect.DeepEqual(md.Object, want) {
		t.Errorf("the new node group's MachineDeployment:\n%v\nwant:\n%v", md.Object, want)
	}
	if name, _, _ := unstructured.NestedString(like.Object, "spec", "template", "spec", "infrastructureRef", "name"); name != "web-x-default-worker-22222222" {
		t.Errorf("making the new MachineDeployment changed the first one's template to %s", name)
	}
	if got := (&model.ForeignCluster{Driver: driverMCH, HelmRelease: "web-x"}).MachineDeploymentOf(ng); got != "web-x-gpu-nodes" {
		t.Errorf("the new node group's MachineDeployment is named %s", got)
	}
}
