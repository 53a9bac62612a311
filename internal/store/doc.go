// Package store persists Magnetite's objects through database/sql. SQLite
// (pure Go, WAL) is the embedded default; the schema is written so the same
// migrations also run on MariaDB/MySQL. Each object is kept as JSON beside the
// columns used for lookups, filters, sorting and uniqueness, so adding a field
// to a Magnum resource needs no schema change.
package store
