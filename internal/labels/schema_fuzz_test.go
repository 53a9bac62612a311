package labels

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzValidate feeds arbitrary label documents through the parser and the
// typed schema: validation must not panic, must be deterministic, must name
// a label in every error and must never drop or change a label.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		`{"kube_tag": "v1.33.1", "boot_volume_size": 0}`,
		`{'auto_healing_enabled': True, 'min_node_count': 1, "max_node_count": "3"}`,
		`{"calico_ipv4pool": "10.0.0.0/8", "service_cluster_ip_range": "10.254.0.0/16"}`,
		`{"extra_files": "- path: /etc/x\n  content: hi\n"}`,
		`{"node_startup_timeout": "45m", "api_master_lb_allowed_cidrs": "1.2.3.0/24,bad"}`,
		`{"manila_csi_enabled": "yes", "server_type": "bm", "my_label": "x"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseValue(s)
		if err != nil {
			return
		}
		snapshot := Merge(nil, m)
		rep1, err1 := Validate(m)
		rep2, err2 := Validate(m)
		if !reflect.DeepEqual(snapshot, m) {
			t.Fatal("validation changed the labels")
		}
		if !reflect.DeepEqual(rep1, rep2) || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatal("validation is not deterministic")
		}
		if err1 != nil && !strings.HasPrefix(err1.Error(), "label ") {
			t.Fatalf("error does not name a label: %v", err1)
		}
		for _, k := range rep1.Unknown {
			if _, ok := m[k]; !ok {
				t.Fatalf("reported unknown label %q not in input", k)
			}
		}
		if err1 == nil {
			// Accessors on validated labels never panic for schema labels.
			v := Values(m)
			for _, l := range Schema() {
				_ = v.String(l.Name)
				_, _ = v.LookupInt(l.Name)
				_, _ = v.LookupBool(l.Name)
				_, _ = v.LookupDuration(l.Name)
			}
			if _, err := v.ExtraFiles(); err != nil {
				t.Fatalf("validated extra_files does not decode: %v", err)
			}
		}
	})
}

// FuzzDecodeExtraFiles checks the extra_files decoder never panics and that
// what it accepts is well-formed and stable under re-encoding.
func FuzzDecodeExtraFiles(f *testing.F) {
	for _, s := range []string{
		"- path: /etc/x\n  content: hello\n",
		`[{"path":"/etc/x","content":"aGVsbG8gd29ybGQgZnJvbSBh","encoding":"base64"}]`,
		b64("- path: /usr/local/bin/a.sh\n  content: |\n    echo hi\n"),
		"/etc/a: b\n",
		"- path: /etc/x\n  content: aGVsbG8gd29ybGQgZnJvbSBh\n",
		"", "[", "====",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		files, err := DecodeExtraFiles(s)
		if err != nil || len(files) == 0 {
			return
		}
		for _, file := range files {
			if !strings.HasPrefix(file.Path, "/") || file.Content == "" {
				t.Fatalf("accepted a malformed file: %+v", file)
			}
			if file.Encoding == "" && looksBase64Text(file.Content) {
				t.Fatalf("accepted pre-encoded content without encoding: %+v", file)
			}
		}
		b, _ := json.Marshal(files)
		again, err := DecodeExtraFiles(string(b))
		if err != nil || !reflect.DeepEqual(again, files) {
			t.Fatalf("re-encoding changed files: %+v -> %+v (%v)", files, again, err)
		}
	})
}
