// Package capi renders a Magnum cluster as Cluster API objects: one
// versioned ClusterClass per infrastructure and operating system (named with
// a hash of its content, so changing it never disturbs a live cluster) and,
// per cluster, a Cluster with managed topology whose variables carry
// everything cluster- and node-group-specific. Node groups become topology
// machine deployments of class "vm" or "bm", so a cluster can mix virtual
// and bare-metal machines.
//
// The logic that does not depend on the infrastructure lives here: labels,
// server types, bare-metal defaults, versions, health checks, autoscaling,
// kubeadm bootstrap and addons. Sub-packages provide the infrastructure
// kinds: openstack (CAPO, VMs and Ironic through Nova) and inmemory (CAPD's
// in-memory backend, for running Magnetite without a cloud).
//
// Rendering is pure: Render never does I/O.
//
// Secrets the conductor creates before applying, by name (NAME is the
// Cluster object's name):
//   - NAME-cloud-config: the cloud credentials CAPO uses (clouds.yaml with
//     an application credential, cloud name "openstack", optional cacert);
//   - NAME-cloud-config-addon: a ClusterResourceSet Secret (type
//     addons.cluster.x-k8s.io/resource-set) holding the workload cluster's
//     kube-system/cloud-config Secret (cloud.conf) and, with Manila, the
//     kube-system/manila-csi-credentials Secret;
//   - NAME-ca, NAME-etcd, NAME-proxy, NAME-sa: the cluster's certificate
//     authorities, which Cluster API uses instead of generating its own.
//
// Addons (the CNI, the OpenStack cloud controller manager, CSI drivers,
// k8s-keystone-auth, metrics-server) are releases of pinned upstream Helm
// charts (package addons). Render lists them in Result.Addons; the
// conductor pulls and renders the charts and renders the cluster again
// with the documents in Request.Addons, which become the cluster's
// NAME-addon-<addon> ConfigMaps (split into -2, -3, ... below the 1 MiB
// ConfigMap limit), applied to the workload cluster by the cluster's
// ClusterResourceSet NAME-addons. An operator's own ConfigMap
// magnetite-addon-<addon>-<version> in the namespace replaces an addon's
// charts.
package capi
