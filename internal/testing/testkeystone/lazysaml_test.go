package testkeystone

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

// TestKeystoneLoadsPySAML2WhenItUsesIt: with lazySAML on its path,
// Keystone's interpreter imports Keystone's WSGI application without
// reading SAML's XML schemas, and Keystone's SAML identity provider
// still finds pysaml2's classes, loading them then.
func TestKeystoneLoadsPySAML2WhenItUsesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("imports Keystone twice, about 4 CPU-seconds; runs in the full suite")
	}
	testproc.Require(t, Python, wsgiPublic)
	py, err := writeLazySAML(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := &Keystone{pythonPath: py}
	const script = `import sys
import keystone.server.wsgi
print("at start-up:", "xmlschema" in sys.modules)
from keystone.federation import idp
print("signing context:", idp.sigver.SecurityContext.__name__)
print("once used:", "xmlschema" in sys.modules)
`
	cmd := exec.Command(Python, "-c", script)
	cmd.Env = k.pythonEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "at start-up: False\nsigning context: SecurityContext\nonce used: True\n"
	if string(out) != want {
		t.Errorf("Keystone's interpreter printed\n%s\nwant\n%s", out, want)
	}
	// Without it, the schemas are read at start-up: what the test above
	// shows is lazySAML's doing.
	out, err = exec.Command(Python, "-c", "import sys, keystone.server.wsgi; print(\"xmlschema\" in sys.modules)").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "True" {
		t.Errorf("without lazySAML, importing Keystone's WSGI application loaded xmlschema: %q (%v), want True", out, err)
	}
}
