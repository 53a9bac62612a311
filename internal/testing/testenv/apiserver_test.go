package testenv_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

func TestAPIServerServesInstalledCRDsAndValidatesAgainstThem(t *testing.T) {
	env := testenv.Start(t)
	names := env.InstallCRDs(t, filepath.Join(testenv.ClusterAPICRDs(t), "core"), nil)
	if len(names) < 5 {
		t.Fatalf("installed %d CRDs: %v", len(names), names)
	}
	ctx := context.Background()
	dc := env.Dynamic(t)
	crd, err := dc.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(ctx, "clusters.cluster.x-k8s.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crd.GetName() != "clusters.cluster.x-k8s.io" {
		t.Fatalf("got %s", crd.GetName())
	}
	mapper := env.Mapper(t)
	good := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": "c1", "namespace": "default"},
		"spec": map[string]any{"topology": map[string]any{
			"classRef": map[string]any{"name": "cc"}, "version": "v1.33.1"}},
	}}
	if err := testenv.DryRunApply(ctx, dc, mapper, good); err != nil {
		t.Fatalf("valid Cluster refused: %v", err)
	}
	bad := good.DeepCopy()
	_ = unstructured.SetNestedField(bad.Object, "NOT A NAME", "spec", "topology", "classRef", "name")
	err = testenv.DryRunApply(ctx, dc, mapper, bad)
	if err == nil || !strings.Contains(err.Error(), "classRef.name") {
		t.Fatalf("invalid Cluster accepted or refused for another reason: %v", err)
	}
	// A dry run stores nothing.
	if _, err := dc.Resource(schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}).
		Namespace("default").Get(ctx, "c1", metav1.GetOptions{}); err == nil {
		t.Fatal("the dry-run Cluster was stored")
	}
}

// TestServersRecordTheirCPUWhenTheyStop: with ServerCPULogEnv set, etcd
// and kube-apiserver each append their CPU seconds and peak memory as they
// stop, which is how a change to their flags is measured on two shared
// cores.
func TestServersRecordTheirCPUWhenTheyStop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts etcd and kube-apiserver; runs in the full suite (hack/test.sh)")
	}
	log := filepath.Join(t.TempDir(), "cpu.log")
	t.Setenv(testenv.ServerCPULogEnv, log)
	t.Run("plane", func(t *testing.T) { testenv.Start(t) })
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			t.Fatalf("line %q is not name, user and system seconds, peak MiB, seconds run, test binary", line)
		}
		user, errU := strconv.ParseFloat(f[1], 64)
		sys, errS := strconv.ParseFloat(f[2], 64)
		if errU != nil || errS != nil || user+sys <= 0 {
			t.Errorf("%s: user %q system %q, want seconds above zero", f[0], f[1], f[2])
		}
		if mib, err := strconv.Atoi(f[3]); err != nil || mib <= 0 {
			t.Errorf("%s: peak memory %q MiB, want above zero", f[0], f[3])
		}
		if ran, err := strconv.ParseFloat(f[4], 64); err != nil || ran <= 0 {
			t.Errorf("%s: ran %q seconds, want above zero", f[0], f[4])
		}
		if want := filepath.Base(os.Args[0]); f[5] != want {
			t.Errorf("%s: started by %q, want this test binary %q", f[0], f[5], want)
		}
		seen[f[0]] = true
	}
	if !seen["etcd"] || !seen["kube-apiserver"] {
		t.Errorf("servers recorded: %v, want etcd and kube-apiserver", seen)
	}
}

// helperPlaneEnv, set, makes TestServersGoWithTheTestProcess the killed
// test process: it starts a plane, prints its folder and waits.
const helperPlaneEnv = "MAGNETITE_TESTENV_KILLED_PROCESS"

// TestServersGoWithTheTestProcess: a test process that ends without its
// cleanups (killed, or a test binary ending on ^C) leaves no etcd or
// kube-apiserver running; before, an interrupted run left servers of a
// gigabyte and more each behind.
func TestServersGoWithTheTestProcess(t *testing.T) {
	if os.Getenv(helperPlaneEnv) != "" {
		s := testenv.Start(t)
		fmt.Println("plane", s.Dir)
		_, _ = io.Copy(io.Discard, os.Stdin) // until killed
		return
	}
	if testing.Short() {
		t.Skip("-short: starts etcd and kube-apiserver; runs in the full suite (hack/test.sh)")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServersGoWithTheTestProcess$")
	// The killed process's folders go with this test's.
	cmd.Env = append(os.Environ(), helperPlaneEnv+"=1", "TMPDIR="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dir := ""
	lines := bufio.NewScanner(stdout)
	var printed []string
	for dir == "" && lines.Scan() {
		if d, ok := strings.CutPrefix(lines.Text(), "plane "); ok {
			dir = d
		}
		printed = append(printed, lines.Text())
	}
	if dir == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the test process started no plane:\n%s", strings.Join(printed, "\n"))
	}
	servers := processesMentioning(t, dir)
	if names := slices.Sorted(maps.Values(servers)); !slices.Equal(names, []string{"etcd", "kube-apiserver"}) {
		t.Fatalf("processes of the plane in %s: %v, want its etcd and kube-apiserver", dir, servers)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	testenv.WaitFor(t, "the killed test process's servers to end", 30*time.Second, func() (bool, string) {
		left := processesMentioning(t, dir)
		return len(left) == 0, fmt.Sprintf("still running: %v", left)
	})
}

// processesMentioning maps the PID of every live process whose command
// line mentions s to its name (a process that ended and waits to be
// reaped is not live).
func processesMentioning(t *testing.T, s string) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), s) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ...: the name ends at the last ')'.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 || strings.HasPrefix(strings.TrimSpace(string(stat[i+1:])), "Z") {
			continue
		}
		out[pid] = filepath.Base(strings.SplitN(string(cmdline), "\x00", 2)[0])
	}
	return out
}
