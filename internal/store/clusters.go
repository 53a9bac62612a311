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
	// NodeGroups are inserted when their ID is 0 and updated otherwise,
	// each from the version it was read at; they need Cluster, whose
	// version stands for the whole cluster (a delete raises only the
	// cluster's).
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

// ApplyClusterChange writes ch in one transaction. A cluster or node group
// it updates is written only while its row is still at the version it was
// read at (ResourceVersion); otherwise nothing is written and the error is
// ErrStale: the caller reads again and makes its change anew. On MariaDB a
// transaction that lost a deadlock (two creates racing for one project's
// quota) runs again from the start. Once the change has committed, the
// objects it wrote carry their new versions.
func (s *DB) ApplyClusterChange(ctx context.Context, ch ClusterChange) error {
	if ch.Cluster == nil && (len(ch.NodeGroups) > 0 || len(ch.DeleteNodeGroups) > 0) {
		// The cluster's version stands for its node groups too: a write
		// from a read made before a delete of the cluster must fail.
		return errors.New("store: a change of node groups names no cluster")
	}
	inserted := insertedNodeGroups(ch)
	return s.retryTxLearning(ctx, func(tx *sql.Tx, learn []func()) ([]func(), error) {
		return s.writeClusterChange(ctx, tx, ch, inserted, learn)
	})
}

// retryTxLearning runs write in a transaction as retryTx does. write
// appends what the objects it writes learn (IDs, versions); that is set
// only once the transaction committed, and a retried attempt starts again
// from the objects as they were given.
func (s *DB) retryTxLearning(ctx context.Context, write func(tx *sql.Tx, learn []func()) ([]func(), error)) error {
	var learn []func()
	err := s.retryTx(ctx, func(tx *sql.Tx) (err error) {
		learn, err = write(tx, learn[:0])
		return err
	})
	if err != nil {
		return err
	}
	for _, f := range learn {
		f()
	}
	return nil
}

// insertedNodeGroups says which of ch's node groups are new, read before a
// first attempt so that a retried one inserts the same ones.
func insertedNodeGroups(ch ClusterChange) []bool {
	inserted := make([]bool, len(ch.NodeGroups))
	for i, ng := range ch.NodeGroups {
		inserted[i] = ng.ID == 0
	}
	return inserted
}

