package testenv

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// DryRunFiles server-side applies, with dryRun=All, every object of every
// file that glob matches (at least atLeast files, or the test fails) and
// the objects derive computes from each file's objects (for example the
// templates Cluster API derives from a ClusterClass), one subtest a file.
// It returns the kinds it dry-ran, so a test can check that what it meant
// to cover was there.
func DryRunFiles(ctx context.Context, t *testing.T, dc dynamic.Interface, mapper meta.RESTMapper, glob string, atLeast int,
	derive func([]*unstructured.Unstructured) ([]*unstructured.Unstructured, error)) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) < atLeast {
		t.Fatalf("%s: %d files, want at least %d: %v", glob, len(files), atLeast, err)
	}
	total := 0
	kinds := map[string]bool{}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			objs, derived := ReadDerived(t, f, derive)
			for _, o := range append(objs, derived...) {
				if err := DryRunApply(ctx, dc, mapper, o); err != nil {
					t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
				}
				kinds[o.GetKind()] = true
				total++
			}
		})
	}
	t.Logf("%d objects from %d files accepted by the server-side dry run", total, len(files))
	return kinds
}

// ReadDerived reads the objects of the file at path (ReadObjects) and the
// objects derive computes from them, failing the test on an error.
func ReadDerived(t testing.TB, path string, derive func([]*unstructured.Unstructured) ([]*unstructured.Unstructured, error)) (objs, derived []*unstructured.Unstructured) {
	t.Helper()
	objs, err := ReadObjects(path)
	if err != nil {
		t.Fatal(err)
	}
	derived, err = derive(objs)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return objs, derived
}
