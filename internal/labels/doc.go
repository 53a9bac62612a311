// Package labels handles Magnum's key=value labels: decoding the many forms
// clients send them in, and (in schema.go) the typed label schema.
package labels
