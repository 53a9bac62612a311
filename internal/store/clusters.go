package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/model"
)

var clusterSortable = map[string]bool{
	"id": true, "uuid": true, "name": true, "project_id": true, "user_id": true,
	"cluster_template_id": true, "status": true, "health_status": true, "stack_id": true,
	"created_at": true, "updated_at": true,
}

var nodeGroupSortable = map[string]bool{
	"id": true, "uuid": true, "name": true, "role": true, "is_default": true, "status": true,
	"node_count": true, "created_at": true, "updated_at": true,
}

// ClusterChange is one atomic change of a cluster's desired state: the
// cluster row, the node groups it touches and the operation that asks the
// conductor to converge. Either all of it is written or none.
type ClusterChange struct {
	Cluster *model.Cluster
	// Create inserts Cluster instead of updating it; QuotaLimit then caps the
	// number of clusters in the project (checked inside the transaction).
	Create     bool
	QuotaLimit int
	// NodeGroups are inserted when their ID is 0 and updated otherwise.
	NodeGroups []*model.NodeGroup
	// DeleteNodeGroups removes node group rows by UUID.
	DeleteNodeGroups []string
	Operation        *model.Operation
	// Certificates are the cluster's key pairs, stored with its create so a
	// cluster never exists without its CA.
	Certificates []*model.ClusterCertificate
	// Credential is the cluster's new application credential; the ones it
	// had before are retired in the same transaction.
	Credential *model.ClusterCredential
	// Reserve, when set, claims the bare-metal hosts the change adds: it is
	// called inside the transaction, once the change holds the
	// baremetal_capacity lock (so changes of every replica reserve one at a
	// time), with the clusters being built as the transaction sees them; an
	// error refuses the whole change.
	Reserve func(building []Building) error
}

// ApplyClusterChange writes ch in one transaction. On MariaDB a transaction
// that lost a deadlock (two creates racing for one project's quota) runs
// again from the start.
func (s *DB) ApplyClusterChange(ctx context.Context, ch ClusterChange) error {
	inserted := make([]bool, len(ch.NodeGroups))
	for i, ng := range ch.NodeGroups {
		inserted[i] = ng.ID == 0
	}
	var wroteCluster []byte
	wroteGroups := make([][]byte, len(ch.NodeGroups))
	err := s.retryTx(ctx, func(tx *sql.Tx) error {
		// A retried attempt inserts again what the rolled-back one did.
		for i, ng := range ch.NodeGroups {
			if inserted[i] {
				ng.ID = 0
			}
		}
		if ch.Reserve != nil {
			// First, so that every read after it sees what the change that
			// held the lock before wrote.
			if err := s.takeLock(ctx, tx, lockBareMetalCapacity); err != nil {
				return err
			}
			building, err := s.buildingClusters(ctx, tx)
			if err != nil {
				return err
			}
			if err := ch.Reserve(building); err != nil {
				return err
			}
		}
		if err := s.refuseUndoingDelete(ctx, tx, ch); err != nil {
			return err
		}
		if ch.Cluster != nil {
			if ch.Create {
				if err := s.quotaCheck(ctx, tx, ch.Cluster.ProjectID, ch.QuotaLimit); err != nil {
					return err
				}
				if err := insertCluster(ctx, tx, ch.Cluster); err != nil {
					return err
				}
			} else {
				data, err := updateCluster(ctx, tx, ch.Cluster, s.forUpdate())
				if err != nil {
					return err
				}
				wroteCluster = data
			}
		}
		for i, ng := range ch.NodeGroups {
			data, err := saveNodeGroup(ctx, tx, ng, s.forUpdate())
			if err != nil {
				return err
			}
			wroteGroups[i] = data
		}
		for _, c := range ch.Certificates {
			if err := s.insertCertificate(ctx, tx, c); err != nil {
				return err
			}
		}
		if ch.Credential != nil {
			if err := s.putCredential(ctx, tx, ch.Credential); err != nil {
				return err
			}
		}
		for _, id := range ch.DeleteNodeGroups {
			if _, err := tx.ExecContext(ctx, `DELETE FROM nodegroups WHERE uuid = ?`, id); err != nil {
				return err
			}
		}
		if ch.Operation != nil {
			if err := insertOperation(ctx, tx, ch.Operation); err != nil {
				return err
			}
		}
		if ch.Cluster != nil || len(ch.NodeGroups) > 0 || len(ch.DeleteNodeGroups) > 0 {
			return bumpGeneration(ctx, tx, generationClusters)
		}
		return nil
	})
	if err != nil {
		// The change may be made again (after planning anew): what it
		// inserts is still to be inserted.
		for i, ng := range ch.NodeGroups {
			if inserted[i] {
				ng.ID = 0
			}
		}
		return err
	}
	if wroteCluster != nil {
		refreshCluster(ch.Cluster, wroteCluster)
	}
	for i, ng := range ch.NodeGroups {
		refreshNodeGroup(ng, wroteGroups[i])
	}
	return nil
}

