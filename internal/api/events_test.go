package api_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// eventCall sends one request as project "default" (admin) unless headers
// say otherwise, and decodes a JSON answer into out when out is not nil.
func eventCall(t *testing.T, srv *testapi.Server, method, path, body string, want int, out any, headers ...string) {
	t.Helper()
	code, _, raw := send(t, srv, method, path, body, headers...)
	if code != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

func eventsOf(t *testing.T, srv *testapi.Server, cluster, query string) apitypes.ClusterEventList {
	t.Helper()
	var l apitypes.ClusterEventList
	eventCall(t, srv, "GET", "/v1/clusters/"+cluster+"/events"+query, "", 200, &l)
	return l
}

// eventLine is kind, status and reason of an event: what the test checks
// beside the message.
func eventLine(ev apitypes.ClusterEvent) string { return ev.Kind + " " + ev.Status + " " + ev.Reason }

func TestClusterEventsRecordEveryRequestThatQueuesWork(t *testing.T) {
	srv := testapi.Start(t)
	ctx := context.Background()
	var tpl apitypes.ClusterTemplate
	eventCall(t, srv, "POST", "/v1/clustertemplates", `{"name": "k8s", "coe": "kubernetes", "image_id": "ubuntu", "external_network_id": "public", "flavor_id": "m1", "master_flavor_id": "m1"}`, 201, &tpl)
	var id apitypes.ClusterID
	eventCall(t, srv, "POST", "/v1/clusters", `{"name": "c1", "cluster_template_id": "`+tpl.UUID+`", "master_count": 1, "node_count": 1}`, 202, &id)

	evs := eventsOf(t, srv, "c1", "").Events
	if len(evs) != 1 || eventLine(evs[0]) != "status CREATE_IN_PROGRESS cluster_create" ||
		!strings.HasPrefix(evs[0].Message, "Create requested: 1 control plane and 1 worker nodes (request req-") ||
		evs[0].ClusterID != id.UUID || !strings.HasSuffix(evs[0].Time, "Z") {
		t.Fatalf("after create: %+v", evs)
	}

	// Still creating: the resize queues work without moving the status.
	eventCall(t, srv, "POST", "/v1/clusters/c1/actions/resize", `{"node_count": 2}`, 202, nil)
	// The conductor finishes the create (written here through the store, as
	// the conductor does) and records the transition.
	c, err := srv.Store.GetCluster(ctx, store.Scope{AllProjects: true}, id.UUID)
	if err != nil {
		t.Fatal(err)
	}
	c.Status = model.CreateComplete
	if err := srv.Store.ApplyClusterChange(ctx, store.ClusterChange{Cluster: c}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.RecordEvent(ctx, model.ClusterEvent{ClusterID: c.UUID, ProjectID: c.ProjectID, Kind: model.EventStatus,
		Status: model.CreateComplete, Message: "Cluster API reports the cluster available"}); err != nil {
		t.Fatal(err)
	}
	eventCall(t, srv, "PATCH", "/v1/clusters/c1", `[{"op": "replace", "path": "/node_count", "value": 3}]`, 202, nil)
	eventCall(t, srv, "POST", "/v1/clusters/c1/nodegroups", `{"name": "gpu", "node_count": 1}`, 202, nil)
	eventCall(t, srv, "PATCH", "/v1/clusters/c1/nodegroups/gpu", `[{"op": "replace", "path": "/max_node_count", "value": 4}]`, 202, nil)
	eventCall(t, srv, "DELETE", "/v1/clusters/c1/nodegroups/gpu", "", 204, nil)
	eventCall(t, srv, "DELETE", "/v1/clusters/c1", "", 204, nil)

	want := []struct{ line, message string }{
		{"status CREATE_IN_PROGRESS cluster_create", "Create requested"},
		{"operation CREATE_IN_PROGRESS cluster_resize", "Resize requested: node group default-worker to 2 nodes"},
		{"status CREATE_COMPLETE ", "Cluster API reports the cluster available"},
		{"status UPDATE_IN_PROGRESS cluster_update", "Update requested: default-worker to 3 nodes"},
		{"operation UPDATE_IN_PROGRESS nodegroup_create", "Node group gpu create requested"},
		{"operation UPDATE_IN_PROGRESS nodegroup_update", "Node group gpu update requested: max_node_count"},
		{"operation UPDATE_IN_PROGRESS nodegroup_delete", "Node group gpu delete requested"},
		{"status DELETE_IN_PROGRESS cluster_delete", "Delete requested"},
	}
	evs = eventsOf(t, srv, id.UUID, "").Events
	if len(evs) != len(want) {
		t.Fatalf("got %d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, w := range want {
		if eventLine(evs[i]) != w.line || !strings.HasPrefix(evs[i].Message, w.message) {
			t.Errorf("event %d = %q %q, want %q %q…", i, eventLine(evs[i]), evs[i].Message, w.line, w.message)
		}
		if i > 0 && (evs[i].ID <= evs[i-1].ID || evs[i].Time < evs[i-1].Time) {
			t.Errorf("event %d out of order: %+v after %+v", i, evs[i], evs[i-1])
		}
	}

	// A follower's cursor, a time filter and pages.
	after := eventsOf(t, srv, "c1", "?marker="+strconv.FormatInt(evs[5].ID, 10)).Events
	if len(after) != 2 || after[0].ID != evs[6].ID {
		t.Errorf("marker %d: %+v", evs[5].ID, after)
	}
	if since := eventsOf(t, srv, "c1", "?since="+evs[2].Time).Events; len(since) == 0 || since[0].ID > evs[2].ID {
		t.Errorf("since %s: %+v", evs[2].Time, since)
	}
	page := eventsOf(t, srv, "c1", "?limit=5")
	if len(page.Events) != 5 || page.Next == "" {
		t.Fatalf("first page: %+v", page)
	}
	rest := eventsOf(t, srv, "c1", strings.TrimPrefix(page.Next, srv.URL+"/v1/clusters/"+id.UUID+"/events"))
	if len(rest.Events) != 3 || rest.Events[0].ID != evs[5].ID || rest.Next != "" {
		t.Errorf("second page from %s: %+v", page.Next, rest)
	}

	eventCall(t, srv, "GET", "/v1/clusters/c1/events?since=yesterday", "", 400, nil)
	eventCall(t, srv, "GET", "/v1/clusters/c1/events?marker=x", "", 400, nil)
	eventCall(t, srv, "GET", "/v1/clusters/c1/events?limit=0", "", 400, nil)
	// Another project does not see the cluster, nor its history.
	eventCall(t, srv, "GET", "/v1/clusters/"+id.UUID+"/events", "", 404, nil, "X-Project-Id", "other", "X-Roles", "member")

	// The conductor removes the cluster once it is gone; its history goes too.
	if err := srv.Store.DeleteCluster(ctx, id.UUID); err != nil {
		t.Fatal(err)
	}
	if left, _ := srv.Store.ListEvents(ctx, id.UUID, store.EventQuery{}); len(left) != 0 {
		t.Fatalf("events outlived the cluster: %+v", left)
	}
	eventCall(t, srv, "GET", "/v1/clusters/"+id.UUID+"/events", "", 404, nil)
}
