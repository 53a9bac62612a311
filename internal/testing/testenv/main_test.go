package testenv_test

import (
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

func TestMain(m *testing.M) { testenv.RunMain(m) }
