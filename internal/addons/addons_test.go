package addons

import (
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testgolden"
)

// TestDocsShowThePinnedTable keeps docs/addons.md's table generated from
// the pins; run with -update after changing them.
func TestDocsShowThePinnedTable(t *testing.T) {
	testgolden.Section(t, "../../docs/addons.md", "pinned-table", MarkdownTable(),
		"go test ./internal/addons -run TestDocsShowThePinnedTable -update")
}

// TestEveryAddonIsPinnedForEverySupportedMinor: no minor lacks an addon.
func TestEveryAddonIsPinnedForEverySupportedMinor(t *testing.T) {
	for _, a := range Names {
		for _, m := range Minors {
			if p, ok := Pinned(a, m); !ok || len(p.Charts) == 0 {
				t.Errorf("%s has no pin for Kubernetes %s", a, m)
			}
		}
	}
	if _, problems := Select(Cluster{KubeVersion: "v1.40.0", NetworkDriver: "calico"}); len(problems) != 1 || !strings.Contains(problems[0], "no calico is pinned for Kubernetes 1.40") {
		t.Errorf("an unpinned minor: %v", problems)
	}
}

// TestPackSplitsAndShrinksOversizedCRDs: documents fill ConfigMaps in
// order up to the budget; a CRD beyond the budget loses its schema
// descriptions (not a property named "description"), anything else beyond
// it is refused.
func TestPackSplitsAndShrinksOversizedCRDs(t *testing.T) {
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: big.example.com\nspec:\n  versions:\n  - name: v1\n    schema:\n      openAPIV3Schema:\n        description: " +
		strings.Repeat("long ", 400) + "\n        properties:\n          description:\n            type: string\n            description: " + strings.Repeat("words ", 100) + "\n"
	parts, warnings, err := Pack(Calico, []string{"a: 1\n", crd, "b: 2\n"}, 250)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || len(warnings) != 1 || !strings.Contains(warnings[0], "CustomResourceDefinition big.example.com") {
		t.Fatalf("parts %d, warnings %v", len(parts), warnings)
	}
	shrunk := parts[0][1]
	if strings.Contains(shrunk, "long long") || strings.Contains(shrunk, "words words") || !strings.Contains(shrunk, "description:\n") {
		t.Errorf("the CRD kept descriptions or lost its description property:\n%s", shrunk)
	}
	if _, _, err := Pack(Calico, []string{"kind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: " + strings.Repeat("z", 2000) + "\n"}, 1000); err == nil {
		t.Error("a ConfigMap beyond the budget was accepted")
	}
}

// TestPackDeliversCustomResourcesAfterTheirCRDs: a resource of a CRD the
// addon brings (Calico's Installation) goes into a ConfigMap after the one
// holding the CRD, so the CRD is applied, and established, first.
func TestPackDeliversCustomResourcesAfterTheirCRDs(t *testing.T) {
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: installations.operator.tigera.io\nspec:\n  group: operator.tigera.io\n  names:\n    kind: Installation\n"
	inst := "apiVersion: operator.tigera.io/v1\nkind: Installation\nmetadata:\n  name: default\n"
	sa := "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: tigera-operator\n"
	parts, _, err := Pack(Calico, []string{crd, inst, sa}, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || len(parts[0]) != 2 || parts[0][0] != crd || parts[0][1] != sa || parts[1][0] != inst {
		t.Errorf("parts %q", parts)
	}
}
