package conductor

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// quietConductor is a conductor on st whose management cluster does not
// answer: what a test runs through it must not need one (every request
// fails at once).
func quietConductor(t *testing.T, st *store.DB, facts FactsSource) *Conductor {
	t.Helper()
	mc, err := mgmt.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"}, mgmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Store: st, Mgmt: mc, Owner: "test", Facts: facts, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// executeNext claims the next queued operation and executes it with c.
func executeNext(t *testing.T, c *Conductor, st *store.DB) *model.Operation {
	t.Helper()
	claimed, err := st.ClaimOperation(context.Background(), "test", time.Minute)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	c.execute(context.Background(), claimed)
	return claimed
}

// TestReconcileLeavesClustersGoneOrBeingDeletedAlone: an operation that
// outlived its cluster, or that a delete superseded, succeeds without
// rendering or applying anything.
func TestReconcileLeavesClustersGoneOrBeingDeletedAlone(t *testing.T) {
	ctx := context.Background()
	st, cl, op := clusterWithOperation(t, model.OpClusterUpdate)
	c := quietConductor(t, st, NoCloud{})
	if _, err := st.UpdateClusterStatus(ctx, cl.UUID, func(cl *model.Cluster, _ []*model.NodeGroup) ([]*model.NodeGroup, bool) {
		cl.Status = model.DeleteInProgress
		return nil, true
	}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.reconcile(ctx, op); err != nil || !res.IsDone() {
		t.Errorf("a cluster being deleted: %v, %+v", err, res)
	}
	if err := st.DeleteCluster(ctx, cl.UUID); err != nil {
		t.Fatal(err)
	}
	if res, err := c.reconcile(ctx, op); err != nil || !res.IsDone() {
		t.Errorf("a deleted cluster: %v, %+v", err, res)
	}
}

// TestAClusterWithoutItsTemplateFailsForGood: retrying cannot bring a
// template back, so the operation ends and the cluster says why.
func TestAClusterWithoutItsTemplateFailsForGood(t *testing.T) {
	ctx := context.Background()
	st, cl, _ := clusterWithOperation(t, model.OpClusterCreate)
	if _, err := st.SQL().ExecContext(ctx, `DELETE FROM cluster_templates WHERE uuid = ?`, cl.ClusterTemplateID); err != nil {
		t.Fatal(err)
	}
	claimed := executeNext(t, quietConductor(t, st, NoCloud{}), st)
	op, err := st.GetOperation(ctx, claimed.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if op.State != model.OpFailed || op.NextAttemptAt != nil {
		t.Errorf("operation %s, next attempt %v: want failed for good", op.State, op.NextAttemptAt)
	}
	got, err := st.GetClusterByUUID(ctx, cl.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != model.CreateFailed || got.StatusReason == nil || !strings.Contains(*got.StatusReason, "cluster template "+cl.ClusterTemplateID+" of cluster c is gone") {
		t.Errorf("cluster %s: %v", got.Status, got.StatusReason)
	}
	events, err := st.ListEvents(ctx, cl.UUID, store.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 || !strings.Contains(events[len(events)-1].Message, "is gone") {
		t.Errorf("no event says why the cluster failed: %+v", events)
	}
}

// TestPermanentFailureEndsEachInProgressStateInItsFailedState.
func TestPermanentFailureEndsEachInProgressStateInItsFailedState(t *testing.T) {
	ctx := context.Background()
	for from, want := range map[model.Status]model.Status{
		model.CreateInProgress: model.CreateFailed,
		model.UpdateInProgress: model.UpdateFailed,
		model.DeleteInProgress: model.DeleteFailed,
		model.CreateComplete:   model.CreateComplete, // settled: only the reason changes
	} {
		st, cl, op := clusterWithOperation(t, model.OpClusterUpdate)
		setStatus(t, st, cl.UUID, from, "")
		_, reason := Classify(permanentf("the flavor is gone"))
		quietConductor(t, st, NoCloud{}).failCluster(ctx, op, reason)
		got, _ := st.GetClusterByUUID(ctx, cl.UUID)
		if got.Status != want || got.StatusReason == nil || *got.StatusReason != "the flavor is gone" {
			t.Errorf("%s after a permanent failure: %s, %v; want %s", from, got.Status, got.StatusReason, want)
		}
	}
}

// TestRetryReasonOnlyForClustersInProgress: a transient failure tells the
// users of a cluster in progress what it waits for, and leaves a settled
// cluster's status_reason alone.
func TestRetryReasonOnlyForClustersInProgress(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		status model.Status
		want   string
	}{
		{model.UpdateInProgress, "Retrying (attempt 3 failed): etcd is slow"},
		{model.UpdateComplete, "Cluster API reports every change rolled out"},
		{model.CreateFailed, "Cluster API reports every change rolled out"},
	} {
		st, cl, op := clusterWithOperation(t, model.OpClusterUpdate)
		setStatus(t, st, cl.UUID, tc.status, "Cluster API reports every change rolled out")
		op.Attempts = 3
		quietConductor(t, st, NoCloud{}).noteRetry(ctx, op, "etcd is slow")
		got, _ := st.GetClusterByUUID(ctx, cl.UUID)
		if got.Status != tc.status || got.StatusReason == nil || *got.StatusReason != tc.want {
			t.Errorf("%s: %s, %v; want the reason %q", tc.status, got.Status, got.StatusReason, tc.want)
		}
	}
}

func setStatus(t *testing.T, st *store.DB, clusterUUID string, status model.Status, reason string) {
	t.Helper()
	if _, err := st.UpdateClusterStatus(context.Background(), clusterUUID, func(cl *model.Cluster, _ []*model.NodeGroup) ([]*model.NodeGroup, bool) {
		cl.Status = status
		if reason != "" {
			cl.StatusReason = &reason
		}
		return nil, true
	}); err != nil {
		t.Fatal(err)
	}
}

// TestAppliedGenerationIsRecordedOnce: status waits for Cluster API to
// observe the generation that carries the latest desired state, and the
// cluster's observed generation is the newest spec generation applied,
// never going back.
func TestAppliedGenerationIsRecordedOnce(t *testing.T) {
	ctx := context.Background()
	st, cl, _ := clusterWithOperation(t, model.OpClusterUpdate)
	c := quietConductor(t, st, NoCloud{})
	for _, g := range []struct{ applied, spec, wantObserved int64 }{{3, 1, 1}, {3, 1, 1}, {5, 4, 4}, {6, 2, 4}} {
		if err := c.recordAppliedGeneration(ctx, cl.UUID, g.applied, g.spec); err != nil {
			t.Fatal(err)
		}
		got, _ := st.GetClusterByUUID(ctx, cl.UUID)
		if got.AppliedGeneration != g.applied || got.ObservedGeneration != g.wantObserved {
			t.Errorf("applied generation %d, observed %d; want %d and %d", got.AppliedGeneration, got.ObservedGeneration, g.applied, g.wantObserved)
		}
	}
	if err := st.DeleteCluster(ctx, cl.UUID); err != nil {
		t.Fatal(err)
	}
	if err := c.recordAppliedGeneration(ctx, cl.UUID, 7, 9); err != nil {
		t.Errorf("a cluster deleted meanwhile: %v", err)
	}
}

// novaGroups stands in for the cloud's server groups: it answers with the
// IDs it is given, or err.
type novaGroups struct {
	NoCloud
	ids     map[string]string
	err     error
	deleted []string
}

func (n *novaGroups) EnsureServerGroups(_ context.Context, _ *model.Cluster, groups []driver.ServerGroup) (map[string]string, error) {
	if n.err != nil {
		return nil, n.err
	}
	out := map[string]string{}
	for _, g := range groups {
		out[g.Name] = n.ids[g.Name]
	}
	return out, nil
}

func (n *novaGroups) DeleteServerGroups(_ context.Context, _ *model.Cluster, ids []string) error {
	n.deleted = append(n.deleted, ids...)
	return n.err
}

// TestServerGroupsAreRecordedOnTheirNodeGroups: the IDs Nova answers are
// kept on the node groups, so the groups can be deleted after their
// machines; what the cloud refuses is permanent, what it fails to answer is
// retried, and without a cloud the refusal says what to configure.
func TestServerGroupsAreRecordedOnTheirNodeGroups(t *testing.T) {
	ctx := context.Background()
	st, cl, _ := clusterWithOperation(t, model.OpClusterCreate)
	ngs := []*model.NodeGroup{
		{UUID: uuid.NewString(), Name: "default-master", ClusterID: cl.UUID, ProjectID: "p", Role: model.RoleMaster, NodeCount: 1, Status: model.CreateInProgress, Labels: map[string]string{}, CreatedAt: time.Now().UTC()},
		{UUID: uuid.NewString(), Name: "default-worker", ClusterID: cl.UUID, ProjectID: "p", Role: "worker", NodeCount: 2, Status: model.CreateInProgress, Labels: map[string]string{}, CreatedAt: time.Now().UTC()},
	}
	cl.Status = model.CreateInProgress
	if err := st.ApplyClusterChange(ctx, store.ClusterChange{Cluster: cl, NodeGroups: ngs}); err != nil {
		t.Fatal(err)
	}
	sc := &scope{cluster: cl, nodeGroups: ngs}
	groups := []driver.ServerGroup{{Name: "c-default-master", Policy: "soft-anti-affinity", NodeGroupUUID: ngs[0].UUID},
		{Name: "c-default-worker", Policy: "soft-anti-affinity", NodeGroupUUID: ngs[1].UUID}}

	_, err := quietConductor(t, st, NoCloud{}).ensureServerGroups(ctx, sc, groups)
	if !errors.Is(err, errPermanent) || !strings.Contains(err.Error(), "[auth] strategy = keystone") {
		t.Errorf("without a cloud: %v", err)
	}
	_, err = quietConductor(t, st, &novaGroups{err: fault.New(cloud.ErrInvalid, "policy soft-anti-affinity needs microversion 2.15")}).ensureServerGroups(ctx, sc, groups)
	if !errors.Is(err, errPermanent) || !strings.Contains(err.Error(), "2.15") {
		t.Errorf("a refusal of the cloud: %v, want permanent", err)
	}
	_, err = quietConductor(t, st, &novaGroups{err: errors.New("Nova answered 503")}).ensureServerGroups(ctx, sc, groups)
	if err == nil || errors.Is(err, errPermanent) || !strings.Contains(err.Error(), "Nova answered 503") {
		t.Errorf("a cloud that does not answer: %v, want a retry", err)
	}

	nova := &novaGroups{ids: map[string]string{"c-default-master": "sg-m", "c-default-worker": "sg-w"}}
	c := quietConductor(t, st, nova)
	ids, err := c.ensureServerGroups(ctx, sc, groups)
	if err != nil || ids["c-default-worker"] != "sg-w" {
		t.Fatalf("ids %v, %v", ids, err)
	}
	stored, err := st.NodeGroupsOf(ctx, []string{cl.UUID})
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]string{}
	for _, ng := range stored[cl.UUID] {
		recorded[ng.Name] = ng.ServerGroupID
	}
	if recorded["default-master"] != "sg-m" || recorded["default-worker"] != "sg-w" {
		t.Errorf("server groups recorded on the node groups: %v", recorded)
	}

	// Delete asks for exactly the recorded groups, and nothing when none is.
	if err := c.deleteServerGroups(ctx, cl, stored[cl.UUID]); err != nil {
		t.Fatal(err)
	}
	slices.Sort(nova.deleted)
	if !slices.Equal(nova.deleted, []string{"sg-m", "sg-w"}) {
		t.Errorf("deleted %v", nova.deleted)
	}
	nova.deleted = nil
	if err := c.deleteServerGroups(ctx, cl, ngs); err != nil || len(nova.deleted) != 0 {
		t.Errorf("node groups without server groups: deleted %v, %v", nova.deleted, err)
	}
}
