package model

import (
	"encoding/json"
	"reflect"
	"testing"
)

// everyPayload is one payload of each kind, with every field set.
func everyPayload() []Payload {
	batch := 2
	return []Payload{
		&ClusterCreatePayload{MasterCount: 3, NodeCount: 5, CreateTimeout: 60},
		&ClusterUpdatePayload{NodeCount: 4},
		&ClusterResizePayload{NodeGroup: "default-worker", NodeCount: 1, NodesToRemove: []string{"demo-md-0-abc", "server-1"}},
		&ClusterUpgradePayload{ClusterTemplate: "t-2", NodeGroup: "default-master", MaxBatchSize: &batch},
		&NodeGroupCreatePayload{NodeGroup: "gpu"},
		&NodeGroupUpdatePayload{NodeGroup: "gpu", Changed: []string{"max_node_count", "min_node_count"}},
		&NodeGroupDeletePayload{NodeGroup: "gpu"},
		&CredentialRotatePayload{Credential: "ac-1"},
	}
}

func TestEveryPayloadRoundTrips(t *testing.T) {
	seen := map[OperationType]bool{}
	for _, p := range everyPayload() {
		seen[p.OperationType()] = true
		b, err := EncodePayload(p.OperationType(), p)
		if err != nil {
			t.Fatalf("encode %T: %v", p, err)
		}
		got, err := DecodePayload(p.OperationType(), b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Errorf("%s round-trips to %#v, want %#v", p.OperationType(), got, p)
		}
	}
	for typ := range payloadKinds {
		if !seen[typ] {
			t.Errorf("no round-trip case for %s", typ)
		}
	}
}

// TestPayloadsStoredByEarlierReleasesDecode: rows written when the payload
// was a map (numbers, and lists of strings, as encoding/json wrote them)
// read as the kind's struct.
func TestPayloadsStoredByEarlierReleasesDecode(t *testing.T) {
	batch := 1
	for _, tc := range []struct {
		typ  OperationType
		old  map[string]any
		want Payload
	}{
		{OpClusterCreate, map[string]any{"master_count": 1, "node_count": 2, "create_timeout": 60},
			&ClusterCreatePayload{MasterCount: 1, NodeCount: 2, CreateTimeout: 60}},
		{OpClusterUpdate, map[string]any{"node_count": 3}, &ClusterUpdatePayload{NodeCount: 3}},
		{OpClusterResize, map[string]any{"node_count": 1, "nodes_to_remove": []string{"m-0"}, "nodegroup": "default-worker"},
			&ClusterResizePayload{NodeGroup: "default-worker", NodeCount: 1, NodesToRemove: []string{"m-0"}}},
		{OpClusterResize, map[string]any{"node_count": 2, "nodes_to_remove": []string{}, "nodegroup": "w"},
			&ClusterResizePayload{NodeGroup: "w", NodeCount: 2, NodesToRemove: []string{}}},
		{OpClusterUpgrade, map[string]any{"cluster_template": "t-2", "nodegroup": "default-worker", "max_batch_size": 1},
			&ClusterUpgradePayload{ClusterTemplate: "t-2", NodeGroup: "default-worker", MaxBatchSize: &batch}},
		{OpClusterUpgrade, map[string]any{"cluster_template": "t-2", "nodegroup": "default-worker"},
			&ClusterUpgradePayload{ClusterTemplate: "t-2", NodeGroup: "default-worker"}},
		{OpNodeGroupCreate, map[string]any{"nodegroup": "gpu"}, &NodeGroupCreatePayload{NodeGroup: "gpu"}},
		{OpNodeGroupUpdate, map[string]any{"nodegroup": "gpu", "changed": []string{"max_node_count"}},
			&NodeGroupUpdatePayload{NodeGroup: "gpu", Changed: []string{"max_node_count"}}},
		{OpNodeGroupDelete, map[string]any{"nodegroup": "gpu"}, &NodeGroupDeletePayload{NodeGroup: "gpu"}},
		{OpCredentialRotate, map[string]any{"credential": "ac-1"}, &CredentialRotatePayload{Credential: "ac-1"}},
	} {
		b, err := json.Marshal(tc.old)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodePayload(tc.typ, b)
		if err != nil {
			t.Fatalf("%s row %s: %v", tc.typ, b, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s row %s decodes to %#v, want %#v", tc.typ, b, got, tc.want)
		}
	}
}

func TestPayloadOfAnotherKindIsRefused(t *testing.T) {
	if _, err := EncodePayload(OpClusterUpdate, &ClusterResizePayload{NodeCount: 1}); err == nil {
		t.Error("a resize payload was accepted on an update operation")
	}
	if b, err := EncodePayload(OpClusterDelete, nil); err != nil || b != nil {
		t.Errorf("no payload encodes to %q, %v; want nothing stored", b, err)
	}
	for _, empty := range []string{"", "null"} {
		if p, err := DecodePayload(OpClusterDelete, []byte(empty)); err != nil || p != nil {
			t.Errorf("stored %q decodes to %v, %v; want no payload", empty, p, err)
		}
	}
	if _, err := DecodePayload(OpClusterResize, []byte(`{"nodes_to_remove": "m-0"}`)); err == nil {
		t.Error("a resize payload whose nodes_to_remove is not a list decoded")
	}
}

// TestPayloadOfAnUnknownKindIsKeptAsStored: a kind a newer release queued
// reads back, and is written back, unchanged.
func TestPayloadOfAnUnknownKindIsKeptAsStored(t *testing.T) {
	const typ OperationType = "host_power"
	stored := []byte(`{"host":"h1","action":"on"}`)
	p, err := DecodePayload(typ, stored)
	if err != nil {
		t.Fatal(err)
	}
	if p.OperationType() != typ {
		t.Errorf("kind %s, want %s", p.OperationType(), typ)
	}
	b, err := EncodePayload(typ, p)
	if err != nil || string(b) != string(stored) {
		t.Errorf("written back as %s, %v; want %s", b, err, stored)
	}
}
