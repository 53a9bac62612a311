// Package store persists Magnetite's objects through database/sql: SQLite
// (pure Go, WAL, file mode 0600) is the embedded default and MariaDB/MySQL
// serves replicas that share one database. Each schema version is one file
// in migrations/, rendered for the dialect by the loader (an auto-numbered
// id and MariaDB's table options are the only differences). Each
// object is kept as JSON in its API shape beside the columns used for
// lookups, filters, sorting and uniqueness, so adding a field to a Magnum
// resource needs no schema change and reads can serve the stored JSON.
//
// Besides the objects it keeps the operations queue (claimed under leases
// with a retry policy, so replicas never run an operation twice), cluster
// events, secrets sealed with [database] secret_key, and the generation
// counters that tell every replica's page cache when a listing changed.
package store
