package tempest

import (
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestMain stops the package's shared Cluster API plane after the last test.
func TestMain(m *testing.M) { testenv.RunMain(m) }
