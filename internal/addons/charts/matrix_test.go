package charts_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/addons/charts"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/testing/testcharts"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// longName is a Magnum cluster name of 60 characters.
var longName = strings.Repeat("analytics-platform-", 4)[:60]

// testCA stands for a private Keystone CA.
var testCA = []byte("-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIUQm9ndXMgdGVzdCBDQSBmb3IgbWFnbmV0aXRlMAoGCCqG\n-----END CERTIFICATE-----\n")

// matrixCase is one cluster of the real-chart matrix.
type matrixCase struct {
	minor, cni string
	prefix     bool
	ca         bool
}

func (m matrixCase) String() string {
	return fmt.Sprintf("%s/%s/prefix=%t/ca=%t", m.minor, m.cni, m.prefix, m.ca)
}

func (m matrixCase) cluster() addons.Cluster {
	c := addons.Cluster{Name: driver.ObjectName(longName, "1b4e28ba-2fa1-11d2-883f-0016d3cca427"), ProjectID: "6a4e0d3b2c1f4e5a9b8c7d6e5f4a3b2c",
		KubeVersion: "v" + m.minor + ".2", NetworkDriver: m.cni, PodCIDR: "10.100.0.0/16", ServiceCIDR: "10.254.0.0/16",
		CloudProvider: true, CinderCSI: true, ManilaCSI: true, KeystoneAuth: true, MetricsServer: true}
	if m.prefix {
		c.Registry = "registry.example.net/k8s"
	}
	return c
}

func matrix() []matrixCase {
	var out []matrixCase
	for _, minor := range addons.Minors {
		for _, cni := range []string{"calico", "cilium"} {
			for _, prefix := range []bool{true, false} {
				for _, ca := range []bool{true, false} {
					out = append(out, matrixCase{minor, cni, prefix, ca})
				}
			}
		}
	}
	return out
}

// renderer renders releases from the real charts once per distinct
// release (most of the matrix's releases repeat).
type renderer struct {
	src  *charts.Source
	done map[string][]string
}

func (r *renderer) render(t *testing.T, rel addons.Release) []string {
	t.Helper()
	key, _ := json.Marshal([]any{rel.Addon, rel.Pin, rel.Values, rel.KubeVersion, rel.Registry, rel.KeystoneCA})
	if docs, ok := r.done[string(key)]; ok {
		return docs
	}
	docs, err := r.src.Render(t.Context(), rel)
	if err != nil {
		t.Fatalf("%s %s for Kubernetes %s: %v", rel.Addon, rel.Version(), rel.KubeVersion, err)
	}
	r.done[string(key)] = docs
	return docs
}

// matrixSets renders every cluster of the matrix, as the conductor would:
// its releases' documents, by addon.
func matrixSets(t *testing.T) map[matrixCase][]addons.Release {
	t.Helper()
	out := map[matrixCase][]addons.Release{}
	for _, m := range matrix() {
		rels, problems := addons.Select(m.cluster())
		if len(problems) > 0 {
			t.Fatalf("%s: %v", m, problems)
		}
		var ca []byte
		if m.ca {
			ca = testCA
		}
		for i := range rels {
			rels[i] = rels[i].WithKeystone(keystoneURL, ca)
		}
		out[m] = rels
	}
	return out
}

// workloadKinds hold pod templates (or are pods).
var workloadKinds = map[string][]string{
	"Deployment": {"spec", "template", "spec"}, "DaemonSet": {"spec", "template", "spec"}, "StatefulSet": {"spec", "template", "spec"},
	"Job": {"spec", "template", "spec"}, "CronJob": {"spec", "jobTemplate", "spec", "template", "spec"}, "Pod": {"spec"},
}

// images lists every container and init container image of a workload.
func images(u *unstructured.Unstructured) []string {
	path, ok := workloadKinds[u.GetKind()]
	if !ok {
		return nil
	}
	var out []string
	for _, field := range []string{"containers", "initContainers", "ephemeralContainers"} {
		cs, _, _ := unstructured.NestedSlice(u.Object, append(append([]string{}, path...), field)...)
		for _, c := range cs {
			img, _ := c.(map[string]any)["image"].(string)
			out = append(out, img)
		}
	}
	return out
}

// strictDryRun server-side applies obj with dryRun=All and strict field
// validation: a field the schema does not know (a misspelt value that a
// chart copies into an object, as Calico's chart does into its
// Installation) is an error, not a warning.
func strictDryRun(ctx context.Context, dc dynamic.Interface, mapper meta.RESTMapper, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = dc.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = dc.Resource(m.Resource).Namespace(obj.GetNamespace())
	}
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	force := true
	_, err = ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
		FieldManager: "magnetite", Force: &force, DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
	return err
}

