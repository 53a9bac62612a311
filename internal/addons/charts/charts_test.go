package charts_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/addons/charts"
	"github.com/magnetite-io/magnetite/internal/testcharts"
)

func cluster() addons.Cluster {
	return addons.Cluster{Name: "demo-1b4e28ba", KubeVersion: "v1.33.1", NetworkDriver: "calico",
		PodCIDR: "10.100.0.0/16", ServiceCIDR: "10.254.0.0/16", Registry: "registry.example.net/k8s",
		CloudProvider: true, CinderCSI: true, ManilaCSI: true, KeystoneAuth: true, MetricsServer: true}
}

func objects(t *testing.T, docs []string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, d := range docs {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("%v:\n%s", err, d)
		}
		out = append(out, m)
	}
	return out
}

func find(objs []map[string]any, kind, name string) map[string]any {
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		if o["kind"] == kind && md["name"] == name {
			return o
		}
	}
	return nil
}

func nested(o map[string]any, path ...string) any {
	var cur any = o
	for _, p := range path {
		m, _ := cur.(map[string]any)
		cur = m[p]
	}
	return cur
}

// TestRendersPinnedChartsWithTheClustersValues pulls every release of a
// cluster from a real chart repository on loopback, by the version pinned
// for its Kubernetes minor, and renders it with the values derived from
// the cluster.
func TestRendersPinnedChartsWithTheClustersValues(t *testing.T) {
	repo := testcharts.Serve(t)
	src := testcharts.Source(t, repo.URL)
	rels, problems := addons.Select(cluster())
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	var names []string
	all := map[string][]map[string]any{}
	for _, rel := range rels {
		names = append(names, rel.Addon)
		docs, err := src.Render(t.Context(), rel)
		if err != nil {
			t.Fatalf("%s: %v", rel.Addon, err)
		}
		objs := objects(t, docs)
		all[rel.Addon] = objs
		for _, o := range objs {
			l, _ := nested(o, "metadata", "labels").(map[string]any)
			if v, ok := l["test.magnetite.io/chart-version"]; ok && v != rel.Pin.Charts[len(rel.Pin.Charts)-1].Version {
				t.Errorf("%s: %v %v rendered from chart version %v, want the pinned %s", rel.Addon, o["kind"], nested(o, "metadata", "name"), v, rel.Pin.Charts[0].Version)
			}
			if v, ok := l["test.magnetite.io/kube-version"]; ok && v != "v1.33.1" {
				t.Errorf("%s: charts saw Kubernetes %v, want the cluster's v1.33.1", rel.Addon, v)
			}
		}
	}
	want := []string{addons.Calico, addons.CloudControllerManager, addons.CinderCSI, addons.ManilaCSI, addons.KeystoneAuth, addons.MetricsServer}
	if !slices.Equal(names, want) {
		t.Fatalf("releases %v, want %v", names, want)
	}
	for _, c := range []string{"tigera-operator-v3.31.5.tgz", "openstack-cloud-controller-manager-2.33.1.tgz", "openstack-cinder-csi-2.33.1.tgz"} {
		if !slices.Contains(repo.Requests(), "/"+c) {
			t.Errorf("the repository was never asked for %s (asked: %v)", c, repo.Requests())
		}
	}

	calico := all[addons.Calico]
	if calico[0]["kind"] != "Namespace" || nested(calico[0], "metadata", "name") != "tigera-operator" {
		t.Errorf("the Calico release does not start with its namespace: %v", calico[0])
	}
	if calico[1]["kind"] != "CustomResourceDefinition" {
		t.Errorf("the chart's crds/ do not come before its templates: %v", calico[1]["kind"])
	}
	inst := find(calico, "Installation", "default")
	pool, _ := nested(inst, "spec", "calicoNetwork", "ipPools").([]any)
	if len(pool) != 1 || nested(pool[0].(map[string]any), "cidr") != "10.100.0.0/16" || nested(inst, "spec", "registry") != "registry.example.net/k8s/" {
		t.Errorf("Installation does not carry the pod CIDR and registry mirror: %v", inst)
	}
	if nested(inst, "metadata", "namespace") != nil {
		t.Errorf("the cluster-scoped Installation got a namespace: %v", inst["metadata"])
	}
	if find(calico, "Job", "tigera-operator-uninstall") != nil {
		t.Error("the pre-delete hook was rendered as an object to create")
	}
	if d := find(calico, "Deployment", "tigera-operator"); nested(d, "metadata", "namespace") != "tigera-operator" ||
		!strings.HasPrefix(nested(d, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["image"].(string), "registry.example.net/k8s/") {
		t.Errorf("operator Deployment namespace or image: %v", d)
	}

	ccm := find(all[addons.CloudControllerManager], "DaemonSet", "openstack-cloud-controller-manager")
	spec := nested(ccm, "spec", "template", "spec").(map[string]any)
	if nested(ccm, "metadata", "namespace") != "kube-system" || !strings.Contains(toYAML(t, spec), "secretName: cloud-config") ||
		!strings.Contains(toYAML(t, spec), "--cluster-name=demo-1b4e28ba") || !strings.Contains(toYAML(t, spec), "node-role.kubernetes.io/control-plane") {
		t.Errorf("cloud controller manager does not read the cloud-config Secret on the control plane:\n%s", toYAML(t, ccm))
	}
	cinder := all[addons.CinderCSI]
	if find(cinder, "StorageClass", "csi-cinder-sc-delete") != nil {
		t.Error("the Cinder chart's own StorageClass was rendered: Magnetite makes the default class")
	}
	if d := find(cinder, "CSIDriver", "cinder.csi.openstack.org"); d == nil || nested(d, "metadata", "namespace") != nil {
		t.Errorf("CSIDriver missing or namespaced: %v", d)
	}
	if ms := find(all[addons.MetricsServer], "Deployment", "metrics-server"); !strings.Contains(toYAML(t, ms), "--kubelet-insecure-tls") {
		t.Errorf("metrics-server args:\n%s", toYAML(t, ms))
	}
}

func toYAML(t *testing.T, v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMirrorFillsAnAirGappedDirectory mirrors every pinned chart from an
// HTTP repository into a directory, then renders from that directory alone
// (the repository stopped), and the directory is an HTTP repository too.
func TestMirrorFillsAnAirGappedDirectory(t *testing.T) {
	repo := testcharts.Serve(t)
	dir := filepath.Join(t.TempDir(), "charts")
	got, err := testcharts.Source(t, repo.URL).Mirror(t.Context(), dir, addons.Charts())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(addons.Charts()) {
		t.Fatalf("mirrored %d charts, want every pinned one (%d)", len(got), len(addons.Charts()))
	}
	idx, err := os.ReadFile(filepath.Join(dir, "index.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range got {
		if !strings.Contains(string(idx), "digest: "+m.Digest) {
			t.Errorf("index.yaml lacks the digest of %s", m.Chart)
		}
	}
	local := testcharts.Source(t, dir)
	rel, _ := addons.Select(addons.Cluster{KubeVersion: "v1.36.0", NetworkDriver: "calico", PodCIDR: "10.0.0.0/16"})
	docs, err := local.Render(context.Background(), rel[0])
	if err != nil {
		t.Fatal(err)
	}
	if objs := objects(t, docs); find(objs, "CustomResourceDefinition", "ippools.crd.projectcalico.org") == nil || find(objs, "Installation", "default") == nil {
		t.Errorf("Calico 3.32 from the directory lacks its CRD chart or the operator chart: %d objects", len(objs))
	}

	t.Run("a tampered archive is refused", func(t *testing.T) {
		c := rel[0].Pin.Charts[0]
		f := filepath.Join(dir, c.Name+"-"+c.Version+".tgz")
		b, _ := os.ReadFile(f)
		if err := os.WriteFile(f, append(b, 0), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := testcharts.Source(t, dir).Pull(t.Context(), c); !errors.Is(err, charts.ErrDigest) {
			t.Fatalf("pull of a changed archive: %v, want a digest mismatch", err)
		}
	})
}

// TestMissingChartIsNotFound: a source without the pinned version says
// which versions it has.
func TestMissingChartIsNotFound(t *testing.T) {
	missing := addons.Chart{Repo: addons.RepoCalico, Name: "tigera-operator", Version: "v3.31.5"}
	repo := testcharts.Serve(t, missing)
	err := testcharts.Source(t, repo.URL).Check(t.Context(), missing)
	if !errors.Is(err, charts.ErrNotFound) || !strings.Contains(err.Error(), "not at the pinned version v3.31.5") {
		t.Fatalf("check of a missing version: %v", err)
	}
	if _, err := testcharts.Source(t, t.TempDir()).Pull(t.Context(), missing); !errors.Is(err, charts.ErrNotFound) || !strings.Contains(err.Error(), "magnetite addons mirror") {
		t.Fatalf("pull from an empty directory: %v", err)
	}
	if _, err := charts.ParseSource("charts/", time.Second); err == nil {
		t.Error("a relative directory was accepted as a source")
	}
}

// TestOCIRegistrySource pulls and renders charts from an OCI registry as
// Helm pushes them, and reports a chart the registry lacks as not found.
func TestOCIRegistrySource(t *testing.T) {
	missing, _ := addons.Pinned(addons.CinderCSI, "1.33")
	reg := testcharts.ServeOCI(t, missing.Charts...)
	src := testcharts.Source(t, reg.URL)
	src.PlainHTTP = true
	rels, _ := addons.Select(cluster())
	docs, err := src.Render(t.Context(), rels[0])
	if err != nil {
		t.Fatal(err)
	}
	if inst := find(objects(t, docs), "Installation", "default"); inst == nil {
		t.Fatalf("Calico from the registry rendered no Installation: %v", docs)
	}
	err = src.Check(t.Context(), missing.Charts[0])
	if !errors.Is(err, charts.ErrNotFound) || !strings.Contains(err.Error(), reg.URL+"/openstack-cinder-csi:2.33.1") {
		t.Fatalf("a chart the registry lacks: %v", err)
	}
}
