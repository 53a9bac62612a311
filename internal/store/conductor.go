package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/model"
)

// StatusMutation changes a freshly read cluster and its node groups; it
// returns the node groups to write and whether anything changed.
type StatusMutation func(c *model.Cluster, ngs []*model.NodeGroup) (changedGroups []*model.NodeGroup, changed bool)

// UpdateClusterStatus re-reads a cluster and its node groups inside one
// transaction, applies fn and writes the result, so a status written by the
// conductor never overwrites a desired-state change the API made meanwhile.
// A cluster that no longer exists is ErrNotFound.
func (s *DB) UpdateClusterStatus(ctx context.Context, uuid string, fn StatusMutation) (*model.Cluster, error) {
	var out *model.Cluster
	err := s.retryTx(ctx, func(tx *sql.Tx) error {
		c, err := scanCluster(tx.QueryRowContext(ctx, "SELECT id, data FROM clusters WHERE uuid = ?"+s.forUpdate(), uuid))
		if errors.Is(err, sql.ErrNoRows) {
			return fault.New(ErrNotFound, "cluster %s", uuid)
		}
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, "SELECT id, data FROM nodegroups WHERE cluster_id = ? ORDER BY id"+s.forUpdate(), uuid)
		ngs, err := collect(rows, err, scanNodeGroup)
		if err != nil {
			return err
		}
		groups, changed := fn(c, ngs)
		out = c
		if !changed {
			return nil
		}
		if _, err := updateCluster(ctx, tx, c, s.forUpdate()); err != nil {
			return err
		}
		for _, ng := range groups {
			if _, err := saveNodeGroup(ctx, tx, ng, s.forUpdate()); err != nil {
				return err
			}
		}
		return bumpGeneration(ctx, tx, generationClusters)
	})
	return out, err
}

// PendingOperations counts a cluster's operations that are queued or
// running.
func (s *DB) PendingOperations(ctx context.Context, clusterUUID string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM operations WHERE cluster_id = ? AND state IN ('pending', 'running')`,
		clusterUUID).Scan(&n)
	return n, err
}

// DeleteNodeGroup removes a node group row once its machines are gone.
func (s *DB) DeleteNodeGroup(ctx context.Context, uuid string) error {
	return s.retryTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM nodegroups WHERE uuid = ?`, uuid)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		return bumpGeneration(ctx, tx, generationClusters)
	})
}

// GetClusterByUUID reads a cluster of any project.
func (s *DB) GetClusterByUUID(ctx context.Context, uuid string) (*model.Cluster, error) {
	c, err := scanCluster(s.db.QueryRowContext(ctx, "SELECT id, data FROM clusters WHERE uuid = ?", uuid))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(ErrNotFound, "cluster %s", uuid)
	}
	return c, err
}

// ClusterUUIDs lists every cluster, for the conductor's start-up resync.
func (s *DB) ClusterUUIDs(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT uuid FROM clusters ORDER BY id`)
	return collect(rows, err, scanString)
}

// Building is a cluster being created or updated, with its node groups.
type Building struct {
	Cluster    *model.Cluster
	Template   *model.ClusterTemplate
	NodeGroups []*model.NodeGroup
}

// BuildingClusters lists the clusters being created or updated, for the
// bare-metal capacity check to count the hosts their node groups still
// wait for.
func (s *DB) BuildingClusters(ctx context.Context) ([]Building, error) {
	return s.buildingClusters(ctx, s.db)
}

// querier is a database or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *DB) buildingClusters(ctx context.Context, q querier) ([]Building, error) {
	rows, err := q.QueryContext(ctx, "SELECT id, data FROM clusters WHERE status IN (?, ?) ORDER BY id",
		string(model.CreateInProgress), string(model.UpdateInProgress))
	clusters, err := collect(rows, err, scanCluster)
	if err != nil || len(clusters) == 0 {
		return nil, err
	}
	uuids := make([]string, len(clusters))
	for i, c := range clusters {
		uuids[i] = c.UUID
	}
	groups, err := nodeGroupsOf(ctx, q, uuids)
	if err != nil {
		return nil, err
	}
	templates := map[string]*model.ClusterTemplate{}
	out := make([]Building, 0, len(clusters))
	for _, c := range clusters {
		ct, ok := templates[c.ClusterTemplateID]
		if !ok {
			if ct, err = templateByUUID(ctx, q, c.ClusterTemplateID); err != nil && !errors.Is(err, ErrNotFound) {
				return nil, err
			}
			templates[c.ClusterTemplateID] = ct
		}
		out = append(out, Building{Cluster: c, Template: ct, NodeGroups: groups[c.UUID]})
	}
	return out, nil
}
