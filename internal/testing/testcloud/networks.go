package testcloud

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"

	"github.com/google/uuid"
)

// Router is a Neutron router as the stand-in holds it: its gateway on an
// external network and its interfaces (ports of device owner
// network:router_interface).
type Router struct {
	ID, Name, Description, ProjectID, GatewayNetworkID string
}

const routerInterface = "network:router_interface"

// Networks returns the networks projects made (not the cloud's own).
func (c *Cloud) Networks() []network { return snapshot(&c.netMu, c.nets) }

// Subnets returns the subnets projects made (not the cloud's own).
func (c *Cloud) Subnets() []Subnet { return snapshot(&c.netMu, c.subs) }

// Routers returns the routers the stand-in holds, of every project (not
// the cloud's own).
func (c *Cloud) Routers() []Router {
	return slices.DeleteFunc(snapshot(&c.mu, c.routers), func(rt Router) bool { return rt.ProjectID == "" })
}

// networkByID finds one of the cloud's networks or of a project's.
func (c *Cloud) networkByID(id string) (network, bool) {
	own := c.cloudNetworks()
	if i := slices.IndexFunc(own, func(n network) bool { return n.ID == id }); i >= 0 {
		return own[i], true
	}
	c.netMu.Lock()
	defer c.netMu.Unlock()
	if n, ok := c.nets[id]; ok {
		return *n, true
	}
	return network{}, false
}

// usableNetwork finds a network the caller's project may use (the cloud's
// or its own), answering Neutron's NetworkNotFound when there is none.
func (c *Cloud) usableNetwork(w http.ResponseWriter, r *http.Request, id string) (network, bool) {
	n, ok := c.networkByID(id)
	if !ok || (n.ProjectID != "" && n.ProjectID != r.Header.Get("X-Project-Id")) {
		networkNotFound(w, id)
		return network{}, false
	}
	return n, true
}

// visibleNetworks are the cloud's networks and the project's own.
func (c *Cloud) visibleNetworks(project string) []network {
	return visible(c, c.cloudNetworks(), c.nets, func(n *network) string { return n.ProjectID }, project)
}

// cloudNetworks are the networks of the cloud itself: the fixed ones and
// those an operator added (AddExternalNetwork).
func (c *Cloud) cloudNetworks() []network {
	c.netMu.Lock()
	defer c.netMu.Unlock()
	return append(slices.Clone(networks), c.addedNets...)
}

// AddExternalNetwork adds an external network every project sees, as an
// operator adding a second provider network does, and returns its ID.
func (c *Cloud) AddExternalNetwork(name string) string {
	c.netMu.Lock()
	defer c.netMu.Unlock()
	id := uuid.NewString()
	c.addedNets = append(c.addedNets, network{ID: id, Name: name, External: true})
	return id
}

// visibleSubnets are the cloud's subnets and the project's own.
func (c *Cloud) visibleSubnets(project string) []Subnet {
	return visible(c, subnets, c.subs, func(s *Subnet) string { return s.ProjectID }, project)
}

// visible are the cloud's own items and those of a project's (all of
// them with project "*"), in ID order.
func visible[T any](c *Cloud, own []T, made map[string]*T, owner func(*T) string, project string) []T {
	out := slices.Clone(own)
	c.netMu.Lock()
	defer c.netMu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(made)) {
		if it := made[id]; project == "*" || owner(it) == project {
			out = append(out, *it)
		}
	}
	return out
}

func routerView(rt *Router) map[string]any {
	var gw any
	if rt.GatewayNetworkID != "" {
		gw = map[string]any{"network_id": rt.GatewayNetworkID, "enable_snat": true, "external_fixed_ips": []any{}}
	}
	return map[string]any{"id": rt.ID, "name": rt.Name, "description": rt.Description, "project_id": rt.ProjectID,
		"tenant_id": rt.ProjectID, "external_gateway_info": gw, "status": "ACTIVE", "admin_state_up": true,
		"routes": []any{}, "tags": []string{}}
}