// lockBareMetalCapacity is the row of the locks table that serializes
// reservations of bare-metal hosts.
const lockBareMetalCapacity = "baremetal_capacity"

// takeLock locks a row of the locks table until the transaction ends. On
// SQLite the transaction already holds the database's one write lock
// (BEGIN IMMEDIATE); the read only checks that the row exists.
func (s *DB) takeLock(ctx context.Context, tx *sql.Tx, name string) error {
	var got string
	err := tx.QueryRowContext(ctx, `SELECT name FROM locks WHERE name = ?`+s.forUpdate(), name).Scan(&got)
	if err != nil {
		return fmt.Errorf("store: take the %s lock: %w", name, err)
	}
	return nil
}

// refuseUndoingDelete refuses, inside the change's transaction, any change
// to a cluster or node group that is being deleted, other than the delete
// itself: a request that read the object before a delete was accepted must
// not commit after it and move the object out of its delete (Magnum answers
// such a change with a 409 too). The rows are read with the dialect's lock,
// so a delete cannot commit between this check and the write.
func (s *DB) refuseUndoingDelete(ctx context.Context, tx *sql.Tx, ch ClusterChange) error {
	if ch.Create || ch.Cluster == nil || ch.Cluster.Status == model.DeleteInProgress {
		return nil
	}
	var name, status string
	err := tx.QueryRowContext(ctx, `SELECT name, status FROM clusters WHERE uuid = ?`+s.forUpdate(), ch.Cluster.UUID).Scan(&name, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return fault.New(ErrNotFound, "Cluster %s could not be found.", ch.Cluster.UUID)
	}
	if err != nil {
		return err
	}
	if model.Status(status) == model.DeleteInProgress {
		return fault.New(ErrConflict, "Cluster %s is being deleted (DELETE_IN_PROGRESS); it can no longer be changed.", name)
	}
	for _, ng := range ch.NodeGroups {
		if ng.ID == 0 || ng.Status == model.DeleteInProgress {
			continue
		}
		err := tx.QueryRowContext(ctx, `SELECT name, status FROM nodegroups WHERE uuid = ?`+s.forUpdate(), ng.UUID).Scan(&name, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return fault.New(ErrNotFound, "Nodegroup %s could not be found.", ng.UUID)
		}
		if err != nil {
			return err
		}
		if model.Status(status) == model.DeleteInProgress {
			return fault.New(ErrConflict, "Node group %s is being deleted (DELETE_IN_PROGRESS); it can no longer be changed.", name)
		}
	}
	return nil
}

