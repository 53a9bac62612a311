package charts_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/testing/testcharts"
	"github.com/magnetite-io/magnetite/internal/testing/testgolden"
)

// TestDocsListTheImagesEachPinPulls keeps docs/addons.md's image table
// generated from the real charts: every container and init container image
// each pinned release renders, without container_infra_prefix.
func TestDocsListTheImagesEachPinPulls(t *testing.T) {
	src := testcharts.Source(t, testcharts.Serve(t).URL)
	type row struct{ addon, charts string }
	var order []row
	imgs := map[row][]string{}
	for _, minor := range addons.Minors {
		for _, cni := range []string{"calico", "cilium"} {
			rels, _ := addons.Select(matrixCase{minor, cni, false, false}.cluster())
			for _, rel := range rels {
				var cs []string
				for _, c := range rel.Pin.Charts {
					cs = append(cs, "`"+c.Name+"` "+c.Version)
				}
				r := row{rel.Addon, strings.Join(cs, ", ")}
				if _, ok := imgs[r]; ok {
					continue
				}
				docs, err := src.Render(t.Context(), rel.WithKeystone(keystoneURL, nil))
				if err != nil {
					t.Fatal(err)
				}
				var list []string
				for _, d := range docs {
					u := &unstructured.Unstructured{}
					if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
						t.Fatal(err)
					}
					for _, img := range images(u) {
						if !slices.Contains(list, img) {
							list = append(list, img)
						}
					}
				}
				slices.Sort(list)
				imgs[r] = list
				order = append(order, r)
			}
		}
	}
	slices.SortStableFunc(order, func(a, b row) int { return strings.Compare(a.addon, b.addon) })
	var b strings.Builder
	b.WriteString("| addon | charts | images |\n|---|---|---|\n")
	for _, r := range order {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.addon, r.charts, "`"+strings.Join(imgs[r], "`<br>`")+"`")
	}
	testgolden.Section(t, "../../../docs/addons.md", "pinned-images", b.String(),
		"go test ./internal/addons/charts -run TestDocsListTheImagesEachPinPulls -update")
}
