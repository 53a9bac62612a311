package capi_test

import (
	"testing"

	"github.com/magnetite-io/magnetite/internal/model"
)

// BenchmarkRenderMixedCluster renders a mixed cluster of three node groups:
// a VM control plane, bare-metal workers and VM workers.
func BenchmarkRenderMixedCluster(b *testing.B) {
	r := caseRequest(b, "mixed")
	r.NodeGroups = append(r.NodeGroups, &model.NodeGroup{Name: "vm-workers", Role: model.RoleWorker, NodeCount: 3,
		FlavorID: ptr("m1.xlarge"), ImageID: r.NodeGroups[0].ImageID, Labels: r.Cluster.Labels})
	if len(r.NodeGroups) != 3 {
		b.Fatalf("want 3 node groups, have %d", len(r.NodeGroups))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := osDriver.Render(r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "renders/s")
}
