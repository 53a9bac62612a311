package conductor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/metrics"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// family returns the metric of a family whose labels include want, or nil.
func family(t *testing.T, reg *metrics.Registry, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue next
				}
			}
			return m
		}
	}
	return nil
}

func TestExecutedOperationIsCountedAndLoggedWithItsRequestID(t *testing.T) {
	ctx := context.Background()
	// An operation type no handler knows fails permanently without touching
	// the management cluster.
	const opType model.OperationType = "cluster_unknown"
	st, cl, op := clusterWithOperation(t, opType)
	var logs bytes.Buffer
	reg := metrics.New(nil, nil, nil)
	c := New(Options{Store: st, Metrics: reg, Owner: "test", Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	executeQueued(t, c, st)

	m := family(t, reg, "magnetite_operations_finished_total", map[string]string{"type": string(opType), "result": "failed"})
	if m == nil || m.GetCounter().GetValue() != 1 {
		t.Fatalf("operations_finished_total{type=%s,result=failed} = %v, want 1", opType, m)
	}
	d := family(t, reg, "magnetite_operation_duration_seconds", map[string]string{"type": string(opType), "result": "failed"})
	if d == nil || d.GetHistogram().GetSampleCount() != 1 {
		t.Fatalf("operation_duration_seconds count = %v, want 1", d)
	}
	if got, _ := st.GetClusterByUUID(ctx, cl.UUID); got == nil || got.Status != model.CreateFailed {
		t.Fatalf("cluster after a permanent failure: %+v", got)
	}
	lines := bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n"))
	if len(lines) == 0 {
		t.Fatal("the operation logged nothing")
	}
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if rec["operation"] == op.UUID && rec["request_id"] != "req-42" {
			t.Errorf("operation log line without the originating request id: %s", line)
		}
	}
}

func conditionEvent(typ mgmt.EventType, clusterUUID string, transitions ...time.Time) mgmt.Event {
	conds := make([]any, len(transitions))
	for i, at := range transitions {
		conds[i] = map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": at.UTC().Format(time.RFC3339)}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
		"metadata": map[string]any{"name": "m-1", "namespace": "ns",
			"labels": map[string]any{mgmt.LabelClusterUUID: clusterUUID}},
		"status": map[string]any{"conditions": conds},
	}}
	return mgmt.Event{Type: typ, Kind: "Machine", Object: obj}
}

func TestWatchLagCountsOnlyConditionTransitionsNewerThanSeen(t *testing.T) {
	reg := metrics.New(nil, nil, nil)
	c := New(Options{Metrics: reg})
	id := uuid.NewString()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	lag := func() *dto.Histogram {
		m := family(t, reg, "magnetite_watch_lag_seconds", map[string]string{"kind": "Machine"})
		if m == nil {
			return &dto.Histogram{}
		}
		return m.GetHistogram()
	}

	// First sight (the informer's initial list): no lag can be known.
	c.onEvent(conditionEvent(mgmt.Added, id, base))
	c.statusStored(id, base.Add(time.Minute))
	if n := lag().GetSampleCount(); n != 0 {
		t.Fatalf("first sight of an object observed %d lags, want 0", n)
	}
	// An update whose newest transition did not move (spec or replicas only).
	c.onEvent(conditionEvent(mgmt.Updated, id, base))
	c.statusStored(id, base.Add(time.Minute))
	if n := lag().GetSampleCount(); n != 0 {
		t.Fatalf("update without a new transition observed %d lags, want 0", n)
	}
	// A condition moved 10s ago; the status is stored 3s after that.
	changed := base.Add(10 * time.Second)
	c.onEvent(conditionEvent(mgmt.Updated, id, base, changed))
	c.statusStored(id, changed.Add(3*time.Second))
	h := lag()
	if h.GetSampleCount() != 1 || h.GetSampleSum() != 3 {
		t.Fatalf("watch lag = %d samples summing %vs, want 1 of 3s", h.GetSampleCount(), h.GetSampleSum())
	}
	// Already answered: a later status write observes nothing more.
	c.statusStored(id, changed.Add(time.Minute))
	if n := lag().GetSampleCount(); n != 1 {
		t.Fatalf("status write with no new change observed again: %d samples", n)
	}
}

