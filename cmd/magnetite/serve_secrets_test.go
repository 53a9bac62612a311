package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/config"
	"github.com/magnetite-io/magnetite/internal/doctor"
	"github.com/magnetite-io/magnetite/internal/store"
)

// TestSecretsAreSealedByDefaultInAPrivateStateDirectory: with no [database]
// secret_key, the first start generates a key in the state directory and
// seals the clusters' CA keys with it; the state directory (made 0755 by
// the operator), the key and the database files are the owner's only,
// whatever the umask; a restart finds the same key and reads the secrets.
func TestSecretsAreSealedByDefaultInAPrivateStateDirectory(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := serveConfig(t, "MAGNETITE_DEFAULT_STATE_DIR="+state, "MAGNETITE_AUTH_NOAUTH_ROLES=admin", "MAGNETITE_LOG_LEVEL=error")
	call := func(addr, method, path string, body any, want int) []byte {
		t.Helper()
		res, b := apiJSON(t, method, "http://"+addr+path, body)
		if res.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, b, want)
		}
		return b
	}

	addr, stop := serveUntil(t, cfg, nil)
	call(addr, "POST", "/v1/clustertemplates", map[string]any{"name": "k8s", "coe": "kubernetes", "image_id": "ubuntu", "master_lb_enabled": true}, http.StatusCreated)
	var created struct{ UUID string }
	if err := json.Unmarshal(call(addr, "POST", "/v1/clusters", map[string]any{"name": "sealed", "cluster_template_id": "k8s"}, http.StatusAccepted), &created); err != nil {
		t.Fatal(err)
	}
	stop()

	wantMode := func(path string, want os.FileMode) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %v, want %v", path, got, want)
		}
	}
	wantMode(state, 0o700)
	keyFile := filepath.Join(state, generatedKeyFile)
	wantMode(keyFile, 0o600)
	db := filepath.Join(state, "magnetite.db")
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		if _, err := os.Stat(f); err == nil {
			wantMode(f, 0o600)
		}
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b))); err != nil || len(raw) != 32 {
		t.Fatalf("%s does not hold a 32-byte key: %q", keyFile, b)
	}
	st, err := store.InspectSQLite(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.UnsealedSecrets(context.Background())
	st.Close()
	if err != nil || n != 0 {
		t.Fatalf("%d secrets unsealed (%v), want none", n, err)
	}
	rs := databaseChecks(context.Background(), cfg)
	if r := rs[len(rs)-1]; r.Check != "database secrets sealed" || r.Status != doctor.Pass {
		t.Errorf("doctor: %+v", r)
	}

	// The operator loosens the modes; a restart takes them back and reads
	// the sealed CA with the key it kept.
	for _, f := range []string{state, db} {
		if err := os.Chmod(f, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	addr, stop = serveUntil(t, cfg, nil)
	defer stop()
	var ca struct{ PEM string }
	if err := json.Unmarshal(call(addr, "GET", "/v1/certificates/"+created.UUID, nil, http.StatusOK), &ca); err != nil || !strings.Contains(ca.PEM, "BEGIN CERTIFICATE") {
		t.Fatalf("the cluster's CA after a restart: %+v %v", ca, err)
	}
	wantMode(state, 0o700)
	wantMode(db, 0o600)
}

// TestSQLiteConnectionInEveryForm: [database] connection takes the SQLite
// URL in Magnetite's form (three slashes) and in oslo.db's (four, as every
// OpenStack service's configuration writes it), and refuses a relative
// path with what to write.
func TestSQLiteConnectionInEveryForm(t *testing.T) {
	dir := t.TempDir()
	for _, conn := range []string{"sqlite://" + dir + "/three.db", "sqlite:///" + dir + "/four.db"} {
		cfg, err := config.Load("", "", []string{"MAGNETITE_DATABASE_CONNECTION=" + conn, "MAGNETITE_DEFAULT_STATE_DIR=" + dir})
		if err != nil {
			t.Fatal(err)
		}
		st, where, err := connectStore(context.Background(), cfg, store.OpenSQLite, store.OpenMySQL)
		if err != nil {
			t.Fatalf("%s: %v", conn, err)
		}
		st.Close()
		if _, err := os.Stat(strings.TrimPrefix(where, "sqlite ")); err != nil || !strings.HasPrefix(where, "sqlite "+dir+"/") {
			t.Errorf("%s opened %q: %v", conn, where, err)
		}
	}
	cfg, err := config.Load("", "", []string{"MAGNETITE_DATABASE_CONNECTION=sqlite://relative.db"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := connectStore(context.Background(), cfg, store.OpenSQLite, store.OpenMySQL); err == nil || !strings.Contains(err.Error(), "sqlite:////absolute/path") {
		t.Errorf("a relative path: %v", err)
	}
}

// TestDriverOptionsReachTheRenderer: [driver] boot_volume_size and the node
// timeouts are what the renderer defaults to; a value that is not a number
// or duration is refused when the configuration is read.
func TestDriverOptionsReachTheRenderer(t *testing.T) {
	cfg, err := config.Load("", "", []string{"MAGNETITE_DRIVER_BOOT_VOLUME_SIZE=30", "MAGNETITE_DRIVER_BM_NODE_STARTUP_TIMEOUT=1h"})
	if err != nil {
		t.Fatal(err)
	}
	o := driverOptions(cfg)
	if o.DefaultBootVolumeSize != 30 || o.BMNodeStartupTimeout != time.Hour || o.VMNodeStartupTimeout != 10*time.Minute || o.BMNodeUnhealthyTimeout != 15*time.Minute {
		t.Errorf("driver options %+v", o)
	}
	for _, env := range []string{"MAGNETITE_DRIVER_BOOT_VOLUME_SIZE=big", "MAGNETITE_DRIVER_VM_NODE_UNHEALTHY_TIMEOUT=soon"} {
		if _, err := config.Load("", "", []string{env}); err == nil {
			t.Errorf("%s was accepted", env)
		}
	}
}
