package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// bayModelBody is what magnum-tempest-plugin's datagen sends for a baymodel.
func bayModelBody(name string) map[string]any {
	return map[string]any{
		"name": name, "coe": "kubernetes", "tls_disabled": false, "network_driver": nil, "volume_driver": nil,
		"labels": map[string]any{}, "public": false, "dns_nameserver": "8.8.8.8", "flavor_id": "m1.small",
		"master_flavor_id": "m1.medium", "external_network_id": "public", "keypair_id": "magnum-test",
		"image_id": "ubuntu-2204-kube-v1.31.2",
	}
}

// errorDetail is the detail of a Magnum error document.
func errorDetail(t *testing.T, r *response) string {
	t.Helper()
	var doc struct {
		Errors []struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
		} `json:"errors"`
	}
	r.decode(t, &doc)
	if len(doc.Errors) != 1 || doc.Errors[0].Status != r.Status {
		t.Fatalf("not a Magnum error document: %s", r.Body)
	}
	return doc.Errors[0].Detail
}

func wantKeys(t *testing.T, what string, m map[string]any, present, absent []string) {
	t.Helper()
	for _, k := range present {
		if _, ok := m[k]; !ok {
			t.Errorf("%s lacks %s: %v", what, k, m)
		}
	}
	for _, k := range absent {
		if _, ok := m[k]; ok {
			t.Errorf("%s has %s, which Magnum's bay-era API does not show: %v", what, k, m)
		}
	}
}

// refusal is a request that must be refused with status and a detail
// that contains detail.
type refusal struct {
	name, method, path string
	body               any
	status             int
	detail             string
}

func refused(t *testing.T, c *client, cases []refusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub := *c
			sub.t = t
			r := sub.must(tc.status, tc.method, tc.path, tc.body)
			if d := errorDetail(t, r); !strings.Contains(d, tc.detail) {
				t.Errorf("detail %q lacks %q", d, tc.detail)
			}
		})
	}
}

func selfLink(t *testing.T, m map[string]any) string {
	t.Helper()
	links, _ := m["links"].([]any)
	for _, l := range links {
		if l, ok := l.(map[string]any); ok && l["rel"] == "self" {
			return l["href"].(string)
		}
	}
	t.Fatalf("no self link: %v", m)
	return ""
}

func listedUUIDs(t *testing.T, r *response, key string) []string {
	t.Helper()
	var ids []string
	items, ok := r.object(t)[key].([]any)
	if !ok {
		t.Fatalf("answer has no list %q: %s", key, r.Body)
	}
	for _, it := range items {
		ids = append(ids, it.(map[string]any)["uuid"].(string))
	}
	return ids
}

