package store

import (
	"context"
	"crypto/cipher"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/magnetite-io/magnetite/internal/fault"
)

//go:embed migrations
var migrationFS embed.FS

// Dialect names a supported SQL backend.
type Dialect string

const (
	SQLite Dialect = "sqlite"
	MySQL  Dialect = "mysql"
)

// DB is the SQL store shared by every backend.
type DB struct {
	db      *sql.DB
	dialect Dialect
	retry   RetryPolicy
	// aead seals secrets at rest; nil keeps them as they are.
	aead cipher.AEAD
	// changes tells whether a SQLite file changed since the list
	// generations were read; nil reads them on every call.
	changes *changeWatch
}

// OpenSQLite opens (creating if needed) the SQLite database at path, in WAL
// mode with a busy timeout, and applies pending migrations. The database
// and its -wal and -shm files are readable by their owner only, whatever
// they were before: they hold clusters' secrets. Every commit is synced to
// disk (synchronous=FULL), so an acknowledged change survives a power loss.
func OpenSQLite(ctx context.Context, path string) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: create state directory: %w", err)
	}
	if err := privateFiles(path); err != nil {
		return nil, err
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	// One writer at a time is SQLite's model; readers share the pool in WAL.
	db.SetMaxOpenConns(8)
	s := &DB{db: db, dialect: SQLite}
	if err := s.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if s.changes, err = watchChanges(ctx, dsn); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// privateFiles creates the database file 0600 if it does not exist (SQLite
// gives its -wal and -shm files the database file's mode) and takes every
// permission but the owner's from the files that exist.
func privateFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		if fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, 0o600); err != nil {
			return fmt.Errorf("store: %s is readable by other users (mode %v) and its mode cannot be changed: %w; make it 0600", p, fi.Mode().Perm(), err)
		}
	}
	return nil
}

