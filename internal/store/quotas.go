package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/model"
)

var quotaSortable = map[string]bool{
	"id": true, "project_id": true, "resource": true, "hard_limit": true, "created_at": true, "updated_at": true,
}

func scanQuota(row scanner) (*model.Quota, error) {
	var q model.Quota
	var created, updated string
	if err := row.Scan(&q.ID, &q.ProjectID, &q.Resource, &q.HardLimit, &created, &updated); err != nil {
		return nil, err
	}
	q.CreatedAt, q.UpdatedAt = parseTime(created), parseTimeOpt(updated)
	return &q, nil
}

const quotaCols = "id, project_id, resource, hard_limit, created_at, COALESCE(updated_at, '')"

// CreateQuota inserts a quota; one per project and resource.
func (s *DB) CreateQuota(ctx context.Context, q *model.Quota) error {
	id, err := insertQuota(ctx, s.db, q)
	if err != nil {
		return err
	}
	q.ID = id
	return nil
}

// insertQuota inserts q through x (the database or a transaction).
func insertQuota(ctx context.Context, x interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, q *model.Quota) (int64, error) {
	res, err := x.ExecContext(ctx, `INSERT INTO quotas (project_id, resource, hard_limit, created_at) VALUES (?, ?, ?, ?)`,
		q.ProjectID, q.Resource, q.HardLimit, formatTime(q.CreatedAt))
	if err != nil {
		if isUniqueViolation(err) {
			return 0, fault.New(ErrConflict, "Quota for project %s already exists for resource %s.", q.ProjectID, q.Resource)
		}
		return 0, err
	}
	id, _ := res.LastInsertId()
	return id, nil
}

// GetQuota reads the quota of a project for a resource.
func (s *DB) GetQuota(ctx context.Context, projectID, resource string) (*model.Quota, error) {
	q, err := scanQuota(s.db.QueryRowContext(ctx, "SELECT "+quotaCols+" FROM quotas WHERE project_id = ? AND resource = ?", projectID, resource))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(ErrNotFound, "Quota %s could not be found for project %s", resource, projectID)
	}
	return q, err
}

// UpdateQuota changes a quota's hard limit.
func (s *DB) UpdateQuota(ctx context.Context, q *model.Quota) error {
	res, err := s.db.ExecContext(ctx, `UPDATE quotas SET hard_limit = ?, updated_at = ? WHERE project_id = ? AND resource = ?`,
		q.HardLimit, formatTimePtr(q.UpdatedAt), q.ProjectID, q.Resource)
	return matched(res, err, "Quota %s could not be found for project %s", q.Resource, q.ProjectID)
}

// DeleteQuota removes a quota.
func (s *DB) DeleteQuota(ctx context.Context, projectID, resource string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM quotas WHERE project_id = ? AND resource = ?`, projectID, resource)
	return matched(res, err, "Quota %s could not be found for project %s", resource, projectID)
}

// ListQuotas pages through quotas; an empty projectID lists every project.
func (s *DB) ListQuotas(ctx context.Context, projectID string, opts ListOptions) ([]*model.Quota, error) {
	q := pageQuery{table: "quotas", sortable: quotaSortable, markerCol: "id"}
	if projectID != "" {
		q.filter("project_id = ?", projectID)
	}
	rows, err := s.queryPage(ctx, q, quotaCols, opts)
	return collect(rows, err, scanQuota)
}
