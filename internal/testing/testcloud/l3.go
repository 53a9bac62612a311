package testcloud

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"

	"github.com/google/uuid"
)

// CloudRouterID is the cloud's own router (an admin's, as devstack makes
// router1): its gateway is on the external network and it has an
// interface on the private and the provisioning subnets, so their ports
// can hold floating IPs.
const CloudRouterID = "7c3e4a2b-9d9f-4f7b-9c5a-2e9b7a4d1e01"

// addCloudRouter makes the cloud's own router, unless Neutron lacks L3.
func (c *Cloud) addCloudRouter() {
	if c.lacks(WithoutL3) {
		return
	}
	c.mu.Lock()
	c.routers[CloudRouterID] = &Router{ID: CloudRouterID, Name: "router1", GatewayNetworkID: ExternalNetID}
	c.mu.Unlock()
	for _, s := range subnets {
		if s.NetworkID == PrivateNetID || s.NetworkID == ProvisioningNetID {
			c.SetCloudRoute(s.ID, true)
		}
	}
}

// neutronDefaultQuotas are Neutron's default per-project quotas of what
// the stand-in counts (neutron/conf/quota.py: DEFAULT_QUOTA_SG,
// DEFAULT_QUOTA_FIP).
var neutronDefaultQuotas = map[string]int{"security_group": 10, "floatingip": 50}

// SetNeutronQuota sets every project's quota of a Neutron resource
// ("security_group", "floatingip"), as `openstack quota set` does.
func (c *Cloud) SetNeutronQuota(resource string, limit int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.quotas[resource] = limit
}

// overQuota answers Neutron's OverQuota (neutron_lib/exceptions, a
// Conflict: 409) when the project already has its quota of resource,
// counting used. It holds c.mu.
func (c *Cloud) overQuota(w http.ResponseWriter, resource string, used int) bool {
	if limit, ok := c.quotas[resource]; ok && limit >= 0 && used >= limit {
		neutronFault(w, http.StatusConflict, "OverQuota", fmt.Sprintf("Quota exceeded for resources: ['%s'].", resource))
		return true
	}
	return false
}

// routerFor finds the router that carries a floating IP of network ext to
// port p: one with its gateway on ext and an interface on the subnet of
// p's address, preferring the subnet's gateway
// (neutron/db/l3_db.py, get_router_for_floatingip). It answers Neutron's
// ExternalGatewayForFloatingIPNotFound (neutron_lib/exceptions/l3.py, a
// NotFound: 404) when there is none. It holds c.mu.
func (c *Cloud) routerFor(w http.ResponseWriter, p *Port, ext string) (string, bool) {
	if len(p.FixedIPs) == 0 {
		neutronFault(w, http.StatusBadRequest, "BadRequest",
			fmt.Sprintf("Bad floatingip request: Port %s does not have any IPv4 address.", p.ID))
		return "", false
	}
	subnet := p.FixedIPs[0].SubnetID
	sub, _ := c.subnetFor(subnet, "")
	found := ""
	for _, iface := range c.ports {
		rt, ok := c.routers[iface.DeviceID]
		if !ok || iface.DeviceOwner != routerInterface || rt.GatewayNetworkID != ext ||
			!slices.ContainsFunc(iface.FixedIPs, func(ip FixedIP) bool { return ip.SubnetID == subnet }) {
			continue
		}
		if found == "" || iface.FixedIPs[0].IPAddress == netip.MustParsePrefix(sub.CIDR).Addr().Next().String() {
			found = rt.ID
		}
	}
	if found == "" {
		neutronFault(w, http.StatusNotFound, "ExternalGatewayForFloatingIPNotFound", fmt.Sprintf(
			"External network %s is not reachable from subnet %s.  Therefore, cannot associate Port %s with a Floating IP.",
			ext, subnet, p.ID))
		return "", false
	}
	return found, true
}

// associate points floating IP f at the port named (none: disassociates),
// refusing as Neutron does a port of another project or one no router
// connects to f's network. It holds c.mu.
func (c *Cloud) associate(w http.ResponseWriter, r *http.Request, f *FloatingIP, portID string) bool {
	if portID == "" {
		f.PortID, f.FixedIPAddress, f.RouterID = "", "", ""
		return true
	}
	p, ok := c.ports[portID]
	if !ok || p.ProjectID != r.Header.Get("X-Project-Id") {
		portNotFound(w, portID)
		return false
	}
	router, ok := c.routerFor(w, p, f.NetworkID)
	if !ok {
		return false
	}
	f.PortID, f.FixedIPAddress, f.RouterID = p.ID, p.FixedIPs[0].IPAddress, router
	return true
}

