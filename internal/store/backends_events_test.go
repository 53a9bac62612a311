package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// The cluster events table on every backend (its migration differs by
// dialect): recorded in order, read with cursors, gone with the cluster.
func init() {
	storeCases = append(storeCases, storeCase{"cluster events are kept in order and go with their cluster", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		c := &model.Cluster{UUID: uuid.NewString(), Name: "c", ProjectID: "p", UserID: "u", ClusterTemplateID: "t",
			Status: model.CreateInProgress, CreatedAt: time.Now().UTC()}
		if err := db.ApplyClusterChange(ctx, store.ClusterChange{Cluster: c, Create: true, QuotaLimit: 5}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
		for i, kind := range []model.EventKind{model.EventStatus, model.EventCondition, model.EventOperation} {
			ev := model.ClusterEvent{ClusterID: c.UUID, ProjectID: "p", Time: t0.Add(time.Duration(i) * time.Second), Kind: kind,
				Status: model.CreateInProgress, Reason: "r", Message: "message ünïcode " + string(kind)}
			if err := db.RecordEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		all, err := db.ListEvents(ctx, c.UUID, store.EventQuery{})
		if err != nil || len(all) != 3 || all[0].Kind != model.EventStatus || all[2].Message != "message ünïcode operation" || !all[0].Time.Equal(t0) {
			t.Fatalf("events %+v, %v", all, err)
		}
		if after, _ := db.ListEvents(ctx, c.UUID, store.EventQuery{AfterID: all[0].ID, Limit: 1}); len(after) != 1 || after[0].ID != all[1].ID {
			t.Fatalf("after %d limit 1: %+v", all[0].ID, after)
		}
		if since, _ := db.ListEvents(ctx, c.UUID, store.EventQuery{Since: t0.Add(2 * time.Second)}); len(since) != 1 || since[0].ID != all[2].ID {
			t.Fatalf("since: %+v", since)
		}
		if err := db.DeleteCluster(ctx, c.UUID); err != nil {
			t.Fatal(err)
		}
		if left, _ := db.ListEvents(ctx, c.UUID, store.EventQuery{}); len(left) != 0 {
			t.Fatalf("events outlived the cluster: %+v", left)
		}
	}})
}
