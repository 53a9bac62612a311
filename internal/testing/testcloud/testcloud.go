// Package testcloud stands in, for tests, for the OpenStack services
// Magnetite, Magnum's tempest plugin, Horizon's Container Infra panels, CAPO
// and a workload's cloud controller manager and CSI driver use: Glance,
// Nova, Neutron, Octavia and Cinder, refusing what the real services
// refuse, with their messages.
//
// Start serves a cloud with every service and extension. A test of a
// cloud that lacks some names what it lacks:
//
//	testcloud.Start(t, ks, testcloud.WithoutL3, testcloud.WithoutOctavia)
//
// WithoutL3 is Neutron without its L3 ("router") extension, as on bare
// metal on provider networks: its extension list does not name it, and
// routers and floating IPs answer 404 as unknown resources do.
// WithoutOctavia and WithoutCinder leave the load-balancer and
// block-storage services out of Keystone's catalog (and out of the
// stand-in).
//
// What an operator changes behind a client's back is a method: Nova's
// zones and compute hosts (SetComputeZones gives each zone six
// hypervisors and one Ironic host, behind which all of its bare-metal
// nodes sit; SetComputeHosts lays them out exactly), flavors (AddFlavor,
// RemoveFlavor: a zero-disk one boots only from a volume unless the
// caller is admin), Neutron's quotas (SetNeutronQuota; Neutron's defaults
// otherwise), the cloud's router1 (CloudRouterID, from the external
// network to the private and provisioning subnets; SetCloudRoute),
// port security, volume types and zones, server groups.
package testcloud

