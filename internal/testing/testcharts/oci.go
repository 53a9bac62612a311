package testcharts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/magnetite-io/magnetite/internal/addons"
)

// Media types of Helm charts in OCI registries (Helm's pkg/registry).
const (
	ociManifestType = "application/vnd.oci.image.manifest.v1+json"
	helmConfigType  = "application/vnd.cncf.helm.config.v1+json"
	helmLayerType   = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// Registry is a read-only OCI registry on 127.0.0.1 serving the pinned
// charts as Helm pushes them: repository charts/<name>, tag <version>, a
// manifest with the chart's metadata as config and its archive as the one
// layer. It answers the distribution API's GET and HEAD calls with the
// registry's error codes (NAME_UNKNOWN, MANIFEST_UNKNOWN, BLOB_UNKNOWN).
type Registry struct {
	// URL is the [addons] source: oci://127.0.0.1:PORT/charts.
	URL       string
	manifests map[string][]byte // "name:tag" -> manifest
	blobs     map[string][]byte // digest -> content
}

// ServeOCI packages the pinned charts (but those in omit) and serves them
// from an OCI registry until the test ends.
func ServeOCI(t testing.TB, omit ...addons.Chart) *Registry {
	t.Helper()
	dir := t.TempDir()
	Package(t, dir, "", omit...)
	r := &Registry{manifests: map[string][]byte{}, blobs: map[string][]byte{}}
	files, _ := filepath.Glob(filepath.Join(dir, "*.tgz"))
	for _, f := range files {
		archive, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := loader.LoadArchive(bytes.NewReader(archive))
		if err != nil {
			t.Fatal(err)
		}
		config, err := json.Marshal(ch.Metadata)
		if err != nil {
			t.Fatal(err)
		}
		manifest, err := json.Marshal(map[string]any{
			"schemaVersion": 2, "mediaType": ociManifestType,
			"config": r.blob(helmConfigType, config),
			"layers": []any{r.blob(helmLayerType, archive)},
		})
		if err != nil {
			t.Fatal(err)
		}
		r.manifests[ch.Metadata.Name+":"+ch.Metadata.Version] = manifest
	}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/charts"
	return r
}

func (r *Registry) blob(mediaType string, b []byte) map[string]any {
	sum := sha256.Sum256(b)
	d := "sha256:" + hex.EncodeToString(sum[:])
	r.blobs[d] = b
	return map[string]any{"mediaType": mediaType, "digest": d, "size": len(b)}
}

var ociPath = regexp.MustCompile(`^/v2/charts/([a-z0-9._-]+)/(manifests|blobs)/([A-Za-z0-9_.:+-]+)$`)

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		ociError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "this registry is read-only")
		return
	}
	if req.URL.Path == "/v2/" {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		_, _ = w.Write([]byte("{}"))
		return
	}
	m := ociPath.FindStringSubmatch(req.URL.Path)
	if m == nil {
		ociError(w, http.StatusNotFound, "NAME_UNKNOWN", "repository name not known to registry")
		return
	}
	name, kind, ref := m[1], m[2], m[3]
	var body []byte
	var ok bool
	contentType := "application/octet-stream"
	switch kind {
	case "manifests":
		if body, ok = r.manifests[name+":"+ref]; !ok {
			for key, mf := range r.manifests { // by digest
				if strings.HasPrefix(key, name+":") && digestOf(mf) == ref {
					body, ok = mf, true
				}
			}
		}
		if !ok {
			known := false
			for key := range r.manifests {
				known = known || strings.HasPrefix(key, name+":")
			}
			if !known {
				ociError(w, http.StatusNotFound, "NAME_UNKNOWN", "repository name not known to registry")
				return
			}
			ociError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
			return
		}
		contentType = ociManifestType
	case "blobs":
		if body, ok = r.blobs[ref]; !ok {
			ociError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown to registry")
			return
		}
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Docker-Content-Digest", digestOf(body))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if req.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func ociError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []any{map[string]any{"code": code, "message": msg}}})
}
