package driver

import (
	"strings"

	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
)

// zeroDiskRefusal is Nova's answer (403) to a user without the admin role
// who boots an image on a flavor whose root disk is 0 GiB
// (nova/compute/api.py, _validate_flavor_image_nostatus, and the policy
// os_compute_api:servers:create:zero_disk_flavor).
const zeroDiskRefusal = "Only volume-backed servers are allowed for flavors with zero disk."

// floatingIPRefusal is the meaning of Neutron's 404
// ExternalGatewayForFloatingIPNotFound (neutron/db/l3_db.py,
// _get_assoc_data): a floating IP reaches a port only through a router
// whose gateway is on the floating IP's network and that has an
// interface on the port's subnet.
const floatingIPRefusal = "ExternalGatewayForFloatingIPNotFound: External network %s is not reachable from the subnet of network %s, so no port on it can be associated with a floating IP"

// resolvePlacement checks where the node groups' servers go against what
// Nova offers: the zones named, the flavors' root disks, and hard
// anti-affinity among bare-metal machines, which Nova counts per
// nova-compute service host while Ironic nodes share one or a few.
func resolvePlacement(s *Shape, in ShapeInput) {
	f := in.Facts
	zones := "none"
	if f != nil && len(f.Zones) > 0 {
		zones = strings.Join(f.Zones, ", ")
	}
	for _, g := range s.Groups {
		if z := g.Labels.String(labels.AvailabilityZone); z != "" && !f.HasZone(z) {
			s.groupProblem(g, ": availability_zone %s is not one of Nova's availability zones (%s); set the label to one of them or remove it", z, zones)
		}
		if g.HasFlavor && g.Flavor.Disk == 0 && g.BootVolumeSize == 0 {
			s.groupProblem(g, ": flavor %s has a root disk of 0 GiB and Nova refuses to boot an image on it for users without the admin role (%q); give the node group a boot_volume_size label (a Cinder root volume) or use a flavor whose disk is the nodes' root disk size",
				g.FlavorRef, zeroDiskRefusal)
		}
		if g.BareMetal() && g.Labels.String(labels.ServerGroupPolicies) == "anti-affinity" {
			hosts := ironicComputeHosts(in)
			if n := max(g.Replicas, g.Max); n > hosts {
				s.groupProblem(g, ": server_group_policies=anti-affinity needs a nova-compute host per machine, but the cloud's Ironic nodes sit behind %d nova-compute host(s) and the group has up to %d machines, so Nova would fail machine %d and every one after it; use server_group_policies=soft-anti-affinity (spread where possible) or at most %d machines",
					hosts, n, hosts+1, hosts)
			}
		}
	}
	cpZones := s.Labels.List(labels.ControlPlaneAvailabilityZone)
	for _, z := range cpZones {
		if !f.HasZone(z) {
			s.problem("control_plane_availability_zones names %s, which is not one of Nova's availability zones (%s); name only those", z, zones)
		}
	}
	// CAPO offers the control plane every Nova zone as a failure domain
	// unless control_plane_availability_zones limits them
	// (controllers/openstackcluster_controller.go, v0.14.7): a bare-metal
	// control plane would land in zones that hold no Ironic node of its
	// flavor, where Nova answers "No valid host".
	if cp := s.ControlPlane; cp != nil && cp.BareMetal() && len(cpZones) == 0 && f != nil && len(f.Zones) > 1 &&
		cp.Labels.String(labels.AvailabilityZone) == "" {
		s.problem("the control plane is bare metal and Nova has %d availability zones (%s): Cluster API would spread its machines over all of them, and Nova finds no host in a zone without Ironic nodes of flavor %s; set control_plane_availability_zones to the zones that hold them",
			len(f.Zones), zones, cp.FlavorRef)
	}
}

// ironicComputeHosts is how many nova-compute hosts the Ironic nodes sit
// behind: what the facts say, else the operator's setting, else one (a
// user without the admin role cannot list Nova's services or hypervisors,
// and one nova-compute for Ironic is the usual deployment).
func ironicComputeHosts(in ShapeInput) int {
	switch {
	case in.Facts != nil && in.Facts.IronicComputeHosts > 0:
		return in.Facts.IronicComputeHosts
	case in.Defaults.IronicComputeHosts > 0:
		return in.Defaults.IronicComputeHosts
	}
	return 1
}

// resolveServices checks what the cluster asks of the cloud's optional
// services (Octavia, Neutron's routers and floating IPs, Cinder) against
// what the cloud has, and where the floating IP the API gets can attach.
func resolveServices(s *Shape, in ShapeInput, ct *model.ClusterTemplate, c *model.Cluster) {
	has := in.Facts.Has()
	l := s.Labels
	if !has.LoadBalancers && c.MasterLBEnabled {
		s.problem("master_lb_enabled is set but the cloud has no Octavia (its catalog lists no load-balancer service); use a cluster template with master_lb_enabled=false")
	}
	ext := FirstSet(ct.ExternalNetworkID)
	s.APIFloatingIP = c.FloatingIPEnabled && l.Bool(labels.MasterLBFloatingIPEnabled) && ext != ""
	if !has.FloatingIPs && s.APIFloatingIP {
		s.APIFloatingIP = false
		explicit := l.IsSet(labels.APIServerFloatingIP) || l.IsSet(labels.MasterLBFloatingIPEnabled)
		if explicit {
			s.problem("the cloud's Neutron has no L3 extension (no routers or floating IPs), so the API cannot get a floating IP; remove the labels api_server_floating_ip and master_lb_floating_ip_enabled, or set floating_ip_enabled=false")
		} else {
			s.warn("the cloud's Neutron has no L3 extension (no routers or floating IPs): the API gets no floating IP and is reached on the cluster network's addresses")
		}
	}
	if s.APIFloatingIP {
		fixed := FirstSet(c.FixedNetwork, ct.FixedNetwork)
		net, okNet := in.Facts.Network(fixed)
		extNet, okExt := in.Facts.Network(ext)
		if fixed != "" && okNet && okExt && !net.Reaches(extNet.ID) {
			s.problem(floatingIPRefusal+"; add a router with its gateway on %s and an interface on the subnet of %s, or set floating_ip_enabled=false",
				extNet.ID, net.ID, extNet.Name, net.Name)
		}
	}
	if !has.BlockStorage {
		for _, g := range s.Groups {
			if g.BootVolumeSize > 0 {
				s.groupProblem(g, ": boot_volume_size=%d asks for a Cinder root volume but the cloud has no Cinder (its catalog lists no block-storage service); remove the label", g.BootVolumeSize)
			}
		}
		if v, set := l.LookupBool(labels.CinderCSIEnabled); set && v {
			s.problem("cinder_csi_enabled=true but the cloud has no Cinder (its catalog lists no block-storage service); set it to false")
		}
	}
}
