package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
)

// A cluster and a node group are kept as two JSON documents and a few
// bookkeeping columns:
//
//   - the spec (spec_json): what a request asked for; only the API writes it;
//   - the status (status_json): what the conductor reports, and the status
//     the API sets when it queues work;
//   - bookkeeping (resource_version, generation, applied_generation,
//     observed_generation, server_group_id): never in a document the API
//     serves.
//
// The API serves the two documents spliced into one object. Writes never
// merge: the API writes both documents from one read, on the condition
// that the row is still at the version it read (ErrStale otherwise); the
// conductor re-reads under the row's lock and writes the status document
// and its bookkeeping only.

// clusterStatus is the status document of a cluster: every field a
// conductor's status write may change. The rest of model.Cluster is spec.
type clusterStatus struct {
	Status             model.Status      `json:"status"`
	StatusReason       *string           `json:"status_reason"`
	HealthStatus       *model.Health     `json:"health_status"`
	HealthStatusReason map[string]string `json:"health_status_reason"`
	APIAddress         *string           `json:"api_address"`
	COEVersion         *string           `json:"coe_version"`
	ContainerVersion   *string           `json:"container_version"`
	UpdatedAt          *time.Time        `json:"updated_at"`
}

// clusterSpec encodes a cluster without its status: each field declared
// here hides the embedded cluster's field of the same JSON name (a
// shallower field wins in encoding/json) and, always nil, is left out.
type clusterSpec struct {
	*model.Cluster
	Status             *struct{} `json:"status,omitempty"`
	StatusReason       *struct{} `json:"status_reason,omitempty"`
	HealthStatus       *struct{} `json:"health_status,omitempty"`
	HealthStatusReason *struct{} `json:"health_status_reason,omitempty"`
	APIAddress         *struct{} `json:"api_address,omitempty"`
	COEVersion         *struct{} `json:"coe_version,omitempty"`
	ContainerVersion   *struct{} `json:"container_version,omitempty"`
	UpdatedAt          *struct{} `json:"updated_at,omitempty"`
}

// nodeGroupStatus is the status document of a node group.
type nodeGroupStatus struct {
	NodeAddresses []string     `json:"node_addresses"`
	Status        model.Status `json:"status"`
	StatusReason  *string      `json:"status_reason"`
	Version       *string      `json:"version"`
	UpdatedAt     *time.Time   `json:"updated_at"`
}

// nodeGroupSpec encodes a node group without its status (see clusterSpec).
type nodeGroupSpec struct {
	*model.NodeGroup
	NodeAddresses *struct{} `json:"node_addresses,omitempty"`
	Status        *struct{} `json:"status,omitempty"`
	StatusReason  *struct{} `json:"status_reason,omitempty"`
	Version       *struct{} `json:"version,omitempty"`
	UpdatedAt     *struct{} `json:"updated_at,omitempty"`
}

// documents is an object's two documents as written.
type documents struct {
	spec, status []byte
}

func clusterDocuments(c *model.Cluster) (documents, error) {
	spec, err := json.Marshal(clusterSpec{Cluster: c})
	if err != nil {
		return documents{}, err
	}
	status, err := json.Marshal(clusterStatus{Status: c.Status, StatusReason: c.StatusReason, HealthStatus: c.HealthStatus,
		HealthStatusReason: c.HealthStatusReason, APIAddress: c.APIAddress, COEVersion: c.COEVersion,
		ContainerVersion: c.ContainerVersion, UpdatedAt: c.UpdatedAt})
	return documents{spec, status}, err
}

func nodeGroupDocuments(ng *model.NodeGroup) (documents, error) {
	spec, err := json.Marshal(nodeGroupSpec{NodeGroup: ng})
	if err != nil {
		return documents{}, err
	}
	status, err := json.Marshal(nodeGroupStatus{NodeAddresses: ng.NodeAddresses, Status: ng.Status,
		StatusReason: ng.StatusReason, Version: ng.Version, UpdatedAt: ng.UpdatedAt})
	return documents{spec, status}, err
}

