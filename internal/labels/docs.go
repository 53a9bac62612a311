package labels

import (
	"fmt"
	"strings"
)

//go:generate go test -run TestLabelDocIsCurrent -update .

// Markdown renders the label schema as the reference page docs/labels.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString(`# Cluster labels

Generated from the label schema in internal/labels/schema.go by
` + "`go generate ./internal/labels`" + `; do not edit by hand.

Labels are set on a cluster template, a cluster (merged over the template's
unless ` + "`merge_labels`" + ` is false) or a node group. **Scope** is the most specific
object that may set a label: *template* labels come only from the cluster
template, *cluster* labels may be overridden by a cluster, *nodegroup* labels
also by a node group. Invalid values are refused with a 400 that names the
label and the form expected; labels not listed here are kept and passed
through, and ` + "`magnetite render`" + ` reports them.

| Label | Type | Default | Scope | Description |
| --- | --- | --- | --- | --- |
`)
	for _, l := range schema {
		def := "`" + l.Default + "`"
		switch {
		case l.DefaultDoc != "" && l.Default != "":
			def += "; " + l.DefaultDoc
		case l.DefaultDoc != "":
			def = l.DefaultDoc
		case l.Default == "":
			def = "unset"
		}
		typ := string(l.Type)
		if l.Type == TypeEnum {
			typ = strings.Join(l.Enum, " \\| ")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", l.Name, typ, cell(def), l.Scope, cell(l.Description))
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
