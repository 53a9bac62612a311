package labels

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/labels.md from the schema")

const labelDoc = "../../docs/labels.md"

// TestLabelDocIsCurrent keeps docs/labels.md in step with the schema; run
// `go generate ./internal/labels` (or this test with -update) after
// changing a label.
func TestLabelDocIsCurrent(t *testing.T) {
	want := Markdown()
	if *update {
		if err := os.MkdirAll(filepath.Dir(labelDoc), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(labelDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(labelDoc)
	if err != nil {
		t.Fatalf("%v; run go generate ./internal/labels", err)
	}
	if string(got) != want {
		t.Errorf("docs/labels.md is stale; run go generate ./internal/labels")
	}
	for _, l := range Schema() {
		if !strings.Contains(want, "| `"+l.Name+"` |") {
			t.Errorf("label %s missing from the table", l.Name)
		}
	}
}
