package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/config"
)

var updateReadme = flag.Bool("update", false, "rewrite generated README sections")

// optionsTable renders every declared option as the README's reference table.
func optionsTable() string {
	var b strings.Builder
	b.WriteString("| section | option | default | meaning |\n|---|---|---|---|\n")
	for _, o := range config.Options {
		d := o.Default
		if d == "" {
			d = `""`
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | `%s` | %s |\n", o.Section, o.Name, d, strings.ReplaceAll(o.Help, "|", "\\|"))
	}
	return b.String()
}

// TestReadmeDocumentsEveryOption keeps the README's option table generated
// from the declarations; run with -update after adding an option.
func TestReadmeDocumentsEveryOption(t *testing.T) {
	const path = "../../README.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	const start, end = "<!-- config-options:start -->\n", "<!-- config-options:end -->"
	i, j := strings.Index(s, start), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %q ... %q markers", start, end)
	}
	want := optionsTable()
	got := s[i+len(start) : j]
	if got == want {
		return
	}
	if *updateReadme {
		if err := os.WriteFile(path, []byte(s[:i+len(start)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md option table is stale; run: go test ./cmd/magnetite -run TestReadmeDocumentsEveryOption -update")
}
