package testcloud

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Volume is a Cinder volume as the stand-in holds it.
type Volume struct {
	ID, Name, Description, ProjectID, Status string
	Size                                     int
	ImageID, VolumeType, AvailabilityZone    string
	Metadata                                 map[string]string
	// AttachedTo is the server the volume is attached to ("" when none).
	AttachedTo string
	settles    int
}

// volumeTypes are the stand-in's volume types (devstack's); the one
// availability zone is nova.
var volumeTypes = []string{"__DEFAULT__", "lvmdriver-1"}

// volumeDeletable are the statuses Cinder deletes a volume in (without
// force; cinder/volume/api.py).
var volumeDeletable = []string{"available", "error", "error_restoring", "error_extending", "error_managing"}

// cinderFault answers as Cinder does: {"<kind>": {"code", "message"}}.
func cinderFault(w http.ResponseWriter, status int, kind, msg string) {
	writeJSON(w, status, map[string]any{kind: map[string]any{"code": status, "message": msg}})
}

// cinderNotFound answers Cinder's 404, with format's message about the id
// asked for.
func cinderNotFound(format string) func(w http.ResponseWriter, id string) {
	return func(w http.ResponseWriter, id string) {
		cinderFault(w, http.StatusNotFound, "itemNotFound", fmt.Sprintf(format, id))
	}
}

var volumeNotFound = cinderNotFound("Volume %s could not be found.")

func cinderMalformed(w http.ResponseWriter) {
	cinderFault(w, http.StatusBadRequest, "badRequest", "Malformed request body")
}

// settleVolumes moves volumes out of creating and deleting a request after
// the one that put them there, as Cinder's volume service finishes its
// work. It holds c.mu.
func (c *Cloud) settleVolumes() {
	c.cinderRequests++
	settle(c.cinderRequests, c.volumes, func(v *Volume) (*string, int) { return &v.Status, v.settles })
	settle(c.cinderRequests, c.snapshots, func(s *Snapshot) (*string, int) { return &s.Status, s.settles })
}

// settle moves the items whose settles mark requests has reached from
// creating to available, and removes those deleting.
func settle[T any](requests int, items map[string]*T, state func(*T) (status *string, settles int)) {
	for id, it := range items {
		status, settles := state(it)
		if requests < settles {
			continue
		}
		switch *status {
		case "creating":
			*status = "available"
		case "deleting":
			delete(items, id)
		}
	}
}

func volumeView(v *Volume) map[string]any {
	attachments := []map[string]any{}
	if v.AttachedTo != "" {
		attachments = append(attachments, map[string]any{"server_id": v.AttachedTo, "volume_id": v.ID, "id": v.ID,
			"attachment_id": "a-" + v.ID, "device": "/dev/vdb"})
	}
	meta := map[string]string{}
	for k, val := range v.Metadata {
		meta[k] = val
	}
	return map[string]any{"id": v.ID, "name": v.Name, "description": v.Description, "status": v.Status, "size": v.Size,
		"availability_zone": v.AvailabilityZone, "volume_type": v.VolumeType, "metadata": meta, "attachments": attachments,
		"bootable": fmt.Sprint(v.ImageID != ""), "os-vol-tenant-attr:tenant_id": v.ProjectID, "multiattach": false,
		"created_at": "2024-05-02T10:00:00.000000", "updated_at": nil, "encrypted": false}
}