// writeClusterChange writes ch inside tx and appends to learn what the
// written objects learn once tx commits.
func (s *DB) writeClusterChange(ctx context.Context, tx *sql.Tx, ch ClusterChange, inserted []bool, learn []func()) ([]func(), error) {
	if ch.Reserve != nil {
		// First, so that every read after it sees what the change that
		// held the lock before wrote.
		if err := s.takeLock(ctx, tx, lockBareMetalCapacity); err != nil {
			return learn, err
		}
		building, err := s.buildingClusters(ctx, tx)
		if err != nil {
			return learn, err
		}
		if err := ch.Reserve(building); err != nil {
			return learn, err
		}
	}
	if ch.Cluster != nil && ch.Create {
		if err := s.quotaCheck(ctx, tx, ch.Cluster.ProjectID, ch.QuotaLimit); err != nil {
			return learn, err
		}
		id, err := insertCluster(ctx, tx, ch.Cluster)
		if err != nil {
			return learn, err
		}
		c := ch.Cluster
		learn = append(learn, func() { c.ID, c.ResourceVersion, c.Generation = id, 1, 1 })
	}
	// The cluster's row is locked and checked first, then its node
	// groups', in the order a status write takes them (so the two never
	// deadlock); the cluster is written last, its generation raised when
	// the spec of one of its node groups changed.
	var cur clusterVersion
	if ch.Cluster != nil && !ch.Create {
		var err error
		if cur, err = lockCluster(ctx, tx, ch.Cluster, s.forUpdate()); err != nil {
			return learn, err
		}
	}
	specChanged := len(ch.DeleteNodeGroups) > 0
	for i, ng := range ch.NodeGroups {
		if inserted[i] {
			id, err := insertNodeGroup(ctx, tx, ng)
			if err != nil {
				return learn, err
			}
			learn = append(learn, func() { ng.ID, ng.ResourceVersion = id, 1 })
			specChanged = true
			continue
		}
		version, changed, err := updateNodeGroup(ctx, tx, ng, s.forUpdate())
		if err != nil {
			return learn, err
		}
		learn = append(learn, func() { ng.ResourceVersion = version })
		specChanged = specChanged || changed
	}
	for _, id := range ch.DeleteNodeGroups {
		if _, err := tx.ExecContext(ctx, `DELETE FROM nodegroups WHERE uuid = ?`, id); err != nil {
			return learn, err
		}
	}
	if ch.Cluster != nil && !ch.Create {
		version, generation, err := updateCluster(ctx, tx, ch.Cluster, cur, specChanged)
		if err != nil {
			return learn, err
		}
		c := ch.Cluster
		learn = append(learn, func() { c.ResourceVersion, c.Generation = version, generation })
	}
	for _, c := range ch.Certificates {
		if err := s.insertCertificate(ctx, tx, c); err != nil {
			return learn, err
		}
	}
	if ch.Credential != nil {
		if err := s.putCredential(ctx, tx, ch.Credential); err != nil {
			return learn, err
		}
	}
	if ch.Operation != nil {
		if err := insertOperation(ctx, tx, ch.Operation); err != nil {
			return learn, err
		}
	}
	if ch.Cluster != nil || len(ch.NodeGroups) > 0 || len(ch.DeleteNodeGroups) > 0 {
		return learn, bumpGeneration(ctx, tx, generationClusters)
	}
	return learn, nil
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

// insertCluster inserts c and returns its row's id; c is left as it is.
func insertCluster(ctx context.Context, tx *sql.Tx, c *model.Cluster) (int64, error) {
	d, err := clusterDocuments(c)
	if err != nil {
		return 0, err
	}
	data, err := d.legacy(nil)
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO clusters (uuid, name, project_id, user_id, cluster_template_id, status,
		health_status, stack_id, created_at, updated_at, data, spec_json, status_json, resource_version, generation)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 1)`,
		c.UUID, c.Name, c.ProjectID, c.UserID, c.ClusterTemplateID, string(c.Status), healthCol(c.HealthStatus),
		c.StackID, formatTime(c.CreatedAt), formatTimePtr(c.UpdatedAt), string(data), string(d.spec), string(d.status))
	if err != nil {
		if isUniqueViolation(err) {
			return 0, fault.New(ErrConflict, "a cluster named %q already exists in this project", c.Name)
		}
		return 0, err
	}
	return res.LastInsertId()
}

// clusterVersion is what a write of a cluster reads of its row first,
// under the row's lock.
type clusterVersion struct {
	version, generation, applied int64
	spec                         sql.NullString
}

// lockCluster locks the row of the cluster c was read from and reads its
// version, refusing with ErrStale when another write changed it since.
func lockCluster(ctx context.Context, tx *sql.Tx, c *model.Cluster, lock string) (clusterVersion, error) {
	var v clusterVersion
	err := tx.QueryRowContext(ctx, `SELECT resource_version, generation, applied_generation, spec_json FROM clusters WHERE uuid = ?`+lock,
		c.UUID).Scan(&v.version, &v.generation, &v.applied, &v.spec)
	if errors.Is(err, sql.ErrNoRows) {
		return v, fault.New(ErrNotFound, "Cluster %s could not be found.", c.UUID)
	}
	if err == nil && v.version != c.ResourceVersion {
		err = fault.New(ErrStale, "Cluster %s changed while this request was applied (version %d, now %d); send the request again.",
			c.Name, c.ResourceVersion, v.version)
	}
	return v, err
}

// updateCluster writes c, spec and status, over its row as lockCluster
// read it (cur) and returns the row's new version and generation. The
// generation rises when c's spec differs from the row's or
// raiseGeneration (a node group's spec changed). Bookkeeping is the
// conductor's: it is left as it is.
func updateCluster(ctx context.Context, tx *sql.Tx, c *model.Cluster, cur clusterVersion, raiseGeneration bool) (version, generation int64, err error) {
	d, err := clusterDocuments(c)
	if err != nil {
		return 0, 0, err
	}
	version, generation = cur.version+1, cur.generation
	if raiseGeneration || !cur.spec.Valid || cur.spec.String != string(d.spec) {
		generation++
	}
	data, err := d.legacy(map[string]any{"applied_generation": cur.applied})
	if err != nil {
		return 0, 0, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE clusters SET name = ?, cluster_template_id = ?, status = ?, health_status = ?,
		stack_id = ?, updated_at = ?, data = ?, spec_json = ?, status_json = ?, resource_version = ?, generation = ? WHERE uuid = ?`,
		c.Name, c.ClusterTemplateID, string(c.Status), healthCol(c.HealthStatus), c.StackID,
		formatTimePtr(c.UpdatedAt), string(data), string(d.spec), string(d.status), version, generation, c.UUID)
	return version, generation, err
}

func healthCol(h *model.Health) any {
	if h == nil {
		return nil
	}
	return string(*h)
}