// projectNetworkRoutes serve what a project makes of Neutron's networking,
// as CAPO does for a cluster without a fixed network: networks, subnets
// and routers with their interfaces, and security group rules. Neutron's
// refusals: a network or subnet with ports in use, a router gateway on a
// network that is not external, a router that still has interfaces, an
// overlapping or malformed CIDR, and a router interface port deleted
// through the port API.
func (c *Cloud) projectNetworkRoutes(mux *http.ServeMux) {
	// A project's networks and subnets are guarded by c.netMu, and
	// their deletes read the ports (c.mu) too.
	netLocked := func(h http.HandlerFunc) http.HandlerFunc {
		return c.locked(func(w http.ResponseWriter, r *http.Request) {
			c.netMu.Lock()
			defer c.netMu.Unlock()
			h(w, r)
		})
	}
	nets := kind[network]{items: c.nets, locked: netLocked, notFound: networkNotFound,
		fields: projectOf(func(n *network) string { return n.ProjectID })}
	subs := kind[Subnet]{items: c.subs, locked: netLocked, notFound: subnetNotFound,
		fields: projectOf(func(s *Subnet) string { return s.ProjectID })}
	mux.HandleFunc("POST /networking/v2.0/networks", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			N struct {
				Name         string `json:"name"`
				PortSecurity *bool  `json:"port_security_enabled"`
			} `json:"network"`
		}
		if !decoded(w, r, &body, neutronMalformed) {
			return
		}
		n := &network{ID: uuid.NewString(), Name: body.N.Name, ProjectID: r.Header.Get("X-Project-Id"),
			PortSecurityDisabled: body.N.PortSecurity != nil && !*body.N.PortSecurity}
		c.netMu.Lock()
		c.nets[n.ID] = n
		c.netMu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"network": c.networkView(*n)})
	})
	mux.HandleFunc("DELETE /networking/v2.0/networks/{id}", nets.onOwned(func(w http.ResponseWriter, _ *http.Request, n *network) {
		id := n.ID
		for _, p := range c.ports {
			if p.NetworkID == id {
				neutronFault(w, http.StatusConflict, "NetworkInUse",
					fmt.Sprintf("Unable to complete operation on network %s. There are one or more ports still in use on the network.", id))
				return
			}
		}
		for sid, s := range c.subs {
			if s.NetworkID == id {
				delete(c.subs, sid)
			}
		}
		delete(c.nets, id)
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("POST /networking/v2.0/subnets", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			S struct {
				Name           string   `json:"name"`
				Description    string   `json:"description"`
				NetworkID      string   `json:"network_id"`
				CIDR           string   `json:"cidr"`
				DNSNameservers []string `json:"dns_nameservers"`
			} `json:"subnet"`
		}
		if !decoded(w, r, &body, neutronMalformed) {
			return
		}
		in := body.S
		n, ok := c.usableNetwork(w, r, in.NetworkID)
		if !ok {
			return
		}
		prefix, err := netip.ParsePrefix(in.CIDR)
		if err != nil || prefix.Masked() != prefix {
			neutronFault(w, http.StatusBadRequest, "InvalidInput", fmt.Sprintf("Invalid input for cidr. Reason: '%s' is not a valid IP subnet.", in.CIDR))
			return
		}
		for _, s := range c.visibleSubnets(r.Header.Get("X-Project-Id")) {
			if s.NetworkID == n.ID && netip.MustParsePrefix(s.CIDR).Overlaps(prefix) {
				neutronFault(w, http.StatusBadRequest, "InvalidInput", fmt.Sprintf(
					"Invalid input for operation: Requested subnet with cidr: %s for network: %s overlaps with another subnet.", in.CIDR, n.ID))
				return
			}
		}
		s := &Subnet{ID: uuid.NewString(), Name: in.Name, Description: in.Description, NetworkID: n.ID, CIDR: in.CIDR,
			DNSNameservers: in.DNSNameservers, ProjectID: r.Header.Get("X-Project-Id")}
		c.netMu.Lock()
		c.subs[s.ID] = s
		c.netMu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"subnet": subnetView(*s)})
	})
	mux.HandleFunc("DELETE /networking/v2.0/subnets/{id}", subs.onOwned(func(w http.ResponseWriter, _ *http.Request, s *Subnet) {
		id := s.ID
		for _, p := range c.ports {
			if slices.ContainsFunc(p.FixedIPs, func(ip FixedIP) bool { return ip.SubnetID == id }) {
				neutronFault(w, http.StatusConflict, "SubnetInUse",
					fmt.Sprintf("Unable to complete operation on subnet %s: One or more ports have an IP allocation from this subnet.", id))
				return
			}
		}
		delete(c.subs, id)
		w.WriteHeader(http.StatusNoContent)
	}))
}

