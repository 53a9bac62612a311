package magnumimport

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestImportFindsTheClustersMagnumClusterAPIDriversMade: on a management
// cluster with Cluster API (its core manager answering conversion
// webhooks), a Cluster where magnum-cluster-api puts it and one where
// magnum-capi-helm does are found and recorded for adoption; a cluster
// whose objects are gone says where it was looked for.
func TestImportFindsTheClustersMagnumClusterAPIDriversMade(t *testing.T) {
	env := testenv.Start(t)
	env.InstallClusterAPI(t)
	env.StartManagers(t, testenv.CoreManager)
	ctx := context.Background()
	dc := env.Dynamic(t)
	namespaces := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	// The namespaces and Clusters as the drivers name them: MCA's in
	// magnum-system after the stack_id it generated; MCH's Helm release
	// (named by the stack_id) in magnum-<project id without dashes>.
	for _, ns := range []string{"magnum-system", "magnum-9f1c2ad3be74"} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if _, err := namespaces.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// MCA's Cluster has a managed topology of its ClusterClass
	// (magnum_cluster_api/resources.py Cluster; written here in the
	// v1beta2 shape Cluster API v1.14 stores it in); MCH's chart
	// (capi-helm-charts openstack-cluster) refers to a KubeadmControlPlane
	// and an OpenStackCluster named after the release. Neither needs to
	// exist for the import to find the Cluster.
	for _, c := range []struct {
		ns, name, version string
		spec              map[string]any
	}{
		{"magnum-system", "kube-ab12c", "v1beta2", map[string]any{"topology": map[string]any{
			"classRef": map[string]any{"name": "magnum-v0.38.1"}, "version": "v1.30.4",
			"controlPlane": map[string]any{"replicas": int64(1)},
			"workers": map[string]any{"machineDeployments": []any{
				map[string]any{"class": "default-worker", "name": "default-worker", "replicas": int64(2)}}},
		}}},
		{"magnum-9f1c2ad3be74", "dev-x7k2m9q4r1ab", "v1beta1", map[string]any{
			"controlPlaneRef":   map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane", "name": "dev-x7k2m9q4r1ab-control-plane"},
			"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackCluster", "name": "dev-x7k2m9q4r1ab"},
		}},
	} {
		c.spec["paused"] = true
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/" + c.version, "kind": "Cluster",
			"metadata": map[string]any{"name": c.name, "namespace": c.ns},
			"spec":     c.spec,
		}}
		gvr := schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: c.version, Resource: "clusters"}
		if _, err := dc.Resource(gvr).Namespace(c.ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Cluster %s/%s: %v", c.ns, c.name, err)
		}
	}
	mc, err := mgmt.NewForConfig(env.Config, mgmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.Discover(ctx); err != nil {
		t.Fatal(err)
	}

	mca := cluster("22222222-0000-0000-0000-000000000001", "mca", "11111111-0000-0000-0000-000000000002")
	mca.StackID = ptr("kube-ab12c")
	mch := cluster("22222222-0000-0000-0000-000000000002", "mch", "11111111-0000-0000-0000-000000000002")
	mch.StackID, mch.ProjectID = ptr("dev-x7k2m9q4r1ab"), "9f1c2ad3-be74"
	gone := cluster("22222222-0000-0000-0000-000000000003", "gone", "11111111-0000-0000-0000-000000000002")
	gone.StackID = ptr("kube-zzzzz")
	m := magnumWith(mca, mch, gone)
	m.Templates[1].ProjectID = "p1"

	st := openStore(t)
	p, err := makePlan(ctx, m, st, Options{Management: mc, CAPIHelmNamespacePrefix: DefaultCAPIHelmNamespacePrefix,
		Now: func() time.Time { return created }, Unbuildable: func(*model.ClusterTemplate) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	p.apply(ctx, st)
	for _, tc := range []struct {
		uuid   string
		want   *model.ForeignCluster
		reason string // why read-only, "" for adopted
	}{
		// MCA's topology has a machine deployment for the worker node
		// group: adopted.
		{mca.UUID, &model.ForeignCluster{Driver: "magnum-cluster-api", Namespace: "magnum-system", Name: "kube-ab12c", Adopted: true,
			NodeGroups: map[string]string{"b" + mca.UUID[1:]: "default-worker"}}, ""},
		// MCH's Cluster refers to a KubeadmControlPlane that is not there.
		{mch.UUID, &model.ForeignCluster{Driver: "magnum-capi-helm", Namespace: "magnum-9f1c2ad3be74", Name: "dev-x7k2m9q4r1ab"},
			"magnum-capi-helm made its Cluster API objects (Cluster magnum-9f1c2ad3be74/dev-x7k2m9q4r1ab in the management cluster), and Magnetite cannot change them safely: its KubeadmControlPlane dev-x7k2m9q4r1ab-control-plane is gone"},
		{gone.UUID, nil, "not in the management cluster (no Cluster magnum-system/kube-zzzzz or magnum-p1/kube-zzzzz)"},
	} {
		c, err := st.GetClusterByUUID(ctx, tc.uuid)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Imported.ClusterAPI; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("cluster %s: found %+v, want %+v", c.Name, got, tc.want)
		}
		switch {
		case tc.reason == "" && c.ReadOnlyReason() != "":
			t.Errorf("cluster %s is read-only (%s), want it adopted", c.Name, c.ReadOnlyReason())
		case tc.reason == "" && !strings.Contains(derefStr(c.StatusReason), "Adopted from magnum-cluster-api"):
			t.Errorf("adopted cluster %s has status reason %q", c.Name, derefStr(c.StatusReason))
		case !strings.Contains(c.ReadOnlyReason(), tc.reason):
			t.Errorf("cluster %s is read-only for %q, want it to say %q", c.Name, c.ReadOnlyReason(), tc.reason)
		}
		if tc.want != nil && c.Imported.MagnumDriver != tc.want.Driver {
			t.Errorf("cluster %s: Magnum driver %q, want %q", c.Name, c.Imported.MagnumDriver, tc.want.Driver)
		}
	}
}

func derefStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
