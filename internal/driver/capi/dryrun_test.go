package capi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/testenv"
)

// TestGoldenObjectsPassServerSideDryRun server-side applies, with
// dryRun=All, every object of every golden file, and the templates Cluster
// API will derive from them (capi.Preview), to a real kube-apiserver that
// has Cluster API's CRDs (from its Go module) and CAPO's installed: the
// API server's schema and CEL validation must accept them all.
func TestGoldenObjectsPassServerSideDryRun(t *testing.T) {
	env := testenv.Start(t)
	crds := testenv.ClusterAPICRDs(t)
	env.InstallCRDs(t, filepath.Join(crds, "core"), nil)
	for _, provider := range []string{"kubeadm-bootstrap", "kubeadm-control-plane", "capd"} {
		env.InstallCRDs(t, filepath.Join(crds, provider), testenv.ProviderLabels)
	}
	env.InstallCRDs(t, testenv.ProviderCRDs(t, "capo"), testenv.ProviderLabels)

	ctx := context.Background()
	dc := env.Dynamic(t)
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "magnetite-system"}}}
	if _, err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mapper := env.Mapper(t)

	testenv.DryRunFiles(ctx, t, dc, mapper, "testdata/golden/*.yaml", 12, capi.Preview)

	// The same path refuses what the CRDs forbid, so the passes above mean
	// something: a root volume of 0 GiB (CAPO requires >= 1, which is why
	// bare metal must omit the volume rather than size it 0).
	objs, err := testenv.ReadObjects("testdata/golden/bm-only.yaml")
	if err != nil {
		t.Fatal(err)
	}
	preview, err := capi.Preview(objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range preview {
		if o.GetKind() != "OpenStackMachineTemplate" {
			continue
		}
		bad := o.DeepCopy()
		_ = unstructured.SetNestedField(bad.Object, map[string]any{"sizeGiB": int64(0)}, "spec", "template", "spec", "rootVolume")
		if err := testenv.DryRunApply(ctx, dc, mapper, bad); err == nil || !strings.Contains(err.Error(), "sizeGiB") {
			t.Errorf("a zero-sized root volume was not refused: %v", err)
		}
		break
	}
	if os.Getenv("MAGNETITE_KEEP_TESTENV") != "" {
		t.Logf("testenv kept in %s", env.Dir)
	}
}
