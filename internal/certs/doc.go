// Package certs makes the certificate authorities of a workload cluster the
// way Cluster API expects to find them (the cluster, etcd and front-proxy
// CAs and the service-account key pair, each in a Secret named after the
// Cluster object) and signs client certificates with the cluster CA, which
// is what `openstack coe cluster config` and Terraform ask for to build a
// kubeconfig. Magnetite creates the CAs itself, when the cluster is created,
// so it can answer those requests before Cluster API has run.
package certs
