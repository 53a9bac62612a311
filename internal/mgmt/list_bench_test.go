package mgmt_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// BenchmarkListAddonConfigMaps lists a cluster's addon ConfigMaps whole
// and as metadata, the way prune and cleanup look at them: four
// ConfigMaps of 475 KB (a cluster's addons with the real charts are 1.9
// MB, Calico's 1.7 MB of it in three), on a real kube-apiserver.
func BenchmarkListAddonConfigMaps(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: starts a kube-apiserver")
	}
	ctx := context.Background()
	env := testenv.Start(b)
	c := newClient(b, env.Config, "")
	owner := mgmt.Owner{ClusterUUID: "0c3a8f4e-8a43-4a43-9d7e-0f4b7f8c2a11", ProjectID: "bench"}
	ns, err := c.EnsureNamespace(ctx, owner.ProjectID)
	if err != nil {
		b.Fatal(err)
	}
	line := "        - name: CALICO_IPV4POOL_CIDR\n          value: 10.100.0.0/16\n"
	for i := range 4 {
		cm := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("addon-%d", i), "namespace": ns},
			"data":     map[string]any{"calico.yaml": strings.Repeat(line, 475_000/len(line))},
		}}
		if _, err := c.Apply(ctx, owner, cm); err != nil {
			b.Fatal(err)
		}
	}
	for name, list := range map[string]func(context.Context, string, string, string) ([]unstructured.Unstructured, error){
		"whole": c.List, "metadata": c.ListMetadata,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				objs, err := list(ctx, "ConfigMap", ns, mgmt.ClusterSelector(owner.ClusterUUID))
				if err != nil || len(objs) != 4 {
					b.Fatalf("%d ConfigMaps, %v", len(objs), err)
				}
			}
		})
	}
}
