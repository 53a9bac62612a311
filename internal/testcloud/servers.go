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
	// AvailabilityZone is the zone Nova scheduled the server to.
	AvailabilityZone string
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
			} `json:"server"`
			Hints map[string]any `json:"os:scheduler_hints"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			novaBadRequest(w, "Invalid input for field/attribute server.")
			return
		}
		in := body.Server
		project := r.Header.Get("X-Project-Id")
		c.mu.Lock()
		defer c.mu.Unlock()
		fi := slices.IndexFunc(flavors, func(f flavor) bool { return f.ID == in.FlavorRef })
		if fi < 0 || c.removedFlavors[in.FlavorRef] {
			novaBadRequest(w, fmt.Sprintf("Flavor %s could not be found.", in.FlavorRef))
			return
		}
		if _, ok := c.keypairs[r.Header.Get("X-User-Id")][in.KeyName]; in.KeyName != "" && !ok {
			// Keypairs are the user's: KeypairNotFound, answered 400.
			novaBadRequest(w, "Invalid key_name provided.")
			return
		}
		zone := in.Zone
		if zone == "" {
			zone = c.zones[0] // the scheduler's choice: the default zone
		} else if !slices.Contains(c.zones, zone) {
			novaBadRequest(w, "The requested availability zone is not available")
			return
		}
		s := &Server{ID: uuid.NewString(), Name: in.Name, ProjectID: project, Status: "BUILD", settlesTo: "ACTIVE", FlavorID: in.FlavorRef,
			ImageID: in.ImageRef, ConfigDrive: in.ConfigDrive != nil && *in.ConfigDrive, KeyName: in.KeyName, Metadata: in.Metadata,
			AvailabilityZone: zone}
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
		if flavors[fi].bareMetal() && s.RootVolumeID != "" {
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

// SetComputeZones replaces Nova's availability zones (the first is where
// a server that names none goes): what an operator's host aggregates
// make.
func (c *Cloud) SetComputeZones(zones ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.zones = slices.Clone(zones)
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
