package conductor

import (
	"testing"

	"github.com/magnetite-io/magnetite/internal/model"
)

// TestAddonsJoinHealth: the ClusterResourceSet's ResourcesApplied condition
// becomes health_status_reason's addons entry; a failure quotes Cluster API
// and makes an otherwise healthy cluster unhealthy.
func TestAddonsJoinHealth(t *testing.T) {
	crs := func(conds ...map[string]any) map[string]any {
		cs := make([]any, len(conds))
		for i, c := range conds {
			cs[i] = c
		}
		return map[string]any{"apiVersion": "addons.cluster.x-k8s.io/v1beta2", "kind": "ClusterResourceSet",
			"metadata": map[string]any{"name": "demo-1234-addons"}, "status": map[string]any{"conditions": cs}}
	}
	for _, tc := range []struct {
		name   string
		crs    map[string]any
		want   string
		health model.Health
	}{
		{"no addons", nil, "", model.Healthy},
		{"applied", crs(cond("ResourcesApplied", "True", "Applied", "")), "applied", model.Healthy},
		{"not yet reported", crs(), "pending", model.Healthy},
		{"failed", crs(cond("ResourcesApplied", "False", "NotApplied", `failed to create object apps/v1, Kind=DaemonSet kube-system/cilium: admission webhook denied`)),
			"failed: ResourcesApplied (NotApplied): failed to create object apps/v1, Kind=DaemonSet kube-system/cilium: admission webhook denied", model.Unhealthy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := availableCluster("cluster.x-k8s.io/v1beta2")
			obs.Addons = tc.crs
			s := Summarize(obs, identityGroup)
			if got := s.HealthReasons["addons"]; got != tc.want {
				t.Errorf("addons = %q, want %q", got, tc.want)
			}
			if s.Health != tc.health {
				t.Errorf("health = %s, want %s (%v)", s.Health, tc.health, s.HealthReasons)
			}
		})
	}
	t.Run("before the control plane answers", func(t *testing.T) {
		obs := Observed{Cluster: clusterObj("cluster.x-k8s.io/v1beta2", 1, 1), Addons: crs(cond("ResourcesApplied", "True", "Applied", ""))}
		if got := Summarize(obs, identityGroup).HealthReasons["addons"]; got != "waiting for the control plane" {
			t.Errorf("addons = %q", got)
		}
	})
}
