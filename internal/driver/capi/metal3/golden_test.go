package metal3_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/metal3"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenCases are testdata/cases/*.yaml: a template and a cluster with its
// node groups, keyed by file name. Metal3 clusters need no cloud facts.
func goldenCases(t testing.TB) map[string]driver.Request {
	t.Helper()
	files, err := filepath.Glob("testdata/cases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	out := map[string]driver.Request{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Template, Cluster any
		}
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ct, _ := yaml.Marshal(doc.Template)
		cl, _ := yaml.Marshal(doc.Cluster)
		req, err := driver.DecodeRequest(ct, cl, nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		req.Namespace = "magnetite-system"
		out[strings.TrimSuffix(filepath.Base(f), ".yaml")] = req
	}
	return out
}

func newDriver() *capi.Driver { return metal3.New(capi.Options{}, metal3.Options{}) }

// renderDocument is the golden form of a render: the conductor's part and
// the warnings as comments, then every object.
func renderDocument(t testing.TB, req driver.Request) []byte {
	t.Helper()
	res, err := newDriver().Render(req)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString(res.Summary())
	for _, o := range res.Objects {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes()
}

// TestGoldenRenders compares every case's render with its golden file;
// go test ./internal/driver/capi/metal3 -update rewrites them after review.
func TestGoldenRenders(t *testing.T) {
	cases := goldenCases(t)
	for _, want := range []string{"control-plane-and-workers", "node-reuse", "ip-pools", "remediation"} {
		if _, ok := cases[want]; !ok {
			t.Errorf("golden case %s is missing", want)
		}
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			got := renderDocument(t, req)
			path := filepath.Join("testdata", "golden", name+".yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/driver/capi/metal3 -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
				for i := 0; i < len(gl) && i < len(wl); i++ {
					if gl[i] != wl[i] {
						t.Fatalf("render differs from %s at line %d (run with -update after reviewing):\n- %s\n+ %s", path, i+1, wl[i], gl[i])
					}
				}
				t.Fatalf("render differs from %s in length: %d lines, want %d", path, len(gl), len(wl))
			}
		})
	}
}
