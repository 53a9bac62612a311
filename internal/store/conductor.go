package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/model"
)

// StatusMutation changes a freshly read cluster and its node groups; it
// returns the node groups to write and whether anything changed.
type StatusMutation func(c *model.Cluster, ngs []*model.NodeGroup) (changedGroups []*model.NodeGroup, changed bool)

// UpdateClusterStatus re-reads a cluster and its node groups under their
// rows' locks inside one transaction, applies fn and writes what the
// conductor owns of the result: the status documents and the bookkeeping
// (applied and observed generation, server groups). The spec is the API's:
// a change fn makes to it is not written, but for a node group's
// node_count, which follows what the cluster autoscaler chose (as on
// Magnum). Since fn always works on the rows
// as they are, a status write never undoes a change the API committed
// before it, and the API's writes made from older reads fail as stale
// (every write raises the rows' versions). A cluster that no longer exists
// is ErrNotFound.
func (s *DB) UpdateClusterStatus(ctx context.Context, uuid string, fn StatusMutation) (*model.Cluster, error) {
	var out *model.Cluster
	err := s.retryTx(ctx, func(tx *sql.Tx) error {
		row, err := scanStoredCluster(tx.QueryRowContext(ctx, "SELECT "+clusterColumns+" FROM clusters WHERE uuid = ?"+s.forUpdate(), uuid))
		if errors.Is(err, sql.ErrNoRows) {
			return fault.New(ErrNotFound, "cluster %s", uuid)
		}
		if err != nil {
			return err
		}
		c, err := decodeCluster(row)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, "SELECT "+nodeGroupColumns+" FROM nodegroups WHERE cluster_id = ? ORDER BY id"+s.forUpdate(), uuid)
		groupRows, err := collect(rows, err, scanStoredNodeGroup)
		if err != nil {
			return err
		}
		ngs, err := decodeNodeGroups(groupRows)
		if err != nil {
			return err
		}
		specs := make(map[string][]byte, len(groupRows))
		for _, g := range groupRows {
			specs[g.UUID] = g.docs.spec
		}
		groups, changed := fn(c, ngs)
		out = c
		if !changed {
			return nil
		}
		if err := writeClusterStatus(ctx, tx, c, row.docs.spec); err != nil {
			return err
		}
		for _, ng := range groups {
			spec, ok := specs[ng.UUID]
			if !ok {
				return fmt.Errorf("store: a status write of cluster %s names node group %s, which is not the cluster's", uuid, ng.UUID)
			}
			spec, err := followedNodeCount(spec, ng.NodeCount)
			if err != nil {
				return err
			}
			if err := writeNodeGroupStatus(ctx, tx, ng, spec); err != nil {
				return err
			}
		}
		return bumpGeneration(ctx, tx, generationClusters)
	})
	return out, err
}

// writeClusterStatus writes c's status document and bookkeeping beside the
// row's spec, and raises the row's version (c's too: it is what the
// transaction read, so a retried attempt reads it again).
func writeClusterStatus(ctx context.Context, tx *sql.Tx, c *model.Cluster, spec []byte) error {
	d, err := clusterDocuments(c)
	if err != nil {
		return err
	}
	d.spec = spec
	data, err := d.legacy(map[string]any{"applied_generation": c.AppliedGeneration})
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE clusters SET status = ?, health_status = ?, updated_at = ?, data = ?, status_json = ?,
		spec_json = ?, applied_generation = ?, observed_generation = ?, resource_version = resource_version + 1 WHERE uuid = ?`,
		string(c.Status), healthCol(c.HealthStatus), formatTimePtr(c.UpdatedAt), string(data), string(d.status),
		string(spec), c.AppliedGeneration, c.ObservedGeneration, c.UUID)
	if err == nil {
		c.ResourceVersion++
	}
	return err
}

// writeNodeGroupStatus is writeClusterStatus for a node group, whose
// bookkeeping is its server group.
func writeNodeGroupStatus(ctx context.Context, tx *sql.Tx, ng *model.NodeGroup, spec []byte) error {
	d, err := nodeGroupDocuments(ng)
	if err != nil {
		return err
	}
	d.spec = spec
	data, err := d.legacy(nodeGroupLegacyBookkeeping(ng.ServerGroupID))
	if err != nil {
		return err
	}
	// node_count is the column the cluster's counts and quotas are summed
	// from; it moves with the spec (followedNodeCount).
	_, err = tx.ExecContext(ctx, `UPDATE nodegroups SET status = ?, updated_at = ?, data = ?, status_json = ?, spec_json = ?,
		server_group_id = ?, node_count = ?, resource_version = resource_version + 1 WHERE uuid = ?`,
		string(ng.Status), formatTimePtr(ng.UpdatedAt), string(data), string(d.status), string(spec), ng.ServerGroupID,
		specNodeCount(spec, ng.NodeCount), ng.UUID)
	if err == nil {
		ng.ResourceVersion++
	}
	return err
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
	c, err := scanCluster(s.db.QueryRowContext(ctx, "SELECT "+clusterColumns+" FROM clusters WHERE uuid = ?", uuid))
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
	rows, err := q.QueryContext(ctx, "SELECT "+clusterColumns+" FROM clusters WHERE status IN (?, ?) ORDER BY id",
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

// followedNodeCount is a node group's spec document with its node_count set
// to n: the one spec field the conductor writes, when the cluster
// autoscaler has moved the group. The row's lock is held and its version
// raised, so an API write read before it is redone from a new read.
func followedNodeCount(spec []byte, n int) ([]byte, error) {
	var ng model.NodeGroup
	if err := json.Unmarshal(spec, &ng); err != nil {
		return nil, fmt.Errorf("store: read a node group's spec: %w", err)
	}
	if ng.NodeCount == n {
		return spec, nil
	}
	ng.NodeCount = n
	return json.Marshal(nodeGroupSpec{NodeGroup: &ng})
}

// specNodeCount is the node_count a node group's spec document holds (the
// count written), or fallback when the document cannot be read.
func specNodeCount(spec []byte, fallback int) int {
	var doc struct {
		NodeCount *int `json:"node_count"`
	}
	if json.Unmarshal(spec, &doc) != nil || doc.NodeCount == nil {
		return fallback
	}
	return *doc.NodeCount
}
