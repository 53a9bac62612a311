package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/magnetite-io/magnetite/internal/fault"
)

// Reads for the API: rows as stored, their JSON untouched, beside the
// columns policy and paging need. The API serves that JSON (adding links and
// the fields that depend on the request) instead of decoding every row into
// a struct and encoding it again.

// StoredRow is a cluster template or cluster as the store keeps it.
type StoredRow struct {
	ID        int64
	UUID      string
	ProjectID string
	// Public and Hidden are a template's flags (false for clusters).
	Public, Hidden bool
	// Data is the object's JSON as the API serves it: for a template the
	// document as written, for a cluster or node group its spec and status
	// documents spliced into one object.
	Data []byte
	// docs and the rest are a cluster's or node group's documents and
	// bookkeeping, which the API never sees.
	docs                documents
	version, generation int64
	applied, observed   int64
	serverGroup         string
}

// StoredNodeGroup is a node group as the store keeps it, with the columns
// a cluster's node and master counts are summed from.
type StoredNodeGroup struct {
	StoredRow
	ClusterID string
	Name      string
	Role      string
	Status    string
	NodeCount int
}

// A row written by the previous release during a rolling upgrade has no
// documents yet (spec_json NULL): its one document, data, is read in their
// place and split as the migration splits (splitLegacyCluster).
const (
	templateColumns  = "id, uuid, project_id, public, hidden, data"
	clusterColumns   = "id, uuid, project_id, 0, 0, COALESCE(spec_json, data), status_json, resource_version, generation, applied_generation, observed_generation"
	nodeGroupColumns = "id, uuid, project_id, 0, 0, COALESCE(spec_json, data), status_json, resource_version, server_group_id, cluster_id, name, role, status, node_count"
)

// scanner is a row of a query: *sql.Row or *sql.Rows.
type scanner interface{ Scan(...any) error }

// decodeObject reads an object's stored JSON into a new T; keep sets what
// the JSON does not hold (the row's id, the stored bytes).
func decodeObject[T any](id int64, data []byte, what string, keep func(*T)) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("store: decode %s %d: %w", what, id, err)
	}
	keep(v)
	return v, nil
}

// scanObject reads an "id, data" row and decodes it.
func scanObject[T any](row scanner, decode func(id int64, data []byte) (T, error)) (T, error) {
	var id int64
	var data []byte
	if err := row.Scan(&id, &data); err != nil {
		var zero T
		return zero, err
	}
	return decode(id, data)
}

func scanString(row scanner) (string, error) {
	var s string
	err := row.Scan(&s)
	return s, err
}

func (r StoredRow) stored() StoredRow { return r }