func TestBayModelsAreClusterTemplatesUnderTheirOldName(t *testing.T) {
	srv := testapi.Start(t)
	admin := newClient(t, srv)
	alice := admin.as("alice", "member")
	bob := admin.as("bob", "member")

	res := alice.must(http.StatusCreated, "POST", "/v1/baymodels", bayModelBody("bm-1"))
	bm := res.object(t)
	id := bm["uuid"].(string)
	if loc := res.Header.Get("Location"); !strings.HasSuffix(loc, "/v1/baymodels/"+id) {
		t.Errorf("Location %q, want /v1/baymodels/%s", loc, id)
	}
	wantKeys(t, "baymodel", bm, []string{"keypair_id", "image_id", "coe", "public", "labels", "created_at", "links"},
		[]string{"driver", "project_id", "user_id"})
	if self := selfLink(t, bm); self != srv.URL+"/v1/baymodels/"+id {
		t.Errorf("self link %q", self)
	}

	t.Run("the baymodel is a cluster template", func(t *testing.T) {
		ct := alice.getObject("/v1/clustertemplates/" + id)
		if ct["name"] != "bm-1" || ct["keypair_id"] != "magnum-test" || ct["project_id"] != "alice" {
			t.Errorf("template = %v", ct)
		}
		made := alice.createTemplate(map[string]any{"name": "made-as-template"})
		if got := alice.getObject("/v1/baymodels/" + made); got["name"] != "made-as-template" {
			t.Errorf("baymodel = %v", got)
		}
	})
	t.Run("list, detail and get by name", func(t *testing.T) {
		for _, path := range []string{"/v1/baymodels", "/v1/baymodels/detail"} {
			if ids := listedUUIDs(t, alice.must(http.StatusOK, "GET", path, nil), "baymodels"); !slices.Contains(ids, id) {
				t.Errorf("%s lists %v, not %s", path, ids, id)
			}
		}
		if got := alice.getObject("/v1/baymodels/bm-1"); got["uuid"] != id {
			t.Errorf("by name: %v", got)
		}
		page := alice.must(http.StatusOK, "GET", "/v1/baymodels?limit=1", nil).object(t)
		if next, _ := page["next"].(string); !strings.Contains(next, "/v1/baymodels?") {
			t.Errorf("next = %q", next)
		}
	})
	t.Run("PATCH renames", func(t *testing.T) {
		got := alice.must(http.StatusOK, "PATCH", "/v1/baymodels/"+id,
			[]map[string]any{{"op": "replace", "path": "/name", "value": "bm-renamed"}}).object(t)
		if got["name"] != "bm-renamed" || got["uuid"] != id {
			t.Errorf("patched = %v", got)
		}
		wantKeys(t, "patched baymodel", got, nil, []string{"driver", "project_id"})
		if got := alice.getObject("/v1/clustertemplates/" + id); got["name"] != "bm-renamed" {
			t.Errorf("template after PATCH = %v", got)
		}
	})

	refused(t, alice, []refusal{
		{"keypair_id is mandatory", "POST", "/v1/baymodels", merged(bayModelBody("no-kp"), map[string]any{"keypair_id": nil}), 400, "keypair_id. Value: null. Mandatory field missing"},
		{"image_id is mandatory", "POST", "/v1/baymodels", merged(bayModelBody("no-image"), map[string]any{"image_id": nil}), 400, "image_id. Value: null. Mandatory field missing"},
		{"baymodels have no driver", "POST", "/v1/baymodels", merged(bayModelBody("driver"), map[string]any{"driver": "k8s_capi"}), 400, "Unknown attribute for argument baymodel: driver"},
		{"invalid network driver", "POST", "/v1/baymodels", merged(bayModelBody("nd"), map[string]any{"network_driver": "invalid_network_driver"}), 400, "network_driver"},
		{"invalid volume driver", "POST", "/v1/baymodels", merged(bayModelBody("vd"), map[string]any{"volume_driver": "invalid_volume_driver"}), 400, "volume_driver"},
		{"a PATCH body must be a JSON patch", "PATCH", "/v1/baymodels/" + id, bayModelBody("x"), 400, ""},
		{"keypair_id can not be removed", "PATCH", "/v1/baymodels/" + id, []map[string]any{{"op": "remove", "path": "/keypair_id"}}, 400, "'/keypair_id' is a mandatory attribute"},
		{"driver can not be patched", "PATCH", "/v1/baymodels/" + id, []map[string]any{{"op": "replace", "path": "/driver", "value": "x"}}, 400, "'/driver'"},
		{"a member may not publish", "POST", "/v1/baymodels", merged(bayModelBody("pub"), map[string]any{"public": true}), 403, "public or hidden"},
		{"a member may not make one public", "PATCH", "/v1/baymodels/" + id, []map[string]any{{"op": "replace", "path": "/public", "value": true}}, 403, "public or hidden"},
		{"unknown uuid", "GET", "/v1/baymodels/5d12f6fd-a196-4bf0-ae4c-1f639a523a52", nil, 404, "could not be found"},
		{"unknown name", "PATCH", "/v1/baymodels/fooo", []map[string]any{{"op": "replace", "path": "/name", "value": "y"}}, 404, "fooo could not be found"},
	})

	t.Run("another project can neither see nor touch it", func(t *testing.T) {
		if ids := listedUUIDs(t, bob.must(http.StatusOK, "GET", "/v1/baymodels", nil), "baymodels"); slices.Contains(ids, id) {
			t.Errorf("bob lists alice's baymodel: %v", ids)
		}
		bob.must(http.StatusNotFound, "GET", "/v1/baymodels/"+id, nil)
		bob.must(http.StatusNotFound, "PATCH", "/v1/baymodels/"+id, []map[string]any{{"op": "replace", "path": "/name", "value": "mine"}})
		bob.must(http.StatusNotFound, "DELETE", "/v1/baymodels/"+id, nil)
	})
	t.Run("an administrator publishes one", func(t *testing.T) {
		pub := admin.must(http.StatusCreated, "POST", "/v1/baymodels", merged(bayModelBody("public-bm"), map[string]any{"public": true})).object(t)
		if pub["public"] != true {
			t.Errorf("public baymodel = %v", pub)
		}
		if got := bob.getObject("/v1/baymodels/" + pub["uuid"].(string)); got["public"] != true {
			t.Errorf("bob sees %v", got)
		}
	})
	t.Run("DELETE by name", func(t *testing.T) {
		alice.must(http.StatusNoContent, "DELETE", "/v1/baymodels/bm-renamed", nil)
		alice.must(http.StatusNotFound, "GET", "/v1/baymodels/"+id, nil)
		alice.must(http.StatusNotFound, "GET", "/v1/clustertemplates/"+id, nil)
	})
}