// quotaCheck counts the project's clusters with a locking read on MariaDB,
// so two creates racing for the last free slot cannot both pass: the second
// waits for (or deadlocks with, and is retried after) the first.
func (s *DB) quotaCheck(ctx context.Context, tx *sql.Tx, projectID string, defaultLimit int) error {
	limit := defaultLimit
	var hard sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT hard_limit FROM quotas WHERE project_id = ? AND resource = ?`,
		projectID, model.QuotaResourceCluster).Scan(&hard)
	switch {
	case err == nil:
		limit = int(hard.Int64)
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM clusters WHERE project_id = ?`+s.forUpdate(), projectID).Scan(&n); err != nil {
		return err
	}
	if n >= limit {
		return fault.New(ErrQuotaExceeded, "You have reached the maximum clusters per project, %d. You may delete a cluster to make room for a new one.", limit)
	}
	return nil
}

func insertCluster(ctx context.Context, tx *sql.Tx, c *model.Cluster) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO clusters (uuid, name, project_id, user_id, cluster_template_id, status,
		health_status, stack_id, created_at, updated_at, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.UUID, c.Name, c.ProjectID, c.UserID, c.ClusterTemplateID, string(c.Status), healthCol(c.HealthStatus),
		c.StackID, formatTime(c.CreatedAt), formatTimePtr(c.UpdatedAt), string(data))
	if err != nil {
		if isUniqueViolation(err) {
			return fault.New(ErrConflict, "a cluster named %q already exists in this project", c.Name)
		}
		return err
	}
	c.ID, _ = res.LastInsertId()
	return nil
}

