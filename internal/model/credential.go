package model

import "time"

// ClusterCredential is a Keystone application credential Magnetite created
// for a cluster with the requesting user's token. The cluster's
// infrastructure (Cluster API's OpenStack provider, the cloud controller
// manager, CSI) authenticates with the active one; retired ones are deleted
// from Keystone once the cluster's Secrets carry the new one.
type ClusterCredential struct {
	// ID is Keystone's application credential id.
	ID        string
	ClusterID string
	UserID    string
	ProjectID string
	// Secret is the application credential's secret. It is written to the
	// management cluster and never logged or returned by the API.
	Secret    string
	Retired   bool
	CreatedAt time.Time
}

// OpCredentialRotate writes a cluster's new application credential to its
// Secrets and deletes the retired ones from Keystone.
const OpCredentialRotate OperationType = "credential_rotate"
