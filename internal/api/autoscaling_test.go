package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// TestAutoscaledResizeStaysInsideItsBounds: the cluster autoscaler sizes
// an autoscaled node group between min_node_count and max_node_count, so a
// resize outside them is refused with why and how to move them; inside
// them it is accepted (the conductor sets the size, the autoscaler goes on).
func TestAutoscaledResizeStaysInsideItsBounds(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	tpl := c.createTemplate(map[string]any{"name": "elastic", "labels": map[string]string{
		"auto_scaling_enabled": "true", "min_node_count": "1", "max_node_count": "4"}})
	id := c.createCluster(tpl, map[string]any{"name": "elastic", "node_count": 2})
	resize := "/v1/clusters/" + id + "/actions/resize"

	for _, n := range []int{0, 5} {
		r := c.must(http.StatusBadRequest, "POST", resize, map[string]any{"node_count": n})
		for _, want := range []string{"outside the allowed range: min_node_count = 1, max_node_count = 4",
			"cluster autoscaler sizes node group default-worker within these bounds", "nodegroup update elastic default-worker"} {
			if !strings.Contains(string(r.Body), want) {
				t.Errorf("resize to %d: %s lacks %q", n, r.Body, want)
			}
		}
	}
	c.must(http.StatusAccepted, "POST", resize, map[string]any{"node_count": 3})

	// Without max_node_count the bound is pinned at creation, so that it
	// does not follow node_count as the autoscaler moves it.
	open := c.createTemplate(map[string]any{"name": "open", "labels": map[string]string{"auto_scaling_enabled": "true"}})
	id2 := c.createCluster(open, map[string]any{"name": "open", "node_count": 2})
	ng := c.getObject("/v1/clusters/" + id2 + "/nodegroups/default-worker")
	if ng["max_node_count"] != float64(2) {
		t.Errorf("autoscaled default-worker max_node_count = %v, want its node count 2", ng["max_node_count"])
	}
	// Without autoscaling Magnum's rules are unchanged: no bound is made up
	// and the refusal says nothing of an autoscaler.
	plain := c.createTemplate(map[string]any{"name": "plain", "labels": map[string]string{"min_node_count": "1"}})
	id3 := c.createCluster(plain, map[string]any{"name": "plain", "node_count": 2})
	if ng := c.getObject("/v1/clusters/" + id3 + "/nodegroups/default-worker"); ng["max_node_count"] != nil {
		t.Errorf("default-worker without autoscaling has max_node_count %v", ng["max_node_count"])
	}
	r := c.must(http.StatusBadRequest, "POST", "/v1/clusters/"+id3+"/actions/resize", map[string]any{"node_count": 0})
	if strings.Contains(string(r.Body), "autoscaler") {
		t.Errorf("refusal for a cluster without autoscaling mentions it: %s", r.Body)
	}
}
