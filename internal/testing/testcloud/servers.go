package testcloud

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Server is a Nova server as the stand-in holds it, with what it was
// created with.
type Server struct {
	ID, Name, ProjectID, Status string
	FlavorID, ImageID           string
	Ports                       []string
	ServerGroupID               string
	ConfigDrive                 bool
	// RootVolumeID is the Cinder volume the server boots from ("" when it
	// boots from the image on its local disk).
	RootVolumeID string
	KeyName      string
	Metadata     map[string]string
	Fault        string
	// AvailabilityZone is the zone Nova scheduled the server to, and
	// Host the nova-compute service host ("" when none would take it).
	AvailabilityZone, Host string
	// UserData is what the server boots with (base64, as sent).
	UserData string
	// settlesTo is the status a BUILD server takes once Nova has been
	// asked about it buildReads times: a server is never ACTIVE (or in
	// ERROR) in the answer to its create, nor in the first reads after.
	settlesTo string
	reads     int
}

// buildReads is how many reads a new server stays in BUILD.
const buildReads = 2

// progress moves a building server on by one read of it.
func (s *Server) progress() {
	if s.Status != "BUILD" {
		return
	}
	if s.reads++; s.reads >= buildReads {
		s.Status = s.settlesTo
	}
}

// bareMetal reports whether a flavor schedules onto Ironic nodes: it asks
// for a custom resource class and zeroes the standard ones.
func (f flavor) bareMetal() bool {
	for k, v := range f.ExtraSpecs {
		if strings.HasPrefix(k, "resources:CUSTOM_") && v == "1" {
			return true
		}
	}
	return false
}

func (c *Cloud) serverView(s *Server) map[string]any {
	addrs := map[string][]map[string]any{}
	for _, pid := range s.Ports {
		p, ok := c.ports[pid]
		if !ok {
			continue
		}
		netName := p.NetworkID
		if n, ok := c.networkByID(p.NetworkID); ok {
			netName = n.Name
		}
		for _, ip := range p.FixedIPs {
			addrs[netName] = append(addrs[netName], map[string]any{"addr": ip.IPAddress, "version": 4, "OS-EXT-IPS:type": "fixed"})
		}
	}
	var image any = ""
	if s.ImageID != "" {
		image = map[string]any{"id": s.ImageID}
	}
	volumes := []map[string]any{}
	if s.RootVolumeID != "" {
		volumes = append(volumes, map[string]any{"id": s.RootVolumeID, "delete_on_termination": true})
	}
	v := map[string]any{"id": s.ID, "name": s.Name, "status": s.Status, "tenant_id": s.ProjectID,
		"flavor": map[string]any{"id": s.FlavorID}, "image": image, "addresses": addrs, "metadata": s.Metadata,
		"config_drive": map[bool]string{true: "True", false: ""}[s.ConfigDrive], "key_name": s.KeyName,
		"os-extended-volumes:volumes_attached": volumes, "OS-EXT-AZ:availability_zone": s.AvailabilityZone,
		"created": "2024-05-02T10:00:00Z", "updated": "2024-05-02T10:00:00Z", "tags": []string{}}
	if s.Fault != "" && s.Status == "ERROR" {
		v["fault"] = map[string]any{"code": 500, "message": s.Fault, "created": "2024-05-02T10:00:00Z"}
	}
	return v
}

