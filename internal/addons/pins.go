package addons

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Addon names. They name the cluster's addon ConfigMaps and the operator's
// own ConfigMaps that replace a chart (magnetite-addon-<name>-<version>).
const (
	Calico                 = "calico"
	Cilium                 = "cilium"
	CloudControllerManager = "openstack-cloud-controller-manager"
	CinderCSI              = "cinder-csi"
	ManilaCSI              = "manila-csi"
	KeystoneAuth           = "k8s-keystone-auth"
	MetricsServer          = "metrics-server"
	// SnapshotController is the VolumeSnapshot API (CRDs and controller)
	// that Cinder CSI's snapshotter needs; it comes with Cinder CSI.
	SnapshotController = "snapshot-controller"
	// NFSCSI is csi-driver-nfs, whose node plugin mounts Manila's NFS
	// shares; it comes with Manila CSI.
	NFSCSI = "csi-driver-nfs"
)

// Names lists every addon, in install order.
var Names = []string{Calico, Cilium, CloudControllerManager, SnapshotController, CinderCSI, NFSCSI, ManilaCSI, KeystoneAuth, MetricsServer}

// Upstream chart repositories, each the project's own.
const (
	RepoCalico        = "https://docs.tigera.io/calico/charts"
	RepoCilium        = "https://helm.cilium.io/"
	RepoCloudProvider = "https://kubernetes.github.io/cloud-provider-openstack"
	RepoKeystoneAuth  = "https://catalyst-cloud.github.io/capi-plugin-helm-charts"
	RepoMetricsServer = "https://kubernetes-sigs.github.io/metrics-server/"
	RepoNFS           = "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts"
	// RepoSnapshotter is where the external-snapshotter tag's manifests
	// are read; Magnetite packages them as a chart (ManifestFiles).
	RepoSnapshotter    = "https://raw.githubusercontent.com/kubernetes-csi/external-snapshotter"
	chartTigera        = "tigera-operator"
	chartCalicoCRDs    = "crd.projectcalico.org.v1"
	chartCCM           = "openstack-cloud-controller-manager"
	chartCinder        = "openstack-cinder-csi"
	chartManila        = "openstack-manila-csi"
	chartKeystoneAuth  = "k8s-keystone-auth"
	chartMetricsServer = "metrics-server"
	chartCilium        = "cilium"
	chartNFS           = "csi-driver-nfs"
	// ChartSnapshotter is the chart Magnetite makes of external-snapshotter's
	// manifests.
	ChartSnapshotter = "external-snapshotter"
)

