package store

import (
	"context"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/magnetite-io/magnetite/internal/model"
)

// EventQuery narrows a cluster's event listing. The zero value lists every
// event, oldest first.
type EventQuery struct {
	// Since keeps events at or after this time.
	Since time.Time
	// AfterID keeps events recorded after the event with this id: the cursor
	// of a follower, exact where timestamps of several writers are not.
	AfterID int64
	// Limit caps the number of events returned (0: no cap).
	Limit int
}

// maxReasonLen is the width of the reason column.
const maxReasonLen = 255

// RecordEvent appends an event to a cluster's history. The API records the
// requests that change a cluster; the conductor records status transitions
// and Cluster API condition changes. A zero Time means now.
func (s *DB) RecordEvent(ctx context.Context, ev model.ClusterEvent) error {
	if ev.ClusterID == "" {
		return fmt.Errorf("store: event without a cluster")
	}
	if !slices.Contains(model.EventKinds, ev.Kind) {
		return fmt.Errorf("store: event kind %q is not one of %v", ev.Kind, model.EventKinds)
	}
	if ev.Time.IsZero() {
		ev.Time = now()
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO cluster_events (cluster_id, project_id, time, kind, status, reason, message)
		VALUES (?, ?, ?, ?, ?, ?, ?)`,
		ev.ClusterID, ev.ProjectID, formatTime(ev.Time), string(ev.Kind), string(ev.Status),
		truncateRunes(ev.Reason, maxReasonLen), ev.Message)
	if err != nil {
		return fmt.Errorf("store: record event: %w", err)
	}
	return nil
}

// ListEvents returns a cluster's events in the order they were recorded.
func (s *DB) ListEvents(ctx context.Context, clusterUUID string, q EventQuery) ([]model.ClusterEvent, error) {
	query := `SELECT id, cluster_id, project_id, time, kind, status, reason, message FROM cluster_events WHERE cluster_id = ?`
	args := []any{clusterUUID}
	if !q.Since.IsZero() {
		query += ` AND time >= ?`
		args = append(args, formatTime(q.Since))
	}
	if q.AfterID > 0 {
		query += ` AND id > ?`
		args = append(args, q.AfterID)
	}
	query += ` ORDER BY id`
	if q.Limit > 0 {
		query += fmt.Sprintf(` LIMIT %d`, q.Limit)
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []model.ClusterEvent{}
	for rows.Next() {
		var ev model.ClusterEvent
		var t, kind, status string
		if err := rows.Scan(&ev.ID, &ev.ClusterID, &ev.ProjectID, &t, &kind, &status, &ev.Reason, &ev.Message); err != nil {
			return nil, err
		}
		ev.Time, ev.Kind, ev.Status = parseTime(t), model.EventKind(kind), model.Status(status)
		out = append(out, ev)
	}
	return out, rows.Err()
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
