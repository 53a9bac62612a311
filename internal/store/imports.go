package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/magnetite-io/magnetite/internal/model"
)

// Import is the rows an import of another service's database writes: all
// of them or none, so an import that fails leaves Magnetite as it was and
// running it again starts from the same place.
type Import struct {
	Templates []*model.ClusterTemplate
	// Clusters are creates, each with its node groups, key pairs and
	// operation, as ApplyClusterChange takes them.
	Clusters []ClusterChange
	// Certificates are key pairs of clusters that already exist.
	Certificates []*model.ClusterCertificate
	Quotas       []*model.Quota
}

// WriteImport writes every row of im in one transaction. The error of a
// row the store refuses names the row; then nothing is written. Once the
// transaction has committed, the written objects carry their IDs and
// versions.
func (s *DB) WriteImport(ctx context.Context, im Import) error {
	inserted := make([][]bool, len(im.Clusters))
	for i, ch := range im.Clusters {
		if ch.Cluster == nil || !ch.Create {
			return fmt.Errorf("store: an import creates its clusters; change %d does not", i)
		}
		inserted[i] = insertedNodeGroups(ch)
	}
	return s.retryTxLearning(ctx, func(tx *sql.Tx, learn []func()) ([]func(), error) {
		for _, ct := range im.Templates {
			id, err := insertTemplate(ctx, tx, ct)
			if err != nil {
				return learn, fmt.Errorf("cluster template %s (%s): %w", ct.Name, ct.UUID, err)
			}
			learn = append(learn, func() { ct.ID = id })
		}
		for i, ch := range im.Clusters {
			var err error
			if learn, err = s.writeClusterChange(ctx, tx, ch, inserted[i], learn); err != nil {
				return learn, fmt.Errorf("cluster %s (%s): %w", ch.Cluster.Name, ch.Cluster.UUID, err)
			}
		}
		for _, c := range im.Certificates {
			if err := s.insertCertificate(ctx, tx, c); err != nil {
				return learn, err
			}
		}
		for _, q := range im.Quotas {
			id, err := insertQuota(ctx, tx, q)
			if err != nil {
				return learn, fmt.Errorf("quota of project %s for %s: %w", q.ProjectID, q.Resource, err)
			}
			learn = append(learn, func() { q.ID = id })
		}
		return learn, nil
	})
}
