package testkeystone

import (
	"os"
	"path/filepath"
)

// lazySAML is a sitecustomize module for Keystone's interpreter that loads
// pysaml2's modules (saml2.*) when Keystone first uses them instead of when
// it imports them. Keystone imports them at start-up for its SAML identity
// provider (keystone.federation.idp, through keystone.api.auth), and
// saml2.xml.schema then reads and compiles SAML's XML schemas: about 0.75
// of the 2.2 CPU-seconds importing Keystone's WSGI application took on
// the test machine, paid by every Keystone a test starts. No test here
// federates through SAML; one that did would load the modules on first
// use, unchanged. The interpreter's own sitecustomize (Debian's installs
// apport's hook when apport is there) is run after it, as it would be
// without this one.
const lazySAML = `import importlib.machinery
import importlib.util
import os
import sys


class LazySAML:
    """Finds saml2's submodules as the path finder does, loading each on first use."""

    def find_spec(self, name, path, target=None):
        if not name.startswith("saml2."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


sys.meta_path.insert(0, LazySAML())

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != here])
if spec is not None and spec.loader is not None:
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
`

// writeLazySAML writes lazySAML into a folder of dir and returns the
// folder, for the interpreter's PYTHONPATH.
func writeLazySAML(dir string) (string, error) {
	py := filepath.Join(dir, "python")
	if err := os.MkdirAll(py, 0o700); err != nil {
		return "", err
	}
	return py, os.WriteFile(filepath.Join(py, "sitecustomize.py"), []byte(lazySAML), 0o600)
}
