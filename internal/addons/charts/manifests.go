package charts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/fault"
)

// upstreamImage is the one image of external-snapshotter's manifests; the
// chart made of them takes its repository as a value, so that
// container_infra_prefix applies as it does to real charts.
const upstreamImage = "registry.k8s.io/sig-storage/snapshot-controller"

// ManifestChart packages a project's manifests (addons.ManifestFiles) as a
// chart: each file, checked against its pinned sha256, becomes a template
// in order, its image repository a value. files maps each path to its
// content. The archive is the same for the same files, so its digest is
// stable across mirrors.
func ManifestChart(c addons.Chart, files map[string][]byte) ([]byte, error) {
	want := addons.ManifestFiles(c)
	if want == nil {
		return nil, fmt.Errorf("charts: %s is no manifest set", c)
	}
	entries := []struct {
		name string
		data []byte
	}{
		{"Chart.yaml", fmt.Appendf(nil, "apiVersion: v2\nname: %s\nversion: %s\nappVersion: %s\ndescription: %s's manifests, packaged by Magnetite\n", c.Name, c.Version, c.Version, c.Name)},
		{"values.yaml", []byte("image:\n  repository: " + upstreamImage + "\n")},
	}
	for i, f := range want {
		b, ok := files[f.Path]
		if !ok {
			return nil, fault.New(ErrNotFound, "%s lacks %s", c, f.Path)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
			return nil, fault.New(ErrDigest, "%s of %s has sha256 %s, Magnetite pins %s", f.Path, c, got, f.SHA256)
		}
		if bytes.Contains(b, []byte("{{")) {
			return nil, fmt.Errorf("charts: %s of %s holds template braces", f.Path, c)
		}
		text := strings.ReplaceAll(string(b), "image: "+upstreamImage+":", "image: {{ .Values.image.repository }}:")
		entries = append(entries, struct {
			name string
			data []byte
		}{fmt.Sprintf("templates/%02d-%s", i, path.Base(f.Path)), []byte(text)})
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Name: c.Name + "/" + e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// pullManifests reads a manifest set from its project's tag and packages
// it.
func (s *Source) pullManifests(ctx context.Context, c addons.Chart) (*Pulled, error) {
	base := strings.TrimSuffix(c.Repo, "/") + "/" + c.Version + "/"
	files := map[string][]byte{}
	for _, f := range addons.ManifestFiles(c) {
		b, err := s.get(ctx, base+f.Path)
		if err != nil {
			return nil, err
		}
		files[f.Path] = b
	}
	archive, err := ManifestChart(c, files)
	if err != nil {
		return nil, err
	}
	return verified(c, archive, "", base)
}
