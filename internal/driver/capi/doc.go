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
// kinds (the Infrastructure interface, with the optional ClusterExtras and
// ClassVariants): openstack (CAPO, VMs and Ironic through Nova), metal3
// (CAPM3 and baremetal-operator: bare-metal hosts, IPAM pools, kube-vip)
// and inmemory (CAPD's in-memory backend, for running Magnetite without a
// cloud). Each also lists its kinds (Infrastructure.Kinds, usually
// ContractKinds) for the management client's table.
//
// Rendering is pure: Render never does I/O. The request says at which API
// versions the management cluster serves each kind (the infrastructure
// group's is read from the infrastructure's own cluster template kind) and
// which ownership labels the objects carry; the renderer writes both into
// the objects, the Cluster's topology metadata included (with each node
// group's driver.LabelNodeGroupUUID), so the result is the cluster's
// complete desired state.
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
