package store

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/model"
)

// TestOperationPayloadsKeepTheirKind: a typed payload reads back as the
// same struct, and a row an earlier release wrote as a map reads back
// typed, so the conductor carries out operations queued before an upgrade.
func TestOperationPayloadsKeepTheirKind(t *testing.T) {
	ctx := context.Background()
	s := openTestDB(t, filepath.Join(t.TempDir(), "ops.db"))
	want := &model.ClusterResizePayload{NodeGroup: "default-worker", NodeCount: 1, NodesToRemove: []string{"demo-md-0-x", "server-2"}}
	op := &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterResize, ClusterID: "c1", ProjectID: "p1", Payload: want}
	if err := s.ApplyClusterChange(ctx, ClusterChange{Operation: op}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetOperation(ctx, op.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Payload, model.Payload(want)) {
		t.Errorf("payload read back as %#v, want %#v", got.Payload, want)
	}

	// An earlier release's row: the same column, written from a map.
	old := &model.Operation{UUID: uuid.NewString(), Type: model.OpNodeGroupUpdate, ClusterID: "c2", ProjectID: "p1"}
	if err := s.ApplyClusterChange(ctx, ClusterChange{Operation: old}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE operations SET payload = ? WHERE uuid = ?",
		`{"changed":["max_node_count","labels"],"nodegroup":"gpu"}`, old.UUID); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetOperation(ctx, old.UUID)
	if err != nil {
		t.Fatal(err)
	}
	wantOld := &model.NodeGroupUpdatePayload{NodeGroup: "gpu", Changed: []string{"max_node_count", "labels"}}
	if !reflect.DeepEqual(got.Payload, model.Payload(wantOld)) {
		t.Errorf("earlier release's payload read back as %#v, want %#v", got.Payload, wantOld)
	}

	// A payload of another kind never reaches the table.
	wrong := &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterUpdate, ClusterID: "c3", ProjectID: "p1", Payload: want}
	if err := s.ApplyClusterChange(ctx, ClusterChange{Operation: wrong}); err == nil {
		t.Error("an update operation carrying a resize payload was recorded")
	}
	if _, err := s.GetOperation(ctx, wrong.UUID); err == nil {
		t.Error("the refused operation was stored")
	}
}
