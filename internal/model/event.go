package model

import "time"

// EventKind says what a cluster event records.
type EventKind string

const (
	// EventStatus records a change of the cluster's status.
	EventStatus EventKind = "status"
	// EventCondition records a Cluster API condition that changed.
	EventCondition EventKind = "condition"
	// EventOperation records a request that queued work without changing
	// the cluster's status (for example a resize while still creating).
	EventOperation EventKind = "operation"
)

// EventKinds lists every kind.
var EventKinds = []EventKind{EventStatus, EventCondition, EventOperation}

// ClusterEvent is one entry of a cluster's history: what the API and the
// conductor saw happen, in the order it happened.
type ClusterEvent struct {
	ID        int64     `json:"id"`
	ClusterID string    `json:"cluster_id"`
	ProjectID string    `json:"project_id"`
	Time      time.Time `json:"time"`
	Kind      EventKind `json:"kind"`
	// Status is the cluster's status once the event happened.
	Status Status `json:"status"`
	// Reason is the short cause: the operation type for requests, the
	// Cluster API condition ("ControlPlane Available=False ScalingUp") for
	// condition changes.
	Reason string `json:"reason"`
	// Message is the text for people.
	Message string `json:"message"`
}
