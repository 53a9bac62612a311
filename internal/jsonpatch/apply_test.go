package jsonpatch

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestApplyReplacesAndRemovesOnlyWhatExists: replace and remove change an
// attribute or member that exists and refuse, naming the path, one that
// does not, at the root and in nested objects alike.
func TestApplyReplacesAndRemovesOnlyWhatExists(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(nodeGroupDoc), &doc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		op      Operation
		refusal string
		check   func(map[string]any) bool
	}{
		{Operation{Op: "replace", Path: "/node_count", Value: 5.0}, "", func(d map[string]any) bool { return d["node_count"] == 5.0 }},
		{Operation{Op: "remove", Path: "/max_node_count"}, "", func(d map[string]any) bool { _, ok := d["max_node_count"]; return !ok }},
		{Operation{Op: "replace", Path: "/labels/a/b", Value: "d"}, "", func(d map[string]any) bool {
			return reflect.DeepEqual(d["labels"], map[string]any{"a": map[string]any{"b": "d"}})
		}},
		{Operation{Op: "remove", Path: "/labels/a/b"}, "", func(d map[string]any) bool {
			return reflect.DeepEqual(d["labels"], map[string]any{"a": map[string]any{}})
		}},
		{Operation{Op: "replace", Path: "/flavor_id", Value: "x"}, "can't replace /flavor_id: the resource has no such attribute", nil},
		{Operation{Op: "remove", Path: "/flavor_id"}, "can't remove /flavor_id: the resource has no such attribute", nil},
		{Operation{Op: "replace", Path: "/labels/x", Value: "y"}, "can't replace /labels/x: no such member", nil},
		{Operation{Op: "remove", Path: "/labels/x"}, "can't remove /labels/x: no such member", nil},
	} {
		got, err := Apply(doc, []Operation{tc.op})
		if tc.refusal != "" {
			if err == nil || !strings.HasSuffix(err.Error(), ": "+tc.refusal) || !errors.Is(err, ErrNotApplicable) {
				t.Errorf("%s %s: %v, want %q", tc.op.Op, tc.op.Path, err, tc.refusal)
			}
			continue
		}
		if err != nil || !tc.check(got) {
			t.Errorf("%s %s: %v %v", tc.op.Op, tc.op.Path, got, err)
		}
	}
}
