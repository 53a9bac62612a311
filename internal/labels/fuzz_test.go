package labels

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

func FuzzParseValue(f *testing.F) {
	for _, seed := range []string{
		// Python dict literals, as `openstack coe ... update labels=` sends them.
		`{'kube_tag': 'v1.30.4', 'auto_healing_enabled': True, 'boot_volume_size': 40}`,
		`{"cinder_csi_enabled": False, 'max_node_count': 10,}`,
		`{'extra_files': 'a\'b\nc', "x": "y"}`,
		`{ }`,
		`{'a': }`,
		`{'a': None}`,
		`{'a': 'b'} trailing`,
		// JSON objects with strings, numbers and booleans.
		`{"kube_tag": "v1.30.4", "boot_volume_size": 40, "master_lb_floating_ip_enabled": true}`,
		`{"ratio": 0.5, "big": 12345678901234567890, "neg": -1e3}`,
		`{"a": "b"}]`,
		`{"a": "b"}}`,
		// Nested objects, lists and null must be refused.
		`{"a": {"b": 1}}`,
		`{"a": [1, 2]}`,
		`{"a": null}`,
		`{"": "empty key"}`,
		// Not an object at all.
		`kube_tag=v1.30.4`,
		`["kube_tag"]`,
		``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseValue(s)
		var asJSON map[string]any
		if json.Unmarshal([]byte(s), &asJSON) == nil {
			for k, v := range asJSON {
				switch v.(type) {
				case map[string]any, []any, nil:
					if err == nil {
						t.Fatalf("ParseValue(%q) accepted the non-scalar value of %q", s, k)
					}
				}
			}
		}
		if err != nil {
			if got != nil {
				t.Fatalf("ParseValue(%q) returned %v with error %v", s, got, err)
			}
			return
		}
		enc, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("encode %v: %v", got, err)
		}
		back, err := ParseValue(string(enc))
		if err != nil {
			t.Fatalf("ParseValue(%q) = %v, but its encoding %s does not parse: %v", s, got, enc, err)
		}
		if !maps.Equal(back, got) {
			t.Fatalf("round trip of %q: %v became %v", s, got, back)
		}
		// The decoded object form (what a JSON body carries) agrees too.
		var obj map[string]any
		if err := json.Unmarshal(enc, &obj); err != nil {
			t.Fatal(err)
		}
		if fromObj, err := ParseValue(obj); err != nil || !maps.Equal(fromObj, got) {
			t.Fatalf("ParseValue(object of %s) = %v, %v", enc, fromObj, err)
		}
		if strings.TrimSpace(s) == "" && len(got) != 0 {
			t.Fatalf("blank input gave %v", got)
		}
	})
}