// l3Routes serve Neutron's L3 extension: routers and floating IPs, or,
// on a cloud without it, the 404 Neutron answers for a resource it does
// not know (neutron/pecan_wsgi/controllers/root.py, V2Controller._lookup
// aborts with webob's HTTPNotFound).
func (c *Cloud) l3Routes(mux *http.ServeMux) {
	if c.lacks(WithoutL3) {
		unknown := func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, "404 Not Found\n\nThe resource could not be found.\n\n   ")
		}
		for _, path := range []string{"/networking/v2.0/routers", "/networking/v2.0/floatingips"} {
			mux.HandleFunc(path, unknown)
			mux.HandleFunc(path+"/", unknown)
		}
		return
	}
	c.routerRoutes(mux)
	c.floatingIPRoutes(mux)
}

// floatingIPRoutes serve Neutron's floating IPs: what CAPO makes for its
// API load balancer and the cloud controller manager for Services, with
// Neutron's quota and its need of a router to the port.
func (c *Cloud) floatingIPRoutes(mux *http.ServeMux) {
	const base = "/networking/v2.0/floatingips"
	fips := kind[FloatingIP]{key: "floatingip", items: c.floatingIPs, view: fipView, locked: c.locked,
		fields: func(f *FloatingIP) map[string]string {
			return map[string]string{"project_id": f.ProjectID, "description": f.Description, "port_id": f.PortID, "floating_ip_address": f.Address}
		},
		notFound: neutronNotFound("FloatingIPNotFound", "Floating IP %s could not be found")}
	fips.serveReads(mux, base)
	mux.HandleFunc("POST "+base, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			FIP struct {
				NetworkID   string `json:"floating_network_id"`
				PortID      string `json:"port_id"`
				Description string `json:"description"`
			} `json:"floatingip"`
		}
		if !decoded(w, r, &body, neutronMalformed) {
			return
		}
		in := body.FIP
		n, ok := c.networkByID(in.NetworkID)
		if !ok {
			networkNotFound(w, in.NetworkID)
			return
		}
		if !n.External {
			neutronFault(w, http.StatusBadRequest, "BadRequest",
				fmt.Sprintf("Bad floatingip request: Network %s is not a valid external network.", in.NetworkID))
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		project := r.Header.Get("X-Project-Id")
		used := 0
		for _, f := range c.floatingIPs {
			if f.ProjectID == project {
				used++
			}
		}
		if c.overQuota(w, "floatingip", used) {
			return
		}
		f := &FloatingIP{ID: uuid.NewString(), Description: in.Description, NetworkID: in.NetworkID, ProjectID: project}
		if !c.associate(w, r, f, in.PortID) {
			return
		}
		c.nextFloating++
		f.Address = fmt.Sprintf("203.0.113.%d", c.nextFloating)
		c.floatingIPs[f.ID] = f
		writeJSON(w, http.StatusCreated, map[string]any{"floatingip": fipView(f)})
	})
	mux.HandleFunc("PUT "+base+"/{id}", fips.onOwned(func(w http.ResponseWriter, r *http.Request, f *FloatingIP) {
		var body struct {
			FIP struct {
				PortID *string `json:"port_id"`
			} `json:"floatingip"`
		}
		if !decoded(w, r, &body, neutronMalformed) {
			return
		}
		if body.FIP.PortID != nil && !c.associate(w, r, f, *body.FIP.PortID) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"floatingip": fipView(f)})
	}))
	mux.HandleFunc("DELETE "+base+"/{id}", fips.onOwned(func(w http.ResponseWriter, _ *http.Request, f *FloatingIP) {
		delete(c.floatingIPs, f.ID)
		w.WriteHeader(http.StatusNoContent)
	}))
}

// SetCloudRoute removes the cloud's own router's interface on one of its
// subnets (routed false) or adds it back, as an operator rewiring router1
// behind Magnetite's back would: without it, that subnet's ports cannot
// hold floating IPs.
func (c *Cloud) SetCloudRoute(subnetID string, routed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, p := range c.ports {
		if p.DeviceID == CloudRouterID && p.FixedIPs[0].SubnetID == subnetID {
			if routed {
				return
			}
			c.dropPort(id)
		}
	}
	if routed {
		sub, _ := c.subnetFor(subnetID, "")
		c.addPort(&Port{NetworkID: sub.NetworkID, DeviceID: CloudRouterID, DeviceOwner: routerInterface,
			FixedIPs: []FixedIP{{SubnetID: sub.ID, IPAddress: netip.MustParsePrefix(sub.CIDR).Addr().Next().String()}}})
	}
}
