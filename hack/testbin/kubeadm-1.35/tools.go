//go:build tools

// Package tools pins the second Kubernetes minor whose kubeadm
// hack/build-testbin.sh builds: bootstrap data is validated at both minors.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kubeadm"
)
