package conductor

import (
	"context"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

func TestRemediationsAndHealthChangesAreRecordedOnce(t *testing.T) {
	ctx := context.Background()
	st, cl, _ := clusterWithOperation(t, model.OpClusterUpdate)
	c := New(Options{Store: st, Owner: "test"})
	ngs := []*model.NodeGroup{{UUID: "w", Name: "default-worker", Role: model.RoleWorker}}
	unhealthy := map[string]any{
		"metadata": map[string]any{"name": "c-default-worker-abc", "uid": "m-1", "labels": map[string]any{LabelNodeGroupUUID: "w"}},
		"status": map[string]any{"conditions": []any{
			cond("HealthCheckSucceeded", "False", "UnhealthyNode", "Condition Ready on Node c-default-worker-abc was False for more than 5s"),
			cond("OwnerRemediated", "False", "WaitingForRemediation", ""),
		}},
	}
	healthy := map[string]any{
		"metadata": map[string]any{"name": "c-default-worker-def", "uid": "m-2", "labels": map[string]any{LabelNodeGroupUUID: "w"}},
		"status":   map[string]any{"conditions": []any{cond("HealthCheckSucceeded", "True", "", "")}},
	}
	obs := Observed{Machines: []map[string]any{unhealthy, healthy}}
	// Every status pass sees the machine until it is gone: one event.
	c.recordRemediations(ctx, cl.UUID, ngs, obs)
	c.recordRemediations(ctx, cl.UUID, ngs, obs)

	h, u := model.Healthy, model.Unhealthy
	created := *cl
	created.Status = model.CreateComplete
	before, after := created, created
	before.HealthStatus, after.HealthStatus = &h, &u
	after.HealthStatusReason = map[string]string{"cluster": "ok", "nodegroup default-worker": "0/1 ready: machine c-default-worker-abc: NodeHealthy"}
	c.recordHealth(ctx, cl.UUID, &before, &after)
	c.recordHealth(ctx, cl.UUID, &after, &before)
	// A cluster still being created is not reported unhealthy.
	creating := before
	creating.Status = model.CreateInProgress
	c.recordHealth(ctx, cl.UUID, &creating, &after)

	events, err := st.ListEvents(ctx, cl.UUID, store.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, e.Reason+": "+e.Message)
	}
	want := []string{
		"remediation: auto-healing: machine c-default-worker-abc (node group default-worker) failed its health check: HealthCheckSucceeded (UnhealthyNode): Condition Ready on Node c-default-worker-abc was False for more than 5s; Cluster API replaces it (WaitingForRemediation)",
		"health HEALTHY -> UNHEALTHY: nodegroup default-worker: 0/1 ready: machine c-default-worker-abc: NodeHealthy",
		"health UNHEALTHY -> HEALTHY: every node is ready",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
