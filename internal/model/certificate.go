package model

import "time"

// ClusterCertificate is one of a cluster's key pairs (a certificate
// authority, or the service-account keys), kept from cluster create until the
// cluster row is removed. Purpose is Cluster API's Secret suffix: "ca",
// "etcd", "proxy" or "sa". The private key never leaves Magnetite except
// in the Secret the conductor writes to the management cluster.
type ClusterCertificate struct {
	ClusterID string
	Purpose   string
	CertPEM   []byte
	KeyPEM    []byte
	CreatedAt time.Time
}
