package conductor

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// mcaTopology is a magnum-cluster-api Cluster's topology as v0.38.1 writes
// it, cut to what an upgrade reads and writes: two machine deployments,
// the second one made without the disk bus override.
func mcaTopology() map[string]any {
	md := func(name string, overrides ...any) any {
		return map[string]any{"class": "default-worker", "name": name, "replicas": int64(2),
			"variables": map[string]any{"overrides": overrides}}
	}
	v := func(name string, value any) any { return map[string]any{"name": name, "value": value} }
	return map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": "kube-ab12c", "namespace": "magnum-system"},
		"spec": map[string]any{"topology": map[string]any{
			"version": "v1.34.2",
			"variables": []any{v("clusterIdentityRefName", "kube-ab12c-cloud-config"), v("flavor", "m1.medium"),
				v("imageUUID", "old-image"), v("hardwareDiskBus", "")},
			"workers": map[string]any{"machineDeployments": []any{
				md("default-worker", v("flavor", "m1.medium"), v("imageUUID", "old-image"), v("hardwareDiskBus", ""), v("serverGroupId", "sg-1")),
				md("gpu", v("flavor", "g1.large"), v("imageUUID", "old-image")),
			}}}}}
}

// TestAnAdoptedMagnumClusterAPIClusterIsUpgradedAsThatDriverUpgradesIt: the
// patch sets the topology's version and the image (and its disk bus) in
// the cluster's variables and every machine deployment's overrides, where
// the Cluster has them, and changes nothing else; applied to a Cluster
// whose machine deployments moved meanwhile, it fails instead of writing
// another entry.
func TestAnAdoptedMagnumClusterAPIClusterIsUpgradedAsThatDriverUpgradesIt(t *testing.T) {
	cl := &unstructured.Unstructured{Object: mcaTopology()}
	patch, err := mcaUpgradePatch(cl, mcaUpgrade{version: "v1.35.4", image: "new-image", diskBus: "scsi"})
	if err != nil {
		t.Fatal(err)
	}
	apply := func(obj map[string]any) (map[string]any, error) {
		doc, _ := json.Marshal(obj)
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Apply(doc)
		if err != nil {
			return nil, err
		}
		var got map[string]any
		return got, json.Unmarshal(out, &got)
	}
	got, err := apply(mcaTopology())
	if err != nil {
		t.Fatal(err)
	}
	want := mcaTopology()
	topo := want["spec"].(map[string]any)["topology"].(map[string]any)
	topo["version"] = "v1.35.4"
	set := func(list []any, name string, value any) {
		for _, e := range list {
			if m := e.(map[string]any); m["name"] == name {
				m["value"] = value
			}
		}
	}
	set(topo["variables"].([]any), "imageUUID", "new-image")
	set(topo["variables"].([]any), "hardwareDiskBus", "scsi")
	for _, md := range topo["workers"].(map[string]any)["machineDeployments"].([]any) {
		overrides := md.(map[string]any)["variables"].(map[string]any)["overrides"].([]any)
		set(overrides, "imageUUID", "new-image")
		set(overrides, "hardwareDiskBus", "scsi")
	}
	wantJSON, _ := json.Marshal(want)
	var wantDoc map[string]any
	_ = json.Unmarshal(wantJSON, &wantDoc)
	if !reflect.DeepEqual(got, wantDoc) {
		gotJSON, _ := json.MarshalIndent(got, "", " ")
		t.Errorf("upgraded Cluster:\n%s\nwant:\n%s", gotJSON, wantJSON)
	}

	moved := mcaTopology()
	mds := moved["spec"].(map[string]any)["topology"].(map[string]any)["workers"].(map[string]any)
	list := mds["machineDeployments"].([]any)
	mds["machineDeployments"] = []any{list[1], list[0]}
	if _, err := apply(moved); err == nil {
		t.Error("the patch applied to a Cluster whose machine deployments moved")
	}

	noVersion := mcaTopology()
	delete(noVersion["spec"].(map[string]any)["topology"].(map[string]any), "version")
	if _, err := mcaUpgradePatch(&unstructured.Unstructured{Object: noVersion}, mcaUpgrade{version: "v1.35.4"}); err == nil {
		t.Error("a Cluster without a topology version got an upgrade patch")
	}
}

// TestAnAdoptedMagnumCAPIHelmClusterGetsMachineTemplatesOfTheNewImage: the
// machine template an upgrade makes for the openstack-cluster chart is the
// current one with the new image, named as the chart names templates (the
// component and a checksum of the spec), the same for the same spec, and
// without Helm's labels: it is not the release's.
func TestAnAdoptedMagnumCAPIHelmClusterGetsMachineTemplatesOfTheNewImage(t *testing.T) {
	current := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackMachineTemplate",
		"metadata": map[string]any{"name": "web-x-control-plane-0a1b2c3d", "namespace": "magnum-p1",
			"labels": map[string]any{"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "openstack-cluster-0.27.0",
				"capi.stackhpc.com/managed-by": "Helm", "capi.stackhpc.com/cluster": "web-x", "capi.stackhpc.com/component": "control-plane"},
			"annotations": map[string]any{"meta.helm.sh/release-name": "web-x", "helm.sh/resource-policy": "keep"}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"flavor": "m1.large", "image": map[string]any{"filter": map[string]any{"name": "ubuntu-old"}},
			"identityRef": map[string]any{"name": "web-x-cloud-credentials", "cloudName": "openstack"}}}}}}
	next, err := mchMachineTemplate(current, "new-image")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^web-x-control-plane-[0-9a-f]{8}$`).MatchString(next.GetName()) || next.GetName() == current.GetName() {
		t.Errorf("the new template is named %s", next.GetName())
	}
	wantLabels := map[string]string{"capi.stackhpc.com/cluster": "web-x", "capi.stackhpc.com/component": "control-plane"}
	if !reflect.DeepEqual(next.GetLabels(), wantLabels) || len(next.GetAnnotations()) != 0 {
		t.Errorf("the new template's labels %v, annotations %v; want %v and none", next.GetLabels(), next.GetAnnotations(), wantLabels)
	}
	spec, _, _ := unstructured.NestedMap(next.Object, "spec", "template", "spec")
	want := map[string]any{"flavor": "m1.large", "image": map[string]any{"id": "new-image"},
		"identityRef": map[string]any{"name": "web-x-cloud-credentials", "cloudName": "openstack"}}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("the new template's spec %v, want %v", spec, want)
	}
	again, _ := mchMachineTemplate(next, "new-image")
	if again.GetName() != next.GetName() {
		t.Errorf("a retried upgrade names the template %s, then %s", next.GetName(), again.GetName())
	}
	if old, _, _ := unstructured.NestedString(current.Object, "spec", "template", "spec", "image", "filter", "name"); old != "ubuntu-old" {
		t.Errorf("making the new template changed the current one's image to %v", old)
	}
}
