package capi_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestClusterAPIBuildsTheRenderedTopology applies every golden render to
// an API server running Cluster API's core and kubeadm managers (with
// their webhooks) and checks that Cluster API accepts the ClusterClasses
// and Clusters, runs the ClusterClass patches with the clusters'
// variables, and creates the control plane and infrastructure objects that
// capi.Preview predicts: the v1beta1 renders with CAPO v0.14.7's CRDs
// (a provider of Cluster API's v1beta1 contract, by its CRDs' labels), the
// v1beta2 renders with CAPO v0.15.0-beta.0's.
func TestClusterAPIBuildsTheRenderedTopology(t *testing.T) {
	for _, at := range []struct{ release, version string }{{testenv.CAPOv014, "v1beta1"}, {testenv.CAPOv015, "v1beta2"}} {
		t.Run(at.release, func(t *testing.T) { buildsTopology(t, at.release, at.version) })
	}
}

func buildsTopology(t *testing.T, release, version string) {
	_, dc, mapper := testenv.StartGolden(t, []string{release}, testenv.CoreManager, testenv.KubeadmBootstrapManager, testenv.KubeadmControlPlaneManager)
	ctx := context.Background()
	files, err := filepath.Glob(filepath.Join("testdata", "golden", version, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	// An upgraded case renders the same cluster at a newer version; Cluster
	// API accepts a version change only for a running control plane, so
	// it is left to the golden diff test.
	files = slices.DeleteFunc(files, func(f string) bool { return strings.Contains(f, "-upgraded") })
	type expectation struct {
		cluster string
		preview []*unstructured.Unstructured
	}
	var expect []expectation
	for _, f := range files {
		objs, preview := testenv.ReadDerived(t, f, capi.Preview)
		for _, o := range objs {
			if _, err := testenv.ServerSideApply(ctx, dc, mapper, o, false); err != nil {
				t.Fatalf("%s: apply %s %s: %v", filepath.Base(f), o.GetKind(), o.GetName(), err)
			}
			if o.GetKind() == "Cluster" {
				expect = slices.DeleteFunc(expect, func(e expectation) bool { return e.cluster == o.GetName() })
				expect = append(expect, expectation{cluster: o.GetName(), preview: preview})
			}
		}
	}
	get := func(group, kind, name string) (*unstructured.Unstructured, error) {
		m, err := mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind})
		if err != nil {
			return nil, err
		}
		return dc.Resource(m.Resource).Namespace(testenv.GoldenNamespace).Get(ctx, name, metav1.GetOptions{})
	}
	// ref follows a {apiGroup, kind, name} reference of obj once set.
	ref := func(t *testing.T, obj func() (*unstructured.Unstructured, error), path ...string) *unstructured.Unstructured {
		t.Helper()
		var last *unstructured.Unstructured
		deadline := time.Now().Add(3 * time.Minute)
		for wait := 50 * time.Millisecond; time.Now().Before(deadline); wait = min(2*wait, time.Second) {
			o, err := obj()
			if err == nil {
				last = o
				r, _, _ := unstructured.NestedStringMap(o.Object, path...)
				if r["name"] != "" {
					if target, err := get(r["apiGroup"], r["kind"], r["name"]); err == nil {
						return target
					}
				}
			}
			time.Sleep(wait)
		}
		conds := ""
		if last != nil {
			c, _, _ := unstructured.NestedSlice(last.Object, "status", "conditions")
			conds = fmt.Sprint(c)
		}
		t.Fatalf("%s of %s not set after 3m; conditions: %s", strings.Join(path, "."), last.GetName(), conds)
		return nil
	}
	for _, e := range expect {
		t.Run(e.cluster, func(t *testing.T) {
			cluster := func() (*unstructured.Unstructured, error) { return get("cluster.x-k8s.io", "Cluster", e.cluster) }
			kcp := ref(t, cluster, "spec", "controlPlaneRef")
			infra := ref(t, cluster, "spec", "infrastructureRef")
			cpMachine := ref(t, func() (*unstructured.Unstructured, error) { return kcp, nil },
				"spec", "machineTemplate", "spec", "infrastructureRef")
			for _, p := range e.preview {
				want, _, _ := unstructured.NestedMap(p.Object, "spec", "template", "spec")
				var got map[string]any
				switch strings.TrimPrefix(p.GetName(), e.cluster+"-") {
				case "control-plane":
					got, _, _ = unstructured.NestedMap(kcp.Object, "spec")
				case "cluster":
					got, _, _ = unstructured.NestedMap(infra.Object, "spec")
				case "control-plane-machine":
					got, _, _ = unstructured.NestedMap(cpMachine.Object, "spec", "template", "spec")
				default:
					// Machine deployments are created once the control
					// plane is initialized, which needs running machines.
					continue
				}
				if len(want) == 0 || len(got) == 0 {
					t.Fatalf("%s: nothing to compare (preview %v, built %v)", p.GetName(), want, got)
				}
				if diff := missing(want, got, ""); diff != "" {
					t.Errorf("%s: what Cluster API built differs from the preview: %s", p.GetName(), diff)
				}
			}
		})
	}
}

// missing reports the first value of want that got lacks or holds
// differently (got may carry more, such as defaults).
func missing(want, got any, path string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want an object, got %v", path, got)
		}
		for k, v := range w {
			if d := missing(v, g[k], path+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: want %v, got %v", path, w, got)
		}
		for i := range w {
			if d := missing(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Sprintf("%s: want %v, got %v", path, want, got)
	}
	return ""
}
