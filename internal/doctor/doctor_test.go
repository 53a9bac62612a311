package doctor_test

import (
	"context"
	"database/sql"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/config"
	"github.com/magnetite-io/magnetite/internal/doctor"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testmariadb"
)

// expect fails the test unless r has the status and its detail (and fix,
// for WARN and FAIL) mention every word in want.
func expect(t *testing.T, r doctor.Result, status doctor.Status, want ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: status %s, want %s: %s (fix: %s)", r.Check, r.Status, status, r.Detail, r.Fix)
	}
	for _, w := range want {
		if !strings.Contains(r.Detail+" "+r.Fix, w) {
			t.Errorf("%s: %q (fix %q) does not mention %q", r.Check, r.Detail, r.Fix, w)
		}
	}
	if (status == doctor.Warn || status == doctor.Fail) && r.Fix == "" {
		t.Errorf("%s: %s without a fix", r.Check, status)
	}
}

// results indexes results by check name.
func results(rs []doctor.Result) map[string]doctor.Result {
	out := map[string]doctor.Result{}
	for _, r := range rs {
		out[r.Check] = r
	}
	return out
}

func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestConfigCheckNamesTheFilesAndDropInsRead(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "magnetite.conf")
	dropIns := filepath.Join(dir, "magnetite.conf.d")
	writeFile(t, main, "[api]\nmax_limit = 50\n", 0o644)
	writeFile(t, filepath.Join(dropIns, "10-auth.conf"), "[auth]\nnoauth_project = p\n", 0o644)
	writeFile(t, filepath.Join(dropIns, "20-log.conf"), "[log]\nformat = json\n", 0o644)
	cfg, err := config.Load(main, dropIns, nil)
	rs := doctor.ConfigLoaded(cfg, err, dropIns)
	if len(rs) != 1 {
		t.Fatalf("got %d results, want 1: %+v", len(rs), rs)
	}
	expect(t, rs[0], doctor.Pass, main, "10-auth.conf, 20-log.conf")
}

func TestConfigCheckWarnsAboutDropInsThatAreNeverRead(t *testing.T) {
	dir := t.TempDir()
	dropIns := filepath.Join(dir, "magnetite.conf.d")
	writeFile(t, filepath.Join(dropIns, "00-management.cfg"), "[log]\nformat = json\n", 0o644)
	writeFile(t, filepath.Join(dropIns, "10-auth.conf.disabled"), "[log]\nformat = json\n", 0o644)
	writeFile(t, filepath.Join(dropIns, "20-ok.conf"), "[log]\nlevel = debug\n", 0o644)
	cfg, err := config.Load("", dropIns, nil)
	rs := doctor.ConfigLoaded(cfg, err, dropIns)
	if len(rs) != 2 {
		t.Fatalf("got %d results, want the files read and the ignored drop-ins: %+v", len(rs), rs)
	}
	expect(t, rs[0], doctor.Pass, "20-ok.conf")
	expect(t, rs[1], doctor.Warn, "00-management.cfg", "10-auth.conf.disabled", ".conf")
}

func TestConfigCheckWarnsWhenNothingIsReadAndFailsOnABadFile(t *testing.T) {
	cfg, err := config.Load("", "", nil)
	rs := doctor.ConfigLoaded(cfg, err, "")
	expect(t, rs[0], doctor.Warn, "defaults")

	bad := filepath.Join(t.TempDir(), "magnetite.conf")
	writeFile(t, bad, "[api]\nmax_limt = 5\n", 0o644)
	cfg, err = config.Load(bad, "", nil)
	rs = doctor.ConfigLoaded(cfg, err, "")
	expect(t, rs[0], doctor.Fail, "max_limt", bad)
}

func TestDatabaseChecksOnARealSQLiteDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "magnetite.db")
	st, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	latest := store.LatestVersion(store.SQLite)
	inspect := func() *store.DB {
		t.Helper()
		db, err := store.InspectSQLite(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}

	db := inspect()
	expect(t, doctor.DatabaseReachable(ctx, "sqlite "+path, db, nil), doctor.Pass, path)
	expect(t, doctor.DatabaseMigrated(ctx, db), doctor.Pass)
	expect(t, doctor.DatabaseSecretsSealed(ctx, db, doctor.SecretKey{}), doctor.Warn, "magnetite serve", "generates a key")

	// One migration behind: a database an older build left.
	if _, err := st.SQL().ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = ?`, latest); err != nil {
		t.Fatal(err)
	}
	expect(t, doctor.DatabaseMigrated(ctx, inspect()), doctor.Fail, "magnetite serve")

	// Ahead: a newer build migrated it.
	if _, err := st.SQL().ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 'now'), (?, 'future2', 'now')`, latest, latest+1); err != nil {
		t.Fatal(err)
	}
	expect(t, doctor.DatabaseMigrated(ctx, inspect()), doctor.Fail, "newer", "upgrade")
	st.Close()

	// Inspecting never creates or migrates anything.
	missing := filepath.Join(t.TempDir(), "absent.db")
	_, err = store.InspectSQLite(ctx, missing)
	expect(t, doctor.DatabaseReachable(ctx, "sqlite "+missing, nil, err), doctor.Warn, missing, "does not exist", "magnetite serve")
	if _, statErr := os.Stat(missing); !os.IsNotExist(statErr) {
		t.Fatalf("inspecting a missing database created %s", missing)
	}
}

func TestDatabaseWithoutMagnetiteSchemaIsReachableButNotMigrated(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "other.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, `CREATE TABLE unrelated (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db, err := store.InspectSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	expect(t, doctor.DatabaseReachable(ctx, "sqlite "+path, db, nil), doctor.Pass)
	expect(t, doctor.DatabaseMigrated(ctx, db), doctor.Fail, "no Magnetite schema")
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestKeystoneDownFailsReachabilityAndLogin(t *testing.T) {
	ctx := context.Background()
	authURL := "http://" + closedPort(t) + "/v3"
	hc := &http.Client{Timeout: 5 * time.Second}
	expect(t, doctor.KeystoneReachable(ctx, hc, authURL), doctor.Fail, authURL, "connection refused", "auth_url")
	r, provider := doctor.ServiceCredentials(ctx, hc, doctor.Cloud{AuthURL: authURL, Username: "magnetite", Password: "x",
		ProjectName: "service", UserDomainName: "Default", ProjectDomainName: "Default"})
	expect(t, r, doctor.Fail, "magnetite")
	if provider != nil {
		t.Fatal("a failed login returned a provider")
	}
	expect(t, doctor.KeystoneReachable(ctx, hc, ""), doctor.Fail, "auth_url")
}

func TestIronicEndpointDownFails(t *testing.T) {
	ctx := context.Background()
	hc := &http.Client{Timeout: 5 * time.Second}
	down := "http://" + closedPort(t)
	expect(t, doctor.IronicEndpoint(ctx, hc, down), doctor.Fail, down, "ironic_endpoint")
}

func TestDatabaseChecksOnARealMariaDB(t *testing.T) {
	maria := testmariadb.Start(t)
	ctx := context.Background()

	// A fresh database nobody migrated: reachable, not migrated.
	fresh := maria.NewDatabase()
	db, err := store.InspectMySQL(ctx, fresh)
	expect(t, doctor.DatabaseReachable(ctx, "mysql", db, err), doctor.Pass)
	expect(t, doctor.DatabaseMigrated(ctx, db), doctor.Fail, "no Magnetite schema")
	db.Close()

	// After the server migrated it: both pass.
	st, err := store.OpenMySQL(ctx, fresh)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err = store.InspectMySQL(ctx, fresh)
	expect(t, doctor.DatabaseReachable(ctx, "mysql", db, err), doctor.Pass)
	expect(t, doctor.DatabaseMigrated(ctx, db), doctor.Pass)
	// Replicas must share a key only the operator can give them.
	expect(t, doctor.DatabaseSecretsSealed(ctx, db, doctor.SecretKey{}), doctor.Warn, "no [database] secret_key", "same on every replica")
	expect(t, doctor.DatabaseSecretsSealed(ctx, db, doctor.SecretKey{Configured: true}), doctor.Pass)
	db.Close()

	// Nothing listening: unreachable.
	_, err = store.InspectMySQL(ctx, "mysql://magnetite:x@"+closedPort(t)+"/magnetite")
	expect(t, doctor.DatabaseReachable(ctx, "mysql", nil, err), doctor.Fail, "connection refused")
}
