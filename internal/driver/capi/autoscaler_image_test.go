package capi

import (
	"testing"

	"github.com/magnetite-io/magnetite/internal/labels"
)

// A Kubernetes minor newer than the release table (a cluster whose addons
// all come from the operator's own ConfigMaps can run one) gets the first
// autoscaler release of that minor. A full render of such a cluster stops
// at its addons, which are pinned per minor, so the plan is built here.
func TestAutoscalerImageOfAMinorWithoutAKnownRelease(t *testing.T) {
	p := &Plan{KubeVersion: "v1.40.1", Labels: labels.Effective(nil, nil, labels.ScopeCluster)}
	if got, want := autoscalerImage(p), "registry.k8s.io/autoscaling/cluster-autoscaler:v1.40.0"; got != want {
		t.Errorf("image %s, want %s", got, want)
	}
}
