package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
)

func TestClusterEventsListInOrderWithCursors(t *testing.T) {
	clock := useFakeClock(t)
	s := openTestDB(t, filepath.Join(t.TempDir(), "m.db"))
	ctx := context.Background()
	record := func(cluster string, kind model.EventKind, st model.Status, msg string) {
		t.Helper()
		if err := s.RecordEvent(ctx, model.ClusterEvent{ClusterID: cluster, ProjectID: "p", Kind: kind, Status: st, Message: msg}); err != nil {
			t.Fatal(err)
		}
		clock.advance(time.Second)
	}
	record("c1", model.EventStatus, model.CreateInProgress, "create requested")
	record("c2", model.EventStatus, model.CreateInProgress, "other cluster")
	record("c1", model.EventCondition, model.CreateInProgress, "control plane 0/1 ready")
	record("c1", model.EventStatus, model.CreateComplete, "done")

	all, err := s.ListEvents(ctx, "c1", EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, ev := range all {
		msgs = append(msgs, ev.Message)
	}
	if got := strings.Join(msgs, "|"); got != "create requested|control plane 0/1 ready|done" {
		t.Fatalf("events of c1 = %q", got)
	}
	if all[1].Kind != model.EventCondition || all[2].Status != model.CreateComplete || all[0].ProjectID != "p" {
		t.Fatalf("fields not kept: %+v", all)
	}
	if !all[1].Time.Equal(time.Date(2026, 3, 1, 12, 0, 2, 0, time.UTC)) {
		t.Fatalf("time = %v", all[1].Time)
	}

	after, _ := s.ListEvents(ctx, "c1", EventQuery{AfterID: all[0].ID})
	if len(after) != 2 || after[0].ID != all[1].ID {
		t.Fatalf("after id %d: %+v", all[0].ID, after)
	}
	since, _ := s.ListEvents(ctx, "c1", EventQuery{Since: all[2].Time})
	if len(since) != 1 || since[0].Message != "done" {
		t.Fatalf("since %v: %+v", all[2].Time, since)
	}
	limited, _ := s.ListEvents(ctx, "c1", EventQuery{Limit: 1})
	if len(limited) != 1 || limited[0].Message != "create requested" {
		t.Fatalf("limit 1: %+v", limited)
	}
	none, err := s.ListEvents(ctx, "nope", EventQuery{})
	if err != nil || none == nil || len(none) != 0 {
		t.Fatalf("unknown cluster: %v, %v", none, err)
	}
}

func TestRecordEventRefusesEventsWithoutClusterOrKind(t *testing.T) {
	s := openTestDB(t, filepath.Join(t.TempDir(), "m.db"))
	ctx := context.Background()
	if err := s.RecordEvent(ctx, model.ClusterEvent{Kind: model.EventStatus}); err == nil {
		t.Fatal("event without a cluster was recorded")
	}
	if err := s.RecordEvent(ctx, model.ClusterEvent{ClusterID: "c", Kind: "phase"}); err == nil || !strings.Contains(err.Error(), `"phase"`) {
		t.Fatalf("unknown kind: %v", err)
	}
	long := strings.Repeat("é", 300)
	if err := s.RecordEvent(ctx, model.ClusterEvent{ClusterID: "c", Kind: model.EventCondition, Reason: long}); err != nil {
		t.Fatal(err)
	}
	evs, _ := s.ListEvents(ctx, "c", EventQuery{})
	if n := len([]rune(evs[0].Reason)); n != maxReasonLen {
		t.Fatalf("reason kept %d runes, want %d", n, maxReasonLen)
	}
}

func TestDeleteClusterDeletesItsEvents(t *testing.T) {
	s := openTestDB(t, filepath.Join(t.TempDir(), "m.db"))
	ctx := context.Background()
	c := &model.Cluster{UUID: "c-uuid", Name: "c", ProjectID: "p", UserID: "u", ClusterTemplateID: "t",
		Status: model.DeleteInProgress, CreatedAt: time.Now()}
	if err := s.ApplyClusterChange(ctx, ClusterChange{Cluster: c, Create: true, QuotaLimit: 10}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c-uuid", "other"} {
		if err := s.RecordEvent(ctx, model.ClusterEvent{ClusterID: id, ProjectID: "p", Kind: model.EventStatus, Status: model.DeleteInProgress}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteCluster(ctx, "c-uuid"); err != nil {
		t.Fatal(err)
	}
	if evs, _ := s.ListEvents(ctx, "c-uuid", EventQuery{}); len(evs) != 0 {
		t.Fatalf("events outlived their cluster: %+v", evs)
	}
	if evs, _ := s.ListEvents(ctx, "other", EventQuery{}); len(evs) != 1 {
		t.Fatalf("another cluster's events went too: %+v", evs)
	}
}
