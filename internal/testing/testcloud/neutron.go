package testcloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"

	"github.com/google/uuid"
)

// Subnet is a Neutron subnet of one of the stand-in's networks.
type Subnet struct {
	ID, Name, NetworkID, CIDR string
	// What a project's own subnets have besides.
	Description, ProjectID string
	DNSNameservers         []string
}

// FixedIP is an address of a port on a subnet.
type FixedIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

// Port is a Neutron port as the stand-in holds it.
type Port struct {
	ID, Name, Description, NetworkID, ProjectID string
	DeviceID, DeviceOwner                       string
	FixedIPs                                    []FixedIP
	SecurityGroups                              []string
	PortSecurity                                bool
	Tags                                        []string
}

// FloatingIP is a Neutron floating IP as the stand-in holds it; an
// associated one has its port, the port's address and the router that
// carries it.
type FloatingIP struct {
	ID, Description, NetworkID, ProjectID, Address, PortID string
	FixedIPAddress, RouterID                               string
}

// neutronFault answers as Neutron does: {"NeutronError": {"type", "message",
// "detail"}}.
func neutronFault(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"NeutronError": map[string]any{"type": typ, "message": msg, "detail": ""}})
}

// neutronNotFound answers Neutron's 404 of type typ, with format's message
// about the id asked for.
func neutronNotFound(typ, format string) func(w http.ResponseWriter, id string) {
	return func(w http.ResponseWriter, id string) {
		neutronFault(w, http.StatusNotFound, typ, fmt.Sprintf(format, id))
	}
}

// Neutron's answers for what the caller's project does not have.
var (
	networkNotFound       = neutronNotFound("NetworkNotFound", "Network %s could not be found.")
	subnetNotFound        = neutronNotFound("SubnetNotFound", "Subnet %s could not be found.")
	portNotFound          = neutronNotFound("PortNotFound", "Port %s could not be found.")
	securityGroupNotFound = neutronNotFound("SecurityGroupNotFound", "Security group %s does not exist")
)

