package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
)

// ReportService records that a process is alive: it creates the service row
// on first report and bumps its report count afterwards.
func (s *DB) ReportService(ctx context.Context, host, binary string) error {
	t := formatTime(now())
	res, err := s.db.ExecContext(ctx, `UPDATE services SET report_count = report_count + 1, last_seen = ?, updated_at = ?
		WHERE host = ? AND binary_name = ?`, t, t, host, binary)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO services (host, binary_name, report_count, last_seen, created_at)
		VALUES (?, ?, 1, ?, ?)`, host, binary, t, t)
	if isUniqueViolation(err) {
		return s.ReportService(ctx, host, binary)
	}
	return err
}

// ListServices returns every process that ever reported.
func (s *DB) ListServices(ctx context.Context) ([]*model.Service, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, host, binary_name, disabled, disabled_reason, report_count, last_seen,
		created_at, COALESCE(updated_at, '') FROM services ORDER BY id`)
	return collect(rows, err, scanService)
}

func scanService(row scanner) (*model.Service, error) {
	var sv model.Service
	var reason sql.NullString
	var lastSeen, created, updated string
	if err := row.Scan(&sv.ID, &sv.Host, &sv.Binary, &sv.Disabled, &reason, &sv.ReportCount, &lastSeen, &created, &updated); err != nil {
		return nil, err
	}
	if reason.Valid {
		sv.DisabledReason = &reason.String
	}
	sv.LastSeen, sv.CreatedAt, sv.UpdatedAt = parseTime(lastSeen), parseTime(created), parseTimeOpt(updated)
	return &sv, nil
}

// ServiceUp says whether a service reported within the given window.
func ServiceUp(sv *model.Service, window time.Duration) bool {
	return now().Sub(sv.LastSeen) <= window
}
