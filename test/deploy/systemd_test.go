package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

// TestSystemdUnitVerifies checks deploy/systemd/magnetite.service with
// systemd's own parser (systemd-analyze verify), its ExecStart pointed at
// a freshly built binary: an unknown directive, a value systemd cannot
// parse or a command that is not there fails the test.
func TestSystemdUnitVerifies(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds magnetite; runs in the full suite")
	}
	analyze := testproc.Require(t, "systemd-analyze")[0]
	unit, err := os.ReadFile(filepath.Join(moduleRoot(t), "deploy/systemd/magnetite.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "\nExecStart=/usr/local/bin/magnetite serve\n") {
		t.Fatal("the unit does not start /usr/local/bin/magnetite serve")
	}
	bin := testmagnetite.Build(t)
	path := filepath.Join(t.TempDir(), "magnetite.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/magnetite", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// verify reports what it ignores (unknown directives, unparsable
	// values) without failing; the host's own units may add lines that
	// are not about ours.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "magnetite.service") {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
}
