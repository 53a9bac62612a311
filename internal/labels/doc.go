// Package labels handles Magnum's key=value labels: decoding the many forms
// clients send them in (parse.go, extra_files in extrafiles.go) and the
// typed label schema (schema.go): every label's type, default, scope
// (template, cluster, node group) and validation, the merge of a cluster's
// or node group's labels over its parent's, and the effective values a
// renderer reads. docs/labels.md is generated from the schema (docs.go).
package labels
