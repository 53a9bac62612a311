package capi

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/driver"
)

// APIVersions are the versions rendered for each API group, read from the
// request's served versions (driver.Request.APIVersions); the renderer
// refuses versions whose shape it does not produce.
type APIVersions struct {
	Cluster        string // cluster.x-k8s.io
	Bootstrap      string // bootstrap.cluster.x-k8s.io
	ControlPlane   string // controlplane.cluster.x-k8s.io
	Addons         string // addons.cluster.x-k8s.io
	Infrastructure string // infrastructure.cluster.x-k8s.io, the infrastructure's own kinds
}

// CoreAPIVersion is the one version of Cluster API's own groups (core,
// bootstrap, control plane, addons) the renderer writes: the v1beta2
// contract of Cluster API v1.11 and newer.
const CoreAPIVersion = "v1beta2"

// DefaultAPIVersions are Cluster API v1.14's (contract v1beta2) and an
// infrastructure's preferred version: what a request that names no served
// version renders.
var DefaultAPIVersions = APIVersions{
	Cluster: CoreAPIVersion, Bootstrap: CoreAPIVersion, ControlPlane: CoreAPIVersion, Addons: CoreAPIVersion, Infrastructure: CoreAPIVersion,
}

// RendersCoreAPIVersion reports whether the renderer writes objects of
// Cluster API's own groups (core, bootstrap, control plane, addons) at
// version, so that doctor refuses the management clusters every create
// would fail on. Infrastructure kinds declare their versions themselves
// (kinds.Kind.Versions).
func RendersCoreAPIVersion(version string) bool { return version == CoreAPIVersion }

// servedVersions picks the version of each group from the apiVersion the
// management cluster serves a kind of it at: the infrastructure group's is
// the one of the infrastructure's own cluster template kind (infraKind),
// since several providers of that group may be installed at different
// versions.
func servedVersions(served map[string]string, infraKind, infraDefault string) APIVersions {
	v := DefaultAPIVersions
	v.Infrastructure = infraDefault
	pick := func(kind string, dst *string) {
		if av, ok := served[kind]; ok {
			if i := strings.LastIndex(av, "/"); i >= 0 {
				*dst = av[i+1:]
			}
		}
	}
	pick("Cluster", &v.Cluster)
	pick("KubeadmConfigTemplate", &v.Bootstrap)
	pick("KubeadmControlPlaneTemplate", &v.ControlPlane)
	pick("ClusterResourceSet", &v.Addons)
	pick(infraKind, &v.Infrastructure)
	return v
}

// check refuses versions the renderer does not write: Cluster API's own
// groups at anything but v1beta2, the infrastructure's kinds at a version
// it does not convert to (infra lists those, preferred first).
func (v APIVersions) check(infra []string, releases string) error {
	for _, g := range []struct{ group, version string }{
		{"cluster.x-k8s.io", v.Cluster}, {"bootstrap.cluster.x-k8s.io", v.Bootstrap},
		{"controlplane.cluster.x-k8s.io", v.ControlPlane}, {"addons.cluster.x-k8s.io", v.Addons},
	} {
		if !RendersCoreAPIVersion(g.version) {
			return fmt.Errorf("capi: %s/%s is not supported: Magnetite writes Cluster API's own kinds at %s (Cluster API v1.11 or newer)", g.group, g.version, CoreAPIVersion)
		}
	}
	if !slices.Contains(infra, v.Infrastructure) {
		msg := fmt.Sprintf("capi: infrastructure.cluster.x-k8s.io/%s is not supported: Magnetite writes this infrastructure's kinds at %s",
			v.Infrastructure, strings.Join(infra, " or "))
		if releases != "" {
			msg += " (" + releases + ")"
		}
		return errors.New(msg)
	}
	return nil
}

func (v APIVersions) cluster() string      { return "cluster.x-k8s.io/" + v.Cluster }
func (v APIVersions) bootstrap() string    { return "bootstrap.cluster.x-k8s.io/" + v.Bootstrap }
func (v APIVersions) controlPlane() string { return "controlplane.cluster.x-k8s.io/" + v.ControlPlane }
func (v APIVersions) addons() string       { return "addons.cluster.x-k8s.io/" + v.Addons }

// Infra returns the apiVersion of infrastructure kinds.
func (v APIVersions) Infra() string { return "infrastructure.cluster.x-k8s.io/" + v.Infrastructure }

// Options tune a driver; zero values take the documented defaults.
type Options struct {
	// DefaultBootVolumeSize (GiB) applies to VM node groups without a
	// boot_volume_size label; bare metal always defaults to 0.
	DefaultBootVolumeSize int
	// IronicComputeHosts is how many nova-compute hosts the cloud's Ironic
	// nodes sit behind ([driver] ironic_compute_hosts; 0 means one).
	IronicComputeHosts int
	// Timeouts used when the node_startup_timeout / node_unhealthy_timeout
	// labels are not set.
	VMNodeStartupTimeout, BMNodeStartupTimeout     time.Duration
	VMNodeUnhealthyTimeout, BMNodeUnhealthyTimeout time.Duration
	// InMemoryBootTime is how long a simulated virtual machine of the
	// in-memory infrastructure boots ([driver] inmemory_boot_time; 0 means
	// inmemory.DefaultBootTime).
	InMemoryBootTime time.Duration
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.VMNodeStartupTimeout, 10*time.Minute)
	// A physical server's POST, PXE/iPXE deploy and reboot commonly take
	// 15-30 minutes; 45 leaves room for a slow BMC.
	def(&o.BMNodeStartupTimeout, 45*time.Minute)
	def(&o.VMNodeUnhealthyTimeout, 5*time.Minute)
	// A bare-metal reboot alone can outlast a VM's whole grace period.
	def(&o.BMNodeUnhealthyTimeout, 15*time.Minute)
	return o
}

// shapeDefaults are the options the resolver falls back on.
func (o Options) shapeDefaults() driver.ShapeDefaults {
	return driver.ShapeDefaults{BootVolumeSize: o.DefaultBootVolumeSize,
		VMNodeStartupTimeout: o.VMNodeStartupTimeout, BMNodeStartupTimeout: o.BMNodeStartupTimeout,
		VMNodeUnhealthyTimeout: o.VMNodeUnhealthyTimeout, BMNodeUnhealthyTimeout: o.BMNodeUnhealthyTimeout,
		IronicComputeHosts: o.IronicComputeHosts}
}
