package conductor

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/metal3"
	"github.com/magnetite-io/magnetite/internal/kinds"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestCleanupRemovesTheInfrastructuresOwnObjects: once Cluster API has
// removed a cluster, the conductor deletes what the driver rendered for it
// besides the Cluster and that nothing else removes, as the infrastructure
// declares it (Metal3: the IP pool, the data templates and the remediation
// templates), and leaves another cluster's objects alone.
func TestCleanupRemovesTheInfrastructuresOwnObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := managementPlane(t, testenv.CAPOv014)
	mc, err := mgmt.NewForConfig(env.Config, mgmt.Options{Kinds: builtin.Kinds(), NamespacePrefix: testenv.NamespacePrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := mc.EnsureNamespace(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	drv := metal3.New(capi.Options{}, metal3.Options{})
	table, err := kinds.NewTable(drv.Kinds())
	if err != nil {
		t.Fatal(err)
	}
	cleaned := table.Cleanup()
	if len(cleaned) != 3 {
		t.Fatalf("metal3 declares %v for cleanup, want its IP pool, data and remediation templates", cleaned)
	}
	// Two clusters of the project, each with every per-cluster object.
	raw, err := os.ReadFile("../driver/capi/metal3/testdata/cases/ip-pools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Template, Cluster map[string]any }
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc.Template["labels"].(map[string]any)["auto_healing_enabled"] = "true"
	clusters := map[string]string{"static-a": "6a1e28ba-2fa1-4d2b-8f1a-5e8f0000000a", "static-b": "6a1e28ba-2fa1-4d2b-8f1a-5e8f0000000b"}
	for name, id := range clusters {
		doc.Cluster["name"], doc.Cluster["uuid"], doc.Cluster["stack_id"] = name, id, name
		ct, _ := yaml.Marshal(doc.Template)
		cl, _ := yaml.Marshal(doc.Cluster)
		req, err := driver.DecodeRequest(ct, cl, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Namespace = ns
		// At the versions CAPM3 v1.12.7 serves (v1beta1), as the
		// conductor renders.
		if req.APIVersions, err = mc.APIVersions(ctx); err != nil {
			t.Fatal(err)
		}
		res, err := drv.Render(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Objects {
			if _, ok := table[o.GetKind()]; ok && table[o.GetKind()].Cleanup {
				if _, err := mc.Apply(ctx, mgmt.Owner{ClusterUUID: id, ProjectID: "p"}, o); err != nil {
					t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
		}
	}
	count := func(id string) map[string]int {
		out := map[string]int{}
		for _, kind := range cleaned {
			objs, err := mc.List(ctx, kind, ns, mgmt.ClusterSelector(id))
			if err != nil {
				t.Fatal(err)
			}
			out[kind] = len(objs)
		}
		return out
	}
	for _, kind := range cleaned {
		if n := count(clusters["static-a"])[kind]; n == 0 {
			t.Fatalf("the render has no %s to clean up", kind)
		}
	}
	before := count(clusters["static-b"])

	c := New(Options{Mgmt: mc, Owner: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := c.cleanup(ctx, &model.Cluster{UUID: clusters["static-a"], ProjectID: "p"}, ns); err != nil {
		t.Fatal(err)
	}
	for kind, n := range count(clusters["static-a"]) {
		if n != 0 {
			t.Errorf("%d %s of the deleted cluster left behind", n, kind)
		}
	}
	for kind, n := range count(clusters["static-b"]) {
		if n != before[kind] {
			t.Errorf("the other cluster's %s: %d, had %d", kind, n, before[kind])
		}
	}
}