// TestRealChartMatrix renders every addon from the real upstream charts for
// each supported Kubernetes minor, with Calico and with Cilium, with and
// without container_infra_prefix and a private Keystone CA, for a cluster
// named with 60 characters, and checks what the workload cluster would
// get: every image under the prefix when one is set, Cilium's cluster name
// within its limit, every ConfigMap the ClusterResourceSet delivers under
// 900 KB, and every object accepted by a real kube-apiserver (server-side
// dry run, the CRDs created first).
func TestRealChartMatrix(t *testing.T) {
	r := &renderer{src: testcharts.Source(t, testcharts.Serve(t).URL), done: map[string][]string{}}
	sets := matrixSets(t)
	rendered := map[matrixCase][]*unstructured.Unstructured{}
	largest, largestName := 0, ""
	for _, m := range matrix() {
		for _, rel := range sets[m] {
			docs := r.render(t, rel)
			parts, _, err := addons.Pack(rel.Addon, docs, addons.MaxConfigMapData)
			if err != nil {
				t.Fatalf("%s: %v", m, err)
			}
			for i, p := range parts {
				// The ConfigMap as the renderer writes it: the documents
				// and a few hundred bytes of metadata.
				if n := len(strings.Join(p, "---\n")) + 1024; n > largest {
					largest, largestName = n, fmt.Sprintf("%s part %d of %s", rel.Addon, i+1, m)
				}
			}
			for _, d := range docs {
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
					t.Fatal(err)
				}
				rendered[m] = append(rendered[m], u)
			}
		}
	}
	t.Logf("%d distinct releases rendered from the charts of %s; largest ConfigMap %d bytes (%s)", len(r.done), testcharts.Where(t), largest, largestName)
	if largest >= 900_000 {
		t.Errorf("the largest addon ConfigMap is %d bytes (%s), above the 900 KB headroom under the 1 MiB limit", largest, largestName)
	}

	t.Run("every image follows container_infra_prefix", func(t *testing.T) {
		for m, objs := range rendered {
			n := 0
			for _, u := range objs {
				for _, img := range images(u) {
					n++
					if m.prefix && !strings.HasPrefix(img, "registry.example.net/k8s/") {
						t.Errorf("%s: %s %s/%s pulls %s, not from the mirror", m, u.GetKind(), u.GetNamespace(), u.GetName(), img)
					}
				}
				if u.GetKind() == "Installation" && m.prefix {
					if reg, _, _ := unstructured.NestedString(u.Object, "spec", "registry"); reg != "registry.example.net/k8s/" {
						t.Errorf("%s: Calico's Installation pulls from %q", m, reg)
					}
				}
			}
			if n < 15 {
				t.Errorf("%s: only %d images in the rendered workloads", m, n)
			}
		}
	})

	t.Run("Cilium takes the long name, unique per cluster", func(t *testing.T) {
		names := map[string]bool{}
		for _, uuid := range []string{"1b4e28ba-2fa1-11d2-883f-0016d3cca427", "9f0c1e2d-2fa1-11d2-883f-0016d3cca427"} {
			c := matrixCase{"1.35", "cilium", false, false}.cluster()
			c.Name = driver.ObjectName(longName, uuid)
			rels, _ := addons.Select(c)
			var cfg *unstructured.Unstructured
			for _, d := range r.render(t, rels[0]) {
				u := &unstructured.Unstructured{}
				_ = yaml.Unmarshal([]byte(d), &u.Object)
				if u.GetKind() == "ConfigMap" && u.GetName() == "cilium-config" {
					cfg = u
				}
			}
			if cfg == nil {
				t.Fatal("Cilium rendered no cilium-config")
			}
			name, _, _ := unstructured.NestedString(cfg.Object, "data", "cluster-name")
			if len(name) > 32 || name == "" || name == "default" {
				t.Errorf("Cilium's cluster-name %q for object %s", name, c.Name)
			}
			names[name] = true
		}
		if len(names) != 2 {
			t.Errorf("two clusters with one long name share Cilium's cluster name: %v", names)
		}
	})

	t.Run("a real kube-apiserver accepts every object", func(t *testing.T) {
		env := testenv.Start(t)
		dc := env.Dynamic(t)
		ctx := context.Background()
		checked := map[[32]byte]bool{}
		for _, minor := range addons.Minors {
			// The CRDs of this minor's releases first, for real (the
			// workload cluster gets them before anything that needs them).
			dir := t.TempDir()
			crds := map[string]bool{}
			for _, m := range matrix() {
				if m.minor != minor {
					continue
				}
				for _, u := range rendered[m] {
					if u.GetKind() != "CustomResourceDefinition" {
						continue
					}
					b, _ := yaml.Marshal(u.Object)
					if err := os.WriteFile(filepath.Join(dir, u.GetName()+".yaml"), b, 0o644); err != nil {
						t.Fatal(err)
					}
					crds[u.GetName()] = true
				}
			}
			env.InstallCRDs(t, dir, nil)
			mapper := env.Mapper(t)
			for _, m := range matrix() {
				if m.minor != minor {
					continue
				}
				for _, u := range rendered[m] {
					if u.GetKind() == "Namespace" {
						if _, err := testenv.ServerSideApply(ctx, dc, mapper, u, false); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			testenv.WaitFor(t, "Kubernetes "+minor+"'s addon CRDs to be served", time.Minute, func() (bool, string) {
				_, err := env.Mapper(t).RESTMapping(schema.GroupKind{Group: "snapshot.storage.k8s.io", Kind: "VolumeSnapshotClass"}, "v1")
				return err == nil, fmt.Sprint(err)
			})
			n := 0
			for _, m := range matrix() {
				if m.minor != minor {
					continue
				}
				for _, u := range rendered[m] {
					b, _ := json.Marshal(u.Object)
					sum := sha256.Sum256(append(b, minor...))
					if checked[sum] || u.GetKind() == "CustomResourceDefinition" || u.GetKind() == "Namespace" {
						continue
					}
					checked[sum] = true
					n++
					if err := strictDryRun(ctx, dc, mapper, u); err != nil {
						t.Errorf("%s: %s %s/%s refused: %v", m, u.GetKind(), u.GetNamespace(), u.GetName(), err)
					}
				}
			}
			t.Logf("Kubernetes %s: %d CRDs, %d distinct objects accepted", minor, len(crds), n)
		}
	})
}
