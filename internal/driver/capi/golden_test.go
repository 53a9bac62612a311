package capi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/inmemory"
	"github.com/magnetite-io/magnetite/internal/driver/capi/openstack"
	"github.com/magnetite-io/magnetite/internal/testgolden"
)

// goldenCase is one file of testdata/cases: a template, a cluster and,
// unless it brings its own, the shared cloud facts of testdata/facts.yaml.
type goldenCase struct {
	Name     string
	Driver   string
	Template any  `json:"template"`
	Cluster  any  `json:"cluster"`
	Facts    *any `json:"facts"`
}

func loadCases(t testing.TB) []goldenCase {
	t.Helper()
	files, err := filepath.Glob("testdata/cases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	var out []goldenCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c goldenCase
		if err := yaml.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var meta struct {
			Driver string `json:"driver"`
		}
		_ = yaml.Unmarshal(b, &meta)
		c.Name, c.Driver = strings.TrimSuffix(filepath.Base(f), ".yaml"), meta.Driver
		out = append(out, c)
	}
	return out
}

func (c goldenCase) request(t testing.TB) driver.Request {
	t.Helper()
	doc := func(v any) []byte {
		b, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	facts, err := os.ReadFile("testdata/facts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Facts != nil {
		facts = doc(*c.Facts)
	}
	req, err := driver.DecodeRequest(doc(c.Template), doc(c.Cluster), facts)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	req.Namespace = "magnetite-system"
	return req
}

func driverFor(name string) *capi.Driver {
	if name == "inmemory" {
		return inmemory.New(capi.Options{DefaultBootVolumeSize: 20})
	}
	return openstack.New(capi.Options{DefaultBootVolumeSize: 20})
}

func render(t testing.TB, c goldenCase) *driver.Result {
	t.Helper()
	res, err := driverFor(c.Driver).Render(c.request(t))
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return res
}

// document is the golden form of a render: what the conductor must
// provide, the warnings, then every object.
func document(t testing.TB, res *driver.Result) []byte {
	t.Helper()
	return testgolden.Document(t, res.Summary(), res.Objects)
}

func TestGoldenRenders(t *testing.T) {
	for _, c := range loadCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			testgolden.File(t, filepath.Join("testdata", "golden", c.Name+".yaml"), document(t, render(t, c)),
				"go test ./internal/driver/capi/ -update")
		})
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