// routerRoutes serve Neutron's routers and their interfaces.
func (c *Cloud) routerRoutes(mux *http.ServeMux) {
	const base = "/networking/v2.0/routers"
	routers := kind[Router]{key: "router", items: c.routers, view: routerView, locked: c.locked,
		fields: func(rt *Router) map[string]string {
			return map[string]string{"project_id": rt.ProjectID, "name": rt.Name, "id": rt.ID}
		},
		notFound: neutronNotFound("RouterNotFound", "Router %s could not be found")}
	routers.serveReads(mux, base)
	mux.HandleFunc("POST "+base, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			R struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				Gateway     *struct {
					NetworkID string `json:"network_id"`
				} `json:"external_gateway_info"`
			} `json:"router"`
		}
		if !decoded(w, r, &body, neutronMalformed) {
			return
		}
		rt := &Router{ID: uuid.NewString(), Name: body.R.Name, Description: body.R.Description, ProjectID: r.Header.Get("X-Project-Id")}
		if gw := body.R.Gateway; gw != nil && gw.NetworkID != "" {
			n, ok := c.networkByID(gw.NetworkID)
			if !ok {
				networkNotFound(w, gw.NetworkID)
				return
			}
			if !n.External {
				// neutron's l3_db validation of the gateway: a BadRequest.
				neutronFault(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("Bad router request: Network %s is not an external network.", n.ID))
				return
			}
			rt.GatewayNetworkID = n.ID
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.routers[rt.ID] = rt
		writeJSON(w, http.StatusCreated, map[string]any{"router": routerView(rt)})
	})
	mux.HandleFunc("DELETE "+base+"/{id}", routers.onOwned(func(w http.ResponseWriter, _ *http.Request, rt *Router) {
		for _, p := range c.ports {
			if p.DeviceID == rt.ID && p.DeviceOwner == routerInterface {
				neutronFault(w, http.StatusConflict, "RouterInUse", fmt.Sprintf("Router %s still has ports", rt.ID))
				return
			}
		}
		delete(c.routers, rt.ID)
		w.WriteHeader(http.StatusNoContent)
	}))
	iface := func(add bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				SubnetID string `json:"subnet_id"`
			}
			if !decoded(w, r, &body, neutronMalformed) {
				return
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			rt, ok := routers.own(w, r)
			if !ok {
				return
			}
			sub, ok := c.subnetFor(body.SubnetID, "")
			if !ok || body.SubnetID == "" {
				subnetNotFound(w, body.SubnetID)
				return
			}
			var existing *Port
			for _, p := range c.ports {
				if p.DeviceID == rt.ID && p.DeviceOwner == routerInterface && p.FixedIPs[0].SubnetID == sub.ID {
					existing = p
				}
			}
			switch {
			case add && existing != nil:
				neutronFault(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("Bad router request: Router already has a port on subnet %s.", sub.ID))
			case add:
				gateway := netip.MustParsePrefix(sub.CIDR).Addr().Next()
				p := c.addPort(&Port{NetworkID: sub.NetworkID, ProjectID: rt.ProjectID, DeviceID: rt.ID, DeviceOwner: routerInterface,
					FixedIPs: []FixedIP{{SubnetID: sub.ID, IPAddress: gateway.String()}}})
				writeJSON(w, http.StatusOK, map[string]any{"id": rt.ID, "subnet_id": sub.ID, "subnet_ids": []string{sub.ID},
					"port_id": p.ID, "network_id": sub.NetworkID, "project_id": rt.ProjectID, "tenant_id": rt.ProjectID})
			case existing == nil:
				neutronFault(w, http.StatusNotFound, "RouterInterfaceNotFoundForSubnet",
					fmt.Sprintf("Router %s has no interface on subnet %s", rt.ID, sub.ID))
			default:
				c.dropPort(existing.ID)
				writeJSON(w, http.StatusOK, map[string]any{"id": rt.ID, "subnet_id": sub.ID, "subnet_ids": []string{sub.ID},
					"port_id": existing.ID, "network_id": sub.NetworkID, "project_id": rt.ProjectID, "tenant_id": rt.ProjectID})
			}
		}
	}
	mux.HandleFunc("PUT "+base+"/{id}/add_router_interface", iface(true))
	mux.HandleFunc("PUT "+base+"/{id}/remove_router_interface", iface(false))
}

func subnetView(s Subnet) map[string]any {
	project := s.ProjectID
	if project == "" {
		project = "admin"
	}
	return map[string]any{"id": s.ID, "name": s.Name, "description": s.Description, "network_id": s.NetworkID, "cidr": s.CIDR,
		"ip_version": 4, "enable_dhcp": true, "dns_nameservers": nonNil(s.DNSNameservers), "tags": []string{},
		"gateway_ip": netip.MustParsePrefix(s.CIDR).Addr().Next().String(), "project_id": project, "tenant_id": project}
}

// MakeProjectNetwork makes a network with one subnet of cidr as the
// token's project would (`openstack network create` and `openstack subnet
// create`): not shared, and, unlike the cloud's own networks, routed only
// by the routers the project adds.
func (c *Cloud) MakeProjectNetwork(token, name, cidr string) (networkID, subnetID string, err error) {
	var network struct {
		Network struct{ ID string } `json:"network"`
	}
	if err := c.Do(token, "POST", "/networking/v2.0/networks", map[string]any{"network": map[string]any{"name": name}}, &network); err != nil {
		return "", "", err
	}
	var subnet struct {
		Subnet struct{ ID string } `json:"subnet"`
	}
	if err := c.Do(token, "POST", "/networking/v2.0/subnets", map[string]any{"subnet": map[string]any{
		"name": name + "-subnet", "network_id": network.Network.ID, "cidr": cidr, "ip_version": 4}}, &subnet); err != nil {
		return "", "", err
	}
	return network.Network.ID, subnet.Subnet.ID, nil
}
