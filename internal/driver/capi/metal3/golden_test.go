package metal3_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/metal3"
	"github.com/magnetite-io/magnetite/internal/testgolden"
)

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

// render is a case's render.
func render(t testing.TB, req driver.Request) *driver.Result {
	t.Helper()
	res, err := newDriver().Render(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
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
			res := render(t, req)
			testgolden.File(t, filepath.Join("testdata", "golden", name+".yaml"), testgolden.Document(t, res.Summary(), res.Objects),
				"go test ./internal/driver/capi/metal3 -update")
		})
	}
}