// cinderRoutes serve Cinder's v3 volumes (project-less URLs, API 3.67 and
// later): create, list, show and delete, with Cinder's statuses and its
// refusal to delete a volume that is attached or busy.
func (c *Cloud) cinderRoutes(mux *http.ServeMux) {
	const base = "/volume/v3/volumes"
	volumes := kind[Volume]{key: "volume", items: c.volumes, view: volumeView, locked: c.lockedAfter(c.settleVolumes),
		fields:   func(v *Volume) map[string]string { return map[string]string{"project_id": v.ProjectID, "name": v.Name} },
		notFound: volumeNotFound}
	volumes.serveReads(mux, base, base+"/detail")
	mux.HandleFunc("POST "+base, volumes.locked(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			V struct {
				Name             string            `json:"name"`
				Description      string            `json:"description"`
				Size             int               `json:"size"`
				ImageRef         string            `json:"imageRef"`
				VolumeType       string            `json:"volume_type"`
				AvailabilityZone string            `json:"availability_zone"`
				Metadata         map[string]string `json:"metadata"`
			} `json:"volume"`
		}
		if !decoded(w, r, &body, cinderMalformed) {
			return
		}
		in := body.V
		if in.Size < 1 {
			cinderFault(w, http.StatusBadRequest, "badRequest", fmt.Sprintf("Invalid input for field/attribute size. Value: %d. %d is less than the minimum of 1", in.Size, in.Size))
			return
		}
		if in.VolumeType != "" && !slices.Contains(volumeTypes, in.VolumeType) && !c.addedVolumeTypes[in.VolumeType] {
			cinderNotFound("Volume type with name %s could not be found.")(w, in.VolumeType)
			return
		}
		if in.AvailabilityZone != "" && in.AvailabilityZone != "nova" && !c.addedVolumeZones[in.AvailabilityZone] {
			cinderFault(w, http.StatusBadRequest, "badRequest", fmt.Sprintf("Invalid input received: Availability zone '%s' is invalid.", in.AvailabilityZone))
			return
		}
		if in.ImageRef != "" && !slices.ContainsFunc(images, func(i image) bool { return i.ID == in.ImageRef }) {
			cinderFault(w, http.StatusBadRequest, "badRequest", "Invalid image identifier or unable to access requested image.")
			return
		}
		v := &Volume{ID: uuid.NewString(), Name: in.Name, Description: in.Description, ProjectID: r.Header.Get("X-Project-Id"),
			Status: "creating", Size: in.Size, ImageID: in.ImageRef, VolumeType: in.VolumeType, AvailabilityZone: in.AvailabilityZone,
			Metadata: in.Metadata, settles: c.cinderRequests + 2}
		if v.AvailabilityZone == "" {
			v.AvailabilityZone = "nova"
		}
		c.volumes[v.ID] = v
		writeJSON(w, http.StatusAccepted, map[string]any{"volume": volumeView(v)})
	}))
	mux.HandleFunc("DELETE "+base+"/{id}", volumes.onOwned(func(w http.ResponseWriter, _ *http.Request, v *Volume) {
		hasSnapshots := slices.ContainsFunc(slices.Collect(maps.Values(c.snapshots)), func(s *Snapshot) bool { return s.VolumeID == v.ID })
		if v.AttachedTo != "" || !slices.Contains(volumeDeletable, v.Status) || hasSnapshots {
			cinderFault(w, http.StatusBadRequest, "badRequest", "Invalid volume: Volume status must be "+strings.Join(volumeDeletable, " or ")+
				" and must not be migrating, attached, belong to a group, have snapshots, awaiting a transfer, or be disassociated from snapshots after volume transfer.")
			return
		}
		v.Status, v.settles = "deleting", c.cinderRequests+2
		w.WriteHeader(http.StatusAccepted)
	}))
}

// volumeTypeID is a volume type's ID, the same for its name in every
// stand-in.
func volumeTypeID(name string) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("cinder volume type "+name)).String()
}

// volumeTypeAndZoneRoutes list the volume types and availability zones a
// project can use, in the shapes of Cinder's views (a member sees
// neither extra specs nor QoS: cinder/api/v2/views/types.py, and
// volume_type_access.py adds the access flag;
// cinder/api/views/availability_zones.py): what Magnetite reads to tell
// whether a failed server's root volume can be made now.
func (c *Cloud) volumeTypeAndZoneRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /volume/v3/types", c.locked(func(w http.ResponseWriter, _ *http.Request) {
		names := slices.Concat(volumeTypes, slices.Sorted(maps.Keys(c.addedVolumeTypes)))
		list := []map[string]any{}
		for _, n := range names {
			list = append(list, map[string]any{"id": volumeTypeID(n), "name": n, "is_public": true, "description": nil,
				"os-volume-type-access:is_public": true})
		}
		writeJSON(w, http.StatusOK, map[string]any{"volume_types": list})
	}))
	mux.HandleFunc("GET /volume/v3/os-availability-zone", c.locked(func(w http.ResponseWriter, _ *http.Request) {
		list := []map[string]any{}
		for _, z := range slices.Concat([]string{"nova"}, slices.Sorted(maps.Keys(c.addedVolumeZones))) {
			list = append(list, map[string]any{"zoneName": z, "zoneState": map[string]any{"available": true}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"availabilityZoneInfo": list})
	}))
}

// AddVolumeType makes a volume type, as an operator would with `openstack
// volume type create`.
func (c *Cloud) AddVolumeType(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addedVolumeTypes[name] = true
}

