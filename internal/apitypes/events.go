package apitypes

// ClusterEvent is one entry of GET /v1/clusters/{ident}/events, a Magnetite
// extension: a cluster's status transitions, Cluster API condition changes
// and the requests that queued work.
type ClusterEvent struct {
	ID        int64  `json:"id"`
	ClusterID string `json:"cluster_id"`
	// Time is RFC 3339 with microseconds, UTC.
	Time    string `json:"time"`
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// ClusterEventList is GET /v1/clusters/{ident}/events.
type ClusterEventList struct {
	Events []ClusterEvent `json:"events"`
	Next   string         `json:"next,omitempty"`
}

// Certificate is GET /v1/certificates/{cluster} (the cluster CA) and the
// body and answer of POST /v1/certificates (a CSR and its signed
// certificate).
type Certificate struct {
	ClusterUUID string `json:"cluster_uuid"`
	PEM         string `json:"pem"`
	CSR         string `json:"csr,omitempty"`
	Links       []Link `json:"links,omitempty"`
}
