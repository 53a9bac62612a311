package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/apitest"
	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/model"
)

// betweenReadAndWrite is a capacity planner that runs a step of the test
// while a request is between reading the cluster and writing its change:
// the planner is asked exactly there, so the interleaving of two requests
// that a loaded server produces now and then is made every time.
type betweenReadAndWrite struct{ step func() }

func (b *betweenReadAndWrite) Plan(context.Context, baremetal.CapacityRequest, func(context.Context) ([]baremetal.Building, error)) (*baremetal.CapacityPlan, error) {
	if step := b.step; step != nil {
		b.step = nil
		step()
	}
	return nil, nil
}

// TestNoChangeCommitsAfterAnAcknowledgedDelete: a node-group update, a
// resize or a PATCH of the cluster that read the cluster before a DELETE
// was answered 204 is refused with a 409 and leaves the delete in force,
// instead of moving the cluster or node group back out of it.
func TestNoChangeCommitsAfterAnAcknowledgedDelete(t *testing.T) {
	planner := &betweenReadAndWrite{}
	srv := apitest.Start(t, func(o *api.Options) { o.Capacity = planner })
	c := newClient(t, srv)
	tmpl := c.createTemplate(map[string]any{"master_lb_enabled": true})

	for _, change := range []struct {
		name, method, path string
		body               any
	}{
		{"node group update", "PATCH", "/v1/clusters/%s/nodegroups/extra", []map[string]any{{"op": "replace", "path": "/max_node_count", "value": 6}}},
		{"resize", "POST", "/v1/clusters/%s/actions/resize", map[string]any{"node_count": 4}},
		{"cluster update", "PATCH", "/v1/clusters/%s", []map[string]any{{"op": "replace", "path": "/node_count", "value": 5}}},
	} {
		t.Run(change.name, func(t *testing.T) {
			id := c.createCluster(tmpl, map[string]any{"name": "undo-" + strings.ReplaceAll(change.name, " ", "-"), "node_count": 1})
			c.must(http.StatusAccepted, "POST", "/v1/clusters/"+id+"/nodegroups", map[string]any{"name": "extra", "node_count": 1})
			planner.step = func() { c.must(http.StatusNoContent, "DELETE", "/v1/clusters/"+id, nil) }
			res := c.do(change.method, strings.Replace(change.path, "%s", id, 1), change.body)
			if planner.step != nil {
				t.Fatalf("the request never reached its capacity plan (answered %d %s); the test did not interleave the delete", res.Status, res.Body)
			}
			if res.Status != http.StatusConflict || !strings.Contains(string(res.Body), "is being deleted (DELETE_IN_PROGRESS)") {
				t.Fatalf("%s after the delete: %d %s, want a 409 saying the cluster is being deleted", change.name, res.Status, res.Body)
			}
			if got := c.getObject("/v1/clusters/" + id)["status"]; got != string(model.DeleteInProgress) {
				t.Errorf("cluster status %v after the refused %s, want DELETE_IN_PROGRESS", got, change.name)
			}
			for _, ng := range []string{"default-worker", "extra"} {
				obj := c.getObject("/v1/clusters/" + id + "/nodegroups/" + ng)
				if obj["node_count"] != float64(1) {
					t.Errorf("node group %s has node_count %v after the refused %s, want 1", ng, obj["node_count"], change.name)
				}
			}
			if got := ops(t, srv, id); got[len(got)-1] != model.OpClusterDelete {
				t.Errorf("operations %v: the delete is not the last", got)
			}
		})
	}
}
