package charts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/magnetite-io/magnetite/internal/addons"
)

// Mirrored is one chart written by Mirror.
type Mirrored struct {
	Chart addons.Chart
	File  string
	// Digest is the archive's sha256, hex, as index.yaml lists it.
	Digest string
	From   string
}

// Mirror downloads every chart into dir and writes dir/index.yaml with
// each archive's digest: dir is then a chart repository that `[addons]
// source = DIR` reads in an air-gapped cloud, and that any web server can
// serve as an HTTP mirror. Nothing is written unless every chart was
// found.
func (s *Source) Mirror(ctx context.Context, dir string, charts []addons.Chart) ([]Mirrored, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("charts: %w", err)
	}
	type got struct {
		p    *Pulled
		file string
	}
	var all []got
	for _, c := range charts {
		p, err := s.Pull(ctx, c)
		if err != nil {
			return nil, err
		}
		all = append(all, got{p, c.Name + "-" + c.Version + ".tgz"})
	}
	idx := repo.NewIndexFile()
	var out []Mirrored
	for _, g := range all {
		ch, err := loader.LoadArchive(readArchive(g.p.Archive))
		if err != nil {
			return nil, fmt.Errorf("charts: %s from %s cannot be loaded: %w", g.p.Chart, g.p.From, err)
		}
		if ch.Metadata.Name != g.p.Chart.Name || ch.Metadata.Version != g.p.Chart.Version {
			return nil, fmt.Errorf("charts: %s from %s is chart %s %s inside", g.p.Chart, g.p.From, ch.Metadata.Name, ch.Metadata.Version)
		}
		if err := writeFile(filepath.Join(dir, g.file), g.p.Archive); err != nil {
			return nil, err
		}
		if err := idx.MustAdd(ch.Metadata, g.file, "", g.p.Digest); err != nil {
			return nil, fmt.Errorf("charts: index %s: %w", g.p.Chart, err)
		}
		out = append(out, Mirrored{Chart: g.p.Chart, File: g.file, Digest: g.p.Digest, From: g.p.From})
	}
	idx.SortEntries()
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml.tmp"), 0o644); err != nil {
		return nil, fmt.Errorf("charts: %w", err)
	}
	if err := os.Rename(filepath.Join(dir, "index.yaml.tmp"), filepath.Join(dir, "index.yaml")); err != nil {
		return nil, fmt.Errorf("charts: %w", err)
	}
	return out, nil
}

func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	return nil
}