func neutronMalformed(w http.ResponseWriter) {
	neutronFault(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for operation: failed to parse the request body.")
}

// subnetFor finds a subnet by ID, or the first subnet of a network, of the
// cloud's or a project's.
func (c *Cloud) subnetFor(subnetID, networkID string) (Subnet, bool) {
	for _, s := range visible(c, subnets, c.subs, func(s *Subnet) string { return s.ProjectID }, "*") {
		if (subnetID != "" && s.ID == subnetID) || (subnetID == "" && s.NetworkID == networkID) {
			return s, true
		}
	}
	return Subnet{}, false
}

// addPort makes a port, giving each fixed IP without an address the next
// free one of its subnet. It holds c.mu.
func (c *Cloud) addPort(p *Port) *Port {
	if p.ID == "" {
		p.ID = uuid.NewString()
	}
	for i, ip := range p.FixedIPs {
		if ip.IPAddress != "" {
			continue
		}
		sub, _ := c.subnetFor(ip.SubnetID, "")
		prefix := netip.MustParsePrefix(sub.CIDR)
		c.nextAddress[sub.ID]++
		a := prefix.Addr()
		for n := 0; n < 9+c.nextAddress[sub.ID]; n++ {
			a = a.Next()
		}
		p.FixedIPs[i].IPAddress = a.String()
	}
	c.ports[p.ID] = p
	return p
}

// dropPort removes a port and disassociates its floating IPs. It holds c.mu.
func (c *Cloud) dropPort(id string) {
	delete(c.ports, id)
	for _, f := range c.floatingIPs {
		if f.PortID == id {
			f.PortID, f.FixedIPAddress, f.RouterID = "", "", ""
		}
	}
}

func portView(p *Port) map[string]any {
	return map[string]any{"id": p.ID, "name": p.Name, "description": p.Description, "network_id": p.NetworkID,
		"project_id": p.ProjectID, "tenant_id": p.ProjectID, "device_id": p.DeviceID, "device_owner": p.DeviceOwner,
		"fixed_ips": nonNil(p.FixedIPs), "security_groups": nonNil(p.SecurityGroups), "port_security_enabled": p.PortSecurity,
		"tags": nonNil(p.Tags), "status": "ACTIVE", "admin_state_up": true, "mac_address": "fa:16:3e:00:00:01",
		"allowed_address_pairs": []any{}, "binding:vnic_type": "normal"}
}

func fipView(f *FloatingIP) map[string]any {
	status := "DOWN"
	var port, router, fixed any
	if f.PortID != "" {
		status, port, router, fixed = "ACTIVE", f.PortID, f.RouterID, f.FixedIPAddress
	}
	return map[string]any{"id": f.ID, "description": f.Description, "floating_network_id": f.NetworkID,
		"floating_ip_address": f.Address, "port_id": port, "project_id": f.ProjectID, "tenant_id": f.ProjectID,
		"status": status, "router_id": router, "fixed_ip_address": fixed, "tags": []string{}}
}

// portNeutronRoutes serve Neutron's subnets and ports: what CAPO makes
// for machines and its API load balancer. Ports refuse security groups
// without port security as Neutron does.
func (c *Cloud) portNeutronRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /networking/v2.0/subnets", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		list := []any{}
		for _, s := range c.visibleSubnets(r.Header.Get("X-Project-Id")) {
			if (q.Has("name") && q.Get("name") != s.Name) || (q.Has("id") && q.Get("id") != s.ID) ||
				(q.Has("network_id") && q.Get("network_id") != s.NetworkID) || (q.Has("cidr") && q.Get("cidr") != s.CIDR) {
				continue
			}
			list = append(list, subnetView(s))
		}
		writeJSON(w, http.StatusOK, map[string]any{"subnets": list})
	})
	ports := kind[Port]{key: "port", items: c.ports, view: portView, locked: c.locked,
		fields: func(p *Port) map[string]string {
			return map[string]string{"project_id": p.ProjectID, "name": p.Name, "network_id": p.NetworkID, "device_id": p.DeviceID}
		},
		notFound: portNotFound}
	ports.serveReads(mux, "/networking/v2.0/ports")
	mux.HandleFunc("POST /networking/v2.0/ports", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Port struct {
				Name           string    `json:"name"`
				Description    string    `json:"description"`
				NetworkID      string    `json:"network_id"`
				FixedIPs       []FixedIP `json:"fixed_ips"`
				SecurityGroups *[]string `json:"security_groups"`
				PortSecurity   *bool     `json:"port_security_enabled"`
			} `json:"port"`
		}
		if !decoded(w, r, &body, neutronMalformed) {
			return
		}
		in := body.Port
		n, ok := c.usableNetwork(w, r, in.NetworkID)
		if !ok {
			return
		}
		portSecurity := !c.portSecurityDisabled(n)
		if in.PortSecurity != nil {
			portSecurity = *in.PortSecurity
		}
		var groups []string
		if in.SecurityGroups != nil {
			groups = *in.SecurityGroups
		}
		if len(groups) > 0 && !portSecurity {
			// neutron-lib's PortSecurityAndIPRequiredForSecurityGroups, an
			// InvalidInput: 400.
			neutronFault(w, http.StatusBadRequest, "PortSecurityAndIPRequiredForSecurityGroups",
				"Port security must be enabled and port must have an IP address in order to use security groups.")
			return
		}
		fixed := in.FixedIPs
		for _, ip := range fixed {
			if sub, ok := c.subnetFor(ip.SubnetID, ""); !ok || sub.NetworkID != n.ID {
				neutronFault(w, http.StatusBadRequest, "InvalidInput",
					fmt.Sprintf("Invalid input for operation: Failed to create port on network %s, because fixed_ips included invalid subnet %s.", n.ID, ip.SubnetID))
				return
			}
		}
		if len(fixed) == 0 {
			sub, ok := c.subnetFor("", n.ID)
			if !ok {
				neutronFault(w, http.StatusBadRequest, "InvalidInput", "Invalid input for operation: network "+n.ID+" has no subnet.")
				return
			}
			fixed = []FixedIP{{SubnetID: sub.ID}}
		}
		if portSecurity && in.SecurityGroups == nil {
			groups = []string{"default"}
		}
		c.mu.Lock()
		for _, g := range groups {
			if sg, ok := c.securityGroups[g]; in.SecurityGroups != nil && (!ok || sg.ProjectID != r.Header.Get("X-Project-Id")) {
				c.mu.Unlock()
				securityGroupNotFound(w, g)
				return
			}
		}
		p := c.addPort(&Port{Name: in.Name, Description: in.Description, NetworkID: n.ID, ProjectID: r.Header.Get("X-Project-Id"),
			FixedIPs: slices.Clone(fixed), SecurityGroups: groups, PortSecurity: portSecurity})
		v := portView(p)
		c.mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"port": v})
	})
	mux.HandleFunc("DELETE /networking/v2.0/ports/{id}", ports.onOwned(func(w http.ResponseWriter, _ *http.Request, p *Port) {
		if p.DeviceOwner == routerInterface {
			neutronFault(w, http.StatusConflict, "PortInUse", fmt.Sprintf(
				"Port %s cannot be deleted directly via the port API: has device owner %s.", p.ID, p.DeviceOwner))
			return
		}
		c.dropPort(p.ID)
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("PUT /networking/v2.0/ports/{id}/tags", ports.onOwned(func(w http.ResponseWriter, r *http.Request, p *Port) {
		var body struct {
			Tags []string `json:"tags"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		p.Tags = body.Tags
		writeJSON(w, http.StatusOK, map[string]any{"tags": body.Tags})
	}))
}

// Ports returns the ports the stand-in holds, of every project (not the
// cloud's own router's).
func (c *Cloud) Ports() []Port {
	return slices.DeleteFunc(snapshot(&c.mu, c.ports), func(p Port) bool { return p.ProjectID == "" })
}

// FloatingIPs returns the floating IPs the stand-in holds, of every project.
func (c *Cloud) FloatingIPs() []FloatingIP { return snapshot(&c.mu, c.floatingIPs) }

// SetPortSecurity turns a network's port security on or off, as an
// operator changing the network behind Magnetite's back would.
func (c *Cloud) SetPortSecurity(networkID string, enabled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.portSecurity[networkID] = enabled
}

func (c *Cloud) portSecurityDisabled(n network) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on, ok := c.portSecurity[n.ID]; ok {
		return !on
	}
	return n.PortSecurityDisabled
}
