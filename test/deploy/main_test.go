package deploy

import (
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestMain stops the package's shared Cluster API plane and removes its one
// build of magnetite (testmagnetite.Build) after the last test.
func TestMain(m *testing.M) { testenv.RunMain(m) }
