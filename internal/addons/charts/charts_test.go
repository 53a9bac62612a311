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
	"github.com/magnetite-io/magnetite/internal/testing/testcharts"
)

func cluster() addons.Cluster {
	return addons.Cluster{Name: "demo-1b4e28ba", KubeVersion: "v1.33.1", NetworkDriver: "calico",
		ProjectID: "6a4e0d3b2c1f4e5a9b8c7d6e5f4a3b2c",
		PodCIDR:   "10.100.0.0/16", ServiceCIDR: "10.254.0.0/16", Registry: "registry.example.net/k8s",
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

// keystoneURL is the Keystone endpoint the test clusters' credentials name.
const keystoneURL = "https://keystone.example.net:5000/v3"

// renderAll renders every release of a cluster as the conductor does
// (WithKeystone, then Render), by addon.
func renderAll(t *testing.T, src *charts.Source, c addons.Cluster, ca []byte) ([]addons.Release, map[string][]map[string]any) {
	t.Helper()
	rels, problems := addons.Select(c)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	all := map[string][]map[string]any{}
	for _, rel := range rels {
		docs, err := src.Render(t.Context(), rel.WithKeystone(keystoneURL, ca))
		if err != nil {
			t.Fatalf("%s %s on Kubernetes %s: %v", rel.Addon, rel.Version(), c.KubeVersion, err)
		}
		all[rel.Addon] = objects(t, docs)
	}
	return rels, all
}

// TestRendersPinnedChartsWithTheClustersValues pulls every release of a
// cluster from a chart repository on loopback holding the real upstream
// charts, by the version pinned for its Kubernetes minor, and renders it
// with the values derived from the cluster.
func TestRendersPinnedChartsWithTheClustersValues(t *testing.T) {
	repo := testcharts.Serve(t)
	src := testcharts.Source(t, repo.URL)
	rels, all := renderAll(t, src, cluster(), []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	var names []string
	for _, rel := range rels {
		names = append(names, rel.Addon)
	}
	want := []string{addons.Calico, addons.CloudControllerManager, addons.SnapshotController, addons.CinderCSI, addons.NFSCSI, addons.ManilaCSI, addons.KeystoneAuth, addons.MetricsServer}
	if !slices.Equal(names, want) {
		t.Fatalf("releases %v, want %v", names, want)
	}
	for _, c := range []string{"tigera-operator-v3.31.7.tgz", "openstack-cloud-controller-manager-2.33.1.tgz", "openstack-cinder-csi-2.33.1.tgz", "external-snapshotter-v8.6.0.tgz", "csi-driver-nfs-4.13.4.tgz"} {
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
	if enc := nested(pool[0].(map[string]any), "encapsulation"); enc != "VXLAN" {
		t.Errorf("Calico encapsulates %v between nodes; Neutron's port security drops unencapsulated pod traffic", enc)
	}
	if nested(inst, "metadata", "namespace") != nil {
		t.Errorf("the cluster-scoped Installation got a namespace: %v", inst["metadata"])
	}
	if find(calico, "Job", "tigera-operator-uninstall") != nil {
		t.Error("the pre-delete hook was rendered as an object to create")
	}
	if d := find(calico, "Deployment", "tigera-operator"); nested(d, "metadata", "namespace") != "tigera-operator" {
		t.Errorf("operator Deployment namespace: %v", d)
	}
	ccm := find(all[addons.CloudControllerManager], "DaemonSet", "openstack-cloud-controller-manager")
	spec := toYAML(t, nested(ccm, "spec", "template", "spec"))
	if nested(ccm, "metadata", "namespace") != "kube-system" || !strings.Contains(spec, "secretName: cloud-config") ||
		!strings.Contains(spec, "name: CLUSTER_NAME\n    value: demo-1b4e28ba") || !strings.Contains(spec, "node-role.kubernetes.io/control-plane") {
		t.Errorf("cloud controller manager does not read the cloud-config Secret on the control plane:\n%s", spec)
	}
	cinder := all[addons.CinderCSI]
	if find(cinder, "StorageClass", "csi-cinder-sc-delete") != nil {
		t.Error("the Cinder chart's own StorageClass was rendered: Magnetite makes the default class")
	}
	if d := find(cinder, "CSIDriver", "cinder.csi.openstack.org"); d == nil || nested(d, "metadata", "namespace") != nil {
		t.Errorf("CSIDriver missing or namespaced: %v", d)
	}
	snap := all[addons.SnapshotController]
	for _, crd := range []string{"volumesnapshots.snapshot.storage.k8s.io", "volumesnapshotcontents.snapshot.storage.k8s.io", "volumesnapshotclasses.snapshot.storage.k8s.io"} {
		if find(snap, "CustomResourceDefinition", crd) == nil {
			t.Errorf("Cinder CSI comes without the CRD %s", crd)
		}
	}
	if d := find(snap, "Deployment", "snapshot-controller"); !strings.Contains(toYAML(t, d), "image: registry.example.net/k8s/snapshot-controller:") {
		t.Errorf("snapshot controller Deployment missing or not from the mirror:\n%s", toYAML(t, d))
	}
	if ds := find(all[addons.NFSCSI], "DaemonSet", "csi-nfs-node"); ds == nil || !strings.Contains(toYAML(t, ds), "/var/lib/kubelet/plugins/csi-nfsplugin") {
		t.Errorf("csi-driver-nfs's node plugin does not serve the socket Manila forwards to:\n%s", toYAML(t, ds))
	}
	if ms := find(all[addons.MetricsServer], "Deployment", "metrics-server"); !strings.Contains(toYAML(t, ms), "--kubelet-insecure-tls") {
		t.Errorf("metrics-server args:\n%s", toYAML(t, ms))
	}
	ks := all[addons.KeystoneAuth]
	ds := toYAML(t, find(ks, "DaemonSet", "k8s-keystone-auth"))
	for _, s := range []string{"- " + keystoneURL, "- --keystone-ca-file\n", "- /etc/magnetite/keystone/ca.crt", "mountPath: /etc/magnetite/keystone", "name: k8s-keystone-auth-ca"} {
		if !strings.Contains(ds, s) {
			t.Errorf("the webhook lacks %q:\n%s", s, ds)
		}
	}
	if ca := find(ks, "ConfigMap", "k8s-keystone-auth-ca"); !strings.Contains(toYAML(t, ca), "BEGIN CERTIFICATE") {
		t.Errorf("no CA ConfigMap for the webhook: %v", ca)
	}
	if pol := find(ks, "ConfigMap", "k8s-keystone-auth-policy"); !strings.Contains(toYAML(t, pol), "6a4e0d3b2c1f4e5a9b8c7d6e5f4a3b2c") {
		t.Errorf("the RBAC policies do not name the cluster's project:\n%s", toYAML(t, pol))
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
	missing := addons.Chart{Repo: addons.RepoCalico, Name: "tigera-operator", Version: "v3.31.7"}
	repo := testcharts.Serve(t, missing)
	err := testcharts.Source(t, repo.URL).Check(t.Context(), missing)
	if !errors.Is(err, charts.ErrNotFound) || !strings.Contains(err.Error(), "not at the pinned version v3.31.7") {
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
