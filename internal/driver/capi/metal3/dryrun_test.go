package metal3_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/testenv"
)

// TestGoldenObjectsPassServerSideDryRun server-side applies, with
// dryRun=All, every object of every golden file and the templates Cluster
// API derives from them (capi.Preview) to a real kube-apiserver with
// Cluster API's CRDs and the CRDs of Cluster API Provider Metal3,
// baremetal-operator and Metal3's IPAM, and with Cluster API's core and
// kubeadm managers serving their validating webhooks (ClusterClass
// patches and variables, topology): schemas, CEL rules and webhooks must
// accept them all.
func TestGoldenObjectsPassServerSideDryRun(t *testing.T) {
	ctx, dc, mapper := managementCluster(t)
	kinds := testenv.DryRunFiles(ctx, t, dc, mapper, "testdata/golden/*.yaml", 4, capi.Preview)
	for _, k := range []string{"Metal3ClusterTemplate", "Metal3MachineTemplate", "Metal3DataTemplate", "Metal3RemediationTemplate", "IPPool", "ClusterClass", "Cluster"} {
		if !kinds[k] {
			t.Errorf("no %s was dry-run", k)
		}
	}

	// The same path refuses what the CRDs and webhooks forbid, so the
	// passes above mean something.
	objs, preview := testenv.ReadDerived(t, "testdata/golden/ip-pools.yaml", capi.Preview)
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
		case k == "Metal3RemediationTemplate":
			refused("a remediation timeout under CAPM3's minimum", "timeoutSeconds", o,
				set(int64(30), "spec", "template", "spec", "strategy", "timeoutSeconds"))
		case k == "IPPool":
			refused("a pool range that is not an address", "start", o,
				set([]any{map[string]any{"start": "192.168.111.300", "end": "192.168.111.60"}}, "spec", "pools"))
		case k == "Metal3MachineTemplate" && strings.HasPrefix(o.GetName(), "static-"):
			refused("an image format CAPM3 does not know", "diskFormat", o,
				set("iso9660", "spec", "template", "spec", "image", "diskFormat"))
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
// and kubeadm managers (and webhooks), the CRDs of CAPM3, baremetal-operator
// and Metal3's IPAM, and the golden files' namespace.
func managementCluster(t *testing.T) (context.Context, dynamic.Interface, meta.RESTMapper) {
	t.Helper()
	_, dc, mapper := testenv.StartGolden(t, []string{"capm3", "bmo", "ipam-metal3"},
		testenv.CoreManager, testenv.KubeadmBootstrapManager, testenv.KubeadmControlPlaneManager)
	return context.Background(), dc, mapper
}
