// Package facts holds what the cloud says about the resources a cluster
// uses (Nova flavors, Glance images, Neutron networks, the server groups the
// conductor made), as drivers render from them. The cloud reader
// (internal/cloud), the bare-metal capacity check and the driver seam all
// share these types; this package imports nothing of Magnetite's.
package facts

import (
	"maps"
	"slices"
	"strings"
)

// Facts are what the cloud says about the resources a cluster uses, read
// once per operation by the conductor (or from a file by `magnetite
// render`). Field names follow the OpenStack APIs they come from.
type Facts struct {
	Flavors  []Flavor  `json:"flavors,omitempty"`
	Images   []Image   `json:"images,omitempty"`
	Networks []Network `json:"networks,omitempty"`
	// ServerGroups maps the name of each Nova server group the conductor
	// made for the cluster (Result.ServerGroups) to its ID.
	ServerGroups map[string]string `json:"server_groups,omitempty"`
	// Zones are Nova's availability zones the user can boot servers in
	// (GET /os-availability-zone, which needs no admin role); nil when
	// Nova was not asked, and then no zone is refused.
	Zones []string `json:"availability_zones,omitempty"`
	// Services say which optional services and extensions the cloud has;
	// nil when not read, and then every one is assumed.
	Services *Services `json:"services,omitempty"`
	// IronicComputeHosts is how many nova-compute service hosts the
	// cloud's Ironic nodes sit behind (0: not known; the renderer then
	// takes the operator's [driver] ironic_compute_hosts).
	IronicComputeHosts int `json:"ironic_compute_hosts,omitempty"`
}

// Services are the optional parts of a cloud a cluster may need.
type Services struct {
	// FloatingIPs: Neutron has its L3 extension (alias "router"), so
	// routers and floating IPs exist. Bare-metal clouds on provider
	// networks often run without it.
	FloatingIPs bool `json:"floating_ips"`
	// LoadBalancers: the catalog lists Octavia (load-balancer).
	LoadBalancers bool `json:"load_balancers"`
	// BlockStorage: the catalog lists Cinder (block-storage or volumev3).
	BlockStorage bool `json:"block_storage"`
}

// HasZone reports whether Nova offers zone; true when the zones are not
// known.
func (f *Facts) HasZone(zone string) bool {
	return f == nil || f.Zones == nil || slices.Contains(f.Zones, zone)
}

// Has reports which optional services the cloud has: all of them when
// the facts do not say.
func (f *Facts) Has() Services {
	if f == nil || f.Services == nil {
		return Services{FloatingIPs: true, LoadBalancers: true, BlockStorage: true}
	}
	return *f.Services
}

// Flavor is a Nova flavor with its extra specs.
type Flavor struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	VCPUs int    `json:"vcpus"`
	// RAM in MiB and Disk in GiB, as Nova reports them.
	RAM        int               `json:"ram"`
	Disk       int               `json:"disk"`
	ExtraSpecs map[string]string `json:"extra_specs,omitempty"`
}

// BareMetal reports whether Nova schedules the flavor onto Ironic nodes,
// and the extra spec that says so: a custom resource class requested as
// `resources:CUSTOM_<CLASS>=1`, or the older `baremetal=true`.
func (f Flavor) BareMetal() (spec string, ok bool) {
	for _, k := range slices.Sorted(maps.Keys(f.ExtraSpecs)) {
		if strings.HasPrefix(k, "resources:CUSTOM_") && strings.TrimSpace(f.ExtraSpecs[k]) == "1" {
			return k + "=1", true
		}
	}
	if strings.EqualFold(strings.TrimSpace(f.ExtraSpecs["baremetal"]), "true") {
		return "baremetal=true", true
	}
	return "", false
}

// Image is a Glance image with its properties.
type Image struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Properties map[string]string `json:"properties,omitempty"`
}

// OSDistro is the image's os_distro property, normalised.
func (i Image) OSDistro() string { return NormalizeOSDistro(i.Properties["os_distro"]) }

// NormalizeOSDistro maps Glance os_distro spellings to the names drivers
// advertise.
func NormalizeOSDistro(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "rocky":
		return "rockylinux"
	case "flatcar-container-linux":
		return "flatcar"
	}
	return s
}

// KubeVersion is the image's kube_version property (the Kubernetes version
// baked into it), or "".
func (i Image) KubeVersion() string { return strings.TrimSpace(i.Properties["kube_version"]) }

// Network is a Neutron network.
type Network struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// PortSecurityEnabled is nil when unknown.
	PortSecurityEnabled *bool `json:"port_security_enabled,omitempty"`
	External            bool  `json:"router:external,omitempty"`
	// Shared networks belong to another project (often the cloud's own
	// provider networks), whose routers the user cannot see.
	Shared bool `json:"shared,omitempty"`
	// ExternalRoutes are the external networks a router the user can see
	// connects this network's subnets to (through its gateway), read when
	// RoutesKnown; a floating IP on one of them reaches this network's
	// ports, and Neutron refuses any other (ExternalGatewayForFloatingIPNotFound).
	ExternalRoutes []string `json:"external_routes,omitempty"`
	RoutesKnown    bool     `json:"routes_known,omitempty"`
}

// Reaches reports whether a floating IP of the external network ext can
// be associated with a port on n: true when its routes are not known.
func (n Network) Reaches(ext string) bool {
	return !n.RoutesKnown || slices.Contains(n.ExternalRoutes, ext)
}

// Flavor finds a flavor by ID, else by a unique name.
func (f *Facts) Flavor(ref string) (Flavor, bool) {
	if f == nil {
		return Flavor{}, false
	}
	return find(f.Flavors, ref, func(x Flavor) (string, string) { return x.ID, x.Name })
}

// Image finds an image by ID, else by a unique name.
func (f *Facts) Image(ref string) (Image, bool) {
	if f == nil {
		return Image{}, false
	}
	return find(f.Images, ref, func(x Image) (string, string) { return x.ID, x.Name })
}

// Network finds a network by ID, else by a unique name.
func (f *Facts) Network(ref string) (Network, bool) {
	if f == nil {
		return Network{}, false
	}
	return find(f.Networks, ref, func(x Network) (string, string) { return x.ID, x.Name })
}

func find[T any](items []T, ref string, ids func(T) (string, string)) (T, bool) {
	var zero T
	for _, it := range items {
		if id, _ := ids(it); id == ref {
			return it, true
		}
	}
	var match []T
	for _, it := range items {
		if _, name := ids(it); name == ref {
			match = append(match, it)
		}
	}
	if len(match) == 1 {
		return match[0], true
	}
	return zero, false
}
