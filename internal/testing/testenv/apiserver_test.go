package testenv_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

func TestAPIServerServesInstalledCRDsAndValidatesAgainstThem(t *testing.T) {
	env := testenv.Start(t)
	names := env.InstallCRDs(t, filepath.Join(testenv.ClusterAPICRDs(t), "core"), nil)
	if len(names) < 5 {
		t.Fatalf("installed %d CRDs: %v", len(names), names)
	}
	ctx := context.Background()
	dc := env.Dynamic(t)
	crd, err := dc.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(ctx, "clusters.cluster.x-k8s.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crd.GetName() != "clusters.cluster.x-k8s.io" {
		t.Fatalf("got %s", crd.GetName())
	}
	mapper := env.Mapper(t)
	good := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": "c1", "namespace": "default"},
		"spec": map[string]any{"topology": map[string]any{
			"classRef": map[string]any{"name": "cc"}, "version": "v1.33.1"}},
	}}
	if err := testenv.DryRunApply(ctx, dc, mapper, good); err != nil {
		t.Fatalf("valid Cluster refused: %v", err)
	}
	bad := good.DeepCopy()
	_ = unstructured.SetNestedField(bad.Object, "NOT A NAME", "spec", "topology", "classRef", "name")
	err = testenv.DryRunApply(ctx, dc, mapper, bad)
	if err == nil || !strings.Contains(err.Error(), "classRef.name") {
		t.Fatalf("invalid Cluster accepted or refused for another reason: %v", err)
	}
	// A dry run stores nothing.
	if _, err := dc.Resource(schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}).
		Namespace("default").Get(ctx, "c1", metav1.GetOptions{}); err == nil {
		t.Fatal("the dry-run Cluster was stored")
	}
}
