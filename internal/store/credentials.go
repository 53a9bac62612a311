package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/model"
)

// putCredential stores a cluster's new application credential and retires
// every other one the cluster has, so exactly one is active.
func (s *DB) putCredential(ctx context.Context, tx *sql.Tx, c *model.ClusterCredential) error {
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now()
	}
	if _, err := tx.ExecContext(ctx, `UPDATE cluster_credentials SET retired = 1 WHERE cluster_id = ? AND credential_id <> ?`,
		c.ClusterID, c.ID); err != nil {
		return fmt.Errorf("store: retire the credentials of cluster %s: %w", c.ClusterID, err)
	}
	secret, err := s.seal(c.Secret, credentialAAD(c.ID))
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO cluster_credentials (credential_id, cluster_id, user_id, project_id, secret, retired, created_at)
		VALUES (?, ?, ?, ?, ?, 0, ?)`, c.ID, c.ClusterID, c.UserID, c.ProjectID, secret, formatTime(c.CreatedAt))
	if err != nil {
		if isUniqueViolation(err) {
			return fault.New(ErrConflict, "application credential %s is already recorded", c.ID)
		}
		return fmt.Errorf("store: record the application credential of cluster %s: %w", c.ClusterID, err)
	}
	return nil
}

// ClusterCredentials reads a cluster's application credentials, the active
// one first, then the retired ones oldest first.
func (s *DB) ClusterCredentials(ctx context.Context, clusterUUID string) ([]*model.ClusterCredential, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT credential_id, cluster_id, user_id, project_id, secret, retired, created_at
		FROM cluster_credentials WHERE cluster_id = ? ORDER BY retired, created_at`, clusterUUID)
	return collect(rows, err, s.scanCredential)
}

func (s *DB) scanCredential(row scanner) (*model.ClusterCredential, error) {
	var c model.ClusterCredential
	var retired int
	var created string
	err := row.Scan(&c.ID, &c.ClusterID, &c.UserID, &c.ProjectID, &c.Secret, &retired, &created)
	if err != nil {
		return nil, err
	}
	c.Retired, c.CreatedAt = retired != 0, parseTime(created)
	if c.Secret, err = s.open(c.Secret, credentialAAD(c.ID)); err != nil {
		return nil, err
	}
	return &c, nil
}

// ForgetClusterCredential removes the record of an application credential
// once it is gone from Keystone.
func (s *DB) ForgetClusterCredential(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM cluster_credentials WHERE credential_id = ?`, id)
	return err
}
