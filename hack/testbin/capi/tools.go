//go:build tools

// Package tools pins the Cluster API managers hack/build-testbin.sh builds.
// Each of these is a main package; the blank imports only keep go.mod and
// go.sum complete for them and are never compiled.
package tools

import (
	_ "sigs.k8s.io/cluster-api/bootstrap/kubeadm"
	_ "sigs.k8s.io/cluster-api/controlplane/kubeadm"
	_ "sigs.k8s.io/cluster-api/core"
	_ "sigs.k8s.io/cluster-api/test/infrastructure/docker"
)