import (
	"bytes"
	"crypto/ed25519"
	"crypto/md5"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

// The resources the cloud holds.
const (
	ImageName = "ubuntu-2204-kube-v1.31.2"
	ImageID   = "0b3a6c1e-6f0e-4c2a-9d55-3f1f8c2d7a01"
	KubeTag   = "v1.31.2"
	// NextImageName and NextImageID are an image of the next Kubernetes
	// minor, NextKubeTag, for upgrades that change the image too.
	NextImageName = "ubuntu-2204-kube-v1.32.0"
	NextImageID   = "0b3a6c1e-6f0e-4c2a-9d55-3f1f8c2d7a03"
	NextKubeTag   = "v1.32.0"
	FlavorName    = "m1.small"
	MasterFlavor  = "m1.medium"
	// BareMetalFlavor is scheduled onto Ironic nodes of resource class
	// BAREMETAL_GOLD.
	BareMetalFlavor = "bm.gold"
	ExternalNet     = "public"
	ExternalNetID   = "5a1c2f0e-7b7d-4d59-9a3e-0c7f5e2b9c01"
	PrivateNet      = "private"
	PrivateNetID    = "5a1c2f0e-7b7d-4d59-9a3e-0c7f5e2b9c02"
	PrivateSubnetID = "6b2d3f1a-8c8e-4e6a-8b4f-1d8a6f3c0d02"
	// ProvisioningNet is a flat network for bare-metal nodes, with port
	// security disabled (Ironic's usual layout).
	ProvisioningNet   = "provisioning"
	ProvisioningNetID = "5a1c2f0e-7b7d-4d59-9a3e-0c7f5e2b9c03"
)

// Cloud serves the reads Magnetite and the tempest plugin make of Glance,
// Nova and Neutron, with the bodies those services document: Nova's
// flavors and keypairs (the plugin creates its keypair through Nova),
// Glance's images and Neutron's networks. Nova, Glance and Neutron cannot
// run here without their whole stack (placement, message queue, agents),
// and nothing else of them is used. Tokens are checked with Keystone, as
// the real services do, because keypairs belong to users.
type Cloud struct {
	t  *testing.T
	ks *testkeystone.Keystone
	// URL is the root; the services are under /compute, /image and
	// /networking, as devstack lays them out.
	URL string

	mu           sync.Mutex
	reads        map[string]int      // "GET /image/v2/images" -> requests Magnetite made
	users        map[string]identity // token -> its user and project
	keypairs     map[string]map[string]keypair
	serverGroups map[string]*ServerGroup // by id
	nextID       int

	// Octavia, Neutron ports and floating IPs, Cinder volumes, by id.
	loadBalancers   map[string]*LoadBalancer
	listeners       map[string]*Listener
	pools           map[string]*Pool
	members         map[string]*Member
	monitors        map[string]*HealthMonitor
	heldLBs         map[string]bool
	octaviaRequests int
	ports           map[string]*Port
	floatingIPs     map[string]*FloatingIP
	nextAddress     map[string]int // by subnet
	nextFloating    int
	volumes         map[string]*Volume
	snapshots       map[string]*Snapshot
	securityGroups  map[string]*SecurityGroup
	cinderRequests  int
	servers         map[string]*Server
	removedFlavors  map[string]bool
	zones           []string      // Nova's availability zones
	hosts           []ComputeHost // Nova's compute services
	missing         []Missing
	quotas          map[string]int  // Neutron's, by resource
	flavors         []flavor        // the fixed ones and those AddFlavor made
	portSecurity    map[string]bool // by network, when changed
	routers         map[string]*Router
	// Volume types and zones an operator made (AddVolumeType,
	// AddVolumeAvailabilityZone).
	addedVolumeTypes map[string]bool
	addedVolumeZones map[string]bool

	// netMu guards the networks and subnets projects make; it is taken
	// after mu, never before.
	netMu sync.Mutex
	nets  map[string]*network
	subs  map[string]*Subnet
	// addedNets are external networks an operator added to the cloud.
	addedNets []network
}

// identity is whom a token speaks for, with its roles in the project
// (Keystone lists implied roles too: admin implies member implies reader).
type identity struct {
	user, project string
	roles         []string
}

// Missing is a service or extension a cloud lacks.
type Missing string

// What a cloud can lack.
const (
	// WithoutL3 is Neutron without the L3 extension: no routers, no
	// floating IPs.
	WithoutL3 Missing = "router"
	// WithoutOctavia is a cloud without the load-balancer service.
	WithoutOctavia Missing = "load-balancer"
	// WithoutCinder is a cloud without the block-storage service.
	WithoutCinder Missing = "block-storage"
)

// ServerGroup is a Nova server group as the stand-in holds it.
type ServerGroup struct {
	ID, Name, Policy, ProjectID, UserID string
}

type keypair struct {
	ID                           int
	Name, PublicKey, Fingerprint string
	Created                      time.Time
}

type flavor struct {
	ID, Name         string
	VCPUs, RAM, Disk int
	ExtraSpecs       map[string]string
}

type image struct {
	ID, Name, OSDistro, KubeVersion string
}

type network struct {
	ID, Name             string
	External             bool
	PortSecurityDisabled bool
	// ProjectID is the project that made the network; the cloud's own
	// networks have none.
	ProjectID string
}

var (
	fixedFlavors = []flavor{
		{ID: "1", Name: "m1.tiny", VCPUs: 1, RAM: 512, Disk: 1},
		{ID: "2", Name: FlavorName, VCPUs: 1, RAM: 2048, Disk: 20},
		{ID: "3", Name: MasterFlavor, VCPUs: 2, RAM: 4096, Disk: 40},
		{ID: "4", Name: BareMetalFlavor, VCPUs: 32, RAM: 131072, Disk: 480, ExtraSpecs: map[string]string{
			"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}},
	}
	images = []image{
		{ID: ImageID, Name: ImageName, OSDistro: "ubuntu", KubeVersion: KubeTag},
		{ID: "0b3a6c1e-6f0e-4c2a-9d55-3f1f8c2d7a02", Name: "cirros-0.6.2", OSDistro: ""},
		{ID: NextImageID, Name: NextImageName, OSDistro: "ubuntu", KubeVersion: NextKubeTag},
	}
	networks = []network{
		{ID: ExternalNetID, Name: ExternalNet, External: true},
		{ID: PrivateNetID, Name: PrivateNet},
		{ID: ProvisioningNetID, Name: ProvisioningNet, PortSecurityDisabled: true},
	}
	subnets = []Subnet{
		{ID: "6b2d3f1a-8c8e-4e6a-8b4f-1d8a6f3c0d01", Name: ExternalNet + "-subnet", NetworkID: ExternalNetID, CIDR: "203.0.113.0/24"},
		{ID: PrivateSubnetID, Name: PrivateNet + "-subnet", NetworkID: PrivateNetID, CIDR: "10.0.0.0/24"},
		{ID: "6b2d3f1a-8c8e-4e6a-8b4f-1d8a6f3c0d03", Name: ProvisioningNet + "-subnet", NetworkID: ProvisioningNetID, CIDR: "10.1.0.0/24"},
	}
)

// Start serves the fake services on loopback and registers them in
// Keystone's catalog as compute, image and network.
func Start(t *testing.T, ks *testkeystone.Keystone, missing ...Missing) *Cloud {
	t.Helper()
	c := &Cloud{t: t, ks: ks, reads: map[string]int{}, users: map[string]identity{}, keypairs: map[string]map[string]keypair{},
		serverGroups: map[string]*ServerGroup{}, loadBalancers: map[string]*LoadBalancer{}, listeners: map[string]*Listener{},
		pools: map[string]*Pool{}, members: map[string]*Member{}, monitors: map[string]*HealthMonitor{}, heldLBs: map[string]bool{}, ports: map[string]*Port{},
		floatingIPs: map[string]*FloatingIP{}, nextAddress: map[string]int{}, volumes: map[string]*Volume{},
		snapshots: map[string]*Snapshot{}, securityGroups: map[string]*SecurityGroup{},
		servers: map[string]*Server{}, removedFlavors: map[string]bool{}, portSecurity: map[string]bool{},
		routers: map[string]*Router{}, missing: missing, flavors: slices.Clone(fixedFlavors), quotas: maps.Clone(neutronDefaultQuotas), addedVolumeTypes: map[string]bool{}, addedVolumeZones: map[string]bool{}, nets: map[string]*network{}, subs: map[string]*Subnet{}}
	mux := http.NewServeMux()
	c.novaRoutes(mux)
	c.glanceRoutes(mux)
	c.neutronRoutes(mux)
	c.portNeutronRoutes(mux)
	c.projectNetworkRoutes(mux)
	c.securityGroupRoutes(mux)
	c.l3Routes(mux)
	if !c.lacks(WithoutOctavia) {
		c.octaviaRoutes(mux)
	}
	if !c.lacks(WithoutCinder) {
		c.cinderRoutes(mux)
		c.snapshotRoutes(mux)
		c.volumeTypeAndZoneRoutes(mux)
	}
	c.discoveryRoutes(mux)
	c.SetComputeZones("nova")
	c.addCloudRouter()
	srv := httptest.NewServer(c.authenticated(c.counted(mux)))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	ks.RegisterService("compute", "nova", c.URL+"/compute/v2.1")
	ks.RegisterService("image", "glance", c.URL+"/image")
	ks.RegisterService("network", "neutron", c.URL+"/networking")
	if !c.lacks(WithoutOctavia) {
		ks.RegisterService("load-balancer", "octavia", c.URL+"/load-balancer")
	}
	if !c.lacks(WithoutCinder) {
		ks.RegisterService("block-storage", "cinder", c.URL+"/volume/v3")
	}
	return c
}

// lacks reports whether the cloud was started without m.
func (c *Cloud) lacks(m Missing) bool { return slices.Contains(c.missing, m) }

// counted counts the requests Magnetite makes (its user agent names it), by
// route.
func (c *Cloud) counted(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, route := mux.Handler(r); route == "" {
			// A client asked for something the stand-in does not serve:
			// say what, so the stand-in can learn it.
			c.t.Logf("testcloud: no route for %s %s (%s)", r.Method, r.URL, r.UserAgent())
		}
		if strings.HasPrefix(r.UserAgent(), "magnetite") {
			_, route := mux.Handler(r)
			c.mu.Lock()
			c.reads[route]++
			c.mu.Unlock()
		}
		mux.ServeHTTP(w, r)
	})
}

// ReadsByMagnetite returns how often Magnetite asked each route.
func (c *Cloud) ReadsByMagnetite() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.reads))
	for k, v := range c.reads {
		out[k] = v
	}
	return out
}

