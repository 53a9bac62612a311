package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestServeCreatesAndDeletesOnACloudWithoutL3OrOctavia runs serve against a
// cloud whose Neutron has no L3 extension (no routers, no floating IPs),
// and against one without Octavia: the cluster is rendered without what the
// cloud cannot give, and its delete finishes (the leftovers sweep asks only
// the services the cloud has) instead of retrying Neutron's 404 for ever.
func TestServeCreatesAndDeletesOnACloudWithoutL3OrOctavia(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		missing  testcloud.Missing
		template map[string]any
		rendered []string
	}{
		{name: "without L3", missing: testcloud.WithoutL3,
			template: map[string]any{"master_lb_enabled": true},
			// The management cluster serves CAPO v0.14's v1beta1.
			rendered: []string{`"disableExternalNetwork":true`, `"disableAPIServerFloatingIP":true`, `"apiServerLoadBalancer":{"enabled":true}`}},
		{name: "without Octavia", missing: testcloud.WithoutOctavia,
			rendered: []string{`"apiServerLoadBalancer":{"enabled":false}`, `"disableAPIServerFloatingIP":false`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each on a Keystone and cloud of its own
			w := startCredentialsWorldWithout(t, tc.missing)
			ctx := t.Context()
			body := map[string]any{"name": "k8s", "coe": "kubernetes", "image_id": testcloud.ImageName,
				"flavor_id": testcloud.FlavorName, "master_flavor_id": testcloud.MasterFlavor,
				"external_network_id": testcloud.ExternalNet, "labels": map[string]string{"kube_tag": testcloud.KubeTag}}
			for k, v := range tc.template {
				body[k] = v
			}
			if res, out := w.api("POST", "/v1/clustertemplates", "", body); res.StatusCode != http.StatusCreated {
				t.Fatalf("template: %d %s", res.StatusCode, out)
			}
			if tc.missing == testcloud.WithoutOctavia {
				// A load balancer the cloud cannot give is refused at create.
				lb := map[string]any{"master_lb_enabled": true}
				for k, v := range body {
					lb[k] = v
				}
				lb["name"], lb["master_lb_enabled"] = "k8s-lb", true
				if res, out := w.api("POST", "/v1/clustertemplates", "", lb); res.StatusCode != http.StatusCreated {
					t.Fatalf("template: %d %s", res.StatusCode, out)
				}
				res, out := w.api("POST", "/v1/clusters", "", map[string]any{"name": "balanced", "cluster_template_id": "k8s-lb", "node_count": 1})
				if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), "the cloud has no Octavia") {
					t.Errorf("a cluster with a load balancer on a cloud without Octavia: %d %s, want 400", res.StatusCode, out)
				}
			}
			uuid := w.createCluster("plain", "k8s")
			obj := w.clusterObject(ctx, uuid)
			for _, want := range tc.rendered {
				if !strings.Contains(obj, want) {
					t.Errorf("the Cluster lacks %s:\n%s", want, obj)
				}
			}
			if res, out := w.api("DELETE", "/v1/clusters/"+uuid, "", nil); res.StatusCode != http.StatusNoContent {
				t.Fatalf("delete: %d %s", res.StatusCode, out)
			}
			testenv.WaitFor(t, "the cluster to be deleted", 2*time.Minute, func() (bool, string) {
				res, out := w.api("GET", "/v1/clusters/"+uuid, "", nil)
				if res.StatusCode == http.StatusNotFound {
					return true, ""
				}
				if strings.Contains(string(out), "DELETE_FAILED") {
					t.Fatalf("the delete failed: %s", out)
				}
				return false, string(out)
			})
		})
	}
}
