package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/model"
)

var templateSortable = map[string]bool{
	"id": true, "uuid": true, "name": true, "project_id": true, "user_id": true, "coe": true,
	"server_type": true, "public": true, "hidden": true, "created_at": true, "updated_at": true,
}

// TemplateScope is Magnum's template visibility: a project sees its own
// templates and public ones that are not hidden; admins see everything.
type TemplateScope struct {
	ProjectID string
	IsAdmin   bool
}

func (sc TemplateScope) filter(q *pageQuery) {
	if sc.IsAdmin {
		return
	}
	q.filter("(project_id = ? OR (public = 1 AND hidden = 0))", sc.ProjectID)
}

// CreateClusterTemplate inserts a template; ID is filled in.
func (s *DB) CreateClusterTemplate(ctx context.Context, ct *model.ClusterTemplate) error {
	var id int64
	err := s.retryTx(ctx, func(tx *sql.Tx) (err error) {
		id, err = insertTemplate(ctx, tx, ct)
		return err
	})
	if err != nil {
		return err
	}
	ct.ID = id
	return nil
}

// insertTemplate inserts ct inside tx and returns its ID.
func insertTemplate(ctx context.Context, tx *sql.Tx, ct *model.ClusterTemplate) (int64, error) {
	data, err := json.Marshal(ct)
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO cluster_templates
		(uuid, name, project_id, user_id, coe, server_type, public, hidden, created_at, updated_at, data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ct.UUID, ct.Name, ct.ProjectID, ct.UserID, ct.COE, string(ct.ServerType), ct.Public, ct.Hidden,
		formatTime(ct.CreatedAt), formatTimePtr(ct.UpdatedAt), string(data))
	if err != nil {
		if isUniqueViolation(err) {
			err = fault.New(ErrConflict, "cluster template %s", ct.UUID)
		}
		return 0, err
	}
	id, _ := res.LastInsertId()
	return id, bumpGeneration(ctx, tx, generationTemplates)
}

func decodeTemplate(id int64, data []byte) (*model.ClusterTemplate, error) {
	return decodeObject(id, data, "cluster template", func(ct *model.ClusterTemplate) { ct.ID = id })
}

// GetClusterTemplate finds a template by UUID or name within the scope. A
// name shared by several visible templates is ErrAmbiguousName.
func (s *DB) GetClusterTemplate(ctx context.Context, sc TemplateScope, ident string) (*model.ClusterTemplate, error) {
	r, err := s.StoredClusterTemplate(ctx, sc, ident)
	if err != nil {
		return nil, err
	}
	return decodeTemplate(r.ID, r.Data)
}

// GetClusterTemplateByUUID reads a template regardless of project, for
// internal use (a cluster always resolves its own template).
func (s *DB) GetClusterTemplateByUUID(ctx context.Context, uuid string) (*model.ClusterTemplate, error) {
	return templateByUUID(ctx, s.db, uuid)
}

func templateByUUID(ctx context.Context, q querier, uuid string) (*model.ClusterTemplate, error) {
	ct, err := scanObject(q.QueryRowContext(ctx, "SELECT id, data FROM cluster_templates WHERE uuid = ?", uuid), decodeTemplate)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(ErrNotFound, "cluster template %s", uuid)
	}
	return ct, err
}

// ListClusterTemplates pages through the templates visible in the scope.
func (s *DB) ListClusterTemplates(ctx context.Context, sc TemplateScope, opts ListOptions) ([]*model.ClusterTemplate, error) {
	rows, err := s.StoredClusterTemplates(ctx, sc, opts)
	if err != nil {
		return nil, err
	}
	return decodeAll(rows, func(r StoredRow) (*model.ClusterTemplate, error) { return decodeTemplate(r.ID, r.Data) })
}

// UpdateClusterTemplate saves ct. While clusters use the template only a
// rename or a change of public/hidden/tags alone is allowed (Magnum's rule),
// checked in the same transaction as the write.
func (s *DB) UpdateClusterTemplate(ctx context.Context, ct *model.ClusterTemplate, changed []string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := refuseWhileUsed(ctx, tx, ct.UUID, publishingOrRename(changed)); err != nil {
		return rollback(tx, err)
	}
	data, err := json.Marshal(ct)
	if err != nil {
		return rollback(tx, err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE cluster_templates SET name = ?, coe = ?, server_type = ?, public = ?, hidden = ?,
		updated_at = ?, data = ? WHERE uuid = ?`,
		ct.Name, ct.COE, string(ct.ServerType), ct.Public, ct.Hidden, formatTimePtr(ct.UpdatedAt), string(data), ct.UUID)
	if err := matched(res, err, "cluster template %s", ct.UUID); err != nil {
		return rollback(tx, err)
	}
	if err := bumpGeneration(ctx, tx, generationTemplates); err != nil {
		return rollback(tx, err)
	}
	return tx.Commit()
}

func publishingOrRename(changed []string) bool {
	if len(changed) != 1 {
		return len(changed) == 0
	}
	switch changed[0] {
	case "name", "public", "hidden", "tags":
		return true
	}
	return false
}

// DeleteClusterTemplate removes a template no cluster uses.
func (s *DB) DeleteClusterTemplate(ctx context.Context, uuid string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := refuseWhileUsed(ctx, tx, uuid, false); err != nil {
		return rollback(tx, err)
	}
	if err := deleteListed(ctx, tx, "cluster_templates", "cluster template", uuid, generationTemplates); err != nil {
		return rollback(tx, err)
	}
	return tx.Commit()
}

// refuseWhileUsed is ErrReferenced when clusters use the template uuid,
// unless the change is one allowed while they do.
func refuseWhileUsed(ctx context.Context, tx *sql.Tx, uuid string, allowed bool) error {
	var inUse int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM clusters WHERE cluster_template_id = ?`, uuid).Scan(&inUse); err != nil {
		return err
	}
	if inUse > 0 && !allowed {
		return fault.New(ErrReferenced, "cluster template %s is used by %d cluster(s)", uuid, inUse)
	}
	return nil
}

func joinWhere(w []string) string {
	out := ""
	for i, c := range w {
		if i > 0 {
			out += " AND "
		}
		out += c
	}
	return out
}
