package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/config"
	"github.com/magnetite-io/magnetite/internal/testing/testgolden"
)

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
	testgolden.Section(t, "../../README.md", "config-options", optionsTable(),
		"go test ./cmd/magnetite -run TestReadmeDocumentsEveryOption -update")
}

// TestDocsNameOnlyOptionsThatExist: every "[section] option" of
// Magnetite's that the README and the operator docs mention (docs/labels.md
// names the options labels fall back on) is an option Magnetite reads.
// Other programs' options ("Ironic's [conductor] deploy_kernel", tempest's
// and Keystone's) are not Magnetite's.
func TestDocsNameOnlyOptionsThatExist(t *testing.T) {
	known := map[string]bool{}
	for _, o := range config.Options {
		known["["+o.Section+"] "+o.Name] = true
	}
	mentioned := 0
	for _, f := range []string{"README.md", "docs/labels.md", "docs/operations.md", "docs/cli.md", "docs/policy.md"} {
		raw, err := os.ReadFile("../../" + f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		for _, m := range optionRefRE.FindAllStringSubmatchIndex(text, -1) {
			if strings.HasSuffix(text[max(0, m[0]-4):m[0]], "'s ") {
				continue
			}
			mentioned++
			if ref := "[" + text[m[2]:m[3]] + "] " + text[m[4]:m[5]]; !known[ref] {
				t.Errorf("%s names %s, which is no option", f, ref)
			}
		}
	}
	if mentioned < 10 {
		t.Fatalf("found only %d option references; the pattern is broken", mentioned)
	}
}

var optionRefRE = regexp.MustCompile("`?\\[(DEFAULT|[a-z_]+)\\]`?\\s+`?([a-z_]+)`?")
