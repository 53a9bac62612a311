package doctor

import (
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/testing/testcharts"
)

// TestAddonChartsFailsOnAMissingPinnedChart: doctor passes on a source
// holding every pinned chart, fails naming the chart a source lacks, fails
// on a source that does not answer, and passes on the directory `magnetite
// addons mirror` filled.
func TestAddonChartsFailsOnAMissingPinnedChart(t *testing.T) {
	full := testcharts.Serve(t)
	if r := AddonCharts(t.Context(), testcharts.Source(t, full.URL)); r.Status != Pass || !strings.Contains(r.Detail, "resolve at "+full.URL) {
		t.Fatalf("complete source: %+v", r)
	}
	cinder, _ := addons.Pinned(addons.CinderCSI, "1.34")
	partial := testcharts.Serve(t, cinder.Charts...)
	r := AddonCharts(t.Context(), testcharts.Source(t, partial.URL))
	if r.Status != Fail || !strings.Contains(r.Detail, "lacks 1 of") || !strings.Contains(r.Detail, "openstack-cinder-csi") ||
		!strings.Contains(r.Detail, "2.34.3") || !strings.Contains(r.Fix, "magnetite addons mirror") {
		t.Fatalf("source without cinder 2.34.3: %+v", r)
	}
	if r := AddonCharts(t.Context(), testcharts.Source(t, "http://127.0.0.1:1")); r.Status != Fail || !strings.Contains(r.Detail, "does not answer") {
		t.Fatalf("source that does not answer: %+v", r)
	}
	dir := t.TempDir()
	if r := AddonCharts(t.Context(), testcharts.Source(t, dir)); r.Status != Fail || !strings.Contains(r.Detail, "no index.yaml") {
		t.Fatalf("empty directory: %+v", r)
	}
	if _, err := testcharts.Source(t, full.URL).Mirror(t.Context(), dir, addons.Charts()); err != nil {
		t.Fatal(err)
	}
	if r := AddonCharts(t.Context(), testcharts.Source(t, dir)); r.Status != Pass {
		t.Fatalf("mirrored directory: %+v", r)
	}
}
