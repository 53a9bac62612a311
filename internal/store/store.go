package store

import (
	"errors"
	"time"
)

// Sentinel errors; the API maps them to HTTP codes in one table.
var (
	ErrNotFound      = errors.New("store: not found")
	ErrAmbiguousName = errors.New("store: more than one object has this name")
	ErrConflict      = errors.New("store: conflicts with an existing object")
	// ErrStale means a write was made from a read of a cluster or node
	// group that another write has since changed: read again and redo it.
	ErrStale         = errors.New("store: changed since it was read")
	ErrReferenced    = errors.New("store: object is referenced by clusters")
	ErrQuotaExceeded = errors.New("store: project quota exceeded")
	ErrInvalidSort   = errors.New("store: invalid sort key")
	ErrInvalidMarker = errors.New("store: marker not found")
	// ErrNewerSchema means a newer release migrated the database.
	ErrNewerSchema = errors.New("store: database schema newer than this build")
)

// Scope says whose objects a read may see.
type Scope struct {
	ProjectID string
	// AllProjects lifts project filtering (admins listing every project).
	AllProjects bool
}

// ListOptions are Magnum's pagination parameters after validation.
type ListOptions struct {
	Limit   int
	Marker  string // UUID (or numeric id for quotas) of the last object seen
	SortKey string
	SortDir string // "asc" or "desc"
}

// Stats is what GET /v1/stats reports.
type Stats struct {
	Clusters int `json:"clusters"`
	Nodes    int `json:"nodes"`
}

// timeLayout is fixed-width so timestamps sort as strings in every backend.
const timeLayout = "2006-01-02T15:04:05.000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func formatTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return formatTime(*t)
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(timeLayout, s)
	return t
}

// parseTimeOpt reads an optional time column, read as "" when NULL.
func parseTimeOpt(s string) *time.Time {
	if s == "" {
		return nil
	}
	t := parseTime(s)
	return &t
}