func TestConductorWithoutMetricsRecordsNothingAndDoesNotPanic(t *testing.T) {
	c := New(Options{})
	id := uuid.NewString()
	c.onEvent(conditionEvent(mgmt.Added, id, time.Now()))
	c.onEvent(conditionEvent(mgmt.Updated, id, time.Now().Add(time.Second)))
	c.statusStored(id, time.Now())
	c.operationEnded(&model.Operation{Type: model.OpClusterCreate}, metrics.Succeeded)
}

// unreachableCloud is a facts source whose cloud does not answer.
type unreachableCloud struct{}

func (unreachableCloud) Facts(context.Context, *model.ClusterTemplate, *model.Cluster, []*model.NodeGroup) (*facts.Facts, error) {
	return nil, errors.New("Nova answered 503")
}

// TestRetriedOperationShowsWhyInStatusReason: a transient failure leaves
// the cluster in progress, and its status_reason says what it waits for.
func TestRetriedOperationShowsWhyInStatusReason(t *testing.T) {
	st, _, _ := clusterWithOperation(t, model.OpClusterCreate)
	reg := metrics.New(nil, nil, nil)
	// The cloud fails before the management cluster is asked anything.
	mc, err := mgmt.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"}, mgmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{Store: st, Metrics: reg, Owner: "test", Mgmt: mc, Facts: unreachableCloud{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	got := executeQueued(t, c, st)
	if got.Status != model.CreateInProgress || got.StatusReason == nil ||
		!strings.HasPrefix(*got.StatusReason, "Retrying (attempt 1 failed): ") || !strings.Contains(*got.StatusReason, "Nova answered 503") {
		t.Errorf("cluster after a transient failure: %s, %v", got.Status, got.StatusReason)
	}
	if m := family(t, reg, "magnetite_operations_finished_total", map[string]string{"type": string(model.OpClusterCreate), "result": "retried"}); m == nil || m.GetCounter().GetValue() != 1 {
		t.Errorf("operations_finished_total{result=retried} = %v, want 1", m)
	}
}

// clusterWithOperation is a store holding a cluster being created and one
// queued operation of typ for it (request id req-42).
func clusterWithOperation(t *testing.T, typ model.OperationType) (*store.DB, *model.Cluster, *model.Operation) {
	t.Helper()
	ct := &model.ClusterTemplate{UUID: uuid.NewString(), Name: "t", ProjectID: "p", UserID: "u",
		TemplateSpec: model.TemplateSpec{COE: "kubernetes", ImageID: "img",
			ServerType: model.ServerTypeVM, Labels: map[string]string{}}, CreatedAt: time.Now().UTC()}
	cl := &model.Cluster{UUID: uuid.NewString(), Name: "c", ProjectID: "p", UserID: "u", ClusterTemplateID: ct.UUID,
		Status: model.CreateInProgress, Labels: map[string]string{}, CreatedAt: time.Now().UTC()}
	op := &model.Operation{UUID: uuid.NewString(), Type: typ, ClusterID: cl.UUID, ProjectID: "p", RequestID: "req-42"}
	return storeWith(t, ct, cl, nil, op), cl, op
}

// executeQueued has c claim and execute the store's queued operation and
// returns its cluster as the operation left it.
func executeQueued(t *testing.T, c *Conductor, st *store.DB) *model.Cluster {
	t.Helper()
	ctx := context.Background()
	claimed, err := st.ClaimOperation(ctx, "test", time.Minute)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	c.execute(ctx, claimed)
	got, err := st.GetClusterByUUID(ctx, claimed.ClusterID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// storeWith is a fresh SQLite store holding the template ct and the
// cluster cl being created, with its node groups and queued operation op.
func storeWith(t *testing.T, ct *model.ClusterTemplate, cl *model.Cluster, ngs []*model.NodeGroup, op *model.Operation) *store.DB {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.CreateClusterTemplate(ctx, ct); err != nil {
		t.Fatal(err)
	}
	if err := st.ApplyClusterChange(ctx, store.ClusterChange{Cluster: cl, Create: true, QuotaLimit: 10, NodeGroups: ngs, Operation: op}); err != nil {
		t.Fatal(err)
	}
	return st
}
