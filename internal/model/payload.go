package model

import (
	"encoding/json"
	"fmt"
)

// Payload is what an operation carries from the request that queued it to
// the conductor that carries it out. Each operation kind has its own
// struct; the store keeps it as a JSON object in the operation's row, and
// EncodePayload and DecodePayload are the one place that converts it.
//
// A new operation kind adds its struct here (or beside the kind's
// constant), with JSON names that never change meaning once released, a
// pointer-receiver OperationType method, and a line in payloadKinds.
// Readers type-assert op.Payload to the kind's pointer type. A kind that
// carries nothing (cluster_delete) has no payload.
type Payload interface {
	// OperationType is the kind of operation the payload belongs to.
	OperationType() OperationType
}

// ClusterCreatePayload: POST /v1/clusters.
type ClusterCreatePayload struct {
	MasterCount   int `json:"master_count"`
	NodeCount     int `json:"node_count"`
	CreateTimeout int `json:"create_timeout"`
}

// ClusterUpdatePayload: PATCH /v1/clusters/{id} of node_count, which sizes
// the default worker node group.
type ClusterUpdatePayload struct {
	NodeCount int `json:"node_count"`
}

// ClusterResizePayload: POST /v1/clusters/{id}/actions/resize.
type ClusterResizePayload struct {
	NodeGroup string `json:"nodegroup"`
	NodeCount int    `json:"node_count"`
	// NodesToRemove names the nodes to remove first, by machine name, node
	// name or server id.
	NodesToRemove []string `json:"nodes_to_remove"`
}

// ClusterUpgradePayload: POST /v1/clusters/{id}/actions/upgrade.
type ClusterUpgradePayload struct {
	ClusterTemplate string `json:"cluster_template"`
	NodeGroup       string `json:"nodegroup"`
	MaxBatchSize    *int   `json:"max_batch_size,omitempty"`
}

// NodeGroupCreatePayload: POST /v1/clusters/{id}/nodegroups.
type NodeGroupCreatePayload struct {
	NodeGroup string `json:"nodegroup"`
}

// NodeGroupUpdatePayload: PATCH of a node group.
type NodeGroupUpdatePayload struct {
	NodeGroup string `json:"nodegroup"`
	// Changed lists the fields the request changed.
	Changed []string `json:"changed,omitempty"`
}

// NodeGroupDeletePayload: DELETE of a node group.
type NodeGroupDeletePayload struct {
	NodeGroup string `json:"nodegroup"`
}

// CredentialRotatePayload: rotation of a cluster's application credential.
type CredentialRotatePayload struct {
	// Credential is the id of the new application credential.
	Credential string `json:"credential"`
}

func (*ClusterCreatePayload) OperationType() OperationType    { return OpClusterCreate }
func (*ClusterUpdatePayload) OperationType() OperationType    { return OpClusterUpdate }
func (*ClusterResizePayload) OperationType() OperationType    { return OpClusterResize }
func (*ClusterUpgradePayload) OperationType() OperationType   { return OpClusterUpgrade }
func (*NodeGroupCreatePayload) OperationType() OperationType  { return OpNodeGroupCreate }
func (*NodeGroupUpdatePayload) OperationType() OperationType  { return OpNodeGroupUpdate }
func (*NodeGroupDeletePayload) OperationType() OperationType  { return OpNodeGroupDelete }
func (*CredentialRotatePayload) OperationType() OperationType { return OpCredentialRotate }

// payloadKinds makes an empty payload of each kind for decoding.
var payloadKinds = map[OperationType]func() Payload{
	OpClusterCreate:    func() Payload { return &ClusterCreatePayload{} },
	OpClusterUpdate:    func() Payload { return &ClusterUpdatePayload{} },
	OpClusterResize:    func() Payload { return &ClusterResizePayload{} },
	OpClusterUpgrade:   func() Payload { return &ClusterUpgradePayload{} },
	OpNodeGroupCreate:  func() Payload { return &NodeGroupCreatePayload{} },
	OpNodeGroupUpdate:  func() Payload { return &NodeGroupUpdatePayload{} },
	OpNodeGroupDelete:  func() Payload { return &NodeGroupDeletePayload{} },
	OpCredentialRotate: func() Payload { return &CredentialRotatePayload{} },
}

// RawPayload is the payload of a kind this build does not know (a newer
// release queued it during a rolling upgrade): kept as stored, so that
// listing and rewriting the row loses nothing.
type RawPayload struct {
	Type OperationType
	JSON json.RawMessage
}

func (p *RawPayload) OperationType() OperationType { return p.Type }

// MarshalJSON writes the payload back as it was read.
func (p *RawPayload) MarshalJSON() ([]byte, error) {
	if len(p.JSON) == 0 {
		return []byte("null"), nil
	}
	return p.JSON, nil
}

// EncodePayload is the JSON object stored for an operation of kind t: nil
// for no payload. A payload of another kind is refused, so that the
// conductor never reads one kind's payload as another's.
func EncodePayload(t OperationType, p Payload) ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	if p.OperationType() != t {
		return nil, fmt.Errorf("model: a %s payload on a %s operation", p.OperationType(), t)
	}
	return json.Marshal(p)
}

// DecodePayload reads what EncodePayload stored, and the maps earlier
// releases stored under the same names. An empty column is no payload.
func DecodePayload(t OperationType, raw []byte) (Payload, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	mk, ok := payloadKinds[t]
	if !ok {
		return &RawPayload{Type: t, JSON: append(json.RawMessage(nil), raw...)}, nil
	}
	p := mk()
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, fmt.Errorf("model: decode %s payload: %w", t, err)
	}
	return p, nil
}
