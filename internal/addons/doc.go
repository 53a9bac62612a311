// Package addons is what Magnetite installs into every workload cluster:
// the CNI (Calico through its tigera-operator chart, or Cilium), the
// OpenStack cloud controller manager, the Cinder and Manila CSI drivers,
// k8s-keystone-auth and metrics-server, each from its upstream project's
// own Helm chart at a version pinned per Kubernetes minor, with the values
// derived from the cluster.
//
// This package is pure data and pure functions (the pinned table, the
// choice of releases for a cluster and their values), so the renderer can
// use it; pulling and rendering the charts is I/O and lives in
// addons/charts, which the conductor and the CLI use.
package addons
