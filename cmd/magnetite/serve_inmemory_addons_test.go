package main

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/testing/testcharts"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/teststack"
)

// TestKeystoneAuthAndManilaClustersCompleteWithTheRealCharts creates, through
// real Keystone, a cluster with keystone_auth_enabled=true and one with
// Manila on the local Cluster API plane (kube-apiserver, Cluster API's
// managers, CAPD's in-memory backend), with the real upstream charts of
// every pin served as the conductor's chart source ([addons] source) and
// [conductor] inmemory_addons on. Both reach CREATE_COMPLETE, and the
// addons the conductor rendered from those charts carry the cluster's
// values: k8s-keystone-auth asks the cloud's Keystone and lets the owning
// project in; Manila comes with the NFS CSI driver its node plugin hands
// mounts to, applied before it.
//
// The simulated workload API server serves only a few core kinds, so the
// ClusterResourceSet cannot apply the addons there; what is checked is
// what Magnetite delivers to the management cluster for Cluster API.
func TestKeystoneAuthAndManilaClustersCompleteWithTheRealCharts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Keystone and a local Cluster API for minutes; runs in the full suite")
	}
	repo := testcharts.Serve(t)
	st := teststack.Start(t, "[addons]\nsource = "+repo.URL+"\n[conductor]\ninmemory_addons = true\n")
	projectID := st.Keystone.ProjectID(teststack.Project)

	clusters := map[string]struct {
		kubeTag string
		labels  map[string]string
	}{
		"keystone": {"v1.36.0", map[string]string{"keystone_auth_enabled": "true"}},
		"manila":   {"v1.31.2", map[string]string{"manila_csi_enabled": "true", "manila_csi_share_network_id": "4f1b6a8e-2c1d-4e59-9a3b-7d2e5c0f8a61"}},
	}
	uuids := map[string]string{}
	for name, c := range clusters {
		labels := map[string]string{"kube_tag": c.kubeTag}
		for k, v := range c.labels {
			labels[k] = v
		}
		var tpl struct{ UUID string }
		if code, body := st.Do(t, http.MethodPost, "/clustertemplates", map[string]any{"name": name, "coe": "kubernetes",
			"image_id": "ubuntu-2204-kube-" + c.kubeTag, "external_network_id": "public", "network_driver": "calico", "labels": labels}, &tpl); code != http.StatusCreated {
			t.Fatalf("template %s: HTTP %d %s", name, code, body)
		}
		var cl struct{ UUID string }
		if code, body := st.Do(t, http.MethodPost, "/clusters", map[string]any{"name": name, "cluster_template_id": tpl.UUID,
			"master_count": 1, "node_count": 1}, &cl); code != http.StatusAccepted {
			t.Fatalf("cluster %s: HTTP %d %s", name, code, body)
		}
		uuids[name] = cl.UUID
	}

	// Both clusters build at once; waiting for one after the other costs
	// nothing.
	for _, name := range slices.Sorted(maps.Keys(uuids)) {
		testenv.WaitFor(t, "cluster "+name+" to be CREATE_COMPLETE", 8*time.Minute, func() (bool, string) {
			var c teststack.Cluster
			st.Get(t, "/clusters/"+uuids[name], &c)
			if strings.HasSuffix(c.Status, "_FAILED") {
				t.Fatalf("cluster %s is %s: %s", name, c.Status, c.StatusReason)
			}
			return c.Status == "CREATE_COMPLETE", c.Status + ": " + c.StatusReason
		})
	}

	dc := st.Mgmt.Dynamic(t)
	delivered := func(t *testing.T, uuid string) (map[string]unstructured.Unstructured, []string) {
		t.Helper()
		l, err := dc.Resource(configMapsGVR).Namespace("").List(t.Context(), metav1.ListOptions{LabelSelector: capi.LabelClusterUUID + "=" + uuid + "," + driver.LabelAddon})
		if err != nil {
			t.Fatal(err)
		}
		cms := map[string]unstructured.Unstructured{}
		for _, cm := range l.Items {
			cms[cm.GetLabels()[driver.LabelAddon]] = cm
		}
		sets, err := dc.Resource(crsGVR).Namespace("").List(t.Context(), metav1.ListOptions{LabelSelector: capi.LabelClusterUUID + "=" + uuid})
		if err != nil || len(sets.Items) != 1 {
			t.Fatalf("the cluster's ClusterResourceSets: %v %v", sets, err)
		}
		var resources []string
		rs, _, _ := unstructured.NestedSlice(sets.Items[0].Object, "spec", "resources")
		for _, r := range rs {
			resources = append(resources, r.(map[string]any)["name"].(string))
		}
		return cms, resources
	}
	objects := func(t *testing.T, cm unstructured.Unstructured) []*unstructured.Unstructured {
		t.Helper()
		objs, err := testenv.DecodeObjects(strings.NewReader(data(cm)))
		if err != nil {
			t.Fatalf("ConfigMap %s: %v", cm.GetName(), err)
		}
		return objs
	}
	find := func(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, o := range objs {
			if o.GetKind() == kind {
				out = append(out, o)
			}
		}
		return out
	}
	// containerArgs are the arguments of every container of the workloads.
	containerArgs := func(workloads []*unstructured.Unstructured) []string {
		var out []string
		for _, w := range workloads {
			cs, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "containers")
			for _, c := range cs {
				args, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
				out = append(out, args...)
			}
		}
		return out
	}

	t.Run("k8s-keystone-auth asks the cloud's Keystone and lets the owning project in", func(t *testing.T) {
		cms, resources := delivered(t, uuids["keystone"])
		cm, ok := cms[addons.KeystoneAuth]
		if !ok {
			t.Fatalf("no %s ConfigMap among %v", addons.KeystoneAuth, resources)
		}
		if got := annotation(cm); got != "k8s-keystone-auth 1.5.1" {
			t.Errorf("k8s-keystone-auth rendered from %q", got)
		}
		if !slices.Contains(resources, cm.GetName()) {
			t.Errorf("the ClusterResourceSet does not apply %s: %v", cm.GetName(), resources)
		}
		objs := objects(t, cm)
		args := containerArgs(find(objs, "DaemonSet"))
		if i := slices.Index(args, "--keystone-url"); i < 0 || i+1 >= len(args) || args[i+1] != st.Keystone.AuthURL() {
			t.Errorf("k8s-keystone-auth's --keystone-url is not %s: %v", st.Keystone.AuthURL(), args)
		}
		var policies []struct {
			Users struct{ Projects []string } `json:"users"`
		}
		for _, o := range find(objs, "ConfigMap") {
			if p, ok, _ := unstructured.NestedString(o.Object, "data", "policies"); ok {
				if err := json.Unmarshal([]byte(p), &policies); err != nil {
					t.Fatalf("policies of %s: %v\n%s", o.GetName(), err, p)
				}
			}
		}
		if len(policies) == 0 {
			t.Fatalf("no policy ConfigMap among the rendered objects")
		}
		for _, p := range policies {
			if !slices.Equal(p.Users.Projects, []string{projectID}) {
				t.Errorf("a policy grants projects %v, want the owner's %s", p.Users.Projects, projectID)
			}
		}
	})

	t.Run("Manila comes with the NFS CSI driver, applied before it", func(t *testing.T) {
		cms, resources := delivered(t, uuids["manila"])
		nfs, ok := cms[addons.NFSCSI]
		if !ok {
			t.Fatalf("no %s ConfigMap among %v", addons.NFSCSI, resources)
		}
		manila, ok := cms[addons.ManilaCSI]
		if !ok {
			t.Fatalf("no %s ConfigMap among %v", addons.ManilaCSI, resources)
		}
		if got := annotation(nfs); got != "csi-driver-nfs 4.13.4" {
			t.Errorf("csi-driver-nfs rendered from %q", got)
		}
		if got := annotation(manila); got != "openstack-manila-csi 2.31.5" {
			t.Errorf("Manila CSI rendered from %q", got)
		}
		if i, j := slices.Index(resources, nfs.GetName()), slices.Index(resources, manila.GetName()); i < 0 || j < 0 || i > j {
			t.Errorf("the ClusterResourceSet applies %s at %d and %s at %d, want NFS first: %v", nfs.GetName(), i, manila.GetName(), j, resources)
		}
		var drivers []string
		for _, o := range find(objects(t, nfs), "CSIDriver") {
			drivers = append(drivers, o.GetName())
		}
		if !slices.Contains(drivers, "nfs.csi.k8s.io") {
			t.Errorf("the NFS ConfigMap registers CSI drivers %v, want nfs.csi.k8s.io", drivers)
		}
		// The NFS node plugin listens where Manila's forwards its mounts.
		const socket = "/var/lib/kubelet/plugins/csi-nfsplugin/csi.sock"
		if m := data(manila); !strings.Contains(m, socket) {
			t.Errorf("Manila's node plugin does not forward to %s:\n%s", socket, m)
		}
		if n := data(nfs); !strings.Contains(n, "/var/lib/kubelet/plugins/csi-nfsplugin") {
			t.Errorf("the NFS node plugin does not listen in /var/lib/kubelet/plugins/csi-nfsplugin:\n%s", n)
		}
	})

	// What Cluster API made of the ClusterResourceSets on the simulated
	// workload clusters, for whoever reads the log.
	for name, uuid := range uuids {
		var c struct {
			HealthStatusReason map[string]string `json:"health_status_reason"`
		}
		st.Get(t, "/clusters/"+uuid, &c)
		t.Logf("cluster %s: health_status_reason addons = %q", name, c.HealthStatusReason["addons"])
	}
}