// authenticated answers 401 without a token Keystone accepts, as
// keystonemiddleware does in front of each service.
func (c *Cloud) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := c.user(r.Header.Get("X-Auth-Token"))
		if !ok {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}})
			return
		}
		r.Header.Set("X-User-Id", id.user)
		r.Header.Set("X-Project-Id", id.project)
		r.Header.Set("X-Roles", strings.Join(id.roles, ","))
		next.ServeHTTP(w, r)
	})
}

func (c *Cloud) user(token string) (identity, bool) {
	if token == "" {
		return identity{}, false
	}
	c.mu.Lock()
	id, ok := c.users[token]
	c.mu.Unlock()
	if ok {
		return id, true
	}
	req, err := http.NewRequest("GET", c.ks.AuthURL()+"/auth/tokens", nil)
	if err != nil {
		return identity{}, false
	}
	req.Header.Set("X-Auth-Token", c.ks.AdminToken())
	req.Header.Set("X-Subject-Token", token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return identity{}, false
	}
	defer res.Body.Close()
	var body struct {
		Token struct {
			User    struct{ ID string }     `json:"user"`
			Project struct{ ID string }     `json:"project"`
			Roles   []struct{ Name string } `json:"roles"`
		} `json:"token"`
	}
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&body) != nil {
		return identity{}, false
	}
	id = identity{user: body.Token.User.ID, project: body.Token.Project.ID}
	for _, role := range body.Token.Roles {
		id.roles = append(id.roles, role.Name)
	}
	c.mu.Lock()
	c.users[token] = id
	c.mu.Unlock()
	return id, true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// novaNotFound answers Nova's 404, with format's message about the id
