package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// OpenMySQL opens a MariaDB or MySQL database given as a URL in OpenStack's
// habit, mysql://user:password@host:port/db (mysql+pymysql:// is accepted
// too, so a URL copied from another service's configuration works; a
// ?unix_socket=/path query selects a local socket), and applies pending
// migrations. Several processes may share the database.
func OpenMySQL(ctx context.Context, dsn string) (*DB, error) {
	db, err := connectMySQL(ctx, dsn, func(db *sql.DB) {
		db.SetMaxOpenConns(16)
		db.SetMaxIdleConns(8)
		// Below MariaDB's default wait_timeout, so the pool never hands
		// out a connection the server already closed.
		db.SetConnMaxLifetime(5 * time.Minute)
	})
	if err != nil {
		return nil, err
	}
	s := &DB{db: db, dialect: MySQL}
	if err := s.migrateLocked(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// connectMySQL opens a pool to the database a mysql:// URL names, sized by
// pool, and checks that the server answers.
func connectMySQL(ctx context.Context, dsn string, pool func(*sql.DB)) (*sql.DB, error) {
	cfg, err := mysqlConfig(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("store: mysql: %w", err)
	}
	db := sql.OpenDB(conn)
	pool(db)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connect to mysql at %s: %w", cfg.Addr, err)
	}
	return db, nil
}

// MySQLAddress is the driver's configuration for the server, account and
// database a MySQL URL names (mysql://user:password@host:port/database,
// or ?unix_socket=/path for a local socket), as Magnetite's own and
// oslo.db's connection URLs write them: the port defaults to 3306 and the
// host to 127.0.0.1. DBName is empty when the URL names no database.
func MySQLAddress(u *url.URL) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if sock := u.Query().Get("unix_socket"); sock != "" {
		cfg.Net, cfg.Addr = "unix", sock
		return cfg
	}
	host := u.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if u.Port() == "" {
		host += ":3306"
	}
	cfg.Net, cfg.Addr = "tcp", host
	return cfg
}

// mysqlConfig turns a mysql:// URL into the driver's configuration.
func mysqlConfig(dsn string) (*mysql.Config, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("config: [database] connection is not a URL: %w", redactURLError(err))
	}
	switch u.Scheme {
	case "mysql", "mysql+pymysql", "mariadb":
	default:
		return nil, fmt.Errorf("config: [database] connection scheme %q is not mysql://", u.Scheme)
	}
	cfg := MySQLAddress(u)
	if cfg.DBName == "" {
		return nil, fmt.Errorf("config: [database] connection names no database; use mysql://user:password@host:port/magnetite")
	}
	// Times are stored as fixed-width strings, so no parseTime; placeholders
	// are filled in client-side (one round trip instead of prepare+execute),
	// and one statement per call is the only thing the store sends.
	cfg.InterpolateParams = true
	cfg.MultiStatements = false
	cfg.Collation = "utf8mb4_bin"
	// RowsAffected counts matched rows, as on SQLite: conditional UPDATEs
	// (claims, heartbeats, "does this row exist") must not read an update
	// that happened to change no value as a miss.
	cfg.ClientFoundRows = true
	cfg.Timeout = 10 * time.Second
	return cfg, nil
}

// redactURLError drops the URL (and so the password) from a parse error.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// migrationLockName serializes migrations of processes sharing a database.
const migrationLockName = "magnetite.schema_migrations"

// migrateLocked runs Migrate under a server-side named lock, so replicas
// starting together do not apply the same migration twice. DDL in MariaDB
// commits implicitly, so the transaction in Migrate alone cannot do it.
func (s *DB) migrateLocked(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(?, 120)`, migrationLockName).Scan(&got); err != nil {
		return fmt.Errorf("store: take the migration lock: %w", err)
	}
	if got.Int64 != 1 {
		return fmt.Errorf("store: another process held the migration lock for two minutes; is a migration stuck?")
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT RELEASE_LOCK(?)`, migrationLockName)
	return s.Migrate(ctx)
}

// isRetryable reports MariaDB errors after which the whole transaction can
// simply run again: a deadlock (also Galera's certification failure) or a
// lock wait timeout.
func isRetryable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1213 || me.Number == 1205
	}
	return false
}

// forUpdate is the locking-read suffix of the dialect: SQLite serializes
// writers already (transactions begin IMMEDIATE).
func (s *DB) forUpdate() string {
	if s.dialect == MySQL {
		return " FOR UPDATE"
	}
	return ""
}

// retryTx runs fn in a transaction and commits it; when the backend reports
// a deadlock or lock timeout it runs fn again in a new transaction, after a
// jittered pause that grows with each attempt, for up to deadlockRetryFor.
// Every deadlock has a winner, so many writers racing for one project's
// quota all get through; a bounded number of attempts let the unlucky ones
// fail under load.
func (s *DB) retryTx(ctx context.Context, fn func(*sql.Tx) error) error {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err = fn(tx); err != nil {
			err = rollback(tx, err)
		} else {
			err = tx.Commit()
		}
		if err == nil || !isRetryable(err) || time.Since(start) > deadlockRetryFor {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(deadlockPause(attempt)):
		}
	}
}

// deadlockRetryFor is how long a transaction that keeps losing deadlocks is
// run again before its error reaches the caller.
const deadlockRetryFor = 10 * time.Second

// deadlockPause is the wait before attempt+1: 5 ms doubling to at most
// 250 ms, half of it random so that racing writers spread out.
func deadlockPause(attempt int) time.Duration {
	base := min(5*time.Millisecond<<min(attempt-1, 6), 250*time.Millisecond)
	return base/2 + rand.N(base/2+1)
}
