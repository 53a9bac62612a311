package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testcapo"
	"github.com/magnetite-io/magnetite/internal/testcloud"
)

// TestServeBuildsServersThroughTheCAPOStandIn runs serve with Keystone and
// an OpenStack conductor on a real kube-apiserver with Cluster API's core
// and kubeadm managers and internal/testcapo standing in for CAPO against
// the Nova, Neutron, Glance, Cinder and Octavia stand-ins. A VM cluster and
// an all-bare-metal cluster are created at once; Cluster API makes the
// infrastructure cluster (API load balancer with a floating IP) and the
// first control-plane machine, whose server must carry the node group's
// flavor, image, server group, ports, root volume (none for bare metal) and
// config drive.
//
// It stops at the provisioned control-plane machine: no workload API
// server answers here (Cluster API's in-memory one serves only its own
// DevMachines), so the control plane never initialises, kubeadm never
// writes the workers' bootstrap data and CAPO, as it does, keeps worker
// machines WaitingForBootstrapData; the test checks that too. A flavor
// removed behind Magnetite's back shows Nova's refusal in status_reason
// until it is back. Deleting the clusters leaves nothing in the cloud.
func TestServeBuildsServersThroughTheCAPOStandIn(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Keystone, a kube-apiserver and Cluster API; runs in the full suite (hack/test.sh)")
	}
	w := startCloudWorld(t, true)
	ctx := t.Context()
	testcapo.Start(t, w.dc, w.cloud, w.ks.AuthURL())

	template := func(name string, fields map[string]any) {
		t.Helper()
		body := map[string]any{"name": name, "coe": "kubernetes", "image_id": testcloud.ImageName,
			"external_network_id": testcloud.ExternalNet, "master_lb_enabled": true}
		for k, v := range fields {
			body[k] = v
		}
		if res, out := w.api("POST", "/v1/clustertemplates", "", body); res.StatusCode != http.StatusCreated {
			t.Fatalf("template %s: %d %s", name, res.StatusCode, out)
		}
	}
	template("vm", map[string]any{"flavor_id": testcloud.FlavorName, "master_flavor_id": testcloud.MasterFlavor,
		"fixed_network": testcloud.PrivateNet, "labels": map[string]string{"kube_tag": testcloud.KubeTag, "boot_volume_size": "10"}})
	template("bm", map[string]any{"server_type": "bm", "flavor_id": testcloud.BareMetalFlavor, "master_flavor_id": testcloud.BareMetalFlavor,
		"fixed_network": testcloud.ProvisioningNet, "labels": map[string]string{"kube_tag": testcloud.KubeTag}})

	create := func(name, tmpl string) string {
		t.Helper()
		res, body := w.api("POST", "/v1/clusters", "", map[string]any{"name": name, "cluster_template_id": tmpl, "node_count": 1, "master_count": 1})
		if res.StatusCode != http.StatusAccepted {
			t.Fatalf("cluster %s: %d %s", name, res.StatusCode, body)
		}
		var c struct{ UUID string }
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatal(err)
		}
		return c.UUID
	}
	// machines lists the cluster's OpenStackMachines.
	machines := func(uuid string) []unstructured.Unstructured {
		var cl struct {
			Metadata struct{ Name, Namespace string } `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(w.clusterObject(ctx, uuid)), &cl); err != nil {
			t.Fatal(err)
		}
		list, err := w.dc.Resource(testcapo.OpenStackMachines).Namespace(cl.Metadata.Namespace).List(ctx,
			metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/cluster-name=" + cl.Metadata.Name})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	isCP := func(m unstructured.Unstructured) bool {
		_, ok := m.GetLabels()["cluster.x-k8s.io/control-plane"]
		return ok
	}
	// controlPlaneServer waits for the control-plane machine to be
	// provisioned and returns its server.
	controlPlaneServer := func(t *testing.T, uuid string) (unstructured.Unstructured, testcloud.Server) {
		var cp unstructured.Unstructured
		waitFor(t, "the control-plane machine to be provisioned", func() bool {
			for _, m := range machines(uuid) {
				if prov, _, _ := unstructured.NestedBool(m.Object, "status", "initialization", "provisioned"); prov && isCP(m) {
					cp = m
					return true
				}
			}
			return false
		})
		id, _, _ := unstructured.NestedString(cp.Object, "status", "instanceID")
		for _, s := range w.cloud.Servers() {
			if s.ID == id {
				return cp, s
			}
		}
		t.Fatalf("machine %s names server %s, which Nova does not hold", cp.GetName(), id)
		return cp, testcloud.Server{}
	}
	groupOf := func(suffix string) testcloud.ServerGroup {
		for _, g := range w.cloud.ServerGroups() {
			if strings.HasSuffix(g.Name, suffix) {
				return g
			}
		}
		return testcloud.ServerGroup{}
	}

	var uuids sync.Map
	t.Run("servers", func(t *testing.T) {
		cases := []struct {
			name, template, flavorID, network string
			rootVolume, configDrive           bool
			portSecurity                      bool
		}{
			{name: "vm1", template: "vm", flavorID: "3", network: testcloud.PrivateNetID, rootVolume: true, portSecurity: true},
			{name: "bm1", template: "bm", flavorID: "4", network: testcloud.ProvisioningNetID, configDrive: true},
		}
		for _, tc := range cases {
			uuid := create(tc.name, tc.template)
			uuids.Store(tc.name, uuid)
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				cp, s := controlPlaneServer(t, uuid)
				if s.Name != cp.GetName() || s.FlavorID != tc.flavorID || s.ConfigDrive != tc.configDrive || s.Status != "ACTIVE" {
					t.Errorf("server %+v, want flavor %s, config drive %v, ACTIVE, named after machine %s", s, tc.flavorID, tc.configDrive, cp.GetName())
				}
				if g := groupOf("-default-master"); g.ID == "" || s.ServerGroupID == "" || !strings.HasSuffix(groupOfID(w.cloud, s.ServerGroupID), "-default-master") {
					t.Errorf("server group %q is not the control plane's (%+v)", s.ServerGroupID, g)
				}
				if (s.RootVolumeID != "") != tc.rootVolume || (tc.rootVolume && s.ImageID != "") || (!tc.rootVolume && s.ImageID == "") {
					t.Errorf("root volume %q image %q, want a volume %v", s.RootVolumeID, s.ImageID, tc.rootVolume)
				}
				for _, v := range w.cloud.Volumes() {
					if v.ID == s.RootVolumeID && (v.Size != 10 || v.Name != s.Name+"-root" || v.ImageID == "") {
						t.Errorf("root volume %+v", v)
					}
				}
				if len(s.Ports) != 1 {
					t.Fatalf("server ports %v", s.Ports)
				}
				for _, p := range w.cloud.Ports() {
					if p.ID == s.Ports[0] && (p.NetworkID != tc.network || p.PortSecurity != tc.portSecurity ||
						(!tc.portSecurity && len(p.SecurityGroups) > 0) || p.Name != s.Name+"-0") {
						t.Errorf("port %+v, want network %s, port security %v", p, tc.network, tc.portSecurity)
					}
				}
				if pid, _, _ := unstructured.NestedString(cp.Object, "spec", "providerID"); pid != "openstack:///"+s.ID {
					t.Errorf("providerID %q", pid)
				}
				for _, m := range machines(uuid) {
					if isCP(m) {
						continue
					}
					waitFor(t, "the worker machine to wait for bootstrap data", func() bool {
						m2, err := w.dc.Resource(testcapo.OpenStackMachines).Namespace(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
						return err == nil && hasCondition(m2, "InstanceReady", "False", "WaitingForBootstrapData")
					})
				}
			})
		}
	})
	if lbs := w.cloud.LoadBalancers(); len(lbs) != 2 {
		t.Errorf("Octavia holds %d load balancers, want the two clusters' API load balancers: %+v", len(lbs), lbs)
	}

	t.Run("a flavor removed behind Magnetite's back shows Nova's refusal until it is back", func(t *testing.T) {
		uuid := create("refused", "vm")
		uuids.Store("refused", uuid)
		w.clusterObject(ctx, uuid) // Magnetite has read the flavor and rendered it
		w.cloud.RemoveFlavor("3", true)
		var last string
		defer func() {
			if t.Failed() {
				t.Logf("last cluster: %s", last)
				for _, m := range machines(uuid) {
					c, _, _ := unstructured.NestedSlice(m.Object, "status", "conditions")
					t.Logf("machine %s conditions %v", m.GetName(), c)
				}
			}
		}()
		waitFor(t, "status_reason to show Nova's refusal", func() bool {
			_, body := w.api("GET", "/v1/clusters/"+uuid, "", nil)
			last = string(body)
			return strings.Contains(last, "Flavor 3 could not be found.")
		})
		w.cloud.RemoveFlavor("3", false)
		controlPlaneServer(t, uuid)
	})

	t.Run("deleting the clusters leaves nothing in the cloud", func(t *testing.T) {
		uuids.Range(func(_, v any) bool {
			if res, body := w.api("DELETE", "/v1/clusters/"+v.(string), "", nil); res.StatusCode != http.StatusNoContent {
				t.Errorf("delete: %d %s", res.StatusCode, body)
			}
			return true
		})
		uuids.Range(func(_, v any) bool {
			waitFor(t, "the cluster to be gone", func() bool {
				res, _ := w.api("GET", "/v1/clusters/"+v.(string), "", nil)
				return res.StatusCode == http.StatusNotFound
			})
			return true
		})
		if s, p, g, l, v, f := w.cloud.Servers(), w.cloud.Ports(), w.cloud.ServerGroups(), w.cloud.LoadBalancers(), w.cloud.Volumes(), w.cloud.FloatingIPs(); len(s)+len(p)+len(g)+len(l)+len(v)+len(f) > 0 {
			t.Errorf("left in the cloud: servers %+v ports %+v server groups %+v load balancers %+v volumes %+v floating IPs %+v", s, p, g, l, v, f)
		}
		list, err := w.dc.Resource(testcapo.OpenStackMachines).List(ctx, metav1.ListOptions{LabelSelector: mgmt.LabelProjectID})
		if err == nil && len(list.Items) > 0 {
			t.Errorf("%d OpenStackMachines left", len(list.Items))
		}
	})
}

func groupOfID(c *testcloud.Cloud, id string) string {
	for _, g := range c.ServerGroups() {
		if g.ID == id {
			return g.Name
		}
	}
	return ""
}

func hasCondition(o *unstructured.Unstructured, typ, status, reason string) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m := c.(map[string]any)
		if m["type"] == typ && m["status"] == status && m["reason"] == reason {
			return true
		}
	}
	return false
}
