package main

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

var (
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	crsGVR        = schema.GroupVersionResource{Group: "addons.cluster.x-k8s.io", Version: "v1beta2", Resource: "clusterresourcesets"}
)

// TestServeDeliversPinnedAddons runs serve with an OpenStack conductor on a
// real kube-apiserver (Cluster API's and CAPO's CRDs; Keystone real, Nova,
// Glance and Neutron stood in) and a real chart repository on loopback: a
// new cluster's addons are pulled at the versions pinned for its
// Kubernetes minor, rendered with values from the cluster and written as
// ConfigMaps of its ClusterResourceSet, and every object in them passes
// the API server's validation (server-side dry run); an operator's own
// ConfigMap replaces an addon; an upgrade to another minor re-delivers the
// addons at that minor's pins; a chart the source lacks fails the cluster
// with a status_reason that says where it looked and how to mirror; a
// delete removes what Magnetite wrote and keeps what the operator did.
//
// It stops at the management cluster: no Cluster API controllers run here,
// and the in-memory workload API server of Cluster API's test provider
// serves only a handful of kinds (no CustomResourceDefinitions'
// resources such as Calico's Installation, no StorageClass), so the
// ClusterResourceSet could not apply these addons there.
func TestServeDeliversPinnedAddons(t *testing.T) {
	t.Parallel()
	w := startCredentialsWorld(t)
	ctx := t.Context()
	ns := "magnetite-" + w.services["alpha"]

	// The operator brings their own metrics-server manifest, as before
	// Magnetite rendered charts.
	mustCreate(t, w, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
	mustCreate(t, w, configMapsGVR, ns, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "magnetite-addon-metrics-server-v0.8.1"},
		"data":     map[string]any{"metrics.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: metrics-server\n  namespace: kube-system\n"}})

	labels := map[string]string{"kube_tag": testcloud.KubeTag, "container_infra_prefix": "registry.example.net/mirror/",
		"keystone_auth_enabled": "true", "calico_ipv4pool": "10.200.0.0/16"}
	for name, kube := range map[string]string{"k8s": testcloud.KubeTag, "k8s-132": "v1.32.4", "k8s-136": "v1.36.0"} {
		l := map[string]string{}
		for k, v := range labels {
			l[k] = v
		}
		l["kube_tag"] = kube
		res, body := w.api("POST", "/v1/clustertemplates", "", map[string]any{"name": name, "coe": "kubernetes",
			"image_id": testcloud.ImageName, "flavor_id": testcloud.FlavorName, "master_flavor_id": testcloud.MasterFlavor,
			"external_network_id": testcloud.ExternalNet, "network_driver": "calico", "labels": l})
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("template %s: %d %s", name, res.StatusCode, body)
		}
	}
	uuid := w.createCluster("c1", "k8s")
	objName := w.objectName(ctx, uuid)

	cms := w.waitAddonConfigMaps(ctx, uuid, func(m map[string]unstructured.Unstructured) bool {
		return strings.Contains(annotation(m[objName+"-addon-calico"]), "tigera-operator v3.30.7") &&
			annotation(m[objName+"-addon-k8s-keystone-auth"]) != ""
	})
	t.Run("pulled at the pins of Kubernetes 1.31 with the cluster's values", func(t *testing.T) {
		want := map[string]string{
			objName + "-addon-calico": "tigera-operator v3.30.7", objName + "-addon-openstack-cloud-controller-manager": "openstack-cloud-controller-manager 2.31.4",
			objName + "-addon-snapshot-controller": "external-snapshotter v8.6.0",
			objName + "-addon-cinder-csi":          "openstack-cinder-csi 2.31.8", objName + "-addon-k8s-keystone-auth": "k8s-keystone-auth 1.5.1",
		}
		for name, charts := range want {
			if got := annotation(cms[name]); got != charts {
				t.Errorf("ConfigMap %s was rendered from %q, want %q", name, got, charts)
			}
		}
		for name, cm := range cms {
			if _, ok := want[name]; !ok && !strings.HasPrefix(name, objName+"-addon-calico-") {
				t.Errorf("unexpected addon ConfigMap %s (%s)", name, annotation(cm))
			}
		}
		for _, want := range []string{"/tigera-operator-v3.30.7.tgz", "/openstack-cloud-controller-manager-2.31.4.tgz", "/external-snapshotter-v8.6.0.tgz"} {
			if !slices.Contains(w.charts.Requests(), want) {
				t.Errorf("the chart repository was not asked for %s: %v", want, w.charts.Requests())
			}
		}
		calico := addonData(cms, objName+"-addon-calico")
		for _, s := range []string{"cidr: 10.200.0.0/16", "registry: registry.example.net/mirror/", "encapsulation: VXLAN\n", "image: registry.example.net/mirror/tigera/operator:"} {
			if !strings.Contains(calico, s) {
				t.Errorf("the Calico ConfigMap lacks %q:\n%s", s, calico)
			}
		}
		if ks := data(cms[objName+"-addon-k8s-keystone-auth"]); !strings.Contains(ks, "- "+w.ks.AuthURL()+"\n") {
			t.Errorf("k8s-keystone-auth does not talk to the cloud's Keystone:\n%s", ks)
		}
		if ccm := data(cms[objName+"-addon-openstack-cloud-controller-manager"]); !strings.Contains(ccm, "secretName: cloud-config") || !strings.Contains(ccm, "value: "+objName+"\n") {
			t.Errorf("the cloud controller manager does not read cloud-config:\n%s", ccm)
		}
		res := w.crsResources(ctx, ns, objName)
		var calicoParts []string
		for _, name := range slices.Sorted(maps.Keys(cms)) {
			if strings.HasPrefix(name, objName+"-addon-calico") {
				calicoParts = append(calicoParts, name)
			}
		}
		wantRes := append(append([]string{objName + "-cloud-config-addon"}, calicoParts...), objName+"-addon-openstack-cloud-controller-manager",
			objName+"-addon-snapshot-controller", objName+"-addon-cinder-csi", objName+"-addon-k8s-keystone-auth", "magnetite-addon-metrics-server-v0.8.1", objName+"-addon-config")
		if !slices.Equal(res, wantRes) {
			t.Errorf("ClusterResourceSet resources\n%v\nwant\n%v", res, wantRes)
		}
		cl := w.clusterStatus(uuid)
		if cl.HealthStatusReason["addons"] != "waiting for the control plane" {
			t.Errorf("health_status_reason addons = %q", cl.HealthStatusReason["addons"])
		}
	})

	t.Run("the API server accepts every delivered object", func(t *testing.T) {
		var objs []*unstructured.Unstructured
		for _, name := range slices.Sorted(maps.Keys(cms)) {
			got, err := testenv.DecodeObjects(strings.NewReader(data(cms[name])))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			objs = append(objs, got...)
		}
		// The workload cluster gets the CRDs and namespaces first (the
		// ClusterResourceSet sorts them so): create them for real, then
		// dry-run everything.
		mapper := w.env.Mapper(t)
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" || o.GetKind() == "Namespace" {
				if _, err := testenv.ServerSideApply(ctx, w.dc, mapper, o, false); err != nil {
					t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
		}
		testenv.WaitFor(t, "the addons' CRDs to be served", 2*time.Minute, func() (bool, string) {
			m := w.env.Mapper(t)
			for _, o := range objs {
				if o.GetKind() != "CustomResourceDefinition" {
					continue
				}
				group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
				kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
				if _, err := m.RESTMapping(schema.GroupKind{Group: group, Kind: kind}); err != nil {
					return false, err.Error()
				}
			}
			return true, ""
		})
		mapper = w.env.Mapper(t)
		for _, o := range objs {
			if err := testenv.DryRunApply(ctx, w.dc, mapper, o); err != nil {
				t.Errorf("%s %s/%s refused: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
		if len(objs) < 8 {
			t.Errorf("only %d objects delivered", len(objs))
		}
	})

	t.Run("an upgrade to Kubernetes 1.32 re-delivers the addons at its pins", func(t *testing.T) {
		res, body := w.api("POST", "/v1/clusters/"+uuid+"/actions/upgrade", "", map[string]any{"cluster_template": "k8s-132"})
		if res.StatusCode != http.StatusAccepted {
			t.Fatalf("upgrade: %d %s", res.StatusCode, body)
		}
		// The conductor writes the ConfigMaps one by one: wait for all.
		want := map[string]string{objName + "-addon-calico": "tigera-operator v3.31.7",
			objName + "-addon-openstack-cloud-controller-manager": "openstack-cloud-controller-manager 2.32.1",
			objName + "-addon-cinder-csi":                         "openstack-cinder-csi 2.32.2"}
		upgraded := func(m map[string]unstructured.Unstructured) bool {
			for name, charts := range want {
				if annotation(m[name]) != charts {
					return false
				}
			}
			return true
		}
		cms := w.waitAddonConfigMaps(ctx, uuid, upgraded)
		for name, charts := range want {
			if got := annotation(cms[name]); got != charts {
				t.Errorf("after the upgrade %s holds %q, want %q", name, got, charts)
			}
		}
	})

	t.Run("addons list shows what each cluster got", func(t *testing.T) {
		conf := filepath.Join(t.TempDir(), "magnetite.conf")
		if err := os.WriteFile(conf, []byte("[management]\nkubeconfig = "+w.kubeconfig+"\n[addons]\nsource = "+w.charts.URL+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := runMagnetite(t, "addons", "list", "--clusters", "--kube-version", "v1.32", "--config-file", conf, "--config-dir", filepath.Dir(conf))
		if err != nil {
			t.Fatalf("addons list --clusters: %v\n%s", err, out)
		}
		rows := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 3 && f[0] == uuid && f[1] == ns {
				rows[f[2]] = strings.Join(f[3:], " ")
			}
		}
		want := map[string]string{"calico": "tigera-operator v3.31.7", "openstack-cloud-controller-manager": "openstack-cloud-controller-manager 2.32.1",
			"snapshot-controller": "external-snapshotter v8.6.0", "cinder-csi": "openstack-cinder-csi 2.32.2", "k8s-keystone-auth": "k8s-keystone-auth 1.5.1",
			"metrics-server": "the operator's ConfigMap magnetite-addon-metrics-server-v0.8.1"}
		if !reflect.DeepEqual(rows, want) {
			t.Errorf("addons list --clusters for the cluster: %v, want %v\n%s", rows, want, out)
		}
	})

	t.Run("a chart missing from the source fails the cluster with the reason", func(t *testing.T) {
		bad := w.createCluster("c136", "k8s-136")
		var reason string
		testenv.WaitFor(t, "the cluster to fail", 2*time.Minute, func() (bool, string) {
			cl := w.clusterStatus(bad)
			reason = cl.StatusReason
			return cl.Status == "CREATE_FAILED", ""
		})
		for _, s := range []string{"openstack-cloud-controller-manager", "2.36.0", w.charts.URL, "magnetite addons mirror"} {
			if !strings.Contains(reason, s) {
				t.Errorf("status_reason lacks %q: %s", s, reason)
			}
		}
	})

	t.Run("deleting the cluster removes what Magnetite wrote", func(t *testing.T) {
		res, body := w.api("DELETE", "/v1/clusters/"+uuid, "", nil)
		if res.StatusCode != http.StatusNoContent {
			t.Fatalf("delete: %d %s", res.StatusCode, body)
		}
		testenv.WaitFor(t, "the cluster to be gone", 2*time.Minute, func() (bool, string) {
			res, _ := w.api("GET", "/v1/clusters/"+uuid, "", nil)
			return res.StatusCode == http.StatusNotFound, ""
		})
		for _, gvr := range []schema.GroupVersionResource{configMapsGVR, crsGVR} {
			list, err := w.dc.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: mgmt.ClusterSelector(uuid)})
			if err != nil || len(list.Items) != 0 {
				t.Errorf("%s of the deleted cluster are left: %v %d", gvr.Resource, err, len(list.Items))
			}
		}
		if _, err := w.dc.Resource(configMapsGVR).Namespace(ns).Get(ctx, "magnetite-addon-metrics-server-v0.8.1", metav1.GetOptions{}); err != nil {
			t.Errorf("the operator's own addon ConfigMap went with the cluster: %v", err)
		}
	})
}

func mustCreate(t *testing.T, w *credentialsWorld, gvr schema.GroupVersionResource, ns string, obj map[string]any) {
	t.Helper()
	ri := w.dc.Resource(gvr)
	var err error
	if ns == "" {
		_, err = ri.Create(t.Context(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	} else {
		_, err = ri.Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (w *credentialsWorld) createCluster(name, template string) string {
	w.t.Helper()
	res, body := w.api("POST", "/v1/clusters", "", map[string]any{"name": name, "cluster_template_id": template, "node_count": 1})
	if res.StatusCode != http.StatusAccepted {
		w.t.Fatalf("cluster %s: %d %s", name, res.StatusCode, body)
	}
	var created struct{ UUID string }
	if err := json.Unmarshal(body, &created); err != nil {
		w.t.Fatal(err)
	}
	return created.UUID
}

type clusterStatus struct {
	Status             string            `json:"status"`
	StatusReason       string            `json:"status_reason"`
	HealthStatusReason map[string]string `json:"health_status_reason"`
}

func (w *credentialsWorld) clusterStatus(uuid string) clusterStatus {
	w.t.Helper()
	res, body := w.api("GET", "/v1/clusters/"+uuid, "", nil)
	var cl clusterStatus
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &cl) != nil {
		w.t.Fatalf("GET cluster: %d %s", res.StatusCode, body)
	}
	return cl
}

func (w *credentialsWorld) objectName(ctx context.Context, uuid string) string {
	var cl struct{ Metadata struct{ Name string } }
	if err := json.Unmarshal([]byte(w.clusterObject(ctx, uuid)), &cl); err != nil {
		w.t.Fatal(err)
	}
	return cl.Metadata.Name
}

// waitAddonConfigMaps waits until the cluster's addon ConfigMaps satisfy
// done, and returns them by name.
func (w *credentialsWorld) waitAddonConfigMaps(ctx context.Context, uuid string, done func(map[string]unstructured.Unstructured) bool) map[string]unstructured.Unstructured {
	w.t.Helper()
	var out map[string]unstructured.Unstructured
	testenv.WaitFor(w.t, "the cluster's addon ConfigMaps", 2*time.Minute, func() (bool, string) {
		list, err := w.dc.Resource(configMapsGVR).Namespace("").List(ctx, metav1.ListOptions{LabelSelector: mgmt.ClusterSelector(uuid) + ",magnetite.io/addon"})
		if err != nil {
			w.t.Fatal(err)
		}
		out = map[string]unstructured.Unstructured{}
		for _, cm := range list.Items {
			out[cm.GetName()] = cm
		}
		return done(out), ""
	})
	return out
}

func (w *credentialsWorld) crsResources(ctx context.Context, ns, objName string) []string {
	w.t.Helper()
	crs, err := w.dc.Resource(crsGVR).Namespace(ns).Get(ctx, objName+"-addons", metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	rs, _, _ := unstructured.NestedSlice(crs.Object, "spec", "resources")
	var out []string
	for _, r := range rs {
		out = append(out, r.(map[string]any)["name"].(string))
	}
	return out
}

// addonData joins the data of an addon's ConfigMaps (name, name-2, ...).
func addonData(cms map[string]unstructured.Unstructured, name string) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(cms)) {
		if n == name || strings.HasPrefix(n, name+"-") && strings.Trim(n[len(name)+1:], "0123456789") == "" {
			b.WriteString(data(cms[n]))
		}
	}
	return b.String()
}

func annotation(cm unstructured.Unstructured) string {
	return cm.GetAnnotations()["magnetite.io/addon-charts"]
}

func data(cm unstructured.Unstructured) string {
	d, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(d)) {
		b.WriteString(d[k])
	}
	return b.String()
}
