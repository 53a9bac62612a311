package capi_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/driver"
)

// TestRenderedAddonsBecomeConfigMapsOfTheClusterResourceSet: the documents
// the conductor rendered from the charts land in the cluster's addon
// ConfigMaps (an addon beyond one ConfigMap's limit in several), an
// operator's own ConfigMap replaces an addon, and the ClusterResourceSet
// lists them in order.
func TestRenderedAddonsBecomeConfigMapsOfTheClusterResourceSet(t *testing.T) {
	req := caseRequest(t, "vm-only")
	preview, err := osDriver.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 400*1024)
	for _, rel := range preview.Addons {
		r := driver.RenderedAddon{Addon: rel.Addon}
		switch rel.Addon {
		case addons.Calico:
			for i := range 5 { // 2 MB: three ConfigMaps
				r.Docs = append(r.Docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: part-%d\n  namespace: kube-system\ndata:\n  x: %s\n", i, big))
			}
		case addons.MetricsServer:
			r.Override = rel.OverrideName()
		default:
			r.Docs = []string{"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: " + rel.Addon + "\n  namespace: kube-system\n"}
		}
		req.Addons = append(req.Addons, r)
	}
	res, err := osDriver.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	var crsNames []string
	sizes := map[string]int{}
	for _, o := range res.Objects {
		switch o.GetKind() {
		case "ConfigMap":
			data, _ := o.Object["data"].(map[string]any)
			for _, v := range data {
				sizes[o.GetName()] += len(v.(string))
			}
			if o.GetName() != "web-1b4e28ba-addon-config" && o.GetLabels()["magnetite.io/addon"] == "" {
				t.Errorf("addon ConfigMap %s has no addon label: %v", o.GetName(), o.GetLabels())
			}
		case "ClusterResourceSet":
			rs, _ := o.Object["spec"].(map[string]any)["resources"].([]any)
			for _, r := range rs {
				crsNames = append(crsNames, r.(map[string]any)["name"].(string))
			}
		}
	}
	want := []string{"web-1b4e28ba-cloud-config-addon", "web-1b4e28ba-addon-calico", "web-1b4e28ba-addon-calico-2", "web-1b4e28ba-addon-calico-3",
		"web-1b4e28ba-addon-openstack-cloud-controller-manager", "web-1b4e28ba-addon-snapshot-controller", "web-1b4e28ba-addon-cinder-csi", "magnetite-addon-metrics-server-v0.8.1", "web-1b4e28ba-addon-config"}
	if !reflect.DeepEqual(crsNames, want) {
		t.Fatalf("ClusterResourceSet resources\n%v\nwant\n%v", crsNames, want)
	}
	for name, n := range sizes {
		if n > addons.MaxConfigMapData {
			t.Errorf("ConfigMap %s carries %d bytes, above the limit", name, n)
		}
	}
	if _, ok := sizes["magnetite-addon-metrics-server-v0.8.1"]; ok {
		t.Error("Magnetite wrote the operator's own ConfigMap")
	}

	t.Run("an object larger than a ConfigMap is refused", func(t *testing.T) {
		req := caseRequest(t, "vm-only")
		req.Addons = []driver.RenderedAddon{{Addon: addons.Calico, Docs: []string{"kind: ConfigMap\nmetadata:\n  name: huge\ndata:\n  x: " + strings.Repeat("y", 1100*1024) + "\n"}}}
		if _, err := osDriver.Render(req); err == nil || !strings.Contains(err.Error(), "ConfigMap huge is") {
			t.Fatalf("render with a 1.1 MB object: %v", err)
		}
	})
	t.Run("a label names an unpinned version", func(t *testing.T) {
		req := caseRequest(t, "vm-only")
		req.Template.Labels["calico_tag"] = "v3.26.1"
		if _, err := osDriver.Render(req); err == nil || !strings.Contains(err.Error(), "calico_tag=v3.26.1 is not a pinned calico version; pinned: v3.30.7, v3.31.7, v3.32.1") {
			t.Fatalf("render with calico_tag=v3.26.1: %v", err)
		}
		req.Template.Labels["calico_tag"] = "v3.32.1"
		res, err := osDriver.Render(req)
		if err != nil || res.Addons[0].Pin.Charts[1].Version != "v3.32.1" {
			t.Fatalf("calico_tag=v3.32.1 on Kubernetes 1.33: %v %+v", err, res)
		}
	})
}