// OpenSQL wraps an already opened database of the given dialect and applies
// pending migrations.
func OpenSQL(ctx context.Context, db *sql.DB, dialect Dialect) (*DB, error) {
	s := &DB{db: db, dialect: dialect}
	if err := s.Migrate(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Close releases the database.
func (s *DB) Close() error { return errors.Join(s.changes.close(), s.db.Close()) }

// SQL exposes the handle for health checks and pool statistics.
func (s *DB) SQL() *sql.DB { return s.db }

// Dialect reports the backend in use.
func (s *DB) Dialect() Dialect { return s.dialect }

type migration struct {
	version int
	name    string
	body    string
	// carry, when set, rewrites existing rows after the statements, in the
	// migration's transaction: what SQL both dialects accept cannot do.
	carry func(ctx context.Context, tx *sql.Tx) error
}

// carriedOver are the migrations whose rows are carried over in Go, by
// version.
var carriedOver = map[int]func(ctx context.Context, tx *sql.Tx) error{
	11: splitStoredDocuments,
}

// dialectTokens are the only places where a migration's SQL differs
// between the backends: a migration writes {{id}} for a table's
// auto-numbered key and {{table_options}} after a new table's closing
// parenthesis, and the loader puts in the dialect's text.
//
//   - {{id}}: ids that only grow and are never reused after a delete, on
//     which event cursors and the operations queue's order rely. SQLite
//     gives that to exactly "INTEGER PRIMARY KEY AUTOINCREMENT" (a rowid
//     alias with the sqlite_sequence high-water mark); MariaDB to an
//     AUTO_INCREMENT BIGINT.
//   - {{table_options}}: MariaDB tables are InnoDB (transactions, row locks,
//     foreign keys) and compare text byte for byte (utf8mb4_bin), as SQLite
//     does; SQLite takes no table options.
//   - {{convert_table NAME}}: a whole statement giving an existing table the
//     table options (MariaDB converts its engine, character set and stored
//     text); nothing on SQLite.
//
// Everything else is written once in SQL both accept: text columns use
// MariaDB's types (TEXT, MEDIUMTEXT, LONGTEXT), which SQLite stores with
// TEXT affinity, and foreign keys are table constraints, which MariaDB
// enforces (it ignores a REFERENCES on a column).
var dialectTokens = map[Dialect]map[string]func(arg string) string{
	SQLite: {
		"id":            plain("INTEGER PRIMARY KEY AUTOINCREMENT"),
		"table_options": plain(""),
		"convert_table": func(string) string { return "" },
	},
	MySQL: {
		"id":            plain("BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY"),
		"table_options": plain(mysqlTableOptions),
		"convert_table": func(table string) string {
			return "ALTER TABLE " + table + " ENGINE=InnoDB, CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
		},
	},
}

const mysqlTableOptions = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"

// plain is a token that takes no argument and always reads text.
func plain(text string) func(string) string {
	return func(string) string { return text }
}

// migrationToken is {{name}} or {{name ARG}}; only convert_table takes an
// argument (a table name), and a token given one it does not take is an
// error like an unknown token.
var migrationToken = regexp.MustCompile(`\{\{(\w*)(?: (\w+))?\}\}`)

// renderMigration puts the dialect's text in place of body's tokens; a
// token the dialect does not define is an error, never passed to the
// database.
func renderMigration(dialect Dialect, name, body string) (string, error) {
	tokens, ok := dialectTokens[dialect]
	if !ok {
		return "", fmt.Errorf("store: no migrations for dialect %q", dialect)
	}
	var unknown []string
	out := migrationToken.ReplaceAllStringFunc(body, func(tok string) string {
		m := migrationToken.FindStringSubmatch(tok)
		render, ok := tokens[m[1]]
		if !ok || (m[1] == "convert_table") != (m[2] != "") {
			unknown = append(unknown, tok)
			return ""
		}
		return render(m[2])
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("store: migration %s uses %s, which the %s dialect does not define", name, strings.Join(unknown, ", "), dialect)
	}
	return out, nil
}

// loadMigrations reads the embedded migrations, one file per version for
// every dialect, rendered for dialect. A migration is recorded by its
// version and file name, as when each dialect had its own copy of the file.
func loadMigrations(dialect Dialect) ([]migration, error) {
	const dir = "migrations"
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("store: no migrations: %w", err)
	}
	var out []migration
	for _, e := range entries {
		n := e.Name()
		v, err := strconv.Atoi(strings.SplitN(n, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("store: migration %s has no numeric prefix", n)
		}
		body, err := migrationFS.ReadFile(dir + "/" + n)
		if err != nil {
			return nil, err
		}
		sql, err := renderMigration(dialect, n, string(body))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: n, body: sql, carry: carriedOver[v]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("store: migrations %s and %s share version %d", out[i-1].name, out[i].name, out[i].version)
		}
	}
	return out, nil
}

// LatestVersion is the newest schema version embedded in this binary.
func LatestVersion(dialect Dialect) int {
	ms, _ := loadMigrations(dialect)
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// SchemaVersion reports the version the database is migrated to.
func (s *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v)
	if err != nil {
		return 0, err
	}
	return int(v.Int64), nil
}

// Migrate applies every embedded migration newer than the database's version,
// each in its own transaction where the backend allows DDL in transactions.
func (s *DB) Migrate(ctx context.Context) error { return s.migrateTo(ctx, math.MaxInt) }

// migrateTo applies the embedded migrations up to version upTo.
func (s *DB) migrateTo(ctx context.Context, upTo int) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at VARCHAR(32) NOT NULL)`); err != nil {
		return fmt.Errorf("store: create schema_migrations: %w", err)
	}
	ms, err := loadMigrations(s.dialect)
	if err != nil {
		return err
	}
	current, err := s.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("store: read schema version: %w", err)
	}
	if latest := ms[len(ms)-1].version; current > latest {
		return fault.New(ErrNewerSchema, "the database's schema is at version %d, newer than this build knows (%d): a newer Magnetite migrated it; run that release or a newer one (a rolling upgrade never goes back)", current, latest)
	}
	for _, m := range ms {
		if m.version <= current || m.version > upTo {
			continue
		}
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for _, stmt := range splitStatements(m.body) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				tx.Rollback()
				return fmt.Errorf("store: migration %s: %w", m.name, err)
			}
		}
		if m.carry != nil {
			if err := m.carry(ctx, tx); err != nil {
				tx.Rollback()
				return fmt.Errorf("store: migration %s: %w", m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, formatTime(now())); err != nil {
			tx.Rollback()
			return fmt.Errorf("store: record migration %s: %w", m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// splitStatements cuts a rendered migration at its semicolons. A part with
// nothing but comments (a statement a dialect renders to nothing) is
// dropped: MariaDB refuses an empty query.
func splitStatements(body string) []string {
	var out []string
	for _, part := range strings.Split(body, ";") {
		if p := strings.TrimSpace(part); p != "" && !onlyComments(p) {
			out = append(out, p)
		}
	}
	return out
}

func onlyComments(sql string) bool {
	for _, line := range strings.Split(sql, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "--") {
			return false
		}
	}
	return true
}

// isUniqueViolation recognises unique-constraint errors of both backends
// without importing driver-specific error types.
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "Duplicate entry") ||
		strings.Contains(msg, "Error 1062")
}

// matched is the outcome of an UPDATE or DELETE that must match a row: the
// statement's error, else ErrNotFound with the message format and args
// give when it matched none.
func matched(res sql.Result, err error, format string, args ...any) error {
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fault.New(ErrNotFound, format, args...)
	}
	return nil
}

func rollback(tx *sql.Tx, err error) error {
	if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
		return errors.Join(err, rbErr)
	}
	return err
}
