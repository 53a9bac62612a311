// Package deploy tests how Magnetite is deployed: the OCI image built by
// hack/image.sh, the Helm chart under deploy/helm/magnetite (rendered with
// the Helm SDK, dry-run and its RBAC exercised on a real kube-apiserver),
// Keystone registration against a real Keystone, and rolling upgrades of
// replicas on a real MariaDB.
package deploy