// insertNodeGroup inserts ng and returns its row's id; ng is left as it
// is (its id is set once the change has committed).
func insertNodeGroup(ctx context.Context, tx *sql.Tx, ng *model.NodeGroup) (int64, error) {
	// The id is part of the wire object, so insert first and then write
	// the documents that carry it.
	res, err := tx.ExecContext(ctx, `INSERT INTO nodegroups (uuid, name, cluster_id, project_id, role, is_default,
		status, node_count, created_at, updated_at, data, spec_json, status_json, resource_version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}', '{}', '{}', 1)`,
		ng.UUID, ng.Name, ng.ClusterID, ng.ProjectID, ng.Role, ng.IsDefault, string(ng.Status), ng.NodeCount,
		formatTime(ng.CreatedAt), formatTimePtr(ng.UpdatedAt))
	if err != nil {
		if isUniqueViolation(err) {
			return 0, fault.New(ErrConflict, "A node group with name %s already exists in the cluster %s.", ng.Name, ng.ClusterID)
		}
		return 0, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	withID := *ng
	withID.ID = id
	d, err := nodeGroupDocuments(&withID)
	if err != nil {
		return 0, err
	}
	data, err := d.legacy(nil)
	if err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE nodegroups SET data = ?, spec_json = ?, status_json = ? WHERE id = ?`,
		string(data), string(d.spec), string(d.status), id)
	return id, err
}

// updateNodeGroup writes ng as updateCluster writes a cluster, and says
// whether its spec changed.
func updateNodeGroup(ctx context.Context, tx *sql.Tx, ng *model.NodeGroup, lock string) (version int64, specChanged bool, err error) {
	var cur int64
	var spec sql.NullString
	var serverGroup string
	err = tx.QueryRowContext(ctx, `SELECT resource_version, spec_json, server_group_id FROM nodegroups WHERE uuid = ?`+lock,
		ng.UUID).Scan(&cur, &spec, &serverGroup)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, fault.New(ErrNotFound, "Nodegroup %s could not be found.", ng.UUID)
	}
	if err != nil {
		return 0, false, err
	}
	if cur != ng.ResourceVersion {
		return 0, false, fault.New(ErrStale, "Node group %s changed while this request was applied (version %d, now %d); send the request again.",
			ng.Name, ng.ResourceVersion, cur)
	}
	d, err := nodeGroupDocuments(ng)
	if err != nil {
		return 0, false, err
	}
	data, err := d.legacy(nodeGroupLegacyBookkeeping(serverGroup))
	if err != nil {
		return 0, false, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE nodegroups SET name = ?, role = ?, is_default = ?, status = ?, node_count = ?,
		updated_at = ?, data = ?, spec_json = ?, status_json = ?, resource_version = ? WHERE uuid = ?`,
		ng.Name, ng.Role, ng.IsDefault, string(ng.Status), ng.NodeCount, formatTimePtr(ng.UpdatedAt),
		string(data), string(d.spec), string(d.status), cur+1, ng.UUID)
	return cur + 1, !spec.Valid || spec.String != string(d.spec), err
}

// nodeGroupLegacyBookkeeping is a node group's bookkeeping as the previous
// release kept it in its document.
func nodeGroupLegacyBookkeeping(serverGroup string) map[string]any {
	if serverGroup == "" {
		return nil
	}
	return map[string]any{"server_group_id": serverGroup}
}

func scanCluster(row scanner) (*model.Cluster, error) {
	r, err := scanStoredCluster(row)
	if err != nil {
		return nil, err
	}
	return decodeCluster(r)
}

// decodeCluster makes the cluster of a row read with clusterColumns.
func decodeCluster(r StoredRow) (*model.Cluster, error) {
	c := new(model.Cluster)
	if err := json.Unmarshal(r.Data, c); err != nil {
		return nil, fmt.Errorf("store: decode cluster %d: %w", r.ID, err)
	}
	c.ID, c.ResourceVersion, c.Generation = r.ID, r.version, r.generation
	c.AppliedGeneration, c.ObservedGeneration = r.applied, r.observed
	return c, nil
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
	return decodeCluster(r)
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

func scanNodeGroup(row scanner) (*model.NodeGroup, error) {
	r, err := scanStoredNodeGroup(row)
	if err != nil {
		return nil, err
	}
	return decodeNodeGroup(r.StoredRow)
}

// decodeNodeGroup makes the node group of a row read with nodeGroupColumns.
func decodeNodeGroup(r StoredRow) (*model.NodeGroup, error) {
	ng := new(model.NodeGroup)
	if err := json.Unmarshal(r.Data, ng); err != nil {
		return nil, fmt.Errorf("store: decode node group %d: %w", r.ID, err)
	}
	ng.ID, ng.ResourceVersion, ng.ServerGroupID = r.ID, r.version, r.serverGroup
	return ng, nil
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
	ng, err := scanNodeGroup(s.db.QueryRowContext(ctx, "SELECT "+nodeGroupColumns+nodeGroupByIdent, clusterUUID, ident, ident, ident))
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
