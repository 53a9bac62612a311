package capi_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/testenv"
)

// TestGoldenObjectsPassServerSideDryRun server-side applies, with
// dryRun=All, every object of every golden file, and the templates Cluster
// API will derive from them (capi.Preview), to a real kube-apiserver that
// has Cluster API's CRDs (from its Go module) and CAPO's installed: the
// API server's schema and CEL validation must accept them all.
func TestGoldenObjectsPassServerSideDryRun(t *testing.T) {
	env, dc, mapper := testenv.StartGolden(t, []string{"capo"})
	ctx := context.Background()

	testenv.DryRunFiles(ctx, t, dc, mapper, "testdata/golden/*.yaml", 12, capi.Preview)

	// The same path refuses what the CRDs forbid, so the passes above mean
	// something: a root volume of 0 GiB (CAPO requires >= 1, which is why
	// bare metal must omit the volume rather than size it 0).
	_, preview := testenv.ReadDerived(t, "testdata/golden/bm-only.yaml", capi.Preview)
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
