package jsonpatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"

	"github.com/magnetite-io/magnetite/internal/fault"
)

// Operation is one parsed patch step.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
	// HasValue is false when the request carried no value or null.
	HasValue bool `json:"-"`
}

// ErrInvalid marks a patch document that is malformed; the message says how.
var ErrInvalid = errors.New("invalid patch")

// ErrNotApplicable marks a well-formed patch that does not fit the
// resource (a path it does not have, an add over an existing member); it is
// also ErrInvalid.
var ErrNotApplicable = fault.New(ErrInvalid, "cannot be applied")

var pathRE = regexp.MustCompile(`^(/[\w-]+)+$`)

// Parse decodes and checks a patch body: a JSON array of objects with a
// known op, a well-formed path and, for add and replace, a value.
func Parse(body []byte) ([]Operation, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var raw []map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fault.New(ErrInvalid, "the body must be a JSON array of patch operations ({\"op\", \"path\", \"value\"}): %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fault.New(ErrInvalid, "unexpected data after the patch array")
	}
	if len(raw) == 0 {
		return nil, fault.New(ErrInvalid, "the patch is empty; send at least one operation")
	}
	ops := make([]Operation, 0, len(raw))
	for i, r := range raw {
		if r == nil {
			return nil, fault.New(ErrInvalid, "operation %d is not an object", i)
		}
		for k := range r {
			if k != "op" && k != "path" && k != "value" {
				return nil, fault.New(ErrInvalid, "operation %d has unknown member %q (allowed: op, path, value)", i, k)
			}
		}
		op, ok := r["op"].(string)
		if !ok {
			return nil, fault.New(ErrInvalid, "operation %d needs \"op\": one of add, replace, remove", i)
		}
		if op != "add" && op != "replace" && op != "remove" {
			return nil, fault.New(ErrInvalid, "operation %d has op %q; Magnum accepts add, replace and remove", i, op)
		}
		path, ok := r["path"].(string)
		if !ok || !pathRE.MatchString(path) {
			return nil, fault.New(ErrInvalid, "operation %d needs a \"path\" like /node_count or /labels/key (got %v)", i, r["path"])
		}
		v, present := r["value"]
		o := Operation{Op: op, Path: path, Value: v, HasValue: present && v != nil}
		if op != "remove" && !o.HasValue {
			return nil, fault.New(ErrInvalid, "'add' and 'replace' operations need a value (operation %d on %s)", i, path)
		}
		if op == "remove" {
			o.Value, o.HasValue = nil, false
		}
		ops = append(ops, o)
	}
	return ops, nil
}

// Apply returns a copy of doc with ops applied. doc must be a JSON object
// decoded into map[string]any (nested objects as map[string]any).
func Apply(doc map[string]any, ops []Operation) (map[string]any, error) {
	out := deepCopy(doc).(map[string]any)
	for _, o := range ops {
		parts := strings.Split(o.Path[1:], "/")
		if err := applyOne(out, parts, o); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func applyOne(doc map[string]any, parts []string, o Operation) error {
	if len(parts) == 1 {
		attr := parts[0]
		cur, exists := doc[attr]
		switch o.Op {
		case "add":
			if !exists {
				return fault.New(ErrNotApplicable, "Adding a new attribute %s to the root of the resource is not allowed.", o.Path)
			}
			if cur != nil {
				return fault.New(ErrNotApplicable, "The attribute %s has existed, please use 'replace' operation instead.", o.Path)
			}
			doc[attr] = o.Value
		case "replace", "remove":
			return replaceOrRemove(doc, attr, exists, o, "the resource has no such attribute")
		}
		return nil
	}
	// Nested paths walk objects (for example /labels/kube_tag); the
	// container is created by add when it is null.
	parent := parts[0]
	child, ok := doc[parent].(map[string]any)
	if !ok {
		if doc[parent] == nil && o.Op == "add" {
			if _, exists := doc[parent]; !exists {
				return fault.New(ErrNotApplicable, "can't add %s: the resource has no attribute /%s", o.Path, parent)
			}
			child = map[string]any{}
			doc[parent] = child
		} else {
			return fault.New(ErrNotApplicable, "can't %s %s: /%s is not an object", o.Op, o.Path, parent)
		}
	}
	return applyNested(child, parts[1:], o)
}

func applyNested(doc map[string]any, parts []string, o Operation) error {
	key := parts[0]
	if len(parts) > 1 {
		child, ok := doc[key].(map[string]any)
		if !ok {
			return fault.New(ErrNotApplicable, "can't %s %s: member %q is not an object", o.Op, o.Path, key)
		}
		return applyNested(child, parts[1:], o)
	}
	_, exists := doc[key]
	switch o.Op {
	case "add":
		doc[key] = o.Value
	case "replace", "remove":
		return replaceOrRemove(doc, key, exists, o, "no such member")
	}
	return nil
}

// replaceOrRemove carries out a replace or remove of doc[key], which must
// exist; missing says what is absent when it does not.
func replaceOrRemove(doc map[string]any, key string, exists bool, o Operation, missing string) error {
	if !exists {
		return fault.New(ErrNotApplicable, "can't %s %s: %s", o.Op, o.Path, missing)
	}
	if o.Op == "remove" {
		delete(doc, key)
	} else {
		doc[key] = o.Value
	}
	return nil
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = deepCopy(x)
		}
		return s
	default:
		return v
	}
}

// ToDoc converts a struct into the generic document a patch applies to.
func ToDoc(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return doc, nil
}