// served is the object the API serves: the spec's members, then the
// status's, in one JSON object.
func (d documents) served() []byte {
	return splice(d.spec, d.status)
}

// legacy is the document the release before this one kept in the data
// column, which it still reads during a rolling upgrade: both documents
// and the bookkeeping it kept among them.
func (d documents) legacy(extra map[string]any) ([]byte, error) {
	out := splice(d.spec, d.status)
	if len(extra) == 0 {
		return out, nil
	}
	more, err := json.Marshal(extra)
	if err != nil {
		return nil, err
	}
	return splice(out, more), nil
}

// splice joins two encoded JSON objects into one; their keys are disjoint.
func splice(a, b []byte) []byte {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if len(b) <= 2 {
		return bytes.Clone(a)
	}
	if len(a) <= 2 {
		return bytes.Clone(b)
	}
	out := make([]byte, 0, len(a)+len(b))
	out = append(out, a[:len(a)-1]...)
	out = append(out, ',')
	return append(out, b[1:]...)
}

// legacyBookkeeping is what the previous release kept of its bookkeeping
// inside the documents.
type legacyBookkeeping struct {
	AppliedGeneration int64  `json:"applied_generation"`
	ServerGroupID     string `json:"server_group_id"`
}

// splitLegacyCluster reads a cluster's document as the previous release
// wrote it (spec, status and bookkeeping in one object) into its two
// documents and its applied generation.
func splitLegacyCluster(data []byte) (documents, int64, error) {
	var c model.Cluster
	var bk legacyBookkeeping
	if err := json.Unmarshal(data, &c); err != nil {
		return documents{}, 0, err
	}
	if err := json.Unmarshal(data, &bk); err != nil {
		return documents{}, 0, err
	}
	d, err := clusterDocuments(&c)
	return d, bk.AppliedGeneration, err
}

// splitLegacyNodeGroup is splitLegacyCluster for a node group, whose
// bookkeeping was its server group.
func splitLegacyNodeGroup(data []byte) (documents, string, error) {
	var ng model.NodeGroup
	var bk legacyBookkeeping
	if err := json.Unmarshal(data, &ng); err != nil {
		return documents{}, "", err
	}
	if err := json.Unmarshal(data, &bk); err != nil {
		return documents{}, "", err
	}
	d, err := nodeGroupDocuments(&ng)
	return d, bk.ServerGroupID, err
}

// splitStoredDocuments carries the rows of the release before migration 11
// over: each cluster's and node group's one document becomes its spec and
// status documents, and the bookkeeping it held moves to its columns. Rows
// already split are left alone, so it may run again.
func splitStoredDocuments(ctx context.Context, tx *sql.Tx) error {
	type row struct {
		id   int64
		data []byte
	}
	read := func(table string) ([]row, error) {
		rows, err := tx.QueryContext(ctx, "SELECT id, data FROM "+table+" WHERE spec_json IS NULL")
		return collect(rows, err, func(sc scanner) (row, error) {
			var r row
			err := sc.Scan(&r.id, &r.data)
			return r, err
		})
	}
	clusters, err := read("clusters")
	if err != nil {
		return err
	}
	for _, r := range clusters {
		d, applied, err := splitLegacyCluster(r.data)
		if err != nil {
			return fmt.Errorf("store: split cluster %d: %w", r.id, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE clusters SET spec_json = ?, status_json = ?, applied_generation = ? WHERE id = ?`,
			string(d.spec), string(d.status), applied, r.id); err != nil {
			return err
		}
	}
	groups, err := read("nodegroups")
	if err != nil {
		return err
	}
	for _, r := range groups {
		d, serverGroup, err := splitLegacyNodeGroup(r.data)
		if err != nil {
			return fmt.Errorf("store: split node group %d: %w", r.id, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE nodegroups SET spec_json = ?, status_json = ?, server_group_id = ? WHERE id = ?`,
			string(d.spec), string(d.status), serverGroup, r.id); err != nil {
			return err
		}
	}
	return nil
}
