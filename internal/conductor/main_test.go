package conductor

import (
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestMain stops the API servers the package's tests share (managementPlane)
// after the last test.
func TestMain(m *testing.M) { testenv.RunMain(m) }

// managementPlane is the API server this package's tests share, with
// Cluster API's CRDs and those of capo (a CAPO release), CAPM3 and Metal3
// IPAM, and no manager: each test plays Cluster API's part where it needs
// to. The tests keep apart by namespace (testenv.NamespacePrefix on each
// mgmt.Client) and by cluster UUID. One plane per CAPO release for the
// package's eleven tests instead of one each saves ten API servers' start
// and the CPU of installing the CRDs.
func managementPlane(t *testing.T, capo string) *testenv.APIServer {
	t.Helper()
	return testenv.SharedProviders(t, capo, "capm3", "ipam-metal3")
}
