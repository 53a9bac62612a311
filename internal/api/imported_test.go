package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// TestImportedClustersAreReadOnly: a cluster imported from Magnum that
// Magnetite cannot change is shown like any other, and every request that
// would change it is refused with a 409 in Magnum's format that says why;
// its Heat template makes no new clusters (400).
func TestImportedClustersAreReadOnly(t *testing.T) {
	srv := testapi.Start(t)
	ctx := context.Background()
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	const why = "Imported from Magnum, read-only: Magnum's Heat driver k8s_fedora_coreos_v1 built it (Heat stack 9b2a), and Magnetite does not change Heat stacks."
	tpl := &model.ClusterTemplate{UUID: "359f30b6-452b-410c-8d6e-445bb81fbb92", Name: "fcos", ProjectID: "default",
		TemplateSpec: model.TemplateSpec{COE: "kubernetes", ImageID: "fedora-coreos-35", ServerType: model.ServerTypeVM, Labels: map[string]string{}},
		CreatedAt:    at, Imported: &model.Imported{MagnumDriver: "k8s_fedora_coreos_v1", At: at, Unsupported: "Magnum's Heat driver k8s_fedora_coreos_v1 built this template's clusters"}}
	if err := srv.Store.CreateClusterTemplate(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	reason := why
	c := &model.Cluster{UUID: "283b37fc-4603-478f-a773-23b2c211dc36", Name: "prod", ProjectID: "default", ClusterTemplateID: tpl.UUID,
		Status: model.CreateComplete, StatusReason: &reason, Labels: map[string]string{}, CreatedAt: at,
		Imported: &model.Imported{MagnumDriver: "k8s_fedora_coreos_v1", At: at, Unsupported: why}}
	groups := []*model.NodeGroup{
		{UUID: "6d9a4868-f63b-4991-bbe8-cd01620143f0", Name: "default-master", ClusterID: c.UUID, ProjectID: "default", Role: "master", NodeCount: 1, IsDefault: true, Status: model.CreateComplete, Labels: map[string]string{}, NodeAddresses: []string{}, CreatedAt: at},
		{UUID: "d8a25c3f-64bb-4a9f-b8de-b0d52d49c525", Name: "default-worker", ClusterID: c.UUID, ProjectID: "default", Role: "worker", NodeCount: 2, IsDefault: true, Status: model.CreateComplete, Labels: map[string]string{}, NodeAddresses: []string{}, CreatedAt: at},
	}
	if err := srv.Store.ApplyClusterChange(ctx, store.ClusterChange{Cluster: c, Create: true, QuotaLimit: 10, NodeGroups: groups}); err != nil {
		t.Fatal(err)
	}

	res := srv.Do(t, http.MethodGet, "/v1/clusters/prod", nil, testapi.Latest())
	var shown map[string]any
	if err := json.Unmarshal(res.Body, &shown); err != nil || res.Status != http.StatusOK {
		t.Fatalf("GET the imported cluster: %d %s", res.Status, res.Body)
	}
	if shown["status_reason"] != why || shown["node_count"] != float64(2) {
		t.Errorf("the imported cluster shows %v", shown)
	}
	if _, leaked := shown["imported"]; leaked {
		t.Error("the import's bookkeeping is part of the cluster's API view")
	}

	for _, req := range []struct{ method, path, body string }{
		{http.MethodPatch, "/v1/clusters/prod", `[{"op":"replace","path":"/node_count","value":3}]`},
		{http.MethodDelete, "/v1/clusters/prod", ""},
		{http.MethodPost, "/v1/clusters/prod/actions/resize", `{"node_count":3}`},
		{http.MethodPost, "/v1/clusters/prod/actions/upgrade", `{"cluster_template":"fcos"}`},
		{http.MethodPost, "/v1/clusters/prod/nodegroups", `{"name":"extra","node_count":1}`},
		{http.MethodPatch, "/v1/clusters/prod/nodegroups/default-worker", `[{"op":"replace","path":"/node_count","value":3}]`},
		{http.MethodDelete, "/v1/clusters/prod/nodegroups/default-worker", ""},
	} {
		res := srv.Do(t, req.method, req.path, req.body, testapi.Latest())
		if res.Status != http.StatusConflict || !strings.Contains(string(res.Body), "read-only in Magnetite") ||
			!strings.Contains(string(res.Body), `"code": "client"`) && !strings.Contains(string(res.Body), `"code":"client"`) {
			t.Errorf("%s %s = %d %s, want a Magnum-format 409 saying the cluster is read-only", req.method, req.path, res.Status, res.Body)
		}
	}
	after, err := srv.Store.GetClusterByUUID(ctx, c.UUID)
	if err != nil || after.Status != model.CreateComplete {
		t.Errorf("the refused requests changed the cluster: %+v (%v)", after, err)
	}
	if ops, err := srv.Store.OperationsForCluster(ctx, c.UUID); err != nil || len(ops) != 0 {
		t.Errorf("the refused requests queued %d operations (%v)", len(ops), err)
	}

	res = srv.Do(t, http.MethodPost, "/v1/clusters", `{"name":"new","cluster_template_id":"fcos","node_count":1}`, testapi.Latest())
	if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Body), "Heat driver k8s_fedora_coreos_v1") {
		t.Errorf("a cluster from the imported Heat template = %d %s, want a 400 naming its Heat driver", res.Status, res.Body)
	}
}

