// Package testcharts serves a real Helm chart repository on loopback for
// tests: index.yaml and packaged archives of small charts the project
// writes for its tests (testdata/charts, one per upstream chart name),
// packaged at every version Magnetite pins. No test can reach the upstream
// repositories.
package testcharts

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/addons/charts"
)

// Repo is a chart repository served on 127.0.0.1.
type Repo struct {
	// URL is the repository's root (index.yaml is below it).
	URL string
	// Dir holds index.yaml and the archives.
	Dir string

	mu       sync.Mutex
	requests []string
}

// Package writes every pinned chart except those in omit into dir, with an
// index.yaml listing their digests, as a chart repository at baseURL ("" for
// relative URLs).
func Package(t testing.TB, dir, baseURL string, omit ...addons.Chart) {
	t.Helper()
	src := testdataDir(t)
	for _, c := range addons.Charts() {
		if slices.Contains(omit, c) {
			continue
		}
		ch, err := loader.LoadDir(filepath.Join(src, c.Name))
		if err != nil {
			t.Fatalf("testcharts: load test chart %s: %v", c.Name, err)
		}
		ch.Metadata.Version = c.Version
		if _, err := chartutil.Save(ch, dir); err != nil {
			t.Fatalf("testcharts: package %s: %v", c, err)
		}
	}
	idx, err := repo.IndexDirectory(dir, baseURL)
	if err != nil {
		t.Fatalf("testcharts: index %s: %v", dir, err)
	}
	idx.SortEntries()
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Serve packages the pinned charts (but those in omit) and serves them
// until the test ends.
func Serve(t testing.TB, omit ...addons.Chart) *Repo {
	t.Helper()
	r := &Repo{Dir: t.TempDir()}
	files := http.FileServer(http.Dir(r.Dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.URL.Path)
		r.mu.Unlock()
		files.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	Package(t, r.Dir, "", omit...)
	return r
}

// Requests lists the paths asked for so far.
func (r *Repo) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

// Remove deletes a chart's archive and index entry from the repository.
func (r *Repo) Remove(t testing.TB, c addons.Chart) {
	t.Helper()
	if err := os.Remove(filepath.Join(r.Dir, c.Name+"-"+c.Version+".tgz")); err != nil {
		t.Fatal(err)
	}
	idx, err := repo.IndexDirectory(r.Dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(r.Dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func testdataDir(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testcharts: cannot locate testdata")
	}
	return filepath.Join(filepath.Dir(file), "testdata", "charts")
}

// Source parses s (a repository URL or a folder) as the conductor's chart
// source, with a 10 s timeout a request.
func Source(t testing.TB, s string) *charts.Source {
	t.Helper()
	src, err := charts.ParseSource(s, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return src
}
