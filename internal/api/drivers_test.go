package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/inmemory"
	"github.com/magnetite-io/magnetite/internal/driver/capi/openstack"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// startWithDrivers runs the API with Magnetite's real driver registry and
// label schema, as `magnetite serve` wires them, then the extra options.
func startWithDrivers(t *testing.T, extra ...testapi.Option) *testapi.Server {
	t.Helper()
	reg := driver.NewRegistry()
	if err := reg.Register(openstack.New(capi.Options{})); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterExplicit(inmemory.New(capi.Options{}, inmemory.Options{})); err != nil {
		t.Fatal(err)
	}
	return testapi.Start(t, append([]testapi.Option{func(o *api.Options) {
		o.Drivers = reg
		o.ValidateLabels = func(ct *model.ClusterTemplate, l map[string]string) error { return labels.Check(ct.Labels, l) }
	}}, extra...)...)
}

// call sends a JSON request at the latest microversion and returns the
// status and the decoded body.
func call(t *testing.T, srv *testapi.Server, method, path string, body any) (int, map[string]any) {
	t.Helper()
	res := srv.Do(t, method, path, body, testapi.Latest())
	var out map[string]any
	_ = json.Unmarshal(res.Body, &out)
	return res.Status, out
}

func detail(body map[string]any) string {
	errs, _ := body["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	d, _ := errs[0].(map[string]any)["detail"].(string)
	return d
}

func template(extra map[string]any) map[string]any {
	t := map[string]any{"name": "k8s", "coe": "kubernetes", "image_id": "ubuntu-2404-kube-v1.33.1",
		"external_network_id": "public", "flavor_id": "m1.large", "master_flavor_id": "m1.large"}
	for k, v := range extra {
		t[k] = v
	}
	return t
}

func TestTemplateWithoutDriverIsRefusedNamingTheTuple(t *testing.T) {
	srv := startWithDrivers(t)
	cases := []struct {
		body map[string]any
		want string
	}{
		{template(map[string]any{"server_type": "bm", "image_id": "fedora-coreos-40"}),
			"Cluster type (server_type=bm, os_distro=fedora-coreos, coe=kubernetes) not supported"},
		{template(map[string]any{"image_id": "my-golden-image"}), "os_distro=(unknown: set cluster_distro"},
		{template(map[string]any{"driver": "k8s_cluster_api_ubuntu"}), `the driver "k8s_cluster_api_ubuntu" is not available`},
	}
	for _, c := range cases {
		status, body := call(t, srv, "POST", "/v1/clustertemplates", c.body)
		if status != http.StatusBadRequest || !strings.Contains(detail(body), c.want) {
			t.Errorf("POST %v: %d %q, want 400 containing %q", c.body, status, detail(body), c.want)
		}
	}
	for _, ok := range []map[string]any{
		template(nil),
		template(map[string]any{"server_type": "bm", "cluster_distro": "flatcar", "image_id": "my-image"}),
		template(map[string]any{"image_id": "rocky-9-kube", "cluster_distro": "rockylinux"}),
		template(map[string]any{"image_id": "debian-12", "driver": "capi-inmemory"}),
	} {
		if status, body := call(t, srv, "POST", "/v1/clustertemplates", ok); status != http.StatusCreated {
			t.Errorf("POST %v: %d %s", ok, status, detail(body))
		}
	}
	// Changing a template into one no driver builds is refused too.
	_, body := call(t, srv, "POST", "/v1/clustertemplates", template(map[string]any{"name": "patched"}))
	uuid, _ := body["uuid"].(string)
	status, body := call(t, srv, "PATCH", "/v1/clustertemplates/"+uuid,
		[]map[string]any{{"op": "replace", "path": "/cluster_distro", "value": "fedora-coreos"}})
	if status != http.StatusBadRequest || !strings.Contains(detail(body), "os_distro=fedora-coreos") {
		t.Errorf("PATCH: %d %q", status, detail(body))
	}
}

func TestClusterOfTemplateWithoutDriverIsRefused(t *testing.T) {
	srv := startWithDrivers(t)
	// A template stored before the driver went away (or by an older
	// release) still cannot produce clusters.
	distro := "fedora-coreos"
	ct := &model.ClusterTemplate{UUID: "5a1c1b2e-0000-4000-8000-000000000001", Name: "old",
		TemplateSpec: model.TemplateSpec{COE: "kubernetes", ImageID: "fedora-coreos-40",
			ServerType: model.ServerTypeBM, ClusterDistro: &distro, Labels: map[string]string{}},
		ProjectID: "default"}
	if err := srv.Store.CreateClusterTemplate(context.Background(), ct); err != nil {
		t.Fatal(err)
	}
	status, body := call(t, srv, "POST", "/v1/clusters", map[string]any{"name": "c1", "cluster_template_id": ct.UUID})
	if status != http.StatusBadRequest || !strings.Contains(detail(body), "server_type=bm, os_distro=fedora-coreos, coe=kubernetes") {
		t.Errorf("cluster create: %d %q", status, detail(body))
	}
}

func TestInvalidLabelsAreRefusedNamingLabelAndForm(t *testing.T) {
	srv := startWithDrivers(t)
	status, body := call(t, srv, "POST", "/v1/clustertemplates", template(map[string]any{
		"labels": map[string]any{"boot_volume_size": "lots", "my_own": "kept"}}))
	if status != http.StatusBadRequest || !strings.Contains(detail(body), `label boot_volume_size="lots" is invalid: expected a whole number of GiB >= 0`) {
		t.Fatalf("template: %d %q", status, detail(body))
	}
	status, body = call(t, srv, "POST", "/v1/clustertemplates", template(map[string]any{
		"labels": map[string]any{"calico_tag": "v3.32.1", "my_own": "kept"}}))
	if status != http.StatusCreated {
		t.Fatalf("template: %d %q", status, detail(body))
	}
	if l, _ := body["labels"].(map[string]any); l["my_own"] != "kept" {
		t.Errorf("unknown label dropped: %v", body["labels"])
	}
	ctID, _ := body["uuid"].(string)
	for _, c := range []struct {
		labels map[string]any
		want   string
	}{
		{map[string]any{"auto_healing_enabled": "sometimes"}, `label auto_healing_enabled="sometimes" is invalid: expected true or false`},
		{map[string]any{"calico_tag": "v3.99.0"}, "calico_tag can only be set on the template"},
		{map[string]any{"extra_files": "- path: /x\n  content: IyEvYmluL3NoCmVjaG8gaGVsbG8K\n"}, "already base64-encoded"},
	} {
		status, body := call(t, srv, "POST", "/v1/clusters", map[string]any{"name": "c", "cluster_template_id": ctID, "labels": c.labels})
		if status != http.StatusBadRequest || !strings.Contains(detail(body), c.want) {
			t.Errorf("cluster labels %v: %d %q, want 400 with %q", c.labels, status, detail(body), c.want)
		}
	}
	status, body = call(t, srv, "POST", "/v1/clusters", map[string]any{"name": "c", "cluster_template_id": ctID,
		"labels": map[string]any{"kube_tag": "v1.33.1", "team": "web"}})
	if status != http.StatusAccepted {
		t.Fatalf("valid cluster: %d %q", status, detail(body))
	}
	clusterID, _ := body["uuid"].(string)
	status, body = call(t, srv, "POST", "/v1/clusters/"+clusterID+"/nodegroups", map[string]any{"name": "metal",
		"labels": map[string]any{"node_startup_timeout": "forever"}})
	if status != http.StatusBadRequest || !strings.Contains(detail(body), "label node_startup_timeout") {
		t.Errorf("node group: %d %q", status, detail(body))
	}
}
