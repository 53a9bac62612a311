package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestServeWithTheMetal3Backend runs serve with [baremetal] backend =
// metal3 against a real kube-apiserver with baremetal-operator's CRDs: a
// host enrolled through the API lands as a BareMetalHost in
// metal3_namespace, and the capacity preflight counts Metal3 hosts.
func TestServeWithTheMetal3Backend(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t)
	env.InstallProviders(t, "bmo")
	env.CreateNamespace(t, "hosts")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dc := env.Dynamic(t)
	dir := t.TempDir()
	kubeconfig := env.KubeconfigFile(t)
	cfg := serveConfig(t, "MAGNETITE_DEFAULT_STATE_DIR="+dir, "MAGNETITE_AUTH_NOAUTH_ROLES=admin",
		"MAGNETITE_LOG_LEVEL=error", "MAGNETITE_BAREMETAL_BACKEND=metal3", "MAGNETITE_BAREMETAL_METAL3_NAMESPACE=hosts",
		"MAGNETITE_MANAGEMENT_KUBECONFIG="+kubeconfig)
	log, err := newLogger(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serveUntil(t, cfg, log)

	post := func(path string, body any) (*http.Response, []byte) {
		t.Helper()
		return apiJSON(t, "POST", "http://"+addr+path, body)
	}
	res, body := post("/v1/hosts", map[string]any{"name": "node-0", "bmc_address": "redfish://10.0.0.8/redfish/v1/Systems/1",
		"bmc_username": "admin", "bmc_password": "s3cret", "resource_class": "baremetal-gold"})
	var h apitypes.Host
	if res.StatusCode != http.StatusCreated || json.Unmarshal(body, &h) != nil || h.Backend != "metal3" {
		t.Fatalf("enroll: %d %s", res.StatusCode, body)
	}
	bmh, err := dc.Resource(schema.GroupVersionResource{Group: "metal3.io", Version: "v1alpha1", Resource: "baremetalhosts"}).
		Namespace("hosts").Get(ctx, "node-0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the enrolled host is not a BareMetalHost in namespace hosts: %v", err)
	}
	if addr, _, _ := unstructured.NestedString(bmh.Object, "spec", "bmc", "address"); addr != "redfish://10.0.0.8/redfish/v1/Systems/1" {
		t.Errorf("BareMetalHost BMC address %q", addr)
	}

	// A capi-metal3 template's node groups count Metal3 hosts: the new
	// host is still registering, so none is free.
	res, body = post("/v1/clustertemplates", map[string]any{"name": "m3", "coe": "kubernetes", "image_id": "ubuntu-noble",
		"server_type": "bm", "driver": "capi-metal3", "labels": map[string]string{"kube_tag": "v1.33.1"}})
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("a capi-metal3 template: %d %s", res.StatusCode, body)
	}
	res, body = post("/v1/clusters", map[string]any{"name": "c", "cluster_template_id": "m3", "node_count": 1})
	if res.StatusCode != http.StatusConflict || !bytes.Contains(body, []byte("Metal3 hosts")) {
		t.Errorf("a Metal3 cluster with no free host: %d %s", res.StatusCode, body)
	}
}
