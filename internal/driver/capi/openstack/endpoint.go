package openstack

import (
	"fmt"

	"github.com/magnetite-io/magnetite/internal/driver"
)

// CheckShape refuses a cluster whose Kubernetes API would get no address.
// CAPO takes the control plane endpoint from the API load balancer or from
// a floating IP (or from a fixed IP, which Magnetite does not set), and
// without either it answers "unable to determine control plane endpoint"
// on every reconcile (controllers/openstackcluster_controller.go,
// reconcileControlPlaneEndpoint, v0.14.7 and v0.15.0-beta.0): no machine is
// ever made and the cluster waits out its create_timeout. A cloud without
// Neutron's L3 extension leads there for every template without a load
// balancer.
func (Infrastructure) CheckShape(in driver.ShapeInput, s *driver.Shape) []string {
	c, ct := in.Cluster, in.Template
	if c == nil || ct == nil || c.MasterLBEnabled || s.APIFloatingIP {
		return nil
	}
	has := in.Facts.Has()
	var why string
	switch {
	case !has.FloatingIPs:
		why = "the cloud's Neutron has no L3 extension"
	case !c.FloatingIPEnabled:
		why = "floating_ip_enabled is false"
	case driver.FirstSet(ct.ExternalNetworkID) == "":
		why = "the template names no external network"
	default:
		why = "master_lb_floating_ip_enabled is false"
	}
	var fix string
	switch {
	case has.LoadBalancers && has.FloatingIPs:
		fix = "use a cluster template with master_lb_enabled=true, or give the API a floating IP (floating_ip_enabled=true, an external network and master_lb_floating_ip_enabled not false)"
	case has.LoadBalancers:
		fix = "use a cluster template with master_lb_enabled=true (the load balancer's address on the cluster network is the API's)"
	case has.FloatingIPs:
		fix = "give the API a floating IP (floating_ip_enabled=true, an external network and master_lb_floating_ip_enabled not false): the cloud has no Octavia"
	default:
		fix = "the cloud has neither Octavia nor Neutron's L3 extension, so CAPO cannot give any cluster's API an address"
	}
	return []string{fmt.Sprintf("the Kubernetes API would get neither a load balancer (master_lb_enabled is false) nor a floating IP (%s), "+
		"and CAPO has no other address for the control plane (it answers %q until the cluster times out); %s",
		why, "unable to determine control plane endpoint", fix)}
}