// decodeAll decodes the JSON of stored rows (StoredRow or a type that
// embeds it).
func decodeAll[R interface{ stored() StoredRow }, T any](rows []R, decode func(StoredRow) (T, error)) ([]T, error) {
	out := make([]T, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = decode(r.stored()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func scanStored(row scanner) (StoredRow, error) {
	var r StoredRow
	err := row.Scan(&r.ID, &r.UUID, &r.ProjectID, &r.Public, &r.Hidden, &r.Data)
	return r, err
}

func scanStoredCluster(row scanner) (StoredRow, error) {
	var r StoredRow
	err := row.Scan(&r.ID, &r.UUID, &r.ProjectID, &r.Public, &r.Hidden, &r.docs.spec, &r.docs.status,
		&r.version, &r.generation, &r.applied, &r.observed)
	if err != nil {
		return r, err
	}
	if r.docs.status == nil {
		if r.docs, r.applied, err = splitLegacyCluster(r.docs.spec); err != nil {
			return r, fmt.Errorf("store: decode cluster %d: %w", r.ID, err)
		}
	}
	r.Data = r.docs.served()
	return r, nil
}

func scanStoredNodeGroup(row scanner) (StoredNodeGroup, error) {
	var g StoredNodeGroup
	r := &g.StoredRow
	err := row.Scan(&r.ID, &r.UUID, &r.ProjectID, &r.Public, &r.Hidden, &r.docs.spec, &r.docs.status, &r.version, &r.serverGroup,
		&g.ClusterID, &g.Name, &g.Role, &g.Status, &g.NodeCount)
	if err != nil {
		return g, err
	}
	if r.docs.status == nil {
		if r.docs, r.serverGroup, err = splitLegacyNodeGroup(r.docs.spec); err != nil {
			return g, fmt.Errorf("store: decode node group %d: %w", r.ID, err)
		}
	}
	r.Data = r.docs.served()
	return g, nil
}

// collect scans every row of a query's result, given as the query returned
// it, and closes the rows.
func collect[T any](rows *sql.Rows, err error, scan func(scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// storedKind is a table of objects the API reads as stored, by UUID or
// name and by page: cluster templates and clusters.
type storedKind struct {
	table, what, cols string
	sortable          map[string]bool
	scan              func(scanner) (StoredRow, error)
}

var (
	storedTemplates = storedKind{table: "cluster_templates", what: "cluster template", cols: templateColumns, sortable: templateSortable, scan: scanStored}
	storedClusters  = storedKind{table: "clusters", what: "cluster", cols: clusterColumns, sortable: clusterSortable, scan: scanStoredCluster}
)

// storedByIdent finds the row of kind whose UUID or name is ident among
// those scope allows. A UUID match wins; a name several rows share is
// ErrAmbiguousName. The UUID is looked up first and the name only when no
// UUID matches, each with its own indexed query: one query matching
// either column made SQLite read every cluster row of an administrator's
// scope, since cluster names are indexed only within their project.
func (s *DB) storedByIdent(ctx context.Context, k storedKind, scope func(*pageQuery), ident string) (StoredRow, error) {
	q := pageQuery{table: k.table}
	scope(&q)
	for _, col := range []string{"uuid", "name"} {
		where := append(slices.Clone(q.where), col+" = ?")
		args := append(slices.Clone(q.args), ident)
		rows, err := s.db.QueryContext(ctx, "SELECT "+k.cols+" FROM "+q.table+" WHERE "+joinWhere(where), args...)
		found, err := collect(rows, err, k.scan)
		switch {
		case err != nil:
			return StoredRow{}, err
		case len(found) == 1:
			return found[0], nil
		case len(found) > 1:
			return StoredRow{}, fault.New(ErrAmbiguousName, "%s %s", k.what, ident)
		}
	}
	return StoredRow{}, fault.New(ErrNotFound, "%s %s", k.what, ident)
}

// storedPage pages through the rows of kind that scope allows.
func (s *DB) storedPage(ctx context.Context, k storedKind, scope func(*pageQuery), opts ListOptions) ([]StoredRow, error) {
	q := pageQuery{table: k.table, sortable: k.sortable}
	scope(&q)
	rows, err := s.queryPage(ctx, q, k.cols, opts)
	return collect(rows, err, k.scan)
}

// StoredClusterTemplate finds a template by UUID or name within the scope.
func (s *DB) StoredClusterTemplate(ctx context.Context, sc TemplateScope, ident string) (StoredRow, error) {
	return s.storedByIdent(ctx, storedTemplates, sc.filter, ident)
}

// StoredClusterTemplates pages through the templates visible in the scope.
func (s *DB) StoredClusterTemplates(ctx context.Context, sc TemplateScope, opts ListOptions) ([]StoredRow, error) {
	return s.storedPage(ctx, storedTemplates, sc.filter, opts)
}

// StoredCluster finds a cluster by UUID or name within the scope.
func (s *DB) StoredCluster(ctx context.Context, sc Scope, ident string) (StoredRow, error) {
	return s.storedByIdent(ctx, storedClusters, sc.filter, ident)
}

// StoredClusters pages through the clusters in the scope.
func (s *DB) StoredClusters(ctx context.Context, sc Scope, opts ListOptions) ([]StoredRow, error) {
	return s.storedPage(ctx, storedClusters, sc.filter, opts)
}

// StoredNodeGroups pages through a cluster's node groups.
func (s *DB) StoredNodeGroups(ctx context.Context, clusterUUID string, f NodeGroupFilter, opts ListOptions) ([]StoredNodeGroup, error) {
	q := pageQuery{table: "nodegroups", sortable: nodeGroupSortable}
	q.filter("cluster_id = ?", clusterUUID)
	if f.Role != "" {
		q.filter("role = ?", f.Role)
	}
	rows, err := s.queryPage(ctx, q, nodeGroupColumns, opts)
	return collect(rows, err, scanStoredNodeGroup)
}

// StoredNodeGroup finds one of a cluster's node groups by UUID, name or
// numeric id, as GetNodeGroup does.
func (s *DB) StoredNodeGroup(ctx context.Context, clusterUUID, ident string) (StoredNodeGroup, error) {
	ng, err := scanStoredNodeGroup(s.db.QueryRowContext(ctx,
		"SELECT "+nodeGroupColumns+nodeGroupByIdent, clusterUUID, ident, ident, ident))
	if errors.Is(err, sql.ErrNoRows) {
		return ng, fault.New(ErrNotFound, "node group %s in cluster %s", ident, clusterUUID)
	}
	return ng, err
}

// StoredNodeGroupsOf returns every node group of the clusters given, keyed
// by cluster UUID, in creation order (one query per 500 clusters).
func (s *DB) StoredNodeGroupsOf(ctx context.Context, clusterUUIDs []string) (map[string][]StoredNodeGroup, error) {
	return storedNodeGroupsOf(ctx, s.db, clusterUUIDs)
}

func storedNodeGroupsOf(ctx context.Context, q querier, clusterUUIDs []string) (map[string][]StoredNodeGroup, error) {
	out := make(map[string][]StoredNodeGroup, len(clusterUUIDs))
	for start := 0; start < len(clusterUUIDs); start += 500 {
		chunk := clusterUUIDs[start:min(start+500, len(clusterUUIDs))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		marks := strings.Repeat(",?", len(chunk))[1:]
		// Sorted here, each cluster's few, rather than by the query: ORDER
		// BY id made SQLite copy every row, JSON and all, into a sorter
		// before returning the first.
		rows, err := q.QueryContext(ctx, "SELECT "+nodeGroupColumns+" FROM nodegroups WHERE cluster_id IN ("+marks+")", args...)
		ngs, err := collect(rows, err, scanStoredNodeGroup)
		if err != nil {
			return nil, err
		}
		for _, ng := range ngs {
			out[ng.ClusterID] = append(out[ng.ClusterID], ng)
		}
	}
	for _, ngs := range out {
		slices.SortFunc(ngs, func(a, b StoredNodeGroup) int { return cmp.Compare(a.ID, b.ID) })
	}
	return out, nil
}
