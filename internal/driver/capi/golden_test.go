package capi_test

import (
	"path/filepath"
	"testing"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/inmemory"
	"github.com/magnetite-io/magnetite/internal/driver/capi/openstack"
	"github.com/magnetite-io/magnetite/internal/testing/testdriver"
	"github.com/magnetite-io/magnetite/internal/testing/testgolden"
)

// loadCases are the files of testdata/cases: a template, a cluster and,
// unless it brings its own, the shared cloud facts of testdata/facts.yaml.
func loadCases(t testing.TB) []testdriver.Case {
	t.Helper()
	return testdriver.Cases(t, "testdata/facts.yaml")
}

func driverFor(name string) *capi.Driver {
	if name == "inmemory" {
		return inmemory.New(capi.Options{DefaultBootVolumeSize: 20}, inmemory.Options{})
	}
	return openstack.New(capi.Options{DefaultBootVolumeSize: 20})
}

// render is a case's render with the management cluster serving the
// infrastructure's kinds at version.
func render(t testing.TB, c testdriver.Case, version string) *driver.Result {
	t.Helper()
	d := driverFor(c.Driver)
	res, err := d.Render(testdriver.ServedAt(c.Request(t), d, version))
	if err != nil {
		t.Fatalf("%s at %s: %v", c.Name, version, err)
	}
	return res
}

// document is the golden form of a render: what the conductor must
// provide, the warnings, then every object.
func document(t testing.TB, res *driver.Result) []byte {
	t.Helper()
	return testgolden.Document(t, res.Summary(), res.Objects)
}

// TestGoldenRenders renders every case at each infrastructure version its
// driver writes (CAPO's v1beta1 and v1beta2) into testdata/golden/<version>.
func TestGoldenRenders(t *testing.T) {
	for _, c := range loadCases(t) {
		for _, v := range driverFor(c.Driver).InfrastructureVersions() {
			t.Run(v+"/"+c.Name, func(t *testing.T) {
				testgolden.File(t, filepath.Join("testdata", "golden", v, c.Name+".yaml"), document(t, render(t, c, v)),
					"go test ./internal/driver/capi/ -update")
			})
		}
	}
}

// TestGoldenCasesCoverTheAcceptanceList keeps the named cases from being
// deleted by accident.
func TestGoldenCasesCoverTheAcceptanceList(t *testing.T) {
	have := map[string]bool{}
	for _, c := range loadCases(t) {
		have[c.Name] = true
	}
	for _, want := range []string{"vm-only", "bm-only", "mixed", "bm-boot-volume", "port-security-disabled",
		"autoscaling", "several-nodegroups", "vm-only-upgraded", "os-flatcar", "os-rockylinux", "os-debian", "inmemory-mixed"} {
		if !have[want] {
			t.Errorf("golden case %s is missing", want)
		}
	}
}
