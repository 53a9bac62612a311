package testcloud

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// LoadBalancer is an Octavia load balancer as the stand-in holds it.
type LoadBalancer struct {
	ID, Name, Description, ProjectID string
	ProvisioningStatus               string
	VIPAddress, VIPSubnetID          string
	VIPNetworkID, VIPPortID          string
	Tags                             []string
	// settles is the Octavia request count from which a PENDING_* status
	// moves on (PENDING_DELETE: the load balancer is gone).
	settles int
}

// Listener, Pool and Member are a load balancer's children.
type Listener struct {
	ID, Name, LoadBalancerID, Protocol, DefaultPoolID string
	Port                                              int
}

type Pool struct {
	ID, Name, LoadBalancerID, ListenerID, Protocol, Method string
}

type Member struct {
	ID, Name, PoolID, Address, SubnetID string
	Port                                int
}

// HealthMonitor is a pool's health monitor.
type HealthMonitor struct {
	ID, Name, PoolID, Type                     string
	Delay, Timeout, MaxRetries, MaxRetriesDown int
}

// octaviaFault answers as Octavia's API does (webob errors rendered by
// WSME): {"faultcode": ..., "faultstring": ..., "debuginfo": null}.
func octaviaFault(w http.ResponseWriter, status int, msg string) {
	code := "Client"
	if status >= 500 {
		code = "Server"
	}
	writeJSON(w, status, map[string]any{"faultcode": code, "faultstring": msg, "debuginfo": nil})
}

// octaviaNotFound answers Octavia's 404, with format's message about the
// id asked for.
func octaviaNotFound(format string) func(w http.ResponseWriter, id string) {
	return func(w http.ResponseWriter, id string) { octaviaFault(w, http.StatusNotFound, fmt.Sprintf(format, id)) }
}

var lbNotFound = octaviaNotFound("Load Balancer %s not found.")

// octaviaMissing answers Octavia's refusal of a request without a field it
// requires (WSME's mandatory attribute check).
func octaviaMissing(w http.ResponseWriter, field string) {
	octaviaFault(w, http.StatusBadRequest, fmt.Sprintf("Invalid input for field/attribute %s. Value: 'None'. Mandatory field missing.", field))
}

// settle moves load balancers through their PENDING_* states: Octavia's
// workers finish an action shortly after the API accepted it. A status is
// seen by at least the next request before it moves on. It holds c.mu.
func (c *Cloud) settle() {
	c.octaviaRequests++
	for id, lb := range c.loadBalancers {
		if !strings.HasPrefix(lb.ProvisioningStatus, "PENDING_") || c.octaviaRequests < lb.settles ||
			(c.heldLBs[id] && lb.ProvisioningStatus == "PENDING_DELETE") {
			continue
		}
		if lb.ProvisioningStatus == "PENDING_DELETE" {
			c.dropLoadBalancer(id)
			continue
		}
		lb.ProvisioningStatus = "ACTIVE"
	}
}

// pending puts a load balancer into a PENDING_* status. It holds c.mu.
func (c *Cloud) pending(lb *LoadBalancer, status string) {
	lb.ProvisioningStatus = status
	lb.settles = c.octaviaRequests + 2
}

// dropLoadBalancer removes a load balancer, its children and its VIP port.
// It holds c.mu.
func (c *Cloud) dropLoadBalancer(id string) {
	lb := c.loadBalancers[id]
	delete(c.loadBalancers, id)
	for lid, l := range c.listeners {
		if l.LoadBalancerID == id {
			delete(c.listeners, lid)
		}
	}
	for pid, p := range c.pools {
		if p.LoadBalancerID == id {
			delete(c.pools, pid)
			for mid, m := range c.members {
				if m.PoolID == pid {
					delete(c.members, mid)
				}
			}
			for hid, hm := range c.monitors {
				if hm.PoolID == pid {
					delete(c.monitors, hid)
				}
			}
		}
	}
	if lb != nil && lb.VIPPortID != "" {
		c.dropPort(lb.VIPPortID)
	}
}