// Chart is one chart of an upstream repository at one version.
type Chart struct {
	// Repo is the upstream repository (https://... or oci://...).
	Repo    string `json:"repo"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

func (c Chart) String() string { return c.Name + " " + c.Version }

// Pin is an addon's release for one Kubernetes minor: its charts, in
// install order (Calico 3.32 ships its CRDs as a chart of their own), and
// the version of the software it installs, which labels name.
type Pin struct {
	Addon string
	// Minor is the Kubernetes minor ("1.33") the pin is the default for.
	Minor string
	// AppVersion is the version labels such as calico_tag name, and the
	// <version> of the operator's own magnetite-addon-<name>-<version>.
	AppVersion string
	Charts     []Chart
	// KubeRange is the Kubernetes versions the addon's project states it
	// supports, with where it says so.
	KubeRange string
}

// Minors are the Kubernetes minors every addon is pinned for.
var Minors = []string{"1.31", "1.32", "1.33", "1.34", "1.35", "1.36"}

// table is the pinned table. The OpenStack charts follow Kubernetes'
// minor (chart 2.N.x installs v1.N.y, and a cloud controller manager must
// not be newer than the API server); Calico and Cilium are the newest
// releases that support the minor.
var table = func() []Pin {
	var out []Pin
	add := func(addon, app, kubeRange string, minors []string, charts ...Chart) {
		for _, m := range minors {
			out = append(out, Pin{Addon: addon, Minor: m, AppVersion: app, Charts: charts, KubeRange: kubeRange})
		}
	}
	const calicoDocs = " (Calico's system requirements)"
	tigera := func(v string) Chart { return Chart{Repo: RepoCalico, Name: chartTigera, Version: v} }
	add(Calico, "v3.30.7", "1.31–1.35"+calicoDocs, []string{"1.31"}, tigera("v3.30.7"))
	add(Calico, "v3.31.7", "1.32–1.35"+calicoDocs, []string{"1.32", "1.33", "1.34", "1.35"}, tigera("v3.31.7"))
	add(Calico, "v3.32.1", "1.34–1.36"+calicoDocs, []string{"1.36"}, Chart{Repo: RepoCalico, Name: chartCalicoCRDs, Version: "v3.32.1"}, tigera("v3.32.1"))
	cilium := func(v string) Chart { return Chart{Repo: RepoCilium, Name: chartCilium, Version: v} }
	add(Cilium, "v1.18.12", "1.30–1.33 (Cilium's Kubernetes compatibility page)", []string{"1.31", "1.32", "1.33"}, cilium("1.18.12"))
	// No Cilium release in the chart repository states Kubernetes 1.36;
	// 1.19 is the newest and is pinned there too (docs/addons.md).
	add(Cilium, "v1.19.3", "1.32–1.35 (Cilium's Kubernetes compatibility page); 1.36 not stated", []string{"1.34", "1.35", "1.36"}, cilium("1.19.3"))
	cpo := func(addon, chart string, rows [][3]string) {
		for _, r := range rows {
			add(addon, r[2], r[0]+" (cloud-provider-openstack releases follow Kubernetes' minor)", []string{r[0]}, Chart{Repo: RepoCloudProvider, Name: chart, Version: r[1]})
		}
	}
	cpo(CloudControllerManager, chartCCM, [][3]string{
		{"1.31", "2.31.4", "v1.31.4"}, {"1.32", "2.32.1", "v1.32.1"}, {"1.33", "2.33.1", "v1.33.1"},
		{"1.34", "2.34.2", "v1.34.1"}, {"1.35", "2.35.0", "v1.35.0"}, {"1.36", "2.36.0", "v1.36.0"}})
	cpo(CinderCSI, chartCinder, [][3]string{
		{"1.31", "2.31.8", "v1.31.4"}, {"1.32", "2.32.2", "v1.32.1"}, {"1.33", "2.33.1", "v1.33.1"},
		{"1.34", "2.34.3", "v1.34.1"}, {"1.35", "2.35.0", "v1.35.0"}, {"1.36", "2.36.0", "v1.36.0"}})
	cpo(ManilaCSI, chartManila, [][3]string{
		{"1.31", "2.31.5", "v1.31.4"}, {"1.32", "2.32.1", "v1.32.1"}, {"1.33", "2.33.1", "v1.33.1"},
		{"1.34", "2.34.2", "v1.34.1"}, {"1.35", "2.35.0", "v1.35.0"}, {"1.36", "2.36.0", "v1.36.0"}})
	add(KeystoneAuth, "v1.32.0", "not stated (a webhook the API server calls; image of cloud-provider-openstack v1.32.0)", Minors,
		Chart{Repo: RepoKeystoneAuth, Name: chartKeystoneAuth, Version: "1.5.1"})
	add(MetricsServer, "v0.8.1", "1.31+ (metrics-server's compatibility matrix)", Minors, Chart{Repo: RepoMetricsServer, Name: chartMetricsServer, Version: "3.13.1"})
	add(NFSCSI, "v4.13.4", "1.21+ (csi-driver-nfs's compatibility table)", Minors, Chart{Repo: RepoNFS, Name: chartNFS, Version: "4.13.4"})
	// The README at v8.6.0 names 1.20 as the minimum for snapshot-controller
	// and csi-snapshotter (its Compatibility table).
	add(SnapshotController, "v8.6.0", "1.20+ (external-snapshotter's README)", Minors, Chart{Repo: RepoSnapshotter, Name: ChartSnapshotter, Version: "v8.6.0"})
	return out
}()

// Table is the pinned table, by addon then Kubernetes minor.
func Table() []Pin {
	out := slices.Clone(table)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Addon < out[j].Addon })
	return out
}

// Pinned is the addon's pin for a Kubernetes minor.
func Pinned(addon, minor string) (Pin, bool) {
	for _, p := range table {
		if p.Addon == addon && p.Minor == minor {
			return p, true
		}
	}
	return Pin{}, false
}

// ByVersion finds the pin of an addon whose software version (or chart
// version) is v, with or without a leading "v": what a label such as
// calico_tag chooses.
func ByVersion(addon, v string) (Pin, bool) {
	norm := func(s string) string { return strings.TrimPrefix(s, "v") }
	for _, p := range table {
		if p.Addon != addon {
			continue
		}
		if norm(p.AppVersion) == norm(v) {
			return p, true
		}
		for _, c := range p.Charts {
			if norm(c.Version) == norm(v) {
				return p, true
			}
		}
	}
	return Pin{}, false
}

// Versions lists an addon's pinned software versions.
func Versions(addon string) []string {
	var out []string
	for _, p := range table {
		if p.Addon == addon && !slices.Contains(out, p.AppVersion) {
			out = append(out, p.AppVersion)
		}
	}
	return out
}

// Charts lists every pinned chart once: what `magnetite addons mirror`
// downloads and `magnetite doctor` resolves.
func Charts() []Chart {
	var out []Chart
	for _, p := range table {
		for _, c := range p.Charts {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Version < out[j].Version
	})
	return out
}

// choose is the pin a cluster gets: the label's version when set, else the
// minor's.
func choose(addon, label, tag, minor string) (Pin, error) {
	if tag != "" {
		p, ok := ByVersion(addon, tag)
		if !ok {
			return Pin{}, fmt.Errorf("%s=%s is not a pinned %s version; pinned: %s (see docs/addons.md; an operator's own ConfigMap magnetite-addon-%s-<version> in the project's namespace replaces the chart)",
				label, tag, addon, strings.Join(Versions(addon), ", "), addon)
		}
		return p, nil
	}
	p, ok := Pinned(addon, minor)
	if !ok {
		return Pin{}, fmt.Errorf("no %s is pinned for Kubernetes %s; Magnetite pins addons for Kubernetes %s", addon, minor, strings.Join(Minors, ", "))
	}
	return p, nil
}

// ManifestFile is one file of a project's tag, by its path there and its
// sha256 (hex).
type ManifestFile struct{ Path, SHA256 string }

// snapshotterFiles are external-snapshotter v8.6.0's kustomizations
// client/config/crd and deploy/kubernetes/snapshot-controller, in their
// order.
var snapshotterFiles = []ManifestFile{
	{"client/config/crd/snapshot.storage.k8s.io_volumesnapshotclasses.yaml", "75e6565aac2c0f2949ed13ea884bbaa388cb7be576b558b709cf1168e011828d"},
	{"client/config/crd/snapshot.storage.k8s.io_volumesnapshotcontents.yaml", "895a3c1e73b60f06a0deb566dd123d01bdf1b2efc5d5ff5231ff8bbcf42dafc7"},
	{"client/config/crd/snapshot.storage.k8s.io_volumesnapshots.yaml", "b032116e987fb1d7d93cec7d942833adeb9d95c9bdc7e00c10b280c2fe4a6c33"},
	{"client/config/crd/groupsnapshot.storage.k8s.io_volumegroupsnapshotclasses.yaml", "0ac1b24c628e73fbe3352c21c7929707453252a64072184727a82d2f3c42fc51"},
	{"client/config/crd/groupsnapshot.storage.k8s.io_volumegroupsnapshotcontents.yaml", "dc148b9798e4aa080ab3e2dc0681e029ef75ca31adfdf96cf0a14ec309ea9c79"},
	{"client/config/crd/groupsnapshot.storage.k8s.io_volumegroupsnapshots.yaml", "59abaccbe9e85a611848489da53d855db4ab606894b0c4cab109a574b4a95b10"},
	{"deploy/kubernetes/snapshot-controller/rbac-snapshot-controller.yaml", "99c4ac480b6c9563be0d85599e29cc7b68b25a82d250b0e789726727551e8d38"},
	{"deploy/kubernetes/snapshot-controller/setup-snapshot-controller.yaml", "920166ff9001203e9def2504903eb196cd1da55d520f022807cc6ac82ef8eeba"},
}

// ManifestFiles are the files Magnetite packages as a chart for a project
// that publishes manifests but no chart (external-snapshotter); nil for a
// real chart.
func ManifestFiles(c Chart) []ManifestFile {
	if c.Name == ChartSnapshotter && c.Version == "v8.6.0" {
		return snapshotterFiles
	}
	return nil
}
