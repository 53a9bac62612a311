package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/model"
)

func (s *DB) insertCertificate(ctx context.Context, tx *sql.Tx, c *model.ClusterCertificate) error {
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now()
	}
	key, err := s.seal(string(c.KeyPEM), certificateAAD(c.ClusterID, c.Purpose))
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO cluster_certificates (cluster_id, purpose, cert_pem, key_pem, created_at)
		VALUES (?, ?, ?, ?, ?)`, c.ClusterID, c.Purpose, string(c.CertPEM), key, formatTime(c.CreatedAt))
	if err != nil {
		if isUniqueViolation(err) {
			return fault.New(ErrConflict, "cluster %s already has a %q key pair", c.ClusterID, c.Purpose)
		}
		return fmt.Errorf("store: record %s key pair of cluster %s: %w", c.Purpose, c.ClusterID, err)
	}
	return nil
}

const certificateCols = `cluster_id, purpose, cert_pem, key_pem, created_at`

func (s *DB) scanCertificate(row scanner) (*model.ClusterCertificate, error) {
	var c model.ClusterCertificate
	var cert, key, created string
	if err := row.Scan(&c.ClusterID, &c.Purpose, &cert, &key, &created); err != nil {
		return nil, err
	}
	key, err := s.open(key, certificateAAD(c.ClusterID, c.Purpose))
	if err != nil {
		return nil, err
	}
	c.CertPEM, c.KeyPEM, c.CreatedAt = []byte(cert), []byte(key), parseTime(created)
	return &c, nil
}

// ClusterCertificate reads one key pair of a cluster by purpose.
func (s *DB) ClusterCertificate(ctx context.Context, clusterUUID, purpose string) (*model.ClusterCertificate, error) {
	c, err := s.scanCertificate(s.db.QueryRowContext(ctx, "SELECT "+certificateCols+
		" FROM cluster_certificates WHERE cluster_id = ? AND purpose = ?", clusterUUID, purpose))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(ErrNotFound, "cluster %s has no %q key pair", clusterUUID, purpose)
	}
	return c, err
}

// ClusterCertificates reads every key pair of a cluster, for the conductor
// to write as Secrets.
func (s *DB) ClusterCertificates(ctx context.Context, clusterUUID string) ([]*model.ClusterCertificate, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+certificateCols+
		" FROM cluster_certificates WHERE cluster_id = ? ORDER BY id", clusterUUID)
	return collect(rows, err, s.scanCertificate)
}

// AddClusterCertificates stores key pairs of an existing cluster, all or
// none; a purpose the cluster already has is ErrConflict. Clusters created
// through ApplyClusterChange get theirs in the create's transaction; this is
// for recording the CAs of a cluster whose key pairs Cluster API generated
// (the conductor reads them from the management cluster's Secrets).
func (s *DB) AddClusterCertificates(ctx context.Context, certs []*model.ClusterCertificate) error {
	return s.retryTx(ctx, func(tx *sql.Tx) error {
		for _, c := range certs {
			if err := s.insertCertificate(ctx, tx, c); err != nil {
				return err
			}
		}
		return nil
	})
}