// asked for.
func novaNotFound(format string) func(w http.ResponseWriter, id string) {
	return func(w http.ResponseWriter, id string) {
		writeJSON(w, http.StatusNotFound, map[string]any{"itemNotFound": map[string]any{"code": 404, "message": fmt.Sprintf(format, id)}})
	}
}

func (c *Cloud) novaRoutes(mux *http.ServeMux) {
	flavorBody := func(f flavor) map[string]any {
		specs := map[string]string{}
		for k, v := range f.ExtraSpecs {
			specs[k] = v
		}
		return map[string]any{
			"id": f.ID, "name": f.Name, "vcpus": f.VCPUs, "ram": f.RAM, "disk": f.Disk,
			"OS-FLV-EXT-DATA:ephemeral": 0, "OS-FLV-DISABLED:disabled": false, "swap": 0, "rxtx_factor": 1.0,
			"os-flavor-access:is_public": true, "description": nil, "extra_specs": specs,
			"links": []any{map[string]any{"rel": "self", "href": c.URL + "/compute/v2.1/flavors/" + f.ID}},
		}
	}
	mux.HandleFunc("GET /compute/v2.1/flavors/detail", func(w http.ResponseWriter, r *http.Request) {
		list := []any{}
		for _, f := range c.flavorList() {
			if !c.flavorRemoved(f.ID) {
				list = append(list, flavorBody(f))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"flavors": list})
	})
	mux.HandleFunc("GET /compute/v2.1/flavors/{id}", func(w http.ResponseWriter, r *http.Request) {
		for _, f := range c.flavorList() {
			if f.ID == r.PathValue("id") && !c.flavorRemoved(f.ID) {
				writeJSON(w, http.StatusOK, map[string]any{"flavor": flavorBody(f)})
				return
			}
		}
		novaNotFound("Flavor %s could not be found.")(w, r.PathValue("id"))
	})
	mux.HandleFunc("GET /compute/v2.1/flavors/{id}/os-extra_specs", func(w http.ResponseWriter, r *http.Request) {
		for _, f := range c.flavorList() {
			if f.ID == r.PathValue("id") && !c.flavorRemoved(f.ID) {
				specs := map[string]string{}
				for k, v := range f.ExtraSpecs {
					specs[k] = v
				}
				writeJSON(w, http.StatusOK, map[string]any{"extra_specs": specs})
				return
			}
		}
		novaNotFound("Flavor %s could not be found.")(w, r.PathValue("id"))
	})
	mux.HandleFunc("GET /compute/v2.1/os-keypairs", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		list := []any{}
		for _, k := range c.keypairs[r.Header.Get("X-User-Id")] {
			kp := map[string]any{"name": k.Name, "public_key": k.PublicKey, "fingerprint": k.Fingerprint}
			if novaMicroversion(r) >= 2 {
				kp["type"] = "ssh" // from 2.2
			}
			list = append(list, map[string]any{"keypair": kp})
		}
		writeJSON(w, http.StatusOK, map[string]any{"keypairs": list})
	})
	mux.HandleFunc("GET /compute/v2.1/os-keypairs/{name}", func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("X-User-Id")
		c.mu.Lock()
		k, ok := c.keypairs[user][r.PathValue("name")]
		c.mu.Unlock()
		if !ok {
			novaNotFound("Keypair %s not found for user "+user)(w, r.PathValue("name"))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"keypair": map[string]any{
			"id": k.ID, "name": k.Name, "public_key": k.PublicKey, "fingerprint": k.Fingerprint, "user_id": user,
			"deleted": false, "created_at": k.Created.Format("2006-01-02T15:04:05.000000"), "updated_at": nil, "deleted_at": nil,
		}})
	})
	mux.HandleFunc("DELETE /compute/v2.1/os-keypairs/{name}", func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("X-User-Id")
		c.mu.Lock()
		_, ok := c.keypairs[user][r.PathValue("name")]
		delete(c.keypairs[user], r.PathValue("name"))
		c.mu.Unlock()
		if !ok {
			novaNotFound("Keypair %s not found for user "+user)(w, r.PathValue("name"))
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("POST /compute/v2.1/os-keypairs", c.createKeypair)
	mux.HandleFunc("GET /compute/v2.1/os-availability-zone", c.locked(func(w http.ResponseWriter, r *http.Request) {
		zones := []any{}
		for _, z := range c.zones {
			zones = append(zones, map[string]any{"zoneName": z, "zoneState": map[string]bool{"available": true}, "hosts": nil})
		}
		writeJSON(w, http.StatusOK, map[string]any{"availabilityZoneInfo": zones})
	}))
	c.serverGroupRoutes(mux)
	c.serverRoutes(mux)
}

// createKeypair imports the public key sent, or generates a key pair and
// returns its private half once, as Nova does.
func (c *Cloud) createKeypair(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Keypair struct {
			Name      string `json:"name"`
			PublicKey string `json:"public_key"`
		} `json:"keypair"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Keypair.Name == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"badRequest": map[string]any{"code": 400, "message": "Invalid input for field/attribute keypair."}})
		return
	}
	pub, private := req.Keypair.PublicKey, ""
	if pub == "" {
		var err error
		if pub, private, err = newSSHKey(); err != nil {
			c.t.Error(err)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
	}
	fields := strings.Fields(pub)
	blob, err := []byte(nil), error(nil)
	if len(fields) >= 2 {
		blob, err = base64.StdEncoding.DecodeString(fields[1])
	}
	if len(fields) < 2 || err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"badRequest": map[string]any{"code": 400, "message": "Keypair data is invalid: failed to generate fingerprint"}})
		return
	}
	sum := md5.Sum(blob)
	hexes := make([]string, len(sum))
	for i, b := range sum {
		hexes[i] = fmt.Sprintf("%02x", b)
	}
	user := r.Header.Get("X-User-Id")
	c.mu.Lock()
	if _, dup := c.keypairs[user][req.Keypair.Name]; dup {
		c.mu.Unlock()
		writeJSON(w, http.StatusConflict, map[string]any{"conflictingRequest": map[string]any{"code": 409, "message": "Key pair '" + req.Keypair.Name + "' already exists."}})
		return
	}
	if c.keypairs[user] == nil {
		c.keypairs[user] = map[string]keypair{}
	}
	c.nextID++
	k := keypair{ID: c.nextID, Name: req.Keypair.Name, PublicKey: pub, Fingerprint: strings.Join(hexes, ":"), Created: time.Now().UTC()}
	c.keypairs[user][k.Name] = k
	c.mu.Unlock()
	body := map[string]any{"name": k.Name, "public_key": k.PublicKey, "fingerprint": k.Fingerprint, "user_id": user}
	if private != "" {
		body["private_key"] = private
	}
	writeJSON(w, http.StatusOK, map[string]any{"keypair": body})
}

// newSSHKey makes an ed25519 key pair: the public key in OpenSSH's
// authorized_keys form, the private key as PKCS #8 PEM.
func newSSHKey() (string, string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	var blob bytes.Buffer
	for _, part := range [][]byte{[]byte("ssh-ed25519"), pub} {
		_ = binary.Write(&blob, binary.BigEndian, uint32(len(part)))
		blob.Write(part)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", "", err
	}
	return "ssh-ed25519 " + base64.StdEncoding.EncodeToString(blob.Bytes()) + " Generated-by-Nova",
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
}

func (c *Cloud) glanceRoutes(mux *http.ServeMux) {
	body := func(i image) map[string]any {
		m := map[string]any{
			"id": i.ID, "name": i.Name, "status": "active", "visibility": "public", "protected": false,
			"container_format": "bare", "disk_format": "qcow2", "size": 13287936, "virtual_size": nil,
			"min_disk": 0, "min_ram": 0, "tags": []string{}, "owner": "admin", "os_hidden": false,
			"checksum": "443b7623e27ecf03dc9e01ee93f67afe", "os_hash_algo": "sha512", "os_hash_value": nil,
			"created_at": "2024-05-02T10:00:00Z", "updated_at": "2024-05-02T10:00:05Z",
			"self": "/v2/images/" + i.ID, "file": "/v2/images/" + i.ID + "/file", "schema": "/v2/schemas/image",
		}
		if i.OSDistro != "" {
			m["os_distro"] = i.OSDistro
		}
		if i.KubeVersion != "" {
			m["kube_version"] = i.KubeVersion
		}
		return m
	}
	mux.HandleFunc("GET /image/v2/images", func(w http.ResponseWriter, r *http.Request) {
		list := []any{}
		for _, i := range images {
			if name := r.URL.Query().Get("name"); name != "" && name != i.Name {
				continue
			}
			if id := r.URL.Query().Get("id"); id != "" && id != i.ID {
				continue
			}
			list = append(list, body(i))
		}
		writeJSON(w, http.StatusOK, map[string]any{"images": list, "first": "/v2/images", "schema": "/v2/schemas/images"})
	})
	mux.HandleFunc("GET /image/v2/images/{id}", func(w http.ResponseWriter, r *http.Request) {
		for _, i := range images {
			if i.ID == r.PathValue("id") {
				writeJSON(w, http.StatusOK, body(i))
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "404 Not Found\n\nNo image found with ID %s\n\n", r.PathValue("id"))
	})
}

// networkView is a network as Neutron shows it.
func (c *Cloud) networkView(n network) map[string]any {
	project := n.ProjectID
	if project == "" {
		project = "admin"
	}
	return map[string]any{
		// The cloud's own networks are visible to every project, which in
		// Neutron only a shared (or external) network is; a project's
		// own networks are not shared.
		"id": n.ID, "name": n.Name, "status": "ACTIVE", "admin_state_up": true, "shared": n.ProjectID == "" && !n.External,
		"router:external": n.External, "port_security_enabled": !c.portSecurityDisabled(n), "mtu": 1500, "subnets": []string{},
		"tenant_id": project, "project_id": project, "availability_zones": []string{"nova"},
		"ipv4_address_scope": nil, "ipv6_address_scope": nil, "description": "", "tags": []string{},
		"created_at": "2024-05-02T10:00:00Z", "updated_at": "2024-05-02T10:00:00Z", "revision_number": 1,
	}
}

func (c *Cloud) neutronRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /networking/v2.0/networks", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		list := []any{}
		for _, n := range c.visibleNetworks(r.Header.Get("X-Project-Id")) {
			project := n.ProjectID
			if project == "" {
				project = "admin"
			}
			// Neutron takes booleans in any case (Horizon sends True).
			if (q.Has("name") && q.Get("name") != n.Name) || (q.Has("id") && q.Get("id") != n.ID) ||
				(q.Has("router:external") && !strings.EqualFold(q.Get("router:external"), fmt.Sprint(n.External))) ||
				(q.Has("shared") && !strings.EqualFold(q.Get("shared"), "false")) ||
				(q.Has("tenant_id") && q.Get("tenant_id") != project) || (q.Has("project_id") && q.Get("project_id") != project) {
				continue
			}
			list = append(list, c.networkView(n))
		}
		writeJSON(w, http.StatusOK, map[string]any{"networks": list})
	})
	// The extensions of what the stand-in serves; clients such as Horizon
	// ask before they use one (and hide what is missing).
	mux.HandleFunc("GET /networking/v2.0/extensions", func(w http.ResponseWriter, r *http.Request) {
		ext := func(alias, name, desc string) map[string]any {
			return map[string]any{"alias": alias, "name": name, "description": desc, "updated": "2013-01-14T10:00:00-00:00", "links": []any{}}
		}
		list := []any{
			ext("external-net", "Neutron external network", "Adds external network attribute to network resource."),
			ext("network-mtu", "Network MTU", "Provides MTU attribute for a network resource."),
			ext("port-security", "Port Security", "Provides port security"),
		}
		if !c.lacks(WithoutL3) {
			list = append(list, ext("router", "Neutron L3 Router", "Router abstraction for basic L3 forwarding between L2 Neutron networks and access to external networks via a NAT gateway."))
		}
		writeJSON(w, http.StatusOK, map[string]any{"extensions": list})
	})
}

// kind is one kind of resource a stand-in service holds, each of a
// project: how the service lists it, finds one for its project and answers
// when there is none.
type kind[T any] struct {
	// key is the JSON key of one ("volume"); a list's is key+"s".
	key   string
	items map[string]*T
	// fields are an item's values a list filters by; project_id is its
	// project.
	fields   func(*T) map[string]string
	view     func(*T) map[string]any
	notFound func(w http.ResponseWriter, id string)
	// locked runs a handler holding the lock that guards items.
	locked func(http.HandlerFunc) http.HandlerFunc
}

// list answers a list request with the items of the caller's project that
// match each query filter the request names among fields, as OpenStack's
// list APIs filter.
func (k kind[T]) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	list := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(k.items)) {
		it := k.items[id]
		f := k.fields(it)
		match := f["project_id"] == r.Header.Get("X-Project-Id")
		for name, v := range f {
			if name != "project_id" && q.Has(name) && q.Get(name) != v {
				match = false
			}
		}
		if match {
			list = append(list, k.view(it))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{k.key + "s": list, k.key + "s_links": []any{}})
}

// own finds an item of the caller's project by the path's id, answering
// with notFound when there is none.
func (k kind[T]) own(w http.ResponseWriter, r *http.Request) (*T, bool) {
	it, ok := k.items[r.PathValue("id")]
	if !ok || k.fields(it)["project_id"] != r.Header.Get("X-Project-Id") {
		k.notFound(w, r.PathValue("id"))
		return nil, false
	}
	return it, true
}

// onOwned serves a request about the caller's project's item of the path
// (notFound when there is none) with h, holding the lock.
func (k kind[T]) onOwned(h func(w http.ResponseWriter, r *http.Request, it *T)) http.HandlerFunc {
	return k.locked(func(w http.ResponseWriter, r *http.Request) {
		if it, ok := k.own(w, r); ok {
			h(w, r, it)
		}
	})
}

// serveReads serves the list (GET base, and the other lists paths) and the
// show (GET base/{id}) of the kind.
func (k kind[T]) serveReads(mux *http.ServeMux, base string, lists ...string) {
	for _, path := range append([]string{base}, lists...) {
		mux.HandleFunc("GET "+path, k.locked(k.list))
	}
	mux.HandleFunc("GET "+base+"/{id}", k.onOwned(func(w http.ResponseWriter, _ *http.Request, it *T) {
		writeJSON(w, http.StatusOK, map[string]any{k.key: k.view(it)})
	}))
}

// projectOf is the fields of an item that lists filter by nothing but its
// project.
func projectOf[T any](project func(*T) string) func(*T) map[string]string {
	return func(it *T) map[string]string { return map[string]string{"project_id": project(it)} }
}

// locked runs a handler under c.mu.
func (c *Cloud) locked(h http.HandlerFunc) http.HandlerFunc { return c.lockedAfter(func() {})(h) }

// lockedAfter runs handlers under c.mu after settle has let the service's
// background work (its workers finishing what the API accepted) move on.
func (c *Cloud) lockedAfter(settle func()) func(http.HandlerFunc) http.HandlerFunc {
	return func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			c.mu.Lock()
			defer c.mu.Unlock()
			settle()
			h(w, r)
		}
	}
}

// decoded reads a request's JSON body into v, answering with malformed
// when it cannot be read.
func decoded(w http.ResponseWriter, r *http.Request, v any, malformed func(http.ResponseWriter)) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		malformed(w)
		return false
	}
	return true
}

// snapshot copies the items of one of the cloud's maps, guarded by mu, in
// ID order.
func snapshot[T any](mu *sync.Mutex, items map[string]*T) []T {
	mu.Lock()
	defer mu.Unlock()
	out := make([]T, 0, len(items))
	for _, id := range slices.Sorted(maps.Keys(items)) {
		out = append(out, *items[id])
	}
	return out
}

func (c *Cloud) flavorRemoved(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.removedFlavors[id]
}

// flavorList is Nova's flavors, removed ones too.
func (c *Cloud) flavorList() []flavor {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.flavors)
}

// AddFlavor adds a public flavor, as an operator's `openstack flavor
// create` does, and returns its ID. A resourceClass ("BAREMETAL_SILVER")
// makes it an Ironic flavor: it asks for one node of that class and
// zeroes the standard resources, as Ironic's flavor guide says.
func (c *Cloud) AddFlavor(name string, vcpus, ramMB, diskGB int, resourceClass string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := flavor{ID: fmt.Sprint(len(c.flavors) + 1), Name: name, VCPUs: vcpus, RAM: ramMB, Disk: diskGB}
	if resourceClass != "" {
		f.ExtraSpecs = map[string]string{"resources:CUSTOM_" + resourceClass: "1",
			"resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
	}
	c.flavors = append(c.flavors, f)
	return f.ID
}
