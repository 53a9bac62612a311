package fault

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// errorSiteRules are the forms an error site of Magnetite must not take,
// checked over every Go file of the repository.
var errorSiteRules = []struct {
	pattern *regexp.Regexp
	tests   bool // also in _test.go files
	why     string
}{
	// A sentinel wrapped into the message puts the layer's prefix in
	// front of what the user reads; fault.New keeps the sentinel for
	// errors.Is and the text apart.
	{regexp.MustCompile(`fmt\.Errorf\("%w[: ]`), true, `raise the sentinel with fault.New(kind, "text") (fault.Wrap when there is a cause)`},
	// Internal classes never reach a status_reason or an assertion on one.
	{regexp.MustCompile(`"(permanent|transient)` + `: `), true, "status_reason shows the cause, never the failure's class"},
}

// TestErrorSitesRaiseFaults greps the repository's Go files for error sites
// in the old forms.
func TestErrorSitesRaiseFaults(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("%s is not the repository root: %v", root, err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		rel, _ := filepath.Rel(root, path)
		isTest := strings.HasSuffix(path, "_test.go")
		for i, line := range strings.Split(string(raw), "\n") {
			for _, r := range errorSiteRules {
				if (r.tests || !isTest) && r.pattern.MatchString(line) {
					t.Errorf("%s:%d: %s: %s", rel, i+1, r.why, strings.TrimSpace(line))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files checked under %s", checked, root)
	}
}
