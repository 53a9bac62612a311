package conductor

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// TestTenQuickChangesAreAppliedOnce: ten PATCHes of one cluster's
// node_count within a second are applied to the management cluster once,
// with the last size asked for, and every one of their operations ends.
func TestTenQuickChangesAreAppliedOnce(t *testing.T) {
	ctx := context.Background()
	p := startPlane(t, 2, nil)
	cl := p.create(t, "patched")
	p.settled(t, cl, "create applied")
	applies := func() int {
		events, err := p.st.ListEvents(ctx, cl.UUID, store.EventQuery{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range events {
			if strings.HasPrefix(ev.Message, "applied ") && strings.HasSuffix(ev.Message, " objects to the management cluster") {
				n++
			}
		}
		return n
	}
	obj, err := p.mc.Get(ctx, "Cluster", p.namespace, clusterObjectName(cl))
	if err != nil {
		t.Fatal(err)
	}
	before, generation := applies(), obj.GetGeneration()

	var ops []string
	for i := 2; i <= 11; i++ {
		var op *model.Operation
		p.change(t, cl.UUID, func(got *model.Cluster, ngs []*model.NodeGroup) store.ClusterChange {
			worker := workerGroup(t, ngs)
			worker.NodeCount = i
			got.Status = model.UpdateInProgress
			op = &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterUpdate, ClusterID: cl.UUID, ProjectID: "p",
				Payload: &model.ClusterUpdatePayload{NodeCount: i}}
			return store.ClusterChange{Cluster: got, NodeGroups: []*model.NodeGroup{worker}, Operation: op}
		})
		p.c.Notify()
		ops = append(ops, op.UUID)
	}
	p.settled(t, cl, "every change done")
	for _, id := range ops {
		op, err := p.st.GetOperation(ctx, id)
		if err != nil || op.State != model.OpSucceeded {
			t.Errorf("operation %s: %v, %v", id, op, err)
		}
	}
	if n := applies() - before; n != 1 {
		t.Errorf("%d applies for ten quick changes, want one", n)
	}
	obj, err = p.mc.Get(ctx, "Cluster", p.namespace, clusterObjectName(cl))
	if err != nil {
		t.Fatal(err)
	}
	if obj.GetGeneration() != generation+1 {
		t.Errorf("the Cluster went from generation %d to %d, want one change", generation, obj.GetGeneration())
	}
	mds, _, _ := unstructured.NestedSlice(obj.Object, "spec", "topology", "workers", "machineDeployments")
	if len(mds) != 1 {
		t.Fatalf("machine deployments in the topology: %v", mds)
	}
	if r, _, _ := unstructured.NestedInt64(mds[0].(map[string]any), "replicas"); r != 11 {
		t.Errorf("the worker machine deployment has %d replicas, want the last size asked for, 11", r)
	}
	// The cluster's own generation rose with each change; the one apply
	// observed the last.
	final, _ := p.cluster(t, cl.UUID)
	if final.ObservedGeneration != final.Generation || final.Generation < 11 {
		t.Errorf("the cluster is at generation %d and observed %d, want the ten changes' generation observed", final.Generation, final.ObservedGeneration)
	}
}
