package capi

import (
	"maps"
	"slices"
)

// OSProfile is what the renderer needs to know about a node operating
// system.
type OSProfile struct {
	// Name is the os_distro the profile serves.
	Name string
	// Ignition says nodes are configured by Ignition rather than cloud-init.
	Ignition bool
}

var osProfiles = map[string]OSProfile{
	"ubuntu":     {Name: "ubuntu"},
	"debian":     {Name: "debian"},
	"rockylinux": {Name: "rockylinux"},
	"flatcar":    {Name: "flatcar", Ignition: true},
}

// SupportedOS lists the os_distro values the Cluster API driver serves.
func SupportedOS() []string { return slices.Sorted(maps.Keys(osProfiles)) }

func (o OSProfile) bootstrapFormat() string {
	if o.Ignition {
		return "ignition"
	}
	return "cloud-config"
}
