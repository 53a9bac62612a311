// Package testcharts serves the real upstream charts of every pin as a Helm
// chart repository on loopback. They come from ../shared/charts beside the
// checkout (a chart repository: index.yaml and archives, SOURCES.txt naming
// each tag) when it is there, or $MAGNETITE_TEST_CHARTS; otherwise they are
// pulled from the upstream repositories once, as a user's machine would,
// into the user's cache. external-snapshotter's manifests, which no chart
// carries, are packaged as Magnetite packages them (charts.ManifestChart).
// A pin naming a chart version the repository does not hold fails the test.
package testcharts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// archive is one pinned chart, read once per process.
type archive struct {
	chart addons.Chart
	file  string // name-version.tgz
	data  []byte
	entry *repo.ChartVersion
}

var (
	loadOnce sync.Once
	loaded   []archive
	loadErr  error
	from     string
)

// Pinned returns every pinned chart's real archive, read once.
func pinned(t testing.TB) []archive {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = load() })
	if loadErr != nil {
		t.Fatalf("testcharts: %v", loadErr)
	}
	return loaded
}

// Where says where the real charts were read: the shared chart repository
// or the upstream mirror in the user's cache.
func Where(t testing.TB) string {
	pinned(t)
	return from
}

func load() ([]archive, error) {
	dir, manifests, err := chartsDir()
	if err != nil {
		return nil, err
	}
	from = dir
	var out []archive
	for _, c := range addons.Charts() {
		file := c.Name + "-" + c.Version + ".tgz"
		var data []byte
		if files := addons.ManifestFiles(c); files != nil && manifests != "" {
			read := map[string][]byte{}
			for _, f := range files {
				b, err := os.ReadFile(filepath.Join(manifests, c.Name+"-"+c.Version, f.Path))
				if err != nil {
					return nil, err
				}
				read[f.Path] = b
			}
			if data, err = charts.ManifestChart(c, read); err != nil {
				return nil, err
			}
		} else if data, err = os.ReadFile(filepath.Join(dir, file)); err != nil {
			return nil, fmt.Errorf("the pin %s %s (%s) names a chart version the chart repository %s does not hold: %w", c.Name, c.Version, c.Repo, dir, err)
		}
		ch, err := loader.LoadArchive(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if ch.Metadata.Name != c.Name || ch.Metadata.Version != c.Version {
			return nil, fmt.Errorf("%s in %s is chart %s %s", file, dir, ch.Metadata.Name, ch.Metadata.Version)
		}
		sum := sha256.Sum256(data)
		out = append(out, archive{chart: c, file: file, data: data,
			entry: &repo.ChartVersion{Metadata: ch.Metadata, URLs: []string{file}, Digest: hex.EncodeToString(sum[:]), Created: time.Unix(0, 0)}})
	}
	return out, nil
}

// chartsDir finds the real charts: $MAGNETITE_TEST_CHARTS, ../shared/charts
// beside the checkout (with ../shared/manifests), else an upstream mirror
// in the user's cache, filled on first use.
func chartsDir() (dir, manifests string, err error) {
	if d := os.Getenv("MAGNETITE_TEST_CHARTS"); d != "" {
		return d, filepath.Join(filepath.Dir(d), "manifests"), nil
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	shared := filepath.Join(root, "..", "shared")
	if _, err := os.Stat(filepath.Join(shared, "charts", "index.yaml")); err == nil {
		return filepath.Join(shared, "charts"), filepath.Join(shared, "manifests"), nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", "", err
	}
	dir = filepath.Join(cache, "magnetite", "test-charts")
	src, err := charts.ParseSource(charts.Upstream, 2*time.Minute)
	if err != nil {
		return "", "", err
	}
	var missing []addons.Chart
	for _, c := range addons.Charts() {
		if _, err := os.Stat(filepath.Join(dir, c.Name+"-"+c.Version+".tgz")); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if _, err := src.Mirror(ctx, dir, addons.Charts()); err != nil {
			return "", "", fmt.Errorf("no ../shared/charts, and the upstream repositories: %w", err)
		}
	}
	return dir, "", nil
}

// Package writes every pinned chart except those in omit into dir, with an
// index.yaml listing their digests, as a chart repository at baseURL ("" for
// relative URLs).
func Package(t testing.TB, dir, baseURL string, omit ...addons.Chart) {
	t.Helper()
	idx := repo.NewIndexFile()
	for _, a := range pinned(t) {
		if slices.Contains(omit, a.chart) {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, a.file), a.data, 0o644); err != nil {
			t.Fatal(err)
		}
		e := *a.entry
		if baseURL != "" {
			e.URLs = []string{baseURL + "/" + a.file}
		}
		idx.Entries[a.chart.Name] = append(idx.Entries[a.chart.Name], &e)
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
