package charts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/addons/charts"
	"github.com/magnetite-io/magnetite/internal/testing/testcharts"
)

// unknownKeys lists the keys of a release's values that none of its
// pinned charts declares (in values.yaml, or in values.schema.json's
// properties) and whose removal leaves the rendered output unchanged: a
// misspelt or obsolete key. Below a key whose chart default is an empty
// map or a list (nodeSelector, tolerations) the values are the user's.
func unknownKeys(ctx context.Context, src *charts.Source, rel addons.Release) ([]string, error) {
	var declared []map[string]any
	for _, c := range rel.Pin.Charts {
		p, err := src.Pull(ctx, c)
		if err != nil {
			return nil, err
		}
		ch, err := loader.LoadArchive(bytes.NewReader(p.Archive))
		if err != nil {
			return nil, err
		}
		declared = append(declared, ch.Values, schemaKeys(ch.Schema))
	}
	var undeclared [][]string
	var walk func(path []string, mine map[string]any, theirs []map[string]any)
	walk = func(path []string, mine map[string]any, theirs []map[string]any) {
		for _, k := range slices.Sorted(mapKeys(mine)) {
			p := append(slices.Clone(path), k)
			var sub []map[string]any
			found, freeForm := false, false
			for _, t := range theirs {
				tv, ok := t[k]
				if !ok {
					continue
				}
				found = true
				if m, ok := tv.(map[string]any); ok && len(m) > 0 {
					sub = append(sub, m)
				} else {
					freeForm = true
				}
			}
			switch mv, isMap := mine[k].(map[string]any); {
			case !found && isMap && len(mv) > 0:
				// Each key below must then change the output itself.
				walk(p, mv, nil)
			case !found:
				undeclared = append(undeclared, p)
			case isMap && !freeForm:
				walk(p, mv, sub)
			}
		}
	}
	walk(nil, rel.Values, declared)
	if len(undeclared) == 0 {
		return nil, nil
	}
	// Charts that generate certificates (Cilium) differ between two
	// renders of the same values; those documents are left out.
	base, baseErr := src.Render(ctx, rel)
	again, _ := src.Render(ctx, rel)
	stable := func(docs []string) []string {
		var out []string
		for i, d := range docs {
			if i >= len(base) || i >= len(again) || base[i] == again[i] {
				out = append(out, d)
			}
		}
		return out
	}
	var out []string
	for _, p := range undeclared {
		without := rel
		without.Values = withoutKey(rel.Values, p)
		docs, err := src.Render(ctx, without)
		if (err == nil) == (baseErr == nil) && len(docs) == len(base) && reflect.DeepEqual(stable(docs), stable(base)) {
			out = append(out, strings.Join(p, "."))
		}
	}
	return out, nil
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// schemaKeys turns a values.schema.json's properties into a tree of keys.
func schemaKeys(schema []byte) map[string]any {
	if len(schema) == 0 {
		return nil
	}
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil
	}
	var conv func(map[string]any) map[string]any
	conv = func(s map[string]any) map[string]any {
		props, _ := s["properties"].(map[string]any)
		out := map[string]any{}
		for k, v := range props {
			vm, _ := v.(map[string]any)
			out[k] = conv(vm)
		}
		return out
	}
	return conv(s)
}

// withoutKey copies values without the key at path.
func withoutKey(v map[string]any, path []string) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		if k != path[0] {
			out[k] = x
			continue
		}
		if len(path) > 1 {
			if m, ok := x.(map[string]any); ok {
				out[k] = withoutKey(m, path[1:])
			}
		}
	}
	return out
}

// TestEveryValueIsAKeyOfTheChart checks every key Magnetite sets, for every
// addon at every supported minor, against the pinned chart itself: it is
// declared by the chart's values.yaml or schema, or it changes what the
// chart renders. A misspelt key fails.
func TestEveryValueIsAKeyOfTheChart(t *testing.T) {
	src := testcharts.Source(t, testcharts.Serve(t).URL)
	seen := map[string]bool{}
	sets := matrixSets(t)
	for _, m := range matrix() {
		if !m.prefix || !m.ca {
			continue
		}
		for _, rel := range sets[m] {
			key := fmt.Sprint(rel.Pin.Charts, rel.Addon)
			if seen[key] {
				continue
			}
			seen[key] = true
			bad, err := unknownKeys(t.Context(), src, rel)
			if err != nil {
				t.Fatalf("%s: %v", rel.Addon, err)
			}
			sort.Strings(bad)
			if len(bad) > 0 {
				t.Errorf("%s %v (Kubernetes %s): Magnetite sets %v, which the chart neither declares nor uses", rel.Addon, rel.Pin.Charts, m.minor, bad)
			}
		}
	}
	if len(seen) < 25 {
		t.Errorf("only %d pinned releases checked", len(seen))
	}

	t.Run("a misspelt key fails", func(t *testing.T) {
		rels, _ := addons.Select(cluster())
		for _, rel := range rels {
			if rel.Addon != addons.CinderCSI {
				continue
			}
			vals := map[string]any{"clusterId": "demo"}
			for k, v := range rel.Values {
				vals[k] = v
			}
			rel.Values = vals
			if bad, err := unknownKeys(t.Context(), src, rel); err != nil || !slices.Equal(bad, []string{"clusterId"}) {
				t.Errorf("clusterId (for clusterID) on Cinder CSI: %v %v", bad, err)
			}
			return
		}
		t.Fatal("no Cinder CSI release")
	})
}
