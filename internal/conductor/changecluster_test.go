package conductor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// adoptedRow stores a cluster adopted from magnum-cluster-api, as the
// import leaves it, in a store of its own.
func adoptedRow(t *testing.T) (*store.DB, *model.Cluster) {
	t.Helper()
	now := time.Now().UTC()
	ct := &model.ClusterTemplate{UUID: uuid.NewString(), Name: "mca", ProjectID: "p", UserID: "u",
		TemplateSpec: model.TemplateSpec{COE: "kubernetes", ImageID: "img", ServerType: model.ServerTypeVM}, CreatedAt: now}
	cl := &model.Cluster{UUID: uuid.NewString(), Name: "mca", ProjectID: "p", UserID: "u", ClusterTemplateID: ct.UUID,
		Status: model.CreateComplete, Labels: map[string]string{}, CreatedAt: now,
		Imported: &model.Imported{MagnumDriver: "cluster-api", At: now, ClusterAPI: &model.ForeignCluster{
			Driver: driverMCA, Namespace: "magnum-system", Name: "kube-ab12c", Adopted: true}}}
	return storeWith(t, ct, cl, nil, nil), cl
}

// statusWrite writes a cluster's status as the conductor's watch does.
func statusWrite(t *testing.T, st *store.DB, id, reason string) {
	t.Helper()
	_, err := st.UpdateClusterStatus(context.Background(), id, func(c *model.Cluster, _ []*model.NodeGroup) ([]*model.NodeGroup, bool) {
		c.StatusReason = &reason
		return nil, true
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A gate run's rebase failed its attempts with "Cluster mca changed while
// this request was applied": the watch wrote the rolling cluster's status
// between the rebase's read and its write. The change is read and made
// again, and keeps what the status write wrote.
func TestAChangeOvertakenByAStatusWriteIsReadAndMadeAgain(t *testing.T) {
	st, cl := adoptedRow(t)
	c := &Conductor{st: st}
	kept := &model.KeptInfrastructure{Addons: true}
	var versions []int64
	err := c.changeCluster(context.Background(), cl.UUID, func(got *model.Cluster) (store.ClusterChange, error) {
		versions = append(versions, got.ResourceVersion)
		if len(versions) == 1 {
			statusWrite(t, st, cl.UUID, "control plane 1/3 ready")
		}
		return store.ClusterChange{Cluster: rebasedCopy(got, kept)}, nil
	})
	if err != nil {
		t.Fatalf("a change overtaken once by a status write: %v", err)
	}
	if len(versions) != 2 || versions[1] <= versions[0] {
		t.Errorf("the change read versions %v, want a second read after the status write", versions)
	}
	got, err := st.GetClusterByUUID(context.Background(), cl.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rebased() == nil || got.Adopted() != nil {
		t.Errorf("after the change: rebased %v, adopted %v; want it recorded rebased", got.Rebased(), got.Adopted())
	}
	if r := derefOr(got.StatusReason, ""); r != "control plane 1/3 ready" {
		t.Errorf("status reason %q: the change lost the status written between its read and its write", r)
	}
}

// A cluster whose status is written between every read and write is left
// unchanged, with the store's reason, after a bounded number of attempts.
func TestAChangeAlwaysOvertakenGivesUp(t *testing.T) {
	st, cl := adoptedRow(t)
	c := &Conductor{st: st}
	reads := 0
	err := c.changeCluster(context.Background(), cl.UUID, func(got *model.Cluster) (store.ClusterChange, error) {
		reads++
		statusWrite(t, st, cl.UUID, "moving")
		return store.ClusterChange{Cluster: rebasedCopy(got, &model.KeptInfrastructure{})}, nil
	})
	if !errors.Is(err, store.ErrStale) || reads != staleAttempts {
		t.Errorf("after %d reads: %v, want store.ErrStale after %d", reads, err, staleAttempts)
	}
	got, err := st.GetClusterByUUID(context.Background(), cl.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Adopted() == nil || got.Rebased() != nil {
		t.Errorf("a change that never got written changed the cluster: adopted %v, rebased %v", got.Adopted(), got.Rebased())
	}
}
