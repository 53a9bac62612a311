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
