package labels

import (
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testgolden"
)

const labelDoc = "../../docs/labels.md"

// TestLabelDocIsCurrent keeps docs/labels.md in step with the schema; run
// `go generate ./internal/labels` (or this test with -update) after
// changing a label.
func TestLabelDocIsCurrent(t *testing.T) {
	want := Markdown()
	testgolden.File(t, labelDoc, []byte(want), "go generate ./internal/labels")
	for _, l := range Schema() {
		if !strings.Contains(want, "| `"+l.Name+"` |") {
			t.Errorf("label %s missing from the table", l.Name)
		}
	}
}
