// Package testgolden is the one golden-file harness of the tests: a test
// renders something, File compares it byte for byte with a file under
// testdata (or a generated doc), and `go test <pkg> -update` rewrites the
// file after the diff has been reviewed. A diff of a golden file is the
// review of a rendering change.
package testgolden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Update is the -update flag of every test binary that uses the harness.
var Update = flag.Bool("update", false, "rewrite golden files instead of comparing with them")

// File compares got with the file at path. With -update it writes got
// there instead (creating the directory). regenerate tells the reader how
// to rewrite the file, e.g. "go test ./internal/labels -update".
func File(t testing.TB, path string, got []byte, regenerate string) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run %s to create it)", err, regenerate)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale (run %s after reviewing the difference):\n%s", path, regenerate, LineDiff(string(want), string(got)))
	}
}

// LineDiff lists the first lines where want and got differ.
func LineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			out = append(out, fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, w, g))
		}
		if len(out) > 20 {
			out = append(out, "...")
			break
		}
	}
	return strings.Join(out, "\n")
}

// Document is the golden form of a set of objects: a header (a renderer's
// summary, comments), then every object as a YAML document.
func Document(t testing.TB, header string, objects []*unstructured.Unstructured) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(header)
	for _, o := range objects {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes()
}

// Section is File for the part of a document between the lines
// "<!-- marker:start -->" and "<!-- marker:end -->" (a generated table in a
// hand-written README or doc): it compares that part with want, and with
// -update rewrites it, leaving the rest of the document as it is.
func Section(t testing.TB, path, marker, want, regenerate string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	start, end := "<!-- "+marker+":start -->\n", "<!-- "+marker+":end -->"
	i, j := strings.Index(s, start), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %q ... %q markers", path, start, end)
	}
	got := s[i+len(start) : j]
	if got == want {
		return
	}
	if *Update {
		if err := os.WriteFile(path, []byte(s[:i+len(start)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the %s section is stale (run %s):\n%s", path, marker, regenerate, LineDiff(got, want))
}
