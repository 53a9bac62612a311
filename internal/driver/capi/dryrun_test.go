package capi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestGoldenObjectsPassServerSideDryRun server-side applies, with
// dryRun=All and strict field validation, every object of every golden
// file, and the templates Cluster API will derive from them (capi.Preview),
// to a real kube-apiserver that has Cluster API's CRDs (from its Go module)
// and a CAPO release's: the v1beta1 renders against CAPO v0.14.7, which
// serves v1beta1 only, the v1beta2 renders against v0.15.0-beta.0. The API
// server's schema and CEL validation must accept them all.
func TestGoldenObjectsPassServerSideDryRun(t *testing.T) {
	for _, at := range []struct {
		release, version string
		files            int
	}{{testenv.CAPOv014, "v1beta1", 12}, {testenv.CAPOv015, "v1beta2", 13}} {
		t.Run(at.release, func(t *testing.T) {
			env, dc, mapper := testenv.StartGolden(t, []string{at.release})
			ctx := context.Background()
			dir := filepath.Join("testdata", "golden", at.version)
			kinds := testenv.DryRunFiles(ctx, t, dc, mapper, filepath.Join(dir, "*.yaml"), at.files, capi.Preview)
			for _, k := range []string{"OpenStackClusterTemplate", "OpenStackMachineTemplate", "ClusterClass", "Cluster"} {
				if !kinds[k] {
					t.Errorf("no %s was dry-run", k)
				}
			}

			// The same path refuses what the CRDs forbid, so the passes
			// above mean something: a root volume of 0 GiB (CAPO requires
			// >= 1, which is why bare metal must omit the volume rather
			// than size it 0), and a field of the other version.
			_, preview := testenv.ReadDerived(t, filepath.Join(dir, "bm-only.yaml"), capi.Preview)
			for _, o := range preview {
				if o.GetKind() != "OpenStackMachineTemplate" {
					continue
				}
				bad := o.DeepCopy()
				_ = unstructured.SetNestedField(bad.Object, map[string]any{"sizeGiB": int64(0)}, "spec", "template", "spec", "rootVolume")
				if err := testenv.DryRunApply(ctx, dc, mapper, bad); err == nil || !strings.Contains(err.Error(), "sizeGiB") {
					t.Errorf("a zero-sized root volume was not refused: %v", err)
				}
				other := map[string]string{"v1beta1": "enablePortSecurity", "v1beta2": "disablePortSecurity"}[at.version]
				bad = o.DeepCopy()
				_ = unstructured.SetNestedSlice(bad.Object, []any{map[string]any{other: true}}, "spec", "template", "spec", "ports")
				if err := testenv.DryRunApply(ctx, dc, mapper, bad); err == nil || !strings.Contains(err.Error(), other) {
					t.Errorf("%s, a field %s does not have, was not refused: %v", other, at.version, err)
				}
				break
			}
			if os.Getenv("MAGNETITE_KEEP_TESTENV") != "" {
				t.Logf("testenv kept in %s", env.Dir)
			}
		})
	}
}
