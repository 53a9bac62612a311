package metal3_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestGoldenObjectsPassServerSideDryRun server-side applies, with
// dryRun=All, every object of every golden file and the templates Cluster
// API derives from them (capi.Preview) to a real kube-apiserver with
// Cluster API's CRDs and the CRDs of Cluster API Provider Metal3,
// baremetal-operator and Metal3's IPAM, and with Cluster API's core and
// kubeadm managers serving their validating webhooks (ClusterClass
// patches and variables, topology): schemas, CEL rules and webhooks must
// accept them all: the v1beta1 renders with CAPM3 v1.12.7's CRDs (v1beta1
// only), the v1beta2 renders with v1.13.2's.
func TestGoldenObjectsPassServerSideDryRun(t *testing.T) {
	for _, at := range capm3Releases {
		t.Run(at.release, func(t *testing.T) { passesDryRun(t, at.release, at.version) })
	}
}

// capm3Releases are the CAPM3 releases each golden version is checked
// against.
var capm3Releases = []struct{ release, version string }{{testenv.CAPM3v112, "v1beta1"}, {testenv.CAPM3v113, "v1beta2"}}

func passesDryRun(t *testing.T, release, version string) {
	ctx, dc, mapper := managementCluster(t, release)
	dir := filepath.Join("testdata", "golden", version)
	kinds := testenv.DryRunFiles(ctx, t, dc, mapper, filepath.Join(dir, "*.yaml"), 4, capi.Preview)
	for _, k := range []string{"Metal3ClusterTemplate", "Metal3MachineTemplate", "Metal3DataTemplate", "Metal3RemediationTemplate", "IPPool", "ClusterClass", "Cluster"} {
		if !kinds[k] {
			t.Errorf("no %s was dry-run", k)
		}
	}

	// The same path refuses what the CRDs and webhooks forbid, so the
	// passes above mean something.
	objs, preview := testenv.ReadDerived(t, filepath.Join(dir, "ip-pools.yaml"), capi.Preview)
	refused := func(what, says string, o *unstructured.Unstructured, change func(obj map[string]any) error) {
		t.Helper()
		bad := o.DeepCopy()
		if err := change(bad.Object); err != nil {
			t.Fatal(err)
		}
		if err := testenv.DryRunApply(ctx, dc, mapper, bad); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s was not refused for %q: %v", what, says, err)
		}
	}
	set := func(value any, path ...string) func(map[string]any) error {
		return func(obj map[string]any) error { return unstructured.SetNestedField(obj, value, path...) }
	}
	checked := map[string]bool{}
	for _, o := range append(objs, preview...) {
		switch k := o.GetKind(); {
		case k == "Metal3RemediationTemplate" && version == "v1beta2":
			refused("a remediation timeout under CAPM3's minimum", "timeoutSeconds", o,
				set(int64(30), "spec", "template", "spec", "strategy", "timeoutSeconds"))
		case k == "Metal3RemediationTemplate":
			// v1beta1 has no minimum; it takes a duration, not seconds.
			refused("a remediation timeout in v1beta2's field", "timeoutSeconds", o,
				set(int64(900), "spec", "template", "spec", "strategy", "timeoutSeconds"))
		case k == "IPPool":
			refused("a pool range that is not an address", "start", o,
				set([]any{map[string]any{"start": "192.168.111.300", "end": "192.168.111.60"}}, "spec", "pools"))
		case k == "Metal3MachineTemplate" && strings.HasPrefix(o.GetName(), "static-"):
			format := map[string]string{"v1beta1": "format", "v1beta2": "diskFormat"}[version]
			refused("an image format CAPM3 does not know", format, o,
				set("iso9660", "spec", "template", "spec", "image", format))
		case k == "ClusterClass":
			// Cluster API's webhook checks where each patch writes.
			refused("a patch outside the template's spec", "path", o, func(obj map[string]any) error {
				patches, _, _ := unstructured.NestedSlice(obj, "spec", "patches")
				for _, x := range patches {
					pm := x.(map[string]any)
					if pm["name"] != "metal3-machine" {
						continue
					}
					def := pm["definitions"].([]any)[0].(map[string]any)
					def["jsonPatches"].([]any)[0].(map[string]any)["path"] = "/status/template"
				}
				return unstructured.SetNestedSlice(obj, patches, "spec", "patches")
			})
		default:
			continue
		}
		checked[o.GetKind()] = true
	}
	if len(checked) != 4 {
		t.Errorf("negative checks ran for %v only", checked)
	}
}

// managementCluster is a kube-apiserver with Cluster API's CRDs and its core
// and kubeadm managers (and webhooks), the CRDs of a CAPM3 release, baremetal-operator
// and Metal3's IPAM, and the golden files' namespace.
func managementCluster(t *testing.T, release string) (context.Context, dynamic.Interface, meta.RESTMapper) {
	t.Helper()
	_, dc, mapper := testenv.StartGolden(t, []string{release, "bmo", "ipam-metal3"},
		testenv.CoreManager, testenv.KubeadmBootstrapManager, testenv.KubeadmControlPlaneManager)
	return context.Background(), dc, mapper
}
