package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/magnetite-io/magnetite/internal/fault"
)

// pageQuery builds keyset pagination in Magnum's order: the requested sort key
// first, then id, both in the requested direction. Markers are object UUIDs
// (quota markers are ids).
type pageQuery struct {
	table     string
	sortable  map[string]bool
	where     []string
	args      []any
	markerCol string // "uuid" or "id"
}

func (q *pageQuery) filter(clause string, args ...any) {
	q.where = append(q.where, clause)
	q.args = append(q.args, args...)
}

// numericColumns are the sortable columns holding numbers (all NOT NULL).
var numericColumns = map[string]bool{
	"id": true, "hard_limit": true, "node_count": true, "is_default": true, "public": true, "hidden": true,
}

func (s *DB) queryPage(ctx context.Context, q pageQuery, cols string, opts ListOptions) (*sql.Rows, error) {
	key := opts.SortKey
	if key == "" {
		key = "id"
	}
	if !q.sortable[key] {
		return nil, fault.New(ErrInvalidSort, "%q", key)
	}
	dir := "ASC"
	cmp := ">"
	if strings.EqualFold(opts.SortDir, "desc") {
		dir, cmp = "DESC", "<"
	}
	// Nullable text columns sort with NULL as ''. Numeric columns are never
	// NULL and must not go through COALESCE: MariaDB would turn them into
	// strings and sort 10 before 9.
	sortExpr := "COALESCE(" + key + ", '')"
	if numericColumns[key] {
		sortExpr = key
	}
	where := append([]string(nil), q.where...)
	args := append([]any(nil), q.args...)
	if opts.Marker != "" {
		markerCol := q.markerCol
		if markerCol == "" {
			markerCol = "uuid"
		}
		var mID int64
		var mVal any
		row := s.db.QueryRowContext(ctx, "SELECT id, "+sortExpr+" FROM "+q.table+" WHERE "+markerCol+" = ?", opts.Marker)
		if err := row.Scan(&mID, &mVal); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil, fault.New(ErrInvalidMarker, "%s", opts.Marker)
			}
			return nil, err
		}
		if key == "id" {
			where = append(where, "id "+cmp+" ?")
			args = append(args, mID)
		} else {
			where = append(where, "("+sortExpr+" "+cmp+" ? OR ("+sortExpr+" = ? AND id "+cmp+" ?))")
			args = append(args, mVal, mVal, mID)
		}
	}
	query := "SELECT " + cols + " FROM " + q.table
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY " + sortExpr + " " + dir
	if key != "id" {
		query += ", id " + dir
	}
	if opts.Limit > 0 {
		query += fmt.Sprintf(" LIMIT %d", opts.Limit)
	}
	return s.db.QueryContext(ctx, query, args...)
}
