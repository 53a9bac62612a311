package addons

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/addons.md's pinned table")

// TestDocsShowThePinnedTable keeps docs/addons.md's table generated from
// the pins; run with -update after changing them.
func TestDocsShowThePinnedTable(t *testing.T) {
	const path = "../../docs/addons.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	const start, end = "<!-- pinned-table:start -->\n", "<!-- pinned-table:end -->"
	i, j := strings.Index(s, start), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/addons.md lacks the %q ... %q markers", start, end)
	}
	if s[i+len(start):j] == MarkdownTable() {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(s[:i+len(start)]+MarkdownTable()+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error("docs/addons.md's pinned table is stale; run: go test ./internal/addons -run TestDocsShowThePinnedTable -update")
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
