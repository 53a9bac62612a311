package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/doctor"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testcharts"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// runDoctorCommand runs `magnetite doctor` with args and returns its output
// and error (non-nil exactly when the exit status would be non-zero).
func runDoctorCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runMagnetite(t, append([]string{"doctor"}, args...)...)
}

func TestDoctorExitsNonZeroExactlyWhenACheckFails(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "magnetite.db")
	st, err := store.OpenSQLite(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	conf := filepath.Join(dir, "magnetite.conf")
	if err := os.WriteFile(conf, []byte("[database]\nconnection = sqlite://"+dbPath+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := runDoctorCommand(t, "--config-file", conf, "--config-dir", dir, "--output", "json")
	var rs []doctor.Result
	if jerr := json.Unmarshal([]byte(out), &rs); jerr != nil {
		t.Fatalf("--output json is not a JSON list: %v\n%s", jerr, out)
	}
	byCheck := map[string]doctor.Result{}
	for _, r := range rs {
		byCheck[r.Check] = r
	}
	if byCheck["database migrated"].Status != doctor.Pass || byCheck["config"].Status != doctor.Pass {
		t.Fatalf("migrated database and readable config should pass: %+v", rs)
	}
	if doctor.Failed(rs) != (err != nil) {
		t.Fatalf("exit error %v does not match the results %+v", err, rs)
	}

	// Roll the schema back one version: the database check fails and so
	// does the command.
	if _, err := st.SQL().Exec(`DELETE FROM schema_migrations WHERE version = ?`, store.LatestVersion(store.SQLite)); err != nil {
		t.Fatal(err)
	}
	out, err = runDoctorCommand(t, "--config-file", conf)
	if err == nil {
		t.Fatalf("doctor exited zero with the schema behind:\n%s", out)
	}
	if !strings.Contains(out, "FAIL  database migrated") || !strings.Contains(out, "fix: start `magnetite serve`") {
		t.Fatalf("table output lacks the failing check and its fix:\n%s", out)
	}
}

func TestDoctorStopsAtAConfigurationItCannotRead(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "magnetite.conf")
	if err := os.WriteFile(conf, []byte("[api]\nlisten 127.0.0.1:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runDoctorCommand(t, "--config-file", conf)
	if err == nil || !strings.Contains(out, "FAIL  config") || strings.Contains(out, "database") {
		t.Fatalf("err=%v, want a config FAIL and no further checks:\n%s", err, out)
	}
}

func TestDoctorPassesOnTheLocalManagementPlaneAndFailsOnAWorldReadableKubeconfig(t *testing.T) {
	t.Parallel()
	env := testenv.SharedClusterAPI(t)

	dir := t.TempDir()
	dbPath := filepath.Join(dir, "magnetite.db")
	st, err := store.OpenSQLite(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	kubeconfig := testenv.WriteKubeconfig(t, filepath.Join(dir, "kubeconfig"), env.Config, "", 0o600)
	conf := filepath.Join(dir, "magnetite.conf")
	charts := testcharts.Serve(t)
	body := "[database]\nconnection = sqlite://" + dbPath + "\n[management]\nkubeconfig = " + kubeconfig + "\n[addons]\nsource = " + charts.URL + "\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := runDoctorCommand(t, "--config-file", conf)
	if err != nil || strings.Contains(out, "\nFAIL") || !strings.Contains(out, " 0 FAIL") {
		t.Fatalf("doctor on a complete local management plane: err=%v\n%s", err, out)
	}
	for _, line := range []string{"PASS  management kubeconfig", "PASS  management API reachable", "PASS  management API authenticated",
		"PASS  CRDs Cluster API core", "PASS  CRDs infrastructure", "PASS  controller webhook 127.0.0.1:", "SKIP  keystone",
		"PASS  addon charts"} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}

	if err := os.Chmod(kubeconfig, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runDoctorCommand(t, "--config-file", conf)
	if err == nil || !strings.Contains(out, "FAIL  management kubeconfig") || !strings.Contains(out, "chmod 0600 "+kubeconfig) {
		t.Fatalf("a world-readable kubeconfig must fail the doctor: err=%v\n%s", err, out)
	}
}

func TestDoctorChecksTheHostInventorysIronic(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	conf := filepath.Join(t.TempDir(), "magnetite.conf")
	body := "[baremetal]\nbackend = ironic\nironic_endpoint = " + down + "\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runDoctorCommand(t, "--config-file", conf)
	if err == nil || !strings.Contains(out, "FAIL  ironic endpoint") || !strings.Contains(out, down) {
		t.Fatalf("an unreachable [baremetal] ironic_endpoint must fail the doctor: err=%v\n%s", err, out)
	}
}