// updateCluster writes c and returns the JSON written. When c was read
// from the store and the row has changed since, only the fields c's writer
// changed are written over the row's current values (see mergeSince); lock
// is the dialect's row lock. c itself is left alone: the caller refreshes
// it (refreshCluster) once the transaction has committed, since a retried
// transaction must merge from the same read again.
func updateCluster(ctx context.Context, tx *sql.Tx, c *model.Cluster, lock string) ([]byte, error) {
	data, w, err := sinceRead(ctx, tx, "clusters", "cluster", c.UUID, lock, c.Stored, c)
	if err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE clusters SET name = ?, cluster_template_id = ?, status = ?, health_status = ?,
		stack_id = ?, updated_at = ?, data = ? WHERE uuid = ?`,
		w.Name, w.ClusterTemplateID, string(w.Status), healthCol(w.HealthStatus), w.StackID,
		formatTimePtr(w.UpdatedAt), string(data), c.UUID)
	if err := matched(res, err, "cluster %s", c.UUID); err != nil {
		return nil, err
	}
	return data, nil
}

// refreshCluster makes c what was written for it.
func refreshCluster(c *model.Cluster, data []byte) {
	fresh := model.Cluster{}
	if json.Unmarshal(data, &fresh) == nil {
		fresh.ID = c.ID
		*c = fresh
	}
	c.Stored = data
}

// refreshNodeGroup makes ng what was written for it.
func refreshNodeGroup(ng *model.NodeGroup, data []byte) {
	fresh := model.NodeGroup{}
	if json.Unmarshal(data, &fresh) == nil {
		*ng = fresh
	}
	ng.Stored = data
}

func healthCol(h *model.Health) any {
	if h == nil {
		return nil
	}
	return string(*h)
}

// saveNodeGroup inserts ng (ID 0, which it sets) or writes it as
// updateCluster writes a cluster, and returns the JSON written.
func saveNodeGroup(ctx context.Context, tx *sql.Tx, ng *model.NodeGroup, lock string) ([]byte, error) {
	if ng.ID == 0 {
		// The id is part of the wire object, so insert first and then write
		// the JSON that carries it.
		res, err := tx.ExecContext(ctx, `INSERT INTO nodegroups (uuid, name, cluster_id, project_id, role, is_default,
			status, node_count, created_at, updated_at, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			ng.UUID, ng.Name, ng.ClusterID, ng.ProjectID, ng.Role, ng.IsDefault, string(ng.Status), ng.NodeCount,
			formatTime(ng.CreatedAt), formatTimePtr(ng.UpdatedAt), "{}")
		if err != nil {
			if isUniqueViolation(err) {
				return nil, fault.New(ErrConflict, "A node group with name %s already exists in the cluster %s.", ng.Name, ng.ClusterID)
			}
			return nil, err
		}
		ng.ID, _ = res.LastInsertId()
	}
	data, w, err := sinceRead(ctx, tx, "nodegroups", "node group", ng.UUID, lock, ng.Stored, ng)
	if err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE nodegroups SET name = ?, role = ?, is_default = ?, status = ?, node_count = ?,
		updated_at = ?, data = ? WHERE uuid = ?`,
		w.Name, w.Role, w.IsDefault, string(w.Status), w.NodeCount, formatTimePtr(w.UpdatedAt), string(data), ng.UUID)
	if err := matched(res, err, "node group %s", ng.UUID); err != nil {
		return nil, err
	}
	return data, nil
}

func scanCluster(row scanner) (*model.Cluster, error) { return scanObject(row, decodeCluster) }

func decodeCluster(id int64, data []byte) (*model.Cluster, error) {
	return decodeObject(id, data, "cluster", func(c *model.Cluster) { c.ID, c.Stored = id, data })
}

func (sc Scope) filter(q *pageQuery) {
	if !sc.AllProjects {
		q.filter("project_id = ?", sc.ProjectID)
	}
}

// GetCluster finds a cluster by UUID or name within the scope.
func (s *DB) GetCluster(ctx context.Context, sc Scope, ident string) (*model.Cluster, error) {
	r, err := s.StoredCluster(ctx, sc, ident)
	if err != nil {
		return nil, err
	}
	return decodeCluster(r.ID, r.Data)
}

// ListClusters pages through the clusters in the scope.
func (s *DB) ListClusters(ctx context.Context, sc Scope, opts ListOptions) ([]*model.Cluster, error) {
	rows, err := s.StoredClusters(ctx, sc, opts)
	if err != nil {
		return nil, err
	}
	return decodeAll(rows, decodeCluster)
}

// DeleteCluster removes a cluster and its node groups; the conductor calls it
// once the management cluster holds nothing of the cluster any more.
func (s *DB) DeleteCluster(ctx context.Context, uuid string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM nodegroups WHERE cluster_id = ?`, uuid); err != nil {
		return rollback(tx, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM cluster_events WHERE cluster_id = ?`, uuid); err != nil {
		return rollback(tx, err)
	}
	if err := deleteListed(ctx, tx, "clusters", "cluster", uuid, generationClusters); err != nil {
		return rollback(tx, err)
	}
	return tx.Commit()
}

func scanNodeGroup(row scanner) (*model.NodeGroup, error) { return scanObject(row, decodeNodeGroup) }

func decodeNodeGroup(id int64, data []byte) (*model.NodeGroup, error) {
	return decodeObject(id, data, "node group", func(ng *model.NodeGroup) { ng.ID, ng.Stored = id, data })
}

func decodeNodeGroups(rows []StoredNodeGroup) ([]*model.NodeGroup, error) {
	return decodeAll(rows, decodeNodeGroup)
}

// NodeGroupFilter narrows a node group listing.
type NodeGroupFilter struct {
	Role string
}

// ListNodeGroups pages through a cluster's node groups.
func (s *DB) ListNodeGroups(ctx context.Context, clusterUUID string, f NodeGroupFilter, opts ListOptions) ([]*model.NodeGroup, error) {
	rows, err := s.StoredNodeGroups(ctx, clusterUUID, f, opts)
	if err != nil {
		return nil, err
	}
	return decodeNodeGroups(rows)
}

// NodeGroupsOf returns every node group of the clusters given, keyed by
// cluster UUID, in creation order (one query for a whole page of clusters).
func (s *DB) NodeGroupsOf(ctx context.Context, clusterUUIDs []string) (map[string][]*model.NodeGroup, error) {
	return nodeGroupsOf(ctx, s.db, clusterUUIDs)
}

func nodeGroupsOf(ctx context.Context, q querier, clusterUUIDs []string) (map[string][]*model.NodeGroup, error) {
	stored, err := storedNodeGroupsOf(ctx, q, clusterUUIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]*model.NodeGroup, len(stored))
	for id, rows := range stored {
		if out[id], err = decodeNodeGroups(rows); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// nodeGroupByIdent selects a cluster's node group by UUID, name or numeric
// id (gophercloud sends the id); the arguments are the cluster's UUID and
// the identifier three times.
const nodeGroupByIdent = " FROM nodegroups WHERE cluster_id = ? AND (uuid = ? OR name = ? OR CAST(id AS CHAR) = ?) ORDER BY id LIMIT 1"

// GetNodeGroup finds a node group of a cluster by UUID, name or numeric id.
func (s *DB) GetNodeGroup(ctx context.Context, clusterUUID, ident string) (*model.NodeGroup, error) {
	ng, err := scanNodeGroup(s.db.QueryRowContext(ctx, "SELECT id, data"+nodeGroupByIdent, clusterUUID, ident, ident, ident))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(ErrNotFound, "node group %s in cluster %s", ident, clusterUUID)
	}
	return ng, err
}

// ClusterStats counts clusters and nodes (masters included) in the scope.
func (s *DB) ClusterStats(ctx context.Context, sc Scope) (Stats, error) {
	var st Stats
	q := pageQuery{}
	sc.filter(&q)
	where := ""
	if len(q.where) > 0 {
		where = " WHERE " + joinWhere(q.where)
	}
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM clusters"+where, q.args...).Scan(&st.Clusters); err != nil {
		return st, err
	}
	var nodes sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT SUM(node_count) FROM nodegroups"+where, q.args...).Scan(&nodes); err != nil {
		return st, err
	}
	st.Nodes = int(nodes.Int64)
	return st, nil
}

// CountClusters counts a project's clusters.
func (s *DB) CountClusters(ctx context.Context, projectID string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM clusters WHERE project_id = ?`, projectID).Scan(&n)
	return n, err
}

