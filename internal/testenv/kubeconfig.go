package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// KubeconfigFile writes an admin kubeconfig for the API server (mode 0600)
// and returns its path, for programs the test starts.
func (s *APIServer) KubeconfigFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(s.kubeconfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