// TestAdoptedClustersTakeOnlyTheChangesMagnetiteMakesInTheirDriversShape: a
// cluster whose Cluster API objects Magnetite adopted from
// magnum-cluster-api is resized, given node groups, upgraded (to a template
// with a kube_tag) and deleted like its own (the requests queue
// operations), and every other change is refused with a 409 that says what
// Magnetite does to such a cluster.
func TestAdoptedClustersTakeOnlyTheChangesMagnetiteMakesInTheirDriversShape(t *testing.T) {
	srv := testapi.Start(t)
	ctx := context.Background()
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	tpl := &model.ClusterTemplate{UUID: "5e0c1f3a-9d2b-4c6e-8a7f-1b2c3d4e5f60", Name: "capi", ProjectID: "default",
		TemplateSpec: model.TemplateSpec{COE: "kubernetes", ImageID: "ubuntu", ServerType: model.ServerTypeVM, Labels: map[string]string{}},
		CreatedAt:    at, Imported: &model.Imported{MagnumDriver: "cluster-api", At: at}}
	if err := srv.Store.CreateClusterTemplate(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	c := &model.Cluster{UUID: "7a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d", Name: "mca", ProjectID: "default", ClusterTemplateID: tpl.UUID,
		Status: model.CreateComplete, Labels: map[string]string{}, CreatedAt: at,
		Imported: &model.Imported{MagnumDriver: "magnum-cluster-api", At: at, ClusterAPI: &model.ForeignCluster{Driver: "magnum-cluster-api",
			Namespace: "magnum-system", Name: "kube-ab12c", Adopted: true, NodeGroups: map[string]string{"b8e7d6c5-4a3b-4c2d-9e1f-0a9b8c7d6e5f": "default-worker"}}}}
	groups := []*model.NodeGroup{
		{UUID: "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", Name: "default-master", ClusterID: c.UUID, ProjectID: "default", Role: "master", NodeCount: 1, IsDefault: true, Status: model.CreateComplete, Labels: map[string]string{}, NodeAddresses: []string{}, CreatedAt: at},
		{UUID: "b8e7d6c5-4a3b-4c2d-9e1f-0a9b8c7d6e5f", Name: "default-worker", ClusterID: c.UUID, ProjectID: "default", Role: "worker", NodeCount: 2, IsDefault: true, Status: model.CreateComplete, Labels: map[string]string{}, NodeAddresses: []string{}, CreatedAt: at},
	}
	if err := srv.Store.ApplyClusterChange(ctx, store.ClusterChange{Cluster: c, Create: true, QuotaLimit: 10, NodeGroups: groups}); err != nil {
		t.Fatal(err)
	}
	for _, req := range []struct{ method, path, body, says string }{
		{http.MethodPatch, "/v1/clusters/mca/nodegroups/default-worker", `[{"op":"replace","path":"/max_node_count","value":3}]`, "does not change its node groups"},
	} {
		res := srv.Do(t, req.method, req.path, req.body, testapi.Latest())
		if res.Status != http.StatusConflict || !strings.Contains(string(res.Body), "adopted from magnum-cluster-api") || !strings.Contains(string(res.Body), req.says) {
			t.Errorf("%s %s = %d %s, want a 409 saying Magnetite %s", req.method, req.path, res.Status, res.Body, req.says)
		}
	}
	if ops, err := srv.Store.OperationsForCluster(ctx, c.UUID); err != nil || len(ops) != 0 {
		t.Errorf("the refused requests queued %d operations (%v)", len(ops), err)
	}
	// magnum-cluster-api's node groups are entries of its topology, which
	// Magnetite adds.
	if res := srv.Do(t, http.MethodPost, "/v1/clusters/mca/nodegroups", `{"name":"extra","node_count":1}`, testapi.Latest()); res.Status != http.StatusAccepted {
		t.Fatalf("node group create on the adopted cluster = %d %s", res.Status, res.Body)
	}
	if res := srv.Do(t, http.MethodPost, "/v1/clusters/mca/actions/resize", `{"node_count":3}`, testapi.Latest()); res.Status != http.StatusAccepted {
		t.Fatalf("resize of the adopted cluster = %d %s", res.Status, res.Body)
	}
	if res := srv.Do(t, http.MethodPost, "/v1/clusters/mca/actions/upgrade", `{"cluster_template":"capi"}`, testapi.Latest()); res.Status != http.StatusBadRequest ||
		!strings.Contains(string(res.Body), "no kube_tag label") {
		t.Errorf("upgrade of the adopted cluster to a template without kube_tag = %d %s, want a 400 asking for one", res.Status, res.Body)
	}
	newer := &model.ClusterTemplate{UUID: "6f1d2a4b-0e3c-4d7f-9b8a-2c3d4e5f6a71", Name: "capi-newer", ProjectID: "default",
		TemplateSpec: model.TemplateSpec{COE: "kubernetes", ImageID: "ubuntu-newer", ServerType: model.ServerTypeVM, Labels: map[string]string{"kube_tag": "v1.35.4"}},
		CreatedAt:    at}
	if err := srv.Store.CreateClusterTemplate(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if res := srv.Do(t, http.MethodPost, "/v1/clusters/mca/actions/upgrade", `{"cluster_template":"capi-newer"}`, testapi.Latest()); res.Status != http.StatusAccepted {
		t.Fatalf("upgrade of the adopted cluster = %d %s", res.Status, res.Body)
	}
	// Moving it onto Magnetite's ClusterClass needs Keystone: the cluster
	// then acts in the cloud with its credential. Nothing is queued.
	if res := srv.Do(t, http.MethodPost, "/v1/clusters/mca/actions/rebase", `{}`, testapi.Latest()); res.Status != http.StatusConflict ||
		!strings.Contains(string(res.Body), "noauth") || !strings.Contains(string(res.Body), "stays adopted") {
		t.Errorf("rebase without Keystone = %d %s, want a 409 saying it needs Keystone", res.Status, res.Body)
	}
	if res := srv.Do(t, http.MethodDelete, "/v1/clusters/mca", "", testapi.Latest()); res.Status != http.StatusNoContent {
		t.Fatalf("delete of the adopted cluster = %d %s", res.Status, res.Body)
	}
	ops, err := srv.Store.OperationsForCluster(ctx, c.UUID)
	if err != nil {
		t.Fatal(err)
	}
	var types []model.OperationType
	for _, op := range ops {
		types = append(types, op.Type)
	}
	if !slices.Equal(types, []model.OperationType{model.OpNodeGroupCreate, model.OpClusterResize, model.OpClusterUpgrade, model.OpClusterDelete}) {
		t.Errorf("operations queued %v, want a node group create, a resize, an upgrade and a delete", types)
	}
}
