package charts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/fault"
)

// Sentinel errors.
var (
	// ErrNotFound: the source answers but does not hold the chart at the
	// pinned version. Retrying does not help; mirroring the chart does.
	ErrNotFound = errors.New("charts: chart not found")
	// ErrDigest: the chart's archive is not what the index says.
	ErrDigest = errors.New("charts: digest mismatch")
	// ErrRender: the chart does not render with the cluster's values.
	ErrRender = errors.New("charts: render")
)

// Upstream is the [addons] source value that fetches every chart from its
// project's own repository.
const Upstream = "upstream"

// Kind is the type of a source.
type Kind string

const (
	KindUpstream Kind = "upstream"
	KindHTTP     Kind = "http"
	KindOCI      Kind = "oci"
	KindDir      Kind = "dir"
)

// Source is where charts come from.
type Source struct {
	Kind Kind
	// Location is the mirror's URL, the OCI registry reference
	// (oci://host/path) or the directory.
	Location string
	// PlainHTTP talks to an OCI registry without TLS.
	PlainHTTP bool

	client *http.Client

	mu      sync.Mutex
	indexes map[string]cachedIndex
	pulled  map[addons.Chart]*Pulled
}

type cachedIndex struct {
	index *repo.IndexFile
	at    time.Time
}

// indexTTL is how long a repository's index.yaml is trusted.
const indexTTL = 5 * time.Minute

// Pulled is a chart archive that matched its digest.
type Pulled struct {
	Chart   addons.Chart
	Archive []byte
	// Digest is the archive's sha256, hex.
	Digest string
	// From is where it was read.
	From string
}

// ParseSource reads the [addons] source option: "upstream", an http(s)://
// chart repository, an oci:// registry path, or an absolute directory.
func ParseSource(s string, timeout time.Duration) (*Source, error) {
	s = strings.TrimSpace(s)
	src := &Source{client: &http.Client{Timeout: timeout}, indexes: map[string]cachedIndex{}, pulled: map[addons.Chart]*Pulled{}}
	switch {
	case s == "" || s == Upstream:
		src.Kind = KindUpstream
	case strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://"):
		if _, err := url.Parse(s); err != nil {
			return nil, fmt.Errorf("charts: [addons] source %q: %w", s, err)
		}
		src.Kind, src.Location = KindHTTP, strings.TrimSuffix(s, "/")
	case strings.HasPrefix(s, "oci://"):
		src.Kind, src.Location = KindOCI, strings.TrimSuffix(s, "/")
	case filepath.IsAbs(s):
		src.Kind, src.Location = KindDir, filepath.Clean(s)
	default:
		return nil, fmt.Errorf("charts: [addons] source %q is not upstream, an http(s):// chart repository, an oci:// registry or an absolute directory", s)
	}
	return src, nil
}

func (s *Source) String() string {
	if s.Kind == KindUpstream {
		return Upstream
	}
	return s.Location
}

// Where says where a chart is read from.
func (s *Source) Where(c addons.Chart) string {
	switch s.Kind {
	case KindUpstream:
		return strings.TrimSuffix(c.Repo, "/")
	case KindOCI:
		return s.Location + "/" + c.Name + ":" + c.Version
	}
	return s.Location
}

