package addons

import (
	"regexp"
	"strings"
)

// Cluster is what a cluster's addons depend on, as the renderer resolved it.
type Cluster struct {
	// Name is the Cluster object's name; charts use it as the cluster's
	// name (cloud controller manager, CSI cluster IDs, Cilium).
	Name string
	// ProjectID is the Keystone project owning the cluster, whose members
	// k8s-keystone-auth lets in.
	ProjectID   string
	KubeVersion string // v1.33.1
	// NetworkDriver is calico or cilium.
	NetworkDriver string
	PodCIDR       string
	ServiceCIDR   string
	// Registry is container_infra_prefix without its trailing slash: a
	// mirror every addon image is pulled from. Empty means upstream.
	Registry string
	// CloudProvider installs the OpenStack cloud controller manager.
	CloudProvider bool
	CinderCSI     bool
	ManilaCSI     bool
	KeystoneAuth  bool
	MetricsServer bool
	// Tags are the version labels the cluster sets, by addon.
	Tags map[string]Tag
}

// Tag is a version label: its name and value.
type Tag struct{ Label, Value string }

// Release is one addon as a cluster gets it: the pinned charts, the
// namespace they are installed in and the values derived from the cluster.
type Release struct {
	Addon string
	Pin   Pin
	// Namespace is the workload cluster's namespace of the release.
	Namespace string
	Values    map[string]any
	// KubeVersion is the workload cluster's version, which charts see as
	// .Capabilities.KubeVersion.
	KubeVersion string
	// Registry is the cluster's container_infra_prefix (no trailing
	// slash): the renderer points every image key of the charts there.
	Registry string
	// KeystoneCA is the CA of the Keystone endpoint k8s-keystone-auth calls,
	// when it is private (WithKeystone).
	KeystoneCA []byte
}

// Version is the software version the release installs.
func (r Release) Version() string { return r.Pin.AppVersion }

var nameUnsafe = regexp.MustCompile(`[^a-z0-9.-]+`)

// OverrideName is the operator's own ConfigMap that replaces the charts:
// magnetite-addon-<addon>-<version>, in the cluster's namespace.
func (r Release) OverrideName() string {
	return strings.Trim(nameUnsafe.ReplaceAllString(strings.ToLower("magnetite-addon-"+r.Addon+"-"+r.Version()), "-"), "-.")
}

var minorRE = regexp.MustCompile(`^v?(\d+)\.(\d+)`)

// Minor is "1.33" for v1.33.1.
func Minor(kubeVersion string) string {
	m := minorRE.FindStringSubmatch(kubeVersion)
	if m == nil {
		return ""
	}
	return m[1] + "." + m[2]
}

// Select lists the releases a cluster gets, in install order (the CNI
// first), or the problems that keep it from getting them.
func Select(c Cluster) ([]Release, []string) {
	var want []string
	switch c.NetworkDriver {
	case "calico":
		want = append(want, Calico)
	case "cilium":
		want = append(want, Cilium)
	}
	if c.CloudProvider {
		want = append(want, CloudControllerManager)
	}
	if c.CinderCSI {
		// Cinder's csi-snapshotter needs the VolumeSnapshot API.
		want = append(want, SnapshotController, CinderCSI)
	}
	if c.ManilaCSI {
		// Manila's node plugin hands NFS mounts to csi-driver-nfs.
		want = append(want, NFSCSI, ManilaCSI)
	}
	if c.KeystoneAuth {
		want = append(want, KeystoneAuth)
	}
	if c.MetricsServer {
		want = append(want, MetricsServer)
	}
	var out []Release
	var problems []string
	minor := Minor(c.KubeVersion)
	for _, a := range want {
		t := c.Tags[a]
		pin, err := choose(a, t.Label, t.Value, minor)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		ns, vals := values(a, c, pin)
		out = append(out, Release{Addon: a, Pin: pin, Namespace: ns, Values: vals, KubeVersion: c.KubeVersion, Registry: c.Registry})
	}
	return out, problems
}
