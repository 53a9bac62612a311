package testcloud

import (
	"encoding/json"
	"fmt"
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
func (c *Cloud) Networks() []network {
	c.netMu.Lock()
	defer c.netMu.Unlock()
	out := []network{}
	for _, id := range sortedKeys(c.nets) {
		out = append(out, *c.nets[id])
	}
	return out
}

// Subnets returns the subnets projects made (not the cloud's own).
func (c *Cloud) Subnets() []Subnet {
	c.netMu.Lock()
	defer c.netMu.Unlock()
	out := []Subnet{}
	for _, id := range sortedKeys(c.subs) {
		out = append(out, *c.subs[id])
	}
	return out
}

// Routers returns the routers the stand-in holds, of every project.
func (c *Cloud) Routers() []Router { return snapshot(c, c.routers) }

// networkByID finds one of the cloud's networks or of a project's.
func (c *Cloud) networkByID(id string) (network, bool) {
	if i := slices.IndexFunc(networks, func(n network) bool { return n.ID == id }); i >= 0 {
		return networks[i], true
	}
	c.netMu.Lock()
	defer c.netMu.Unlock()
	if n, ok := c.nets[id]; ok {
		return *n, true
	}
	return network{}, false
}

// visibleNetworks are the cloud's networks and the project's own.
func (c *Cloud) visibleNetworks(project string) []network {
	return visible(c, networks, c.nets, func(n *network) string { return n.ProjectID }, project)
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
	for _, id := range sortedKeys(made) {
		if it := made[id]; project == "*" || owner(it) == project {
			out = append(out, *it)
		}
	}
	return out
}

// serveReads serves the list (GET base, the caller's project's items
// matching the query's filters) and show (GET base/{id}) of one kind of
// Neutron resource held under c.mu; the list's key is key+"s".
func serveReads[T any](c *Cloud, mux *http.ServeMux, base, key string, items map[string]*T, fields func(*T) map[string]string,
	view func(*T) map[string]any, project func(*T) string, notFound func(http.ResponseWriter, string)) {
	mux.HandleFunc("GET "+base, func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		listed(w, r, key+"s", items, fields, view)
	})
	mux.HandleFunc("GET "+base+"/{id}", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if it, ok := owned(w, r, items, project, notFound); ok {
			writeJSON(w, http.StatusOK, map[string]any{key: view(it)})
		}
	})
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
	decode := func(w http.ResponseWriter, r *http.Request, v any) bool {
		if err := json.NewDecoder(r.Body).Decode(v); err != nil {
			neutronFault(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for operation: failed to parse the request body.")
			return false
		}
		return true
	}
	networkNotFound := func(w http.ResponseWriter, id string) {
		neutronFault(w, http.StatusNotFound, "NetworkNotFound", fmt.Sprintf("Network %s could not be found.", id))
	}
	mux.HandleFunc("POST /networking/v2.0/networks", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			N struct {
				Name         string `json:"name"`
				PortSecurity *bool  `json:"port_security_enabled"`
			} `json:"network"`
		}
		if !decode(w, r, &body) {
			return
		}
		n := &network{ID: uuid.NewString(), Name: body.N.Name, ProjectID: r.Header.Get("X-Project-Id"),
			PortSecurityDisabled: body.N.PortSecurity != nil && !*body.N.PortSecurity}
		c.netMu.Lock()
		c.nets[n.ID] = n
		c.netMu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"network": c.networkView(*n)})
	})
	mux.HandleFunc("DELETE /networking/v2.0/networks/{id}", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.netMu.Lock()
		defer c.netMu.Unlock()
		id := r.PathValue("id")
		n, ok := c.nets[id]
		if !ok || n.ProjectID != r.Header.Get("X-Project-Id") {
			networkNotFound(w, id)
			return
		}
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
	})
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
		if !decode(w, r, &body) {
			return
		}
		in := body.S
		n, ok := c.networkByID(in.NetworkID)
		if !ok || (n.ProjectID != "" && n.ProjectID != r.Header.Get("X-Project-Id")) {
			networkNotFound(w, in.NetworkID)
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
	mux.HandleFunc("DELETE /networking/v2.0/subnets/{id}", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.netMu.Lock()
		defer c.netMu.Unlock()
		id := r.PathValue("id")
		if s, ok := c.subs[id]; !ok || s.ProjectID != r.Header.Get("X-Project-Id") {
			neutronFault(w, http.StatusNotFound, "SubnetNotFound", fmt.Sprintf("Subnet %s could not be found.", id))
			return
		}
		for _, p := range c.ports {
			if slices.ContainsFunc(p.FixedIPs, func(ip FixedIP) bool { return ip.SubnetID == id }) {
				neutronFault(w, http.StatusConflict, "SubnetInUse",
					fmt.Sprintf("Unable to complete operation on subnet %s: One or more ports have an IP allocation from this subnet.", id))
				return
			}
		}
		delete(c.subs, id)
		w.WriteHeader(http.StatusNoContent)
	})
	c.routerRoutes(mux, decode)
}

// routerRoutes serve Neutron's routers and their interfaces.
func (c *Cloud) routerRoutes(mux *http.ServeMux, decode func(http.ResponseWriter, *http.Request, any) bool) {
	const base = "/networking/v2.0/routers"
	project := func(rt *Router) string { return rt.ProjectID }
	notFound := func(w http.ResponseWriter, id string) {
		neutronFault(w, http.StatusNotFound, "RouterNotFound", fmt.Sprintf("Router %s could not be found", id))
	}
	serveReads(c, mux, base, "router", c.routers, func(rt *Router) map[string]string {
		return map[string]string{"project_id": rt.ProjectID, "name": rt.Name, "id": rt.ID}
	}, routerView, project, notFound)
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
		if !decode(w, r, &body) {
			return
		}
		rt := &Router{ID: uuid.NewString(), Name: body.R.Name, Description: body.R.Description, ProjectID: r.Header.Get("X-Project-Id")}
		if gw := body.R.Gateway; gw != nil && gw.NetworkID != "" {
			n, ok := c.networkByID(gw.NetworkID)
			if !ok {
				neutronFault(w, http.StatusNotFound, "NetworkNotFound", fmt.Sprintf("Network %s could not be found.", gw.NetworkID))
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
	mux.HandleFunc("DELETE "+base+"/{id}", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		rt, ok := owned(w, r, c.routers, project, notFound)
		if !ok {
			return
		}
		for _, p := range c.ports {
			if p.DeviceID == rt.ID && p.DeviceOwner == routerInterface {
				neutronFault(w, http.StatusConflict, "RouterInUse", fmt.Sprintf("Router %s still has ports", rt.ID))
				return
			}
		}
		delete(c.routers, rt.ID)
		w.WriteHeader(http.StatusNoContent)
	})
	iface := func(add bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				SubnetID string `json:"subnet_id"`
			}
			if !decode(w, r, &body) {
				return
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			rt, ok := owned(w, r, c.routers, project, notFound)
			if !ok {
				return
			}
			sub, ok := c.subnetFor(body.SubnetID, "")
			if !ok || body.SubnetID == "" {
				neutronFault(w, http.StatusNotFound, "SubnetNotFound", fmt.Sprintf("Subnet %s could not be found.", body.SubnetID))
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