// Pull returns the chart's archive, checked against its digest; charts are
// pulled once per process.
func (s *Source) Pull(ctx context.Context, c addons.Chart) (*Pulled, error) {
	s.mu.Lock()
	p, ok := s.pulled[c]
	s.mu.Unlock()
	if ok {
		return p, nil
	}
	var err error
	switch s.Kind {
	case KindOCI:
		p, err = s.pullOCI(ctx, c)
	case KindDir:
		p, err = s.pullDir(c)
	case KindUpstream:
		if addons.ManifestFiles(c) != nil {
			p, err = s.pullManifests(ctx, c)
			break
		}
		p, err = s.pullRepo(ctx, s.Where(c), c)
	default:
		p, err = s.pullRepo(ctx, s.Where(c), c)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.pulled[c] = p
	s.mu.Unlock()
	return p, nil
}

// pullRepo reads the chart from an HTTP chart repository: its index.yaml
// names the archive's URL and digest.
func (s *Source) pullRepo(ctx context.Context, repoURL string, c addons.Chart) (*Pulled, error) {
	idx, err := s.index(ctx, repoURL)
	if err != nil {
		return nil, err
	}
	cv, err := entry(idx, repoURL, c)
	if err != nil {
		return nil, err
	}
	u, err := repo.ResolveReferenceURL(repoURL+"/", cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("charts: %s in %s: bad URL %q: %w", c, repoURL, cv.URLs[0], err)
	}
	b, err := s.get(ctx, u)
	if err != nil {
		return nil, err
	}
	return verified(c, b, cv.Digest, u)
}

func entry(idx *repo.IndexFile, where string, c addons.Chart) (*repo.ChartVersion, error) {
	for _, cv := range idx.Entries[c.Name] {
		if cv.Version == c.Version && len(cv.URLs) > 0 {
			return cv, nil
		}
	}
	var have []string
	for _, cv := range idx.Entries[c.Name] {
		have = append(have, cv.Version)
	}
	if len(have) == 0 {
		return nil, fault.New(ErrNotFound, "%s holds no chart %s (pinned version %s)", where, c.Name, c.Version)
	}
	if len(have) > 8 {
		have = append(have[:8], "...")
	}
	return nil, fault.New(ErrNotFound, "%s holds %s only at %s, not at the pinned version %s", where, c.Name, strings.Join(have, ", "), c.Version)
}

func verified(c addons.Chart, b []byte, want, from string) (*Pulled, error) {
	sum := sha256.Sum256(b)
	got := hex.EncodeToString(sum[:])
	want = strings.TrimPrefix(want, "sha256:")
	if want != "" && !strings.EqualFold(want, got) {
		return nil, fault.New(ErrDigest, "%s from %s has sha256 %s, its index says %s", c, from, got, want)
	}
	return &Pulled{Chart: c, Archive: b, Digest: got, From: from}, nil
}

// index reads a repository's index.yaml (cached for indexTTL).
func (s *Source) index(ctx context.Context, repoURL string) (*repo.IndexFile, error) {
	s.mu.Lock()
	ci, ok := s.indexes[repoURL]
	s.mu.Unlock()
	if ok && time.Since(ci.at) < indexTTL {
		return ci.index, nil
	}
	b, err := s.get(ctx, repoURL+"/index.yaml")
	if errors.Is(err, ErrNotFound) {
		return nil, fault.New(ErrNotFound, "%s is no chart repository (no index.yaml)", repoURL)
	}
	if err != nil {
		return nil, err
	}
	idx, err := parseIndex(b, repoURL)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.indexes[repoURL] = cachedIndex{index: idx, at: time.Now()}
	s.mu.Unlock()
	return idx, nil
}

func parseIndex(b []byte, where string) (*repo.IndexFile, error) {
	idx := &repo.IndexFile{}
	if err := yaml.Unmarshal(b, idx); err != nil {
		return nil, fmt.Errorf("charts: the index.yaml of %s cannot be read: %w", where, err)
	}
	if idx.APIVersion == "" {
		return nil, fmt.Errorf("charts: the index.yaml of %s has no apiVersion: not a chart repository index", where)
	}
	return idx, nil
}

func (s *Source) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("charts: %w", err)
	}
	req.Header.Set("User-Agent", "magnetite")
	res, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("charts: %s does not answer: %w", u, err)
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode == http.StatusNotFound:
		return nil, fault.New(ErrNotFound, "%s answers 404", u)
	case res.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("charts: %s answers %s", u, res.Status)
	}
	return io.ReadAll(io.LimitReader(res.Body, maxArchive))
}

// maxArchive bounds what is read for one index or chart.
const maxArchive = 64 << 20

// pullDir reads a chart from a directory laid out as a chart repository
// (index.yaml beside the archives), as `magnetite addons mirror` writes it.
func (s *Source) pullDir(c addons.Chart) (*Pulled, error) {
	b, err := os.ReadFile(filepath.Join(s.Location, "index.yaml"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fault.New(ErrNotFound, "%s has no index.yaml; fill it with `magnetite addons mirror %s`", s.Location, s.Location)
	}
	if err != nil {
		return nil, fmt.Errorf("charts: %w", err)
	}
	idx, err := parseIndex(b, s.Location)
	if err != nil {
		return nil, err
	}
	cv, err := entry(idx, s.Location, c)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(cv.URLs[0])
	path := filepath.Join(s.Location, name)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fault.New(ErrNotFound, "%s lists %s but %s is missing", filepath.Join(s.Location, "index.yaml"), c, path)
	}
	if err != nil {
		return nil, fmt.Errorf("charts: %w", err)
	}
	return verified(c, data, cv.Digest, path)
}

// pullOCI pulls oci://<location>/<name>:<version>; the registry checks the
// layer's digest.
func (s *Source) pullOCI(ctx context.Context, c addons.Chart) (*Pulled, error) {
	opts := []registry.ClientOption{registry.ClientOptHTTPClient(s.client), registry.ClientOptWriter(io.Discard)}
	if s.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	rc, err := registry.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("charts: %w", err)
	}
	ref := strings.TrimPrefix(s.Where(c), "oci://")
	type result struct {
		r   *registry.PullResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := rc.Pull(ref, registry.PullOptWithChart(true))
		done <- result{r, err}
	}()
	var res result
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res = <-done:
	}
	if res.err != nil {
		msg := res.err.Error()
		if strings.Contains(msg, "not found") || strings.Contains(msg, "404") {
			return nil, fault.New(ErrNotFound, "%s: %v", s.Where(c), res.err)
		}
		return nil, fmt.Errorf("charts: pull %s: %w", s.Where(c), res.err)
	}
	if res.r.Chart == nil || len(res.r.Chart.Data) == 0 {
		return nil, fault.New(ErrNotFound, "%s holds no chart layer", s.Where(c))
	}
	return verified(c, res.r.Chart.Data, res.r.Chart.Digest, s.Where(c))
}

// Check resolves a chart without downloading it where the source allows:
// the index (or the registry's manifest) must list it.
func (s *Source) Check(ctx context.Context, c addons.Chart) error {
	if s.Kind == KindOCI || s.Kind == KindDir || (s.Kind == KindUpstream && addons.ManifestFiles(c) != nil) {
		_, err := s.Pull(ctx, c)
		return err
	}
	idx, err := s.index(ctx, s.Where(c))
	if err != nil {
		return err
	}
	_, err = entry(idx, s.Where(c), c)
	return err
}

// readArchive is bytes.NewReader; split out for the renderer.
func readArchive(b []byte) io.Reader { return bytes.NewReader(b) }
