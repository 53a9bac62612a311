package conductor

import (
	"testing"
)

// TestInfrastructureVersionIsTheClustersOwnProviders: with several
// infrastructure providers installed at different versions, a cluster is
// rendered at the version its own provider is served at, whichever
// provider discovery happened to list last.
func TestInfrastructureVersionIsTheClustersOwnProviders(t *testing.T) {
	served := map[string]string{
		"Cluster":                  "cluster.x-k8s.io/v1beta2",
		"OpenStackClusterTemplate": "infrastructure.cluster.x-k8s.io/v1beta2",
		"DevClusterTemplate":       "infrastructure.cluster.x-k8s.io/v1beta1",
		"Metal3ClusterTemplate":    "infrastructure.cluster.x-k8s.io/v1beta1",
	}
	for kind, want := range map[string]string{"OpenStackClusterTemplate": "v1beta2", "DevClusterTemplate": "v1beta1", "Metal3ClusterTemplate": "v1beta1"} {
		if got := renderVersions(served, kind).Infrastructure; got != want {
			t.Errorf("a cluster on %s is rendered at infrastructure %s, want %s", kind, got, want)
		}
	}
}