// sinceRead is what to write for obj, read from the table's row uuid as
// stored: obj's JSON when the row has not changed since (or obj was not
// read from the store), else the merge of the writer's changes into the
// current row, with the merged object (whose fields fill the row's indexed
// columns).
func sinceRead[T any](ctx context.Context, tx *sql.Tx, table, what, uuid, lock string, stored []byte, obj *T) ([]byte, *T, error) {
	data, err := json.Marshal(obj)
	if err != nil || len(stored) == 0 {
		return data, obj, err
	}
	var cur string
	err = tx.QueryRowContext(ctx, "SELECT data FROM "+table+" WHERE uuid = ?"+lock, uuid).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fault.New(ErrNotFound, "%s %s", what, uuid)
	}
	if err != nil || cur == string(stored) {
		return data, obj, err
	}
	if data, err = mergeSince(stored, data, []byte(cur)); err != nil {
		return nil, nil, fmt.Errorf("store: merge %s %s: %w", what, uuid, err)
	}
	merged := new(T)
	if err := json.Unmarshal(data, merged); err != nil {
		return nil, nil, err
	}
	return data, merged, nil
}

// mergeSince merges a writer's object into the stored row when the row
// changed after the writer read it: each top-level field the writer changed
// (ours differs from base) is the writer's, every other field is the
// current row's. Two writers changing different fields (a user's resize and
// the conductor's status) both keep their change; when both changed the
// same field, the later writer's value stands.
func mergeSince(base, ours, current []byte) ([]byte, error) {
	var docs [3]map[string]any
	for i, raw := range [][]byte{base, ours, current} {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&docs[i]); err != nil {
			return nil, err
		}
	}
	b, o, out := docs[0], docs[1], docs[2]
	for k, v := range o {
		if bv, ok := b[k]; !ok || !reflect.DeepEqual(bv, v) {
			out[k] = v
		}
	}
	for k := range b {
		if _, ok := o[k]; !ok {
			delete(out, k)
		}
	}
	return json.Marshal(out)
}
