// Package testdriver loads the golden cases of a driver's tests: each file
// of testdata/cases holds a cluster template, a cluster with its node
// groups and, where the driver needs them, the cloud facts, decoded as the
// conductor hands them to a driver.
package testdriver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver"
)

// Case is one file of a driver's testdata/cases: a template, a cluster
// with its node groups and the cloud facts, under its file name.
type Case struct {
	Name string
	// Driver is the case's driver key, for a package with several.
	Driver string

	template, cluster, facts []byte
}

// Cases reads testdata/cases/*.yaml. A case without facts of its own gets
// those of the file defaultFacts (none when it is empty: Metal3 clusters
// need no cloud facts).
func Cases(t testing.TB, defaultFacts string) []Case {
	t.Helper()
	files, err := filepath.Glob("testdata/cases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	var shared []byte
	if defaultFacts != "" {
		if shared, err = os.ReadFile(defaultFacts); err != nil {
			t.Fatal(err)
		}
	}
	var out []Case
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Driver            string `json:"driver"`
			Template, Cluster any
			Facts             *any `json:"facts"`
		}
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		c := Case{Name: strings.TrimSuffix(filepath.Base(f), ".yaml"), Driver: doc.Driver, facts: shared}
		c.template, _ = yaml.Marshal(doc.Template)
		c.cluster, _ = yaml.Marshal(doc.Cluster)
		if doc.Facts != nil {
			c.facts, _ = yaml.Marshal(*doc.Facts)
		}
		out = append(out, c)
	}
	return out
}

// Request decodes the case afresh as the conductor hands it to a driver,
// in the namespace the golden renders use, magnetite-system.
func (c Case) Request(t testing.TB) driver.Request {
	t.Helper()
	req, err := driver.DecodeRequest(c.template, c.cluster, c.facts)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	req.Namespace = "magnetite-system"
	return req
}

// InfrastructureDriver is a driver that names its infrastructure's kinds
// and the versions it writes them at (*capi.Driver).
type InfrastructureDriver interface {
	InfrastructureKind() string
	InfrastructureVersions() []string
}

// ServedAt is req as the conductor hands it over when the management
// cluster serves d's infrastructure kinds at version (Cluster API's own at
// their default).
func ServedAt(req driver.Request, d InfrastructureDriver, version string) driver.Request {
	req.APIVersions = map[string]string{d.InfrastructureKind(): "infrastructure.cluster.x-k8s.io/" + version}
	return req
}
