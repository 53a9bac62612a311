package metal3_test

import (
	"path/filepath"
	"testing"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/metal3"
	"github.com/magnetite-io/magnetite/internal/testing/testdriver"
	"github.com/magnetite-io/magnetite/internal/testing/testgolden"
)

// goldenCases are testdata/cases/*.yaml: a template and a cluster with its
// node groups, keyed by file name. Metal3 clusters need no cloud facts.
func goldenCases(t testing.TB) map[string]driver.Request {
	t.Helper()
	out := map[string]driver.Request{}
	for _, c := range testdriver.Cases(t, "") {
		out[c.Name] = c.Request(t)
	}
	return out
}

func newDriver() *capi.Driver { return metal3.New(capi.Options{}, metal3.Options{}) }

// render is a case's render with the management cluster serving CAPM3's
// kinds at version.
func render(t testing.TB, req driver.Request, version string) *driver.Result {
	t.Helper()
	d := newDriver()
	res, err := d.Render(testdriver.ServedAt(req, d, version))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestGoldenRenders compares every case's render, at each version CAPM3's
// kinds are written at (v1beta1 up to CAPM3 v1.12, v1beta2 from v1.13),
// with its golden file in testdata/golden/<version>;
// go test ./internal/driver/capi/metal3 -update rewrites them after review.
func TestGoldenRenders(t *testing.T) {
	cases := goldenCases(t)
	for _, want := range []string{"control-plane-and-workers", "node-reuse", "ip-pools", "remediation"} {
		if _, ok := cases[want]; !ok {
			t.Errorf("golden case %s is missing", want)
		}
	}
	for name, req := range cases {
		for _, v := range newDriver().InfrastructureVersions() {
			t.Run(v+"/"+name, func(t *testing.T) {
				res := render(t, req, v)
				testgolden.File(t, filepath.Join("testdata", "golden", v, name+".yaml"), testgolden.Document(t, res.Summary(), res.Objects),
					"go test ./internal/driver/capi/metal3 -update")
			})
		}
	}
}