func TestBaysAreClustersUnderTheirOldName(t *testing.T) {
	answers := &cloudAnswers{missing: map[string]bool{"aaa": true}}
	srv := testapi.Start(t, func(o *api.Options) { o.Resources = answers })
	admin := newClient(t, srv)
	alice := admin.as("alice", "member")
	bob := admin.as("bob", "member")
	bm := alice.must(http.StatusCreated, "POST", "/v1/baymodels", bayModelBody("bm")).object(t)["uuid"].(string)

	// Magnum's bay controller created bays synchronously at 1.1: 201 with
	// the bay.
	res := alice.at("").must(http.StatusCreated, "POST", "/v1/bays",
		map[string]any{"name": "bay-1", "baymodel_id": "bm", "node_count": 2, "master_count": 1, "discovery_url": nil, "bay_create_timeout": nil})
	bay := res.object(t)
	id := bay["uuid"].(string)
	if loc := res.Header.Get("Location"); !strings.HasSuffix(loc, "/v1/bays/"+id) {
		t.Errorf("Location %q", loc)
	}
	if bay["baymodel_id"] != bm || bay["node_count"] != 2.0 || bay["master_count"] != 1.0 || bay["bay_create_timeout"] != 60.0 || bay["status"] != "CREATE_IN_PROGRESS" {
		t.Errorf("created bay = %v", bay)
	}
	wantKeys(t, "bay", bay, []string{"stack_id", "status_reason", "api_address", "node_addresses", "master_addresses", "discovery_url", "created_at"},
		[]string{"cluster_template_id", "create_timeout", "keypair", "project_id", "health_status", "labels_added", "faults", "bay_faults"})
	if self := selfLink(t, bay); self != srv.URL+"/v1/bays/"+id {
		t.Errorf("self link %q", self)
	}

	t.Run("the bay is a cluster", func(t *testing.T) {
		c := alice.getObject("/v1/clusters/" + id)
		if c["name"] != "bay-1" || c["cluster_template_id"] != bm || c["keypair"] != "magnum-test" || c["node_count"] != 2.0 || c["project_id"] != "alice" {
			t.Errorf("cluster = %v", c)
		}
		made := alice.createCluster(bm, map[string]any{"name": "made-as-cluster"})
		if got := alice.getObject("/v1/bays/" + made); got["name"] != "made-as-cluster" || got["baymodel_id"] != bm {
			t.Errorf("bay = %v", got)
		}
	})
	t.Run("from 1.2 a create is answered 202 with the uuid", func(t *testing.T) {
		got := alice.at("1.2").must(http.StatusAccepted, "POST", "/v1/bays", map[string]any{"name": "bay-2", "baymodel_id": bm}).object(t)
		if len(got) != 1 || got["uuid"] == nil {
			t.Errorf("answer = %v", got)
		}
		alice.getObject("/v1/clusters/" + got["uuid"].(string))
	})
	t.Run("list, detail and get by name", func(t *testing.T) {
		list := alice.must(http.StatusOK, "GET", "/v1/bays", nil)
		if ids := listedUUIDs(t, list, "bays"); !slices.Contains(ids, id) {
			t.Errorf("/v1/bays lists %v", ids)
		}
		first := list.object(t)["bays"].([]any)[0].(map[string]any)
		wantKeys(t, "listed bay", first, []string{"baymodel_id", "bay_create_timeout", "stack_id", "links"}, []string{"status_reason", "cluster_template_id"})
		detail := alice.must(http.StatusOK, "GET", "/v1/bays/detail", nil)
		if ids := listedUUIDs(t, detail, "bays"); !slices.Contains(ids, id) {
			t.Errorf("/v1/bays/detail lists %v", ids)
		}
		wantKeys(t, "detailed bay", detail.object(t)["bays"].([]any)[0].(map[string]any), []string{"status_reason", "node_addresses"}, nil)
		if got := alice.getObject("/v1/bays/bay-1"); got["uuid"] != id {
			t.Errorf("by name: %v", got)
		}
	})
	t.Run("PATCH node_count resizes the cluster", func(t *testing.T) {
		patch := func(n int) []map[string]any {
			return []map[string]any{{"op": "replace", "path": "/node_count", "value": n}}
		}
		got := alice.at("1.1").must(http.StatusOK, "PATCH", "/v1/bays/"+id, patch(3)).object(t)
		if got["node_count"] != 3.0 || got["baymodel_id"] != bm {
			t.Errorf("patched bay at 1.1 = %v", got)
		}
		if got := alice.must(http.StatusAccepted, "PATCH", "/v1/bays/"+id, patch(4)).object(t); len(got) != 1 || got["uuid"] != id {
			t.Errorf("patched bay = %v", got)
		}
		if c := alice.getObject("/v1/clusters/" + id); c["node_count"] != 4.0 {
			t.Errorf("cluster after bay PATCH = %v", c)
		}
	})

	refused(t, alice, []refusal{
		{"baymodel_id is mandatory", "POST", "/v1/bays", map[string]any{"name": "b"}, 400, "baymodel_id. Value: null. Mandatory field missing"},
		{"a baymodel that does not exist is a 400 at every microversion", "POST", "/v1/bays", map[string]any{"baymodel_id": "this-does-not-exist"}, 400, "ClusterTemplate this-does-not-exist could not be found"},
		{"a bay has at least one node at every microversion", "POST", "/v1/bays", map[string]any{"baymodel_id": bm, "node_count": 0}, 400, "node_count. Value: 0. Value should be greater or equal to 1"},
		{"a bay has at least one master", "POST", "/v1/bays", map[string]any{"baymodel_id": bm, "master_count": 0}, 400, "master_count. Value: 0. Value should be greater or equal to 1"},
		{"a flavor the cloud lacks", "POST", "/v1/bays", map[string]any{"baymodel_id": bm, "flavor_id": "aaa"}, 400, "aaa"},
		{"bays take their keypair from the baymodel", "POST", "/v1/bays", map[string]any{"baymodel_id": bm, "keypair_id": "aaa"}, 400, "Unknown attribute for argument bay: keypair_id"},
		{"bays take their network from the baymodel", "POST", "/v1/bays", map[string]any{"baymodel_id": bm, "external_network_id": "aaa"}, 400, "Unknown attribute for argument bay: external_network_id"},
		{"cluster names are not bay fields", "POST", "/v1/bays", map[string]any{"cluster_template_id": bm}, 400, "Unknown attribute for argument bay: cluster_template_id"},
		{"PATCH may not scale to zero", "PATCH", "/v1/bays/" + id, []map[string]any{{"op": "replace", "path": "/node_count", "value": 0}}, 400, "Value should be greater or equal to 1"},
		{"PATCH may not change the baymodel", "PATCH", "/v1/bays/" + id, []map[string]any{{"op": "replace", "path": "/baymodel_id", "value": bm}}, 400, "cannot change cluster property(ies) cluster_template_id"},
		{"PATCH of a bay that does not exist", "PATCH", "/v1/bays/fooo", []map[string]any{{"op": "replace", "path": "/name", "value": "x"}}, 404, "Cluster fooo could not be found"},
		{"DELETE of a bay that does not exist", "DELETE", "/v1/bays/5d12f6fd-a196-4bf0-ae4c-1f639a523a52", nil, 404, "could not be found"},
	})
	if last := answers.last(t); !slices.Contains(last.Flavors, "aaa") {
		t.Errorf("the cloud was last asked about %+v, not flavor aaa", last)
	}

	t.Run("another project can neither see nor touch it", func(t *testing.T) {
		if ids := listedUUIDs(t, bob.must(http.StatusOK, "GET", "/v1/bays", nil), "bays"); slices.Contains(ids, id) {
			t.Errorf("bob lists alice's bay: %v", ids)
		}
		bob.must(http.StatusNotFound, "GET", "/v1/bays/"+id, nil)
		bob.must(http.StatusNotFound, "PATCH", "/v1/bays/"+id, []map[string]any{{"op": "replace", "path": "/node_count", "value": 1}})
		bob.must(http.StatusNotFound, "DELETE", "/v1/bays/"+id, nil)
		// Nor build on alice's baymodel: it does not exist for bob.
		bob.must(http.StatusBadRequest, "POST", "/v1/bays", map[string]any{"baymodel_id": bm})
		admin.as("alice", "reader").must(http.StatusForbidden, "POST", "/v1/bays", map[string]any{"baymodel_id": bm})
	})
	t.Run("DELETE deletes the cluster", func(t *testing.T) {
		alice.must(http.StatusNoContent, "DELETE", "/v1/bays/"+id, nil)
		if c := alice.getObject("/v1/clusters/" + id); c["status"] != "DELETE_IN_PROGRESS" {
			t.Errorf("cluster after bay DELETE = %v", c)
		}
	})
}
