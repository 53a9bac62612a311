package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Count is the number of rows sharing a pair of indexed values, such as
// clusters by (status, health) or operations by (type, state).
type Count struct {
	A, B string
	N    int
}

// ClusterCounts counts every project's clusters by status and health
// ("" when the management cluster has not reported health yet). It reads the
// indexed columns only, so a metrics scrape stays cheap with many clusters.
func (s *DB) ClusterCounts(ctx context.Context) ([]Count, error) {
	return s.countPairs(ctx, `SELECT status, COALESCE(health_status, ''), COUNT(*) FROM clusters
		GROUP BY status, COALESCE(health_status, '')`)
}

// OperationCounts counts the operations queue by type and state.
func (s *DB) OperationCounts(ctx context.Context) ([]Count, error) {
	return s.countPairs(ctx, `SELECT type, state, COUNT(*) FROM operations GROUP BY type, state`)
}

func (s *DB) countPairs(ctx context.Context, query string) ([]Count, error) {
	rows, err := s.db.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("store: count: %w", err)
	}
	defer rows.Close()
	var out []Count
	for rows.Next() {
		var c Count
		var a, b sql.NullString
		if err := rows.Scan(&a, &b, &c.N); err != nil {
			return nil, fmt.Errorf("store: count: %w", err)
		}
		c.A, c.B = a.String, b.String
		out = append(out, c)
	}
	return out, rows.Err()
}
