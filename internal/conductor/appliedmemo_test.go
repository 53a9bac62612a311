package conductor

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// TestAResizeSendsOnlyWhatChanged: once a cluster is applied, a resize
// sends the management cluster its Cluster object and nothing else of the
// desired state (not its Secrets, not the ClusterClass and templates, and
// no prune listing); an object Magnetite applied that someone deletes is
// applied again by the next reconcile when its kind is watched, and every
// object once the memory of it is older than appliedMemoTTL.
func TestAResizeSendsOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	p := startPlane(t, 1, nil)
	now := time.Now()
	p.c.now = func() time.Time { return now }
	cl := p.create(t, "memo")
	p.settled(t, cl, "create applied")
	resize := func(n int) map[string]int64 {
		t.Helper()
		before := p.mc.Requests()
		p.change(t, cl.UUID, func(got *model.Cluster, ngs []*model.NodeGroup) store.ClusterChange {
			worker := workerGroup(t, ngs)
			worker.NodeCount = n
			got.Status = model.UpdateInProgress
			op := &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterResize, ClusterID: cl.UUID, ProjectID: "p",
				Payload: &model.ClusterResizePayload{NodeCount: n}}
			return store.ClusterChange{Cluster: got, NodeGroups: []*model.NodeGroup{worker}, Operation: op}
		})
		p.c.Notify()
		p.settled(t, cl, "resize to "+strconv.Itoa(n)+" applied")
		after := p.mc.Requests()
		sent := map[string]int64{}
		for m, v := range after {
			if d := v - before[m]; d > 0 {
				sent[m] = d
			}
		}
		return sent
	}
	workers := func() int64 {
		obj, err := p.mc.Get(ctx, "Cluster", p.namespace, clusterObjectName(cl))
		if err != nil {
			t.Fatal(err)
		}
		mds, _, _ := unstructured.NestedSlice(obj.Object, "spec", "topology", "workers", "machineDeployments")
		for _, md := range mds {
			if m, _ := md.(map[string]any); m["name"] == model.DefaultWorkerNodeGroup {
				n, _, _ := unstructured.NestedInt64(m, "replicas")
				return n
			}
		}
		return -1
	}

	// The first resize after the create may still meet the Cluster
	// changed by Cluster API since; the second shows the steady state.
	resize(2)
	sent := resize(3)
	if workers() != 3 {
		t.Fatalf("the Cluster's topology has %d workers after a resize to 3", workers())
	}
	// One apply (a PATCH) of the Cluster object; the rest of the desired
	// state is unchanged and not sent again.
	if sent["PATCH"] != 1 || sent["DELETE"] != 0 {
		t.Errorf("a resize sent %v to the management cluster, want one PATCH (the Cluster object) and no other write", sent)
	}
	if sent["GET"] > 2 {
		t.Errorf("a resize sent %v to the management cluster: %d reads, want the prune's listings skipped", sent, sent["GET"])
	}

	// A Secret Magnetite applied, deleted behind its back: Secrets are not
	// watched, so the memory of it is trusted until it expires.
	secrets, err := p.mc.List(ctx, "Secret", p.namespace, "")
	if err != nil || len(secrets) == 0 {
		t.Fatalf("the cluster has no Secrets to delete: %v", err)
	}
	victim := secrets[0].GetName()
	if _, err := p.mc.Delete(ctx, "Secret", p.namespace, victim); err != nil {
		t.Fatal(err)
	}
	resize(4)
	if _, err := p.mc.Get(ctx, "Secret", p.namespace, victim); err == nil {
		t.Fatalf("Secret %s came back before its memory expired: the memo is not used", victim)
	}
	now = now.Add(appliedMemoTTL)
	resize(5)
	if _, err := p.mc.Get(ctx, "Secret", p.namespace, victim); err != nil {
		t.Errorf("Secret %s deleted behind Magnetite's back is not applied again once its memory expired: %v", victim, err)
	}
	if workers() != 5 {
		t.Errorf("the Cluster's topology has %d workers after a resize to 5", workers())
	}
}
