package cli

import (
	"flag"
	"strconv"
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// parallelTests is how many of this package's tests run at once unless
// -parallel says otherwise. Go's default, GOMAXPROCS, suits tests that
// compute; these mostly wait on other processes (Cluster API's
// controllers, simulated machines booting, Keystone, Ironic), so on a
// two-core machine two at a time would leave the machine idle while the
// package ran for the sum of its tests.
const parallelTests = 16

// TestMain runs the tests with the planes they share stopped after the
// last test: the Cluster API plane (testenv.SharedClusterAPI), the
// OpenStack tests' management plane of each CAPO release and their
// workload clusters' API server (testenv.SharedPlane); and one build of
// magnetite (testmagnetite.Build).
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		if err := flag.Set("test.parallel", strconv.Itoa(parallelTests)); err != nil {
			panic(err)
		}
	}
	testenv.RunMain(m)
}