// AddVolumeAvailabilityZone makes a Cinder availability zone, as an
// operator would by adding a storage backend in that zone.
func (c *Cloud) AddVolumeAvailabilityZone(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addedVolumeZones[name] = true
}

// Volumes returns the volumes the stand-in holds, of every project.
func (c *Cloud) Volumes() []Volume { return snapshot(&c.mu, c.volumes) }

// AttachVolume attaches a volume to a server (or, with "", detaches it), as
// Nova's volume attachments do: an attached volume is in-use.
func (c *Cloud) AttachVolume(id, serverID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.volumes[id]; ok {
		v.AttachedTo = serverID
		v.Status = "available"
		if serverID != "" {
			v.Status = "in-use"
		}
	}
}

// Snapshot is a Cinder volume snapshot as the stand-in holds it.
type Snapshot struct {
	ID, Name, VolumeID, ProjectID, Status string
	Size                                  int
	Metadata                              map[string]string
	settles                               int
}

func snapshotView(s *Snapshot) map[string]any {
	meta := map[string]string{}
	for k, v := range s.Metadata {
		meta[k] = v
	}
	return map[string]any{"id": s.ID, "name": s.Name, "volume_id": s.VolumeID, "status": s.Status, "size": s.Size,
		"metadata": meta, "os-extended-snapshot-attributes:project_id": s.ProjectID, "description": nil,
		"created_at": "2024-05-02T10:00:00.000000", "updated_at": nil}
}

// snapshotDeletable are the statuses Cinder deletes a snapshot in.
var snapshotDeletable = []string{"available", "error", "error_deleting"}

// snapshotRoutes serve Cinder's v3 snapshots: create (of an available or,
// forced, in-use volume), list, show and delete, with Cinder's statuses;
// a volume with snapshots is not deleted (cinderRoutes).
func (c *Cloud) snapshotRoutes(mux *http.ServeMux) {
	const base = "/volume/v3/snapshots"
	snapshots := kind[Snapshot]{key: "snapshot", items: c.snapshots, view: snapshotView, locked: c.lockedAfter(c.settleVolumes),
		fields: func(s *Snapshot) map[string]string {
			return map[string]string{"project_id": s.ProjectID, "name": s.Name, "volume_id": s.VolumeID, "status": s.Status}
		},
		notFound: cinderNotFound("Snapshot %s could not be found.")}
	snapshots.serveReads(mux, base, base+"/detail")
	mux.HandleFunc("POST "+base, snapshots.locked(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			S struct {
				Name     string            `json:"name"`
				VolumeID string            `json:"volume_id"`
				Force    bool              `json:"force"`
				Metadata map[string]string `json:"metadata"`
			} `json:"snapshot"`
		}
		if !decoded(w, r, &body, cinderMalformed) {
			return
		}
		in := body.S
		v, ok := c.volumes[in.VolumeID]
		if !ok || v.ProjectID != r.Header.Get("X-Project-Id") {
			volumeNotFound(w, in.VolumeID)
			return
		}
		if v.Status != "available" && (v.Status != "in-use" || !in.Force) {
			cinderFault(w, http.StatusBadRequest, "badRequest", fmt.Sprintf("Invalid volume: Volume %s status must be available, but current status is: %s.", v.ID, v.Status))
			return
		}
		s := &Snapshot{ID: uuid.NewString(), Name: in.Name, VolumeID: v.ID, ProjectID: v.ProjectID, Status: "creating",
			Size: v.Size, Metadata: in.Metadata, settles: c.cinderRequests + 2}
		c.snapshots[s.ID] = s
		writeJSON(w, http.StatusAccepted, map[string]any{"snapshot": snapshotView(s)})
	}))
	mux.HandleFunc("DELETE "+base+"/{id}", snapshots.onOwned(func(w http.ResponseWriter, _ *http.Request, s *Snapshot) {
		if !slices.Contains(snapshotDeletable, s.Status) {
			cinderFault(w, http.StatusBadRequest, "badRequest", "Invalid snapshot: Volume Snapshot status must be available or error and must not be part of a group.")
			return
		}
		s.Status, s.settles = "deleting", c.cinderRequests+2
		w.WriteHeader(http.StatusAccepted)
	}))
}

// Snapshots returns the volume snapshots the stand-in holds, of every
// project.
func (c *Cloud) Snapshots() []Snapshot { return snapshot(&c.mu, c.snapshots) }
