package testenv_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// localMgmt runs hack/local-mgmt.sh with its state under dir.
func localMgmt(t *testing.T, dir string, port int, args ...string) (string, error) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "hack", "local-mgmt.sh")}, args...)...)
	// Other test packages run CAPD at the same time; wait for the
	// machine-wide lock as testenv's own CAPD does.
	cmd.Env = append(os.Environ(), "MAGNETITE_MGMT_DIR="+dir, "MAGNETITE_MGMT_PORT="+strconv.Itoa(port),
		"MAGNETITE_MGMT_CAPD_WAIT=1200")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// freePortBlock finds a base port whose next 20 ports are all free.
func freePortBlock(t *testing.T) int {
	t.Helper()
	for base := 26000; base < 32000; base += 20 {
		free := true
		for p := base; p < base+20 && free; p++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				free = false
				continue
			}
			ln.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no block of 20 free ports")
	return 0
}

// TestLocalMgmtScriptRunsAManagementPlane starts the management plane of
// hack/local-mgmt.sh (what the README's first command uses), builds an
// in-memory cluster on it, and stops it.
func TestLocalMgmtScriptRunsAManagementPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("runs etcd, kube-apiserver and the Cluster API managers; full suite only")
	}
	testenv.NeedsOwnCAPD(t)
	dir := filepath.Join(t.TempDir(), "mgmt")
	port := freePortBlock(t)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			out, err := localMgmt(t, dir, port, "stop")
			if err != nil {
				t.Errorf("stop: %v\n%s", err, out)
			}
		}
	})
	start := time.Now()
	if out, err := localMgmt(t, dir, port, "start"); err != nil {
		logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			lines := strings.Split(string(b), "\n")
			t.Logf("--- %s\n%s", l, strings.Join(lines[max(0, len(lines)-20):], "\n"))
		}
		t.Fatalf("start: %v\n%s", err, out)
	}
	t.Logf("hack/local-mgmt.sh start took %v", time.Since(start).Round(time.Second))
	if out, err := localMgmt(t, dir, port, "start"); err != nil || !strings.Contains(out, "already running") {
		t.Errorf("a second start: %v\n%s", err, out)
	}

	kubeconfig := filepath.Join(dir, "kubeconfig")
	fi, err := os.Stat(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %04o, want 0600", fi.Mode().Perm())
	}
	mc, err := mgmt.New(mgmt.Options{Kubeconfig: kubeconfig, Kinds: builtin.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	if f := mc.Findings(); len(f) != 0 {
		t.Errorf("findings about the script's kubeconfig: %v", f)
	}
	runInMemoryCluster(t, mc)

	pids, _ := filepath.Glob(filepath.Join(dir, "run", "*.pid"))
	if len(pids) != 6 {
		t.Errorf("pid files %v, want 6", pids)
	}
	var procs []int
	for _, p := range pids {
		b, _ := os.ReadFile(p)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			procs = append(procs, pid)
		}
	}
	out, err := localMgmt(t, dir, port, "stop")
	stopped = true
	if err != nil {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	for _, pid := range procs {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after stop (%v)", pid, err)
		}
	}
	if out, err := localMgmt(t, dir, port, "status"); err == nil || !strings.Contains(out, "capd-manager: stopped") {
		t.Errorf("status after stop: %v\n%s", err, out)
	}
}
