package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
)

// InspectSQLite opens an existing SQLite database read-only, without
// creating or migrating it, so `magnetite doctor` can report the state it is
// in rather than the state opening it would produce.
func InspectSQLite(ctx context.Context, path string) (*DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("store: sqlite database: %w", err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
	}
	return &DB{db: db, dialect: SQLite}, nil
}

// InspectMySQL connects to a MariaDB or MySQL database given as in
// [database] connection, without migrating it.
func InspectMySQL(ctx context.Context, dsn string) (*DB, error) {
	db, err := connectMySQL(ctx, dsn, func(db *sql.DB) { db.SetMaxOpenConns(2) })
	if err != nil {
		return nil, err
	}
	return &DB{db: db, dialect: MySQL}, nil
}
