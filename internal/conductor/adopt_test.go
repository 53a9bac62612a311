package conductor

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/model"
)

// The patches that take over an adopted cluster set labels and, for a
// resize, replicas: nothing a machine is made from, so that Cluster API
// replaces no machine.
func TestAdoptedObjectsSetOnlyLabelsAndReplicas(t *testing.T) {
	owner := map[string]string{"app.kubernetes.io/managed-by": "magnetite", "magnetite.io/cluster-uuid": "c1"}
	ngs := []*model.NodeGroup{
		{UUID: "ng-m", Name: "default-master", Role: model.RoleMaster, NodeCount: 1},
		{UUID: "ng-w", Name: "default-worker", Role: "worker", NodeCount: 3},
	}
	versions := map[string]string{"Cluster": "cluster.x-k8s.io/v1beta2", "MachineDeployment": "cluster.x-k8s.io/v1beta2",
		"KubeadmControlPlane": "controlplane.cluster.x-k8s.io/v1beta2"}
	mdEntry := func(replicas bool) map[string]any {
		e := map[string]any{"class": "default-worker", "name": "default-worker"}
		if replicas {
			e["replicas"] = int64(2)
		}
		return e
	}
	mcaCluster := func(replicas bool) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"topology": map[string]any{
			"workers": map[string]any{"machineDeployments": []any{mdEntry(replicas)}}}}}}
	}
	mca := &model.ForeignCluster{Driver: driverMCA, Namespace: "magnum-system", Name: "kube-ab12c", Adopted: true,
		NodeGroups: map[string]string{"ng-w": "default-worker"}}
	mch := &model.ForeignCluster{Driver: driverMCH, Namespace: "magnum-p1", Name: "web-x", Adopted: true, ControlPlane: "web-x-control-plane",
		NodeGroups: map[string]string{"ng-w": "web-x-default-worker"}, HelmRelease: "web-x"}

	withGroup := func(uuid string) map[string]any {
		l := map[string]any{}
		for k, v := range owner {
			l[k] = v
		}
		l[LabelNodeGroupUUID] = uuid
		return l
	}
	for _, tc := range []struct {
		name    string
		a       *model.ForeignCluster
		cluster *unstructured.Unstructured
		resize  bool
		want    []map[string]any
	}{
		{"magnum-cluster-api take-over", mca, mcaCluster(true), false, []map[string]any{{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": map[string]any{"name": "kube-ab12c", "namespace": "magnum-system"},
			"spec": map[string]any{"topology": map[string]any{
				"controlPlane": map[string]any{"metadata": map[string]any{"labels": withGroup("ng-m")}},
				"workers": map[string]any{"machineDeployments": []any{map[string]any{"name": "default-worker",
					"metadata": map[string]any{"labels": withGroup("ng-w")}}}}}},
		}}},
		{"magnum-cluster-api resize", mca, mcaCluster(true), true, []map[string]any{{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": map[string]any{"name": "kube-ab12c", "namespace": "magnum-system"},
			"spec": map[string]any{"topology": map[string]any{
				"controlPlane": map[string]any{"metadata": map[string]any{"labels": withGroup("ng-m")}},
				"workers": map[string]any{"machineDeployments": []any{map[string]any{"name": "default-worker", "replicas": int64(3),
					"metadata": map[string]any{"labels": withGroup("ng-w")}}}}}},
		}}},
		{"magnum-capi-helm resize", mch, &unstructured.Unstructured{Object: map[string]any{}}, true, []map[string]any{
			{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": map[string]any{"name": "web-x", "namespace": "magnum-p1"}},
			{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
				"metadata": map[string]any{"name": "web-x-control-plane", "namespace": "magnum-p1", "labels": map[string]any{LabelNodeGroupUUID: "ng-m"}},
				"spec":     map[string]any{"machineTemplate": map[string]any{"metadata": map[string]any{"labels": withGroup("ng-m")}}}},
			{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
				"metadata": map[string]any{"name": "web-x-default-worker", "namespace": "magnum-p1", "labels": map[string]any{LabelNodeGroupUUID: "ng-w"}},
				"spec":     map[string]any{"replicas": int64(3), "template": map[string]any{"metadata": map[string]any{"labels": withGroup("ng-w")}}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := adoptedObjects(tc.a, tc.cluster, owner, ngs, versions, tc.resize)
			if err != nil {
				t.Fatal(err)
			}
			var got []map[string]any
			for _, o := range objs {
				got = append(got, o.Object)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("patches\n%v\nwant\n%v", got, tc.want)
			}
		})
	}

	// A node group added to a magnum-cluster-api cluster is made as that
	// driver makes a new one: like the first machine deployment, with its
	// own flavor and no other node group's server group.
	withOverrides := mcaCluster(true)
	md := withOverrides.Object["spec"].(map[string]any)["topology"].(map[string]any)["workers"].(map[string]any)["machineDeployments"].([]any)[0].(map[string]any)
	md["variables"] = map[string]any{"overrides": []any{map[string]any{"name": "flavor", "value": "m1.small"},
		map[string]any{"name": "imageUUID", "value": "0b3a"}, map[string]any{"name": "serverGroupId", "value": "sg-default-worker"}}}
	large := "m1.large"
	extra := &model.NodeGroup{UUID: "ng-x", Name: "extra", Role: "worker", NodeCount: 1, FlavorID: &large}
	objs, err := adoptedObjects(mca, withOverrides, owner, append(ngs, extra), versions, false)
	if err != nil {
		t.Fatal(err)
	}
	added := withGroup("ng-x")
	added["node-role.kubernetes.io/worker"], added["node.cluster.x-k8s.io/nodegroup"] = "", "extra"
	want := map[string]any{"name": "extra", "class": "default-worker", "replicas": int64(1), "metadata": map[string]any{"labels": added},
		"variables": map[string]any{"overrides": []any{map[string]any{"name": "flavor", "value": "m1.large"}, map[string]any{"name": "imageUUID", "value": "0b3a"}}}}
	got, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "topology", "workers", "machineDeployments")
	if len(got) != 2 || !reflect.DeepEqual(got[1], want) {
		t.Errorf("machine deployments with a node group added: %v, want the second %v", got, want)
	}

	// Once made, the added group's entry is applied whole on every later
	// apply (a resize of it, say): server-side apply would otherwise take
	// away the fields Magnetite's first apply of it set.
	made := got[1].(map[string]any)
	made["metadata"] = map[string]any{"labels": map[string]any{"other": "label"}}
	withOverrides.Object["spec"].(map[string]any)["topology"].(map[string]any)["workers"].(map[string]any)["machineDeployments"] = append(
		[]any{md}, made)
	extra.NodeCount = 4
	objs, err = adoptedObjects(mca, withOverrides, owner, append(ngs, extra), versions, true)
	if err != nil {
		t.Fatal(err)
	}
	want["replicas"] = int64(4)
	want["metadata"] = map[string]any{"labels": withGroup("ng-x")}
	got, _, _ = unstructured.NestedSlice(objs[0].Object, "spec", "topology", "workers", "machineDeployments")
	if len(got) != 2 || !reflect.DeepEqual(got[1], want) {
		t.Errorf("machine deployments resizing the added node group: %v, want the second whole: %v", got, want)
	}
	// On a magnum-capi-helm cluster the MachineDeployment Magnetite made
	// for an added group is not in the partial apply (it is scaled).
	objs, err = adoptedObjects(mch, &unstructured.Unstructured{Object: map[string]any{}}, owner, append(ngs, extra), versions, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetName() == mch.MachineDeploymentOf(extra) {
			t.Errorf("the added node group's MachineDeployment is applied in part: %v", o.Object)
		}
	}

	// A node group magnum-cluster-api's autoscaler sizes (its topology
	// entry has no replicas) is not resized by Magnetite; taking it over
	// is fine.
	if _, err := adoptedObjects(mca, mcaCluster(false), owner, ngs, versions, false); err != nil {
		t.Errorf("take-over of an autoscaled node group: %v", err)
	}
	_, err = adoptedObjects(mca, mcaCluster(false), owner, ngs, versions, true)
	if !errors.Is(err, errPermanent) || !strings.Contains(err.Error(), "default-worker is autoscaled") {
		t.Errorf("resize of an autoscaled node group: %v, want a permanent refusal naming it", err)
	}
}
