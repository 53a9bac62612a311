package store_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/store"
)

// idTables are the tables whose key is the auto-numbered {{id}}; they and
// hosts are made with the {{table_options}}, and optionTables are given them
// by {{convert_table}}.
var (
	idTables     = []string{"cluster_templates", "clusters", "nodegroups", "quotas", "operations", "services", "cluster_events", "cluster_certificates"}
	optionTables = []string{"hosts", "cluster_credentials", "locks", "list_generations", "periodic_leases"}
)

func init() {
	storeCases = append(storeCases, storeCase{"the schema has each dialect's keys, engine, collation and foreign keys", func(t *testing.T, db *store.DB, reopen func() (*store.DB, error)) {
		switch db.Dialect() {
		case store.MySQL:
			// Migrate again into a database whose defaults are neither
			// InnoDB's collation nor utf8mb4, so the tables show what the
			// migrations asked for, not what the server would give anyway.
			conn, err := db.SQL().Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var name string
			if err := conn.QueryRowContext(ctx, `SELECT DATABASE()`).Scan(&name); err != nil {
				t.Fatal(err)
			}
			for _, stmt := range []string{"DROP DATABASE " + name, "CREATE DATABASE " + name + " CHARACTER SET latin1 COLLATE latin1_swedish_ci"} {
				if _, err := conn.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			again, err := reopen()
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			for _, table := range append(idTables, optionTables...) {
				var engine, collation string
				if err := db.SQL().QueryRowContext(ctx, `SELECT ENGINE, TABLE_COLLATION FROM information_schema.TABLES
					WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?`, table).Scan(&engine, &collation); err != nil {
					t.Fatalf("%s: %v", table, err)
				}
				if engine != "InnoDB" || collation != "utf8mb4_bin" {
					t.Errorf("table %s is %s with %s, want InnoDB with utf8mb4_bin", table, engine, collation)
				}
			}
			for _, table := range idTables {
				var typ, extra, key string
				if err := db.SQL().QueryRowContext(ctx, `SELECT DATA_TYPE, EXTRA, COLUMN_KEY FROM information_schema.COLUMNS
					WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'id'`, table).Scan(&typ, &extra, &key); err != nil {
					t.Fatalf("%s.id: %v", table, err)
				}
				if typ != "bigint" || extra != "auto_increment" || key != "PRI" {
					t.Errorf("%s.id is %s %s %s, want an auto_increment bigint primary key", table, typ, extra, key)
				}
			}
			var rule string
			if err := db.SQL().QueryRowContext(ctx, `SELECT DELETE_RULE FROM information_schema.REFERENTIAL_CONSTRAINTS
				WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = 'cluster_certificates' AND REFERENCED_TABLE_NAME = 'clusters'`).Scan(&rule); err != nil || rule != "CASCADE" {
				t.Fatalf("cluster_certificates' foreign key to clusters: delete rule %q, %v; want CASCADE", rule, err)
			}
		case store.SQLite:
			for _, table := range idTables {
				var ddl string
				if err := db.SQL().QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&ddl); err != nil {
					t.Fatalf("%s: %v", table, err)
				}
				if !rowidKey.MatchString(ddl) {
					t.Errorf("%s.id is not INTEGER PRIMARY KEY AUTOINCREMENT:\n%s", table, ddl)
				}
			}
			var parent, to, onDelete string
			if err := db.SQL().QueryRowContext(ctx, `SELECT "table", "to", on_delete FROM pragma_foreign_key_list('cluster_certificates')`).Scan(&parent, &to, &onDelete); err != nil ||
				parent != "clusters" || to != "uuid" || onDelete != "CASCADE" {
				t.Fatalf("cluster_certificates' foreign key: %s(%s) on delete %s, %v; want clusters(uuid) on delete CASCADE", parent, to, onDelete, err)
			}
		default:
			t.Fatalf("no schema checks for dialect %s", db.Dialect())
		}
	}})
}

// rowidKey is the only form of key that makes id SQLite's rowid and keeps
// deleted ids from coming back.
var rowidKey = regexp.MustCompile(`\(\s*id\s+INTEGER PRIMARY KEY AUTOINCREMENT,`)

// migrationRecord is a row of schema_migrations.
type migrationRecord struct{ name, appliedAt string }