// mutableLB finds a load balancer of the caller's project and marks it
// PENDING_UPDATE for a change to its children, answering Octavia's 404 or
// 409 when it cannot. It holds c.mu.
func (c *Cloud) mutableLB(w http.ResponseWriter, r *http.Request, id string) (*LoadBalancer, bool) {
	lb, ok := c.loadBalancers[id]
	if !ok || lb.ProjectID != r.Header.Get("X-Project-Id") {
		lbNotFound(w, id)
		return nil, false
	}
	if lb.ProvisioningStatus != "ACTIVE" {
		octaviaFault(w, http.StatusConflict, fmt.Sprintf("Load Balancer %s is immutable and cannot be updated.", id))
		return nil, false
	}
	c.pending(lb, "PENDING_UPDATE")
	return lb, true
}

func (c *Cloud) lbView(lb *LoadBalancer) map[string]any {
	var listeners, pools []map[string]any
	for _, id := range slices.Sorted(maps.Keys(c.listeners)) {
		if c.listeners[id].LoadBalancerID == lb.ID {
			listeners = append(listeners, map[string]any{"id": id})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.pools)) {
		if c.pools[id].LoadBalancerID == lb.ID {
			pools = append(pools, map[string]any{"id": id})
		}
	}
	operating := "ONLINE"
	if lb.ProvisioningStatus != "ACTIVE" {
		operating = "OFFLINE"
	}
	return map[string]any{
		"id": lb.ID, "name": lb.Name, "description": lb.Description, "project_id": lb.ProjectID,
		"provisioning_status": lb.ProvisioningStatus, "operating_status": operating, "admin_state_up": true,
		"vip_address": lb.VIPAddress, "vip_subnet_id": lb.VIPSubnetID, "vip_network_id": lb.VIPNetworkID,
		"vip_port_id": lb.VIPPortID, "provider": "amphora", "flavor_id": nil, "availability_zone": nil,
		"listeners": nonNil(listeners), "pools": nonNil(pools), "tags": nonNil(lb.Tags),
		"created_at": "2024-05-02T10:00:00", "updated_at": nil,
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// octaviaRoutes serve Octavia's v2 API for what the cloud controller
// manager and CAPO use: load balancers (create, list, show, delete with
// and without cascade), listeners, pools and members, with Octavia's
// provisioning states, its immutability while PENDING_*, and its refusals.
func (c *Cloud) octaviaRoutes(mux *http.ServeMux) {
	const base = "/load-balancer/v2.0/lbaas/"
	settled := c.lockedAfter(c.settle)
	locked := func(h http.HandlerFunc) http.HandlerFunc { return octaviaPolicy(settled(h)) }
	lbs := kind[LoadBalancer]{key: "loadbalancer", items: c.loadBalancers, view: c.lbView, locked: locked,
		fields: func(lb *LoadBalancer) map[string]string {
			return map[string]string{"project_id": lb.ProjectID, "name": lb.Name}
		},
		notFound: lbNotFound}
	lbs.serveReads(mux, base+"loadbalancers")
	// A load balancer's children are its project's, listed by name.
	childFields := func(lbID, name string) map[string]string {
		project := ""
		if lb := c.loadBalancers[lbID]; lb != nil {
			project = lb.ProjectID
		}
		return map[string]string{"project_id": project, "name": name}
	}
	listeners := kind[Listener]{key: "listener", items: c.listeners, view: listenerView, locked: locked,
		fields: func(l *Listener) map[string]string { return childFields(l.LoadBalancerID, l.Name) }}
	pools := kind[Pool]{key: "pool", items: c.pools, view: poolView, locked: locked,
		fields: func(p *Pool) map[string]string { return childFields(p.LoadBalancerID, p.Name) }}
	mux.HandleFunc("POST "+base+"loadbalancers", locked(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			LB struct {
				Name         string   `json:"name"`
				Description  string   `json:"description"`
				VIPSubnetID  string   `json:"vip_subnet_id"`
				VIPNetworkID string   `json:"vip_network_id"`
				Tags         []string `json:"tags"`
			} `json:"loadbalancer"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			octaviaFault(w, http.StatusBadRequest, "Invalid input for field/attribute loadbalancer.")
			return
		}
		in := body.LB
		if in.VIPSubnetID == "" && in.VIPNetworkID == "" {
			octaviaFault(w, http.StatusBadRequest, "Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.")
			return
		}
		// octavia/common/validate.py, subnet_exists and
		// network_exists_optionally_contains_subnet: what the caller's
		// project cannot see in Neutron is an InvalidSubresource (400).
		var sub Subnet
		project := r.Header.Get("X-Project-Id")
		if in.VIPNetworkID != "" {
			n, ok := c.networkByID(in.VIPNetworkID)
			if !ok || (n.ProjectID != "" && n.ProjectID != project) {
				octaviaFault(w, http.StatusBadRequest, fmt.Sprintf("Network %s not found.", in.VIPNetworkID))
				return
			}
		}
		i := slices.IndexFunc(c.visibleSubnets(project), func(s Subnet) bool {
			return (in.VIPSubnetID != "" && s.ID == in.VIPSubnetID) || (in.VIPSubnetID == "" && s.NetworkID == in.VIPNetworkID)
		})
		if i < 0 {
			octaviaFault(w, http.StatusBadRequest, fmt.Sprintf("Subnet %s not found.", in.VIPSubnetID))
			return
		}
		sub = c.visibleSubnets(project)[i]
		if in.VIPNetworkID != "" && sub.NetworkID != in.VIPNetworkID {
			octaviaFault(w, http.StatusBadRequest, fmt.Sprintf("Subnet %s not found.", in.VIPSubnetID))
			return
		}
		lb := &LoadBalancer{ID: uuid.NewString(), Name: in.Name, Description: in.Description, ProjectID: r.Header.Get("X-Project-Id"),
			VIPSubnetID: sub.ID, VIPNetworkID: sub.NetworkID, Tags: in.Tags}
		port := c.addPort(&Port{Name: "octavia-lb-" + lb.ID, NetworkID: sub.NetworkID, ProjectID: lb.ProjectID,
			DeviceOwner: "Octavia", DeviceID: "lb-" + lb.ID, FixedIPs: []FixedIP{{SubnetID: sub.ID}}})
		lb.VIPPortID, lb.VIPAddress = port.ID, port.FixedIPs[0].IPAddress
		c.loadBalancers[lb.ID] = lb
		c.pending(lb, "PENDING_CREATE")
		writeJSON(w, http.StatusCreated, map[string]any{"loadbalancer": c.lbView(lb)})
	}))
	mux.HandleFunc("DELETE "+base+"loadbalancers/{id}", lbs.onOwned(func(w http.ResponseWriter, r *http.Request, lb *LoadBalancer) {
		id := lb.ID
		cascade := slices.Contains([]string{"true", "1", "yes", "on", "y", "t"}, strings.ToLower(r.URL.Query().Get("cascade")))
		v := c.lbView(lb)
		if !cascade && (len(v["listeners"].([]map[string]any)) > 0 || len(v["pools"].([]map[string]any)) > 0) {
			octaviaFault(w, http.StatusBadRequest, fmt.Sprintf("Validation failure: Cannot delete Load Balancer %s - it has children", id))
			return
		}
		if strings.HasPrefix(lb.ProvisioningStatus, "PENDING_") {
			octaviaFault(w, http.StatusConflict, fmt.Sprintf("Invalid state %s of loadbalancer resource %s", lb.ProvisioningStatus, id))
			return
		}
		c.pending(lb, "PENDING_DELETE")
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("POST "+base+"listeners", locked(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			L struct {
				Name           string `json:"name"`
				LoadBalancerID string `json:"loadbalancer_id"`
				Protocol       string `json:"protocol"`
				Port           int    `json:"protocol_port"`
			} `json:"listener"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.L.LoadBalancerID == "" {
			octaviaMissing(w, "loadbalancer_id")
			return
		}
		if _, ok := c.mutableLB(w, r, body.L.LoadBalancerID); !ok {
			return
		}
		for _, l := range c.listeners {
			if l.LoadBalancerID == body.L.LoadBalancerID && l.Port == body.L.Port {
				octaviaFault(w, http.StatusConflict, fmt.Sprintf("Another Listener on this Load Balancer is already using protocol_port %d", l.Port))
				return
			}
		}
		l := &Listener{ID: uuid.NewString(), Name: body.L.Name, LoadBalancerID: body.L.LoadBalancerID, Protocol: body.L.Protocol, Port: body.L.Port}
		c.listeners[l.ID] = l
		writeJSON(w, http.StatusCreated, map[string]any{"listener": listenerView(l)})
	}))
	mux.HandleFunc("GET "+base+"listeners", locked(listeners.list))
	mux.HandleFunc("POST "+base+"pools", locked(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			P struct {
				Name           string `json:"name"`
				LoadBalancerID string `json:"loadbalancer_id"`
				ListenerID     string `json:"listener_id"`
				Protocol       string `json:"protocol"`
				Method         string `json:"lb_algorithm"`
			} `json:"pool"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			octaviaFault(w, http.StatusBadRequest, "Invalid input for field/attribute pool.")
			return
		}
		lbID := body.P.LoadBalancerID
		if l, ok := c.listeners[body.P.ListenerID]; ok {
			lbID = l.LoadBalancerID
		}
		if _, ok := c.mutableLB(w, r, lbID); !ok {
			return
		}
		p := &Pool{ID: uuid.NewString(), Name: body.P.Name, LoadBalancerID: lbID, ListenerID: body.P.ListenerID,
			Protocol: body.P.Protocol, Method: body.P.Method}
		c.pools[p.ID] = p
		if l, ok := c.listeners[p.ListenerID]; ok {
			l.DefaultPoolID = p.ID
		}
		writeJSON(w, http.StatusCreated, map[string]any{"pool": poolView(p)})
	}))
	mux.HandleFunc("GET "+base+"pools", locked(pools.list))
	mux.HandleFunc("GET "+base+"pools/{id}/members", locked(func(w http.ResponseWriter, r *http.Request) {
		list := []map[string]any{}
		for _, id := range slices.Sorted(maps.Keys(c.members)) {
			q := r.URL.Query()
			if m := c.members[id]; m.PoolID == r.PathValue("id") && (!q.Has("name") || q.Get("name") == m.Name) {
				list = append(list, memberView(m))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"members": list, "members_links": []any{}})
	}))
	mux.HandleFunc("POST "+base+"pools/{id}/members", locked(func(w http.ResponseWriter, r *http.Request) {
		p, ok := c.pools[r.PathValue("id")]
		if !ok {
			octaviaNotFound("Pool %s not found.")(w, r.PathValue("id"))
			return
		}
		var body struct {
			M struct {
				Name     string `json:"name"`
				Address  string `json:"address"`
				Port     int    `json:"protocol_port"`
				SubnetID string `json:"subnet_id"`
			} `json:"member"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.M.Address == "" {
			octaviaMissing(w, "address")
			return
		}
		if _, ok := c.mutableLB(w, r, p.LoadBalancerID); !ok {
			return
		}
		for _, m := range c.members {
			if m.PoolID == p.ID && m.Address == body.M.Address && m.Port == body.M.Port {
				octaviaFault(w, http.StatusConflict, fmt.Sprintf("Another member on this pool is already using ip %s on protocol_port %d", m.Address, m.Port))
				return
			}
		}
		m := &Member{ID: uuid.NewString(), Name: body.M.Name, PoolID: p.ID, Address: body.M.Address, Port: body.M.Port, SubnetID: body.M.SubnetID}
		c.members[m.ID] = m
		writeJSON(w, http.StatusCreated, map[string]any{"member": memberView(m)})
	}))
	c.monitorRoutes(mux, base, locked)
	mux.HandleFunc("DELETE "+base+"pools/{pool}/members/{id}", locked(func(w http.ResponseWriter, r *http.Request) {
		m, ok := c.members[r.PathValue("id")]
		if !ok || m.PoolID != r.PathValue("pool") {
			octaviaNotFound("Member %s not found.")(w, r.PathValue("id"))
			return
		}
		if _, ok := c.mutableLB(w, r, c.pools[m.PoolID].LoadBalancerID); !ok {
			return
		}
		delete(c.members, m.ID)
		w.WriteHeader(http.StatusNoContent)
	}))
}

