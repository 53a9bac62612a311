package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/magnetite-io/magnetite/internal/store"
)

// Database is what the database checks need; *store.DB has it.
type Database interface {
	SchemaVersion(ctx context.Context) (int, error)
	Dialect() store.Dialect
	UnsealedSecrets(ctx context.Context) (int, error)
}

// SecretKey is where the key sealing the database's secrets comes from.
type SecretKey struct {
	// Configured is set when [database] secret_key is.
	Configured bool
	// Generated is the file holding the key `magnetite serve` generated
	// for a SQLite database, when there is one.
	Generated string
}

// DatabaseSecretsSealed warns when the clusters' CA keys and application
// credential secrets are, or will be, stored unsealed.
func DatabaseSecretsSealed(ctx context.Context, db Database, key SecretKey) Result {
	const check = "database secrets sealed"
	n, err := db.UnsealedSecrets(ctx)
	if err != nil {
		return warn(check, "see database reachable", "could not count the unsealed secrets: %v", err)
	}
	switch {
	case !key.Configured && key.Generated == "" && db.Dialect() == store.SQLite:
		return warn(check, "start `magnetite serve` once: it generates a key in the state directory and seals them, or set [database] secret_key",
			"no secret key yet; %d secrets stored unsealed", n)
	case !key.Configured && key.Generated == "":
		return warn(check, "set [database] secret_key (openssl rand -base64 32), the same on every replica, and restart them: secrets are sealed at start",
			"no [database] secret_key: clusters' CA keys and application credential secrets are stored unsealed (%d now)", n)
	case n > 0:
		return warn(check, "restart `magnetite serve`: it seals the secrets written without a key at start",
			"%d secrets are stored unsealed", n)
	case key.Configured:
		return pass(check, "sealed with [database] secret_key")
	}
	return pass(check, "sealed with the key generated in %s (back it up with the database)", key.Generated)
}

// DatabaseReachable reports whether the database at where could be opened
// (openErr) and answers a query.
func DatabaseReachable(ctx context.Context, where string, db Database, openErr error) Result {
	const check = "database reachable"
	fix := "check [database] connection; for SQLite the file is created by the first `magnetite serve`"
	if errors.Is(openErr, fs.ErrNotExist) {
		return warn(check, "start `magnetite serve` once: it creates the database and its schema",
			"%s does not exist yet", where)
	}
	if openErr != nil {
		return fail(check, fix, "%s: %v", where, openErr)
	}
	if _, err := db.SchemaVersion(ctx); err != nil && !isMissingSchema(err) {
		return fail(check, fix, "%s does not answer: %v", where, err)
	}
	return pass(check, "%s answers", where)
}

// DatabaseMigrated compares the database's schema version with the newest
// migration this build carries.
func DatabaseMigrated(ctx context.Context, db Database) Result {
	const check = "database migrated"
	latest := store.LatestVersion(db.Dialect())
	v, err := db.SchemaVersion(ctx)
	switch {
	case err != nil && isMissingSchema(err):
		return fail(check, "start `magnetite serve` once: it creates the schema and applies every migration at start",
			"the database has no Magnetite schema (this build's latest version is %d)", latest)
	case err != nil:
		return fail(check, "see database reachable", "could not read the schema version: %v", err)
	case v < latest:
		return fail(check, "start `magnetite serve` from this build: it applies the pending migrations at start",
			"schema version %d, but this build needs %d", v, latest)
	case v > latest:
		return fail(check, "upgrade this binary to the release that migrated the database",
			"schema version %d is newer than this build knows (%d): a newer Magnetite migrated it", v, latest)
	}
	return pass(check, "schema version %d, this build's latest", v)
}

// isMissingSchema recognises "no schema_migrations table" on both backends.
func isMissingSchema(err error) bool {
	msg := fmt.Sprint(err)
	return containsAny(msg, "no such table: schema_migrations", "schema_migrations' doesn't exist", "Error 1146")
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
