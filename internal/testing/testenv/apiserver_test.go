package testenv_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