// serverRoutes serve Nova's servers as CAPO uses them: create (ports,
// image or a boot volume, config drive, the server group hint), show,
// list by name and delete, with Nova's refusals and, for a flavor
// scheduled onto Ironic, the Ironic driver's: a node deploys from its own
// disk and fails to validate a Cinder boot volume, leaving the server in
// ERROR with the fault.
func (c *Cloud) serverRoutes(mux *http.ServeMux) {
	const base = "/compute/v2.1/servers"
	servers := kind[Server]{key: "server", items: c.servers, view: c.serverView, locked: c.locked,
		fields:   projectOf(func(s *Server) string { return s.ProjectID }),
		notFound: novaNotFound("Instance %s could not be found.")}
	mux.HandleFunc("GET "+base+"/detail", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		// Nova's name filter is a regular expression; CAPO anchors it.
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Query().Get("name"), "^"), "$")
		list := []map[string]any{}
		for _, id := range slices.Sorted(maps.Keys(c.servers)) {
			s := c.servers[id]
			if s.ProjectID == r.Header.Get("X-Project-Id") && (name == "" || s.Name == name) {
				s.progress()
				list = append(list, c.serverView(s))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"servers": list})
	})
	mux.HandleFunc("GET "+base+"/{id}", servers.onOwned(func(w http.ResponseWriter, _ *http.Request, s *Server) {
		s.progress()
		writeJSON(w, http.StatusOK, map[string]any{"server": c.serverView(s)})
	}))
	mux.HandleFunc("DELETE "+base+"/{id}", servers.onOwned(func(w http.ResponseWriter, _ *http.Request, s *Server) {
		delete(c.servers, s.ID)
		for _, pid := range s.Ports {
			if p, ok := c.ports[pid]; ok {
				p.DeviceID, p.DeviceOwner = "", ""
			}
		}
		// A boot volume created for the server goes with it
		// (delete_on_termination).
		if s.RootVolumeID != "" {
			delete(c.volumes, s.RootVolumeID)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("POST "+base, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Server struct {
				Name        string `json:"name"`
				FlavorRef   string `json:"flavorRef"`
				ImageRef    string `json:"imageRef"`
				ConfigDrive *bool  `json:"config_drive"`
				KeyName     string `json:"key_name"`
				Zone        string `json:"availability_zone"`
				Networks    []struct {
					Port string `json:"port"`
				} `json:"networks"`
				BDM []struct {
					SourceType      string `json:"source_type"`
					DestinationType string `json:"destination_type"`
					UUID            string `json:"uuid"`
					BootIndex       int    `json:"boot_index"`
				} `json:"block_device_mapping_v2"`
				Metadata map[string]string `json:"metadata"`
				UserData *string           `json:"user_data"`
			} `json:"server"`
			Hints map[string]any `json:"os:scheduler_hints"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			novaBadRequest(w, "Invalid input for field/attribute server.")
			return
		}
		in := body.Server
		if in.UserData != nil && !validUserData(w, *in.UserData) {
			return
		}
		project := r.Header.Get("X-Project-Id")
		c.mu.Lock()
		defer c.mu.Unlock()
		// FlavorNotFound, answered 400 with its own message since Nova 14
		// (nova/api/openstack/compute/servers.py, create; the older
		// "Invalid flavorRef provided." went with change 2de2c99460).
		fi := slices.IndexFunc(c.flavors, func(f flavor) bool { return f.ID == in.FlavorRef })
		if fi < 0 || c.removedFlavors[in.FlavorRef] {
			novaBadRequest(w, fmt.Sprintf("Flavor %s could not be found.", in.FlavorRef))
			return
		}
		fl := c.flavors[fi]
		if _, ok := c.keypairs[r.Header.Get("X-User-Id")][in.KeyName]; in.KeyName != "" && !ok {
			// Keypairs are the user's: KeypairNotFound, answered 400.
			novaBadRequest(w, "Invalid key_name provided.")
			return
		}
		// nova/compute/api.py, _validate_and_build_base_options: a zone
		// Nova does not have is an InvalidRequest (400).
		if in.Zone != "" && !slices.Contains(c.zones, in.Zone) {
			novaBadRequest(w, "The requested availability zone is not available")
			return
		}
		s := &Server{ID: uuid.NewString(), Name: in.Name, ProjectID: project, Status: "BUILD", settlesTo: "ACTIVE", FlavorID: in.FlavorRef,
			ImageID: in.ImageRef, ConfigDrive: in.ConfigDrive != nil && *in.ConfigDrive, KeyName: in.KeyName, Metadata: in.Metadata,
			AvailabilityZone: in.Zone}
		if in.UserData != nil {
			s.UserData = *in.UserData
		}
		for _, b := range in.BDM {
			if b.BootIndex == 0 && b.SourceType == "volume" && b.DestinationType == "volume" {
				v, ok := c.volumes[b.UUID]
				if !ok || v.ProjectID != project {
					novaBadRequest(w, fmt.Sprintf("Block Device Mapping is Invalid: failed to get volume %s.", b.UUID))
					return
				}
				s.RootVolumeID = v.ID
			}
		}
		if s.RootVolumeID == "" && !slices.ContainsFunc(images, func(i image) bool { return i.ID == in.ImageRef }) {
			novaBadRequest(w, "Can not find requested image")
			return
		}
		// nova/compute/api.py, _validate_flavor_image_nostatus: an image
		// boot on a flavor without disk needs os_compute_api:servers:
		// create:zero_disk_flavor, admin only by default
		// (nova/policies/servers.py); BootFromVolumeRequiredForZeroDiskFlavor
		// is a 403.
		if s.RootVolumeID == "" && fl.Disk == 0 && !hasRole(r, "admin") {
			writeJSON(w, http.StatusForbidden, map[string]any{"forbidden": map[string]any{"code": 403,
				"message": "Only volume-backed servers are allowed for flavors with zero disk."}})
			return
		}
		if g, ok := body.Hints["group"].(string); ok && g != "" {
			sg, ok := c.serverGroups[g]
			if !ok || sg.ProjectID != project {
				novaBadRequest(w, fmt.Sprintf("Instance group %s could not be found.", g))
				return
			}
			s.ServerGroupID = g
		}
		for _, n := range in.Networks {
			p, ok := c.ports[n.Port]
			if !ok || p.ProjectID != project {
				novaBadRequest(w, fmt.Sprintf("Port id %s could not be found.", n.Port))
				return
			}
			if p.DeviceID != "" {
				writeJSON(w, http.StatusConflict, map[string]any{"conflictingRequest": map[string]any{"code": 409,
					"message": fmt.Sprintf("Port %s is still in use.", n.Port)}})
				return
			}
			s.Ports = append(s.Ports, p.ID)
		}
		var group *ServerGroup
		if s.ServerGroupID != "" {
			group = c.serverGroups[s.ServerGroupID]
		}
		c.schedule(s, fl, group)
		if s.Host != "" && fl.bareMetal() && s.RootVolumeID != "" {
			// The Ironic driver validates the node's interfaces before it
			// deploys; a node with the noop storage interface cannot
			// boot from a Cinder volume.
			s.settlesTo = "ERROR"
			s.Fault = fmt.Sprintf("Ironic node: %s failed to validate. (deploy: None, power: None, storage: Volume target/connector information is not supported by the noop storage interface)", uuid.NewString())
		}
		for _, pid := range s.Ports {
			c.ports[pid].DeviceID, c.ports[pid].DeviceOwner = s.ID, "compute:nova"
		}
		if s.RootVolumeID != "" {
			c.volumes[s.RootVolumeID].AttachedTo = s.ID
			c.volumes[s.RootVolumeID].Status = "in-use"
		}
		c.servers[s.ID] = s
		writeJSON(w, http.StatusAccepted, map[string]any{"server": map[string]any{"id": s.ID, "links": []any{}}})
	})
}

// ComputeHost is a nova-compute service: a hypervisor host of VMs, or
// an Ironic one, behind which all of its zone's bare-metal nodes sit (the
// Ironic driver reports every node as a node of its one service host, and
// the scheduler's server-group filters count hosts, not nodes).
type ComputeHost struct {
	Name, Zone string
	Ironic     bool
}

// vmHostsPerZone is how many hypervisor hosts SetComputeZones gives each
// zone: enough for the three control-plane machines a hard anti-affinity
// group spreads, and some workers.
const vmHostsPerZone = 6

// SetComputeZones replaces Nova's availability zones (the first is where
// a server that names none goes), each with vmHostsPerZone hypervisor
// hosts and one Ironic host: what an operator's host aggregates make.
func (c *Cloud) SetComputeZones(zones ...string) {
	var hosts []ComputeHost
	for _, z := range zones {
		for i := range vmHostsPerZone {
			hosts = append(hosts, ComputeHost{Name: fmt.Sprintf("%s-compute-%d", z, i), Zone: z})
		}
		hosts = append(hosts, ComputeHost{Name: z + "-ironic", Zone: z, Ironic: true})
	}
	c.SetComputeHosts(hosts...)
}

// SetComputeHosts replaces Nova's compute hosts; its zones are theirs, in
// the order they first appear.
func (c *Cloud) SetComputeHosts(hosts ...ComputeHost) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hosts = slices.Clone(hosts)
	c.zones = nil
	for _, h := range hosts {
		if !slices.Contains(c.zones, h.Zone) {
			c.zones = append(c.zones, h.Zone)
		}
	}
}

// noValidHost is the fault of a server the scheduler could place nowhere
// (nova/scheduler/manager.py, _ensure_sufficient_hosts: NoValidHost).
const noValidHost = "No valid host was found. There are not enough hosts available."

// schedule places a new server as Nova's filter scheduler does: on a
// host of its zone (any zone when it names none) that runs its kind of
// flavor (bare metal on an Ironic host, VMs on hypervisors), honouring
// its server group's policy per host (ServerGroupAntiAffinityFilter,
// ServerGroupAffinityFilter; the soft policies only weigh), least loaded
// first. A server no host takes goes to ERROR with NoValidHost's fault.
// It holds c.mu.
func (c *Cloud) schedule(s *Server, fl flavor, group *ServerGroup) {
	load := map[string]int{}
	var groupHosts []string
	for _, other := range c.servers {
		if other.Host == "" {
			continue
		}
		load[other.Host]++
		if group != nil && other.ServerGroupID == group.ID {
			groupHosts = append(groupHosts, other.Host)
		}
	}
	var candidates []ComputeHost
	for _, h := range c.hosts {
		if (s.AvailabilityZone != "" && h.Zone != s.AvailabilityZone) || h.Ironic != fl.bareMetal() {
			continue
		}
		if group != nil && group.Policy == "anti-affinity" && slices.Contains(groupHosts, h.Name) {
			continue
		}
		if group != nil && group.Policy == "affinity" && len(groupHosts) > 0 && !slices.Contains(groupHosts, h.Name) {
			continue
		}
		candidates = append(candidates, h)
	}
	if len(candidates) == 0 {
		s.settlesTo, s.Fault = "ERROR", noValidHost
		return
	}
	weight := func(h ComputeHost) int {
		w := load[h.Name]
		if group != nil {
			members := 0
			for _, g := range groupHosts {
				if g == h.Name {
					members++
				}
			}
			switch group.Policy {
			case "soft-anti-affinity":
				w += 1000 * members
			case "soft-affinity":
				w -= 1000 * members
			}
		}
		return w
	}
	best := slices.MinFunc(candidates, func(a, b ComputeHost) int { return weight(a) - weight(b) })
	s.Host, s.AvailabilityZone = best.Name, best.Zone
}

// userDataMaxLength is the longest user_data Nova's schema allows
// (nova/api/openstack/compute/schemas/servers.py: base64, maxLength
// 65535).
const userDataMaxLength = 65535

// validUserData answers Nova's schema refusal (nova/api/validation/
// validators.py formats jsonschema's message) unless user data is base64
// of at most userDataMaxLength characters.
func validUserData(w http.ResponseWriter, data string) bool {
	refuse := func(why string) bool {
		novaBadRequest(w, fmt.Sprintf("Invalid input for field/attribute user_data. Value: %s. %s", data, why))
		return false
	}
	if len(data) > userDataMaxLength {
		return refuse(fmt.Sprintf("'%s' is too long", data))
	}
	if _, err := base64.StdEncoding.DecodeString(data); err != nil {
		return refuse(fmt.Sprintf("'%s' is not a 'base64'", data))
	}
	return true
}

// hasRole reports whether the caller's token carries role in its
// project.
func hasRole(r *http.Request, role string) bool {
	return slices.Contains(strings.Split(r.Header.Get("X-Roles"), ","), role)
}

// Servers returns the servers the stand-in holds, of every project.
func (c *Cloud) Servers() []Server { return snapshot(&c.mu, c.servers) }

// RemoveFlavor makes a flavor unusable for new servers, as an operator
// deleting it behind Magnetite's back would; existing servers keep it.
func (c *Cloud) RemoveFlavor(id string, removed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removedFlavors[id] = removed
}

// Do sends a request to the stand-in as the holder of token, decoding the
// answer into out: what a controller standing in for another component
// (CAPO) does through the services' APIs.
func (c *Cloud) Do(token, method, path string, body, out any) error {
	return c.call(token, method, path, body, out)
}
