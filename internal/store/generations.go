package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// Generations are the list_generations counters: each changes with every
// committed write that changes what a listing of its kind shows.
type Generations struct {
	Templates int64
	Clusters  int64
}

const (
	generationTemplates = "cluster_templates"
	generationClusters  = "clusters"
	listGenerationsSQL  = `SELECT name, value FROM list_generations`
)

// ListGenerations returns every counter. A page read after this call is at
// least as new as the generations it returned: they include every write
// committed (through any connection, process or replica) before the call.
//
// On MySQL/MariaDB this is one query. On SQLite the counters are read again
// only when the database file has changed since they were last read (see
// changeWatch), which is what makes a list answered from the page cache
// cheap.
func (s *DB) ListGenerations(ctx context.Context) (Generations, error) {
	if s.changes != nil {
		if g, err := s.changes.generations(); err == nil {
			return g, nil
		}
		// The watch's connection failed: the counters themselves still
		// answer, as they do on MySQL.
	}
	rows, err := s.db.QueryContext(ctx, listGenerationsSQL)
	return scanGenerations(rows, err)
}

func scanGenerations(rows *sql.Rows, err error) (Generations, error) {
	var g Generations
	if err != nil {
		return g, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return g, err
		}
		switch name {
		case generationTemplates:
			g.Templates = v
		case generationClusters:
			g.Clusters = v
		}
	}
	return g, rows.Err()
}

// changeWatch tells, for one SQLite database file, whether anything was
// committed to it since the list generations were last read, without a
// query of the table: SQLite's PRAGMA data_version, asked on a connection
// of the watch's own that never writes, changes whenever another
// connection — of this process's pool or of any other process on the
// file — has committed in the meantime (it is how SQLite itself knows its
// page cache went stale). While the version stands, the generations read
// at it still hold; when it moves, they are read again on the same
// connection, after the version, so they are never older than it.
type changeWatch struct {
	mu      sync.Mutex
	db      *sql.DB
	conn    *sql.Conn
	version *sql.Stmt
	read    *sql.Stmt
	// known says gens were read after the data version at.
	known bool
	at    int64
	gens  Generations
}

// watchChanges opens the watch's connection on the database at dsn.
func watchChanges(ctx context.Context, dsn string) (*changeWatch, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	w := &changeWatch{db: db}
	if w.conn, err = db.Conn(ctx); err == nil {
		if w.version, err = w.conn.PrepareContext(ctx, `PRAGMA data_version`); err == nil {
			w.read, err = w.conn.PrepareContext(ctx, listGenerationsSQL)
		}
	}
	if err != nil {
		w.close()
		return nil, fmt.Errorf("store: open the change watch: %w", err)
	}
	return w, nil
}

// generations returns the list generations as of now. The context is not
// the request's: both statements return at once (readers never wait in WAL
// mode), and a cancellable one would cost a goroutine per call in the
// driver and in database/sql.
func (w *changeWatch) generations() (Generations, error) {
	ctx := context.Background()
	w.mu.Lock()
	defer w.mu.Unlock()
	var v int64
	if err := w.version.QueryRowContext(ctx).Scan(&v); err != nil {
		w.known = false
		return Generations{}, err
	}
	if w.known && v == w.at {
		return w.gens, nil
	}
	g, err := scanGenerations(w.read.QueryContext(ctx))
	if err != nil {
		w.known = false
		return g, err
	}
	w.known, w.at, w.gens = true, v, g
	return g, nil
}

func (w *changeWatch) close() error {
	if w == nil {
		return nil
	}
	var errs []error
	for _, s := range []*sql.Stmt{w.version, w.read} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	if w.conn != nil {
		errs = append(errs, w.conn.Close())
	}
	errs = append(errs, w.db.Close())
	return errors.Join(errs...)
}

// deleteListed deletes the row uuid of a listed table and raises the
// listing's generation; no such row is ErrNotFound for what.
func deleteListed(ctx context.Context, tx *sql.Tx, table, what, uuid, generation string) error {
	res, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE uuid = ?", uuid)
	if err := matched(res, err, "%s %s", what, uuid); err != nil {
		return err
	}
	return bumpGeneration(ctx, tx, generation)
}

// bumpGeneration raises kind's counter inside tx, so the counter changes
// exactly when the write it marks commits. Writers call it last, so the
// counter's row lock is held only until their commit.
func bumpGeneration(ctx context.Context, tx *sql.Tx, kind string) error {
	res, err := tx.ExecContext(ctx, `UPDATE list_generations SET value = value + 1 WHERE name = ?`, kind)
	if err != nil {
		return fmt.Errorf("store: raise the %s list generation: %w", kind, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return errors.New("store: list_generations has no row " + kind)
	}
	return nil
}