// migrationRecords reads what schema_migrations says of versions 1 to n.
func migrationRecords(t *testing.T, db *sql.DB, n int) []migrationRecord {
	t.Helper()
	out := make([]migrationRecord, n)
	for i := range out {
		r := &out[i]
		if err := db.QueryRowContext(ctx, `SELECT name, applied_at FROM schema_migrations WHERE version = ?`, i+1).Scan(&r.name, &r.appliedAt); err != nil {
			t.Fatalf("migration %d: %v", i+1, err)
		}
	}
	return out
}

// TestDatabaseOfPerDialectMigrationsMigratesOn opens a database that a
// release before the one-source migrations left: testdata/schema-v8.db was
// made by that store from its migrations/sqlite files 0001 to 0008, with a
// public template, a cluster with its two default node groups and create
// operation, and a cluster event. Today's store keeps every migration it
// recorded as it is (same version and name, not run again), applies the
// later ones, and serves the old rows beside new ones.
func TestDatabaseOfPerDialectMigrationsMigratesOn(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "schema-v8.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "magnetite.db")
	if err := os.WriteFile(path, fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	before := migrationRecords(t, raw, 8)
	raw.Close()
	if before[0].name != "0001_init.sql" || before[7].name != "0008_periodic_leases.sql" {
		t.Fatalf("the fixture records %v, want migrations 1 to 8", before)
	}

	db := mustOpen(t, func() (*store.DB, error) { return store.OpenSQLite(ctx, path) })
	if v, err := db.SchemaVersion(ctx); err != nil || v != store.LatestVersion(store.SQLite) || v <= 8 {
		t.Fatalf("schema version %d (%v), want %d", v, err, store.LatestVersion(store.SQLite))
	}
	after := migrationRecords(t, db.SQL(), 9)
	for i, r := range before {
		if after[i] != r {
			t.Errorf("migration %d: record %v became %v", i+1, r, after[i])
		}
	}
	if after[8].name != "0009_hosts.sql" {
		t.Errorf("migration 9 recorded as %v", after[8])
	}

	ct, err := db.GetClusterTemplateByUUID(ctx, "3c1f2a9e-5b1d-4c55-9a0e-7f3b2d6c8e01")
	if err != nil || ct.Name != "k8s-v8" || !ct.Public || ct.Labels["kube_tag"] != "v1.31.1" {
		t.Fatalf("the old template reads %+v, %v", ct, err)
	}
	c, ngs := readCluster(t, db, "8d2e4b6a-1f3c-4e5d-8a7b-9c0d1e2f3a04")
	if c.Name != "web" || c.ClusterTemplateID != ct.UUID {
		t.Fatalf("the old cluster reads %+v", c)
	}
	if len(ngs) != 2 || ngs[0].Name != "default-master" || ngs[1].Name != "default-worker" || ngs[1].NodeCount != 3 {
		t.Fatalf("the old cluster's node groups read %+v", ngs)
	}
	ops, err := db.OperationsForCluster(ctx, c.UUID)
	if err != nil || len(ops) != 1 || ops[0].UUID != "2c3d4e5f-6a7b-4c8d-ae9f-0a1b2c3d4e07" {
		t.Fatalf("the old cluster's operations read %+v, %v", ops, err)
	}
	evs, err := db.ListEvents(ctx, c.UUID, store.EventQuery{})
	if err != nil || len(evs) != 1 || evs[0].Message != "cluster created" {
		t.Fatalf("the old cluster's events read %+v, %v", evs, err)
	}

	// New rows: a later table, and ids after the old ones.
	if err := db.MirrorHost(ctx, "ironic", &baremetal.Host{ID: "u0", Name: "node-0", State: baremetal.StateRegistering}); err != nil {
		t.Fatal(err)
	}
	if h, err := db.MirroredHost(ctx, "node-0"); err != nil || h.ID != "u0" {
		t.Fatalf("a host mirrored into the migrated database reads %+v, %v", h, err)
	}
	newer := createTemplate(t, db, template("p1", "k8s-new", false, false))
	var oldID, newID int64
	for id, uuid := range map[*int64]string{&oldID: ct.UUID, &newID: newer.UUID} {
		if err := db.SQL().QueryRowContext(ctx, `SELECT id FROM cluster_templates WHERE uuid = ?`, uuid).Scan(id); err != nil {
			t.Fatal(err)
		}
	}
	if newID <= oldID {
		t.Fatalf("a new template got id %d, not after the old template's %d", newID, oldID)
	}
}
