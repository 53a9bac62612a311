// Package sample is a package testrun's tests link and run: one test
// passes, one fails, one reads the directory it runs in.
package sample

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPasses(t *testing.T) {}

func TestFails(t *testing.T) { t.Error("sample failure") }

// TestRunsInItsPackageDirectory fails unless the binary runs where go
// test would run it.
func TestRunsInItsPackageDirectory(t *testing.T) {
	if _, err := os.Stat(filepath.Join(".", "sample_test.go")); err != nil {
		t.Errorf("not in the package's directory: %v", err)
	}
}