// octaviaPolicy applies Octavia's default policy with Keystone's default
// roles (octavia/policies/base.py, keystone_default_roles.py): reading
// needs the reader role (member and admin imply it), writing the member
// role or admin; others get PolicyForbidden (403).
func octaviaPolicy(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		allowed := hasRole(r, "member") || hasRole(r, "admin")
		if r.Method == http.MethodGet {
			allowed = allowed || hasRole(r, "reader")
		}
		if !allowed {
			octaviaFault(w, http.StatusForbidden, "Policy does not allow this request to be performed.")
			return
		}
		h(w, r)
	}
}

// monitorRoutes serve Octavia's health monitors, one to a pool, as CAPO
// makes for its API load balancer's pool.
func (c *Cloud) monitorRoutes(mux *http.ServeMux, base string, locked func(http.HandlerFunc) http.HandlerFunc) {
	monitors := kind[HealthMonitor]{key: "healthmonitor", items: c.monitors, view: monitorView, locked: locked,
		fields: func(hm *HealthMonitor) map[string]string {
			project := ""
			if p := c.pools[hm.PoolID]; p != nil && c.loadBalancers[p.LoadBalancerID] != nil {
				project = c.loadBalancers[p.LoadBalancerID].ProjectID
			}
			return map[string]string{"project_id": project, "name": hm.Name, "pool_id": hm.PoolID}
		},
		notFound: octaviaNotFound("Health Monitor %s not found.")}
	monitors.serveReads(mux, base+"healthmonitors")
	mux.HandleFunc("POST "+base+"healthmonitors", locked(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			HM struct {
				Name           string `json:"name"`
				PoolID         string `json:"pool_id"`
				Type           string `json:"type"`
				Delay          int    `json:"delay"`
				Timeout        int    `json:"timeout"`
				MaxRetries     int    `json:"max_retries"`
				MaxRetriesDown int    `json:"max_retries_down"`
			} `json:"healthmonitor"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.HM.PoolID == "" {
			octaviaMissing(w, "pool_id")
			return
		}
		in := body.HM
		p, ok := c.pools[in.PoolID]
		if !ok {
			octaviaFault(w, http.StatusBadRequest, fmt.Sprintf("Pool %s not found.", in.PoolID))
			return
		}
		for _, hm := range c.monitors {
			if hm.PoolID == p.ID {
				octaviaFault(w, http.StatusConflict, "This pool already has a health monitor")
				return
			}
		}
		if _, ok := c.mutableLB(w, r, p.LoadBalancerID); !ok {
			return
		}
		hm := &HealthMonitor{ID: uuid.NewString(), Name: in.Name, PoolID: p.ID, Type: in.Type, Delay: in.Delay,
			Timeout: in.Timeout, MaxRetries: in.MaxRetries, MaxRetriesDown: in.MaxRetriesDown}
		c.monitors[hm.ID] = hm
		writeJSON(w, http.StatusCreated, map[string]any{"healthmonitor": monitorView(hm)})
	}))
}

func monitorView(hm *HealthMonitor) map[string]any {
	return map[string]any{"id": hm.ID, "name": hm.Name, "type": hm.Type, "delay": hm.Delay, "timeout": hm.Timeout,
		"max_retries": hm.MaxRetries, "max_retries_down": hm.MaxRetriesDown, "pools": []map[string]any{{"id": hm.PoolID}},
		"provisioning_status": "ACTIVE", "operating_status": "ONLINE", "admin_state_up": true}
}

// Members returns the pool members the stand-in holds, of every project.
func (c *Cloud) Members() []Member { return snapshot(&c.mu, c.members) }

// HealthMonitors returns the health monitors the stand-in holds.
func (c *Cloud) HealthMonitors() []HealthMonitor { return snapshot(&c.mu, c.monitors) }

func listenerView(l *Listener) map[string]any {
	return map[string]any{"id": l.ID, "name": l.Name, "protocol": l.Protocol, "protocol_port": l.Port,
		"loadbalancers": []map[string]any{{"id": l.LoadBalancerID}}, "default_pool_id": l.DefaultPoolID,
		"provisioning_status": "ACTIVE", "operating_status": "ONLINE", "admin_state_up": true}
}

func poolView(p *Pool) map[string]any {
	return map[string]any{"id": p.ID, "name": p.Name, "protocol": p.Protocol, "lb_algorithm": p.Method,
		"loadbalancers": []map[string]any{{"id": p.LoadBalancerID}}, "listeners": []map[string]any{{"id": p.ListenerID}},
		"provisioning_status": "ACTIVE", "operating_status": "ONLINE", "admin_state_up": true}
}

func memberView(m *Member) map[string]any {
	return map[string]any{"id": m.ID, "name": m.Name, "address": m.Address, "protocol_port": m.Port, "subnet_id": m.SubnetID,
		"provisioning_status": "ACTIVE", "operating_status": "ONLINE", "admin_state_up": true, "weight": 1}
}

// LoadBalancers returns the load balancers the stand-in holds, of every
// project.
func (c *Cloud) LoadBalancers() []LoadBalancer { return snapshot(&c.mu, c.loadBalancers) }

// HoldLoadBalancer keeps a load balancer's delete PENDING_DELETE until
// released, as a busy Octavia worker does.
func (c *Cloud) HoldLoadBalancer(id string, hold bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if hold {
		c.heldLBs[id] = true
	} else {
		delete(c.heldLBs, id)
	}
}
