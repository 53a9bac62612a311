package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The tests of this package share one build of magnetite.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// magnetiteBinary builds cmd/magnetite of this tree once for the package.
func magnetiteBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "magnetite-deploy-"); binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "magnetite")
		build := exec.Command("go", "build", "-o", binary.path, "./cmd/magnetite")
		build.Dir = moduleRoot(t)
		binary.out, binary.err = build.CombinedOutput()
	})
	if binary.err != nil {
		t.Fatalf("go build ./cmd/magnetite: %v\n%s", binary.err, binary.out)
	}
	return binary.path
}
