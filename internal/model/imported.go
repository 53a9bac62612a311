package model

import (
	"regexp"
	"strings"
	"time"
)

// Imported records that `magnetite import magnum` took an object from a
// Magnum database, and what Magnetite may do with it. It lives in the
// object's stored JSON only: the API's wire types leave it out.
type Imported struct {
	// MagnumDriver is the Magnum driver that built the object's clusters
	// ("k8s_fedora_coreos_v1", or "cluster-api" when a Cluster API driver
	// outside Magnum's tree did).
	MagnumDriver string    `json:"magnum_driver"`
	At           time.Time `json:"at"`
	// Unsupported, when set, says why Magnetite cannot build or change what
	// the object describes: a template then makes no new clusters, and a
	// cluster is read-only (shown, never changed or deleted by Magnetite).
	Unsupported string `json:"unsupported,omitempty"`
	// ClusterAPI is where the import found the Cluster API objects a Magnum
	// Cluster API driver made for the cluster, for adopting them.
	ClusterAPI *ForeignCluster `json:"cluster_api,omitempty"`
}

// ForeignCluster is a Cluster API Cluster another driver made.
type ForeignCluster struct {
	// Driver is "magnum-cluster-api" or "magnum-capi-helm", by where the
	// Cluster was found.
	Driver    string `json:"driver"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Adopted says the import found the objects in a shape Magnetite
	// changes in place (internal/conductor/adopt.go): it then observes,
	// resizes and deletes the cluster as that driver left it.
	Adopted bool `json:"adopted,omitempty"`
	// ControlPlane is the KubeadmControlPlane's name.
	ControlPlane string `json:"control_plane,omitempty"`
	// NodeGroups maps each worker node group's UUID to its machine
	// deployment: the name of the topology's machine deployment for
	// magnum-cluster-api, the MachineDeployment's for magnum-capi-helm.
	NodeGroups map[string]string `json:"node_groups,omitempty"`
	// HelmRelease is the magnum-capi-helm release that made the objects.
	HelmRelease string `json:"helm_release,omitempty"`
	// Rebased says the cluster was moved onto Magnetite's own ClusterClass
	// (`magnetite cluster rebase`): Magnetite renders and applies its
	// objects as for a cluster it made, in Namespace, keeping what Kept
	// holds. Adopted is then false.
	Rebased bool `json:"rebased,omitempty"`
	// Kept is what a rebased cluster keeps as its driver built it.
	Kept *KeptInfrastructure `json:"kept,omitempty"`
}

// KeptInfrastructure is what a cluster moved onto Magnetite's ClusterClass
// keeps from the driver that built it, because changing it would rebuild
// the cluster or its provider refuses the change.
type KeptInfrastructure struct {
	// ClusterNetwork is the Cluster's spec.clusterNetwork (pod and service
	// ranges, DNS domain, API server port): the nodes' kubeadm
	// configuration and the workload's network depend on it.
	ClusterNetwork map[string]any `json:"cluster_network,omitempty"`
	// InfrastructureCluster is the spec of the infrastructure cluster (an
	// OpenStackCluster: network, subnets, load balancer, security groups)
	// at the version the management cluster serves; CAPO refuses changes
	// to nearly all of it. Only its identityRef becomes Magnetite's.
	InfrastructureCluster map[string]any `json:"infrastructure_cluster,omitempty"`
	// Addons says the workload's addons (CNI, cloud provider, CSI) stay
	// as the driver installed them: Magnetite installs none of its own.
	Addons bool `json:"addons,omitempty"`
}

// MachineDeploymentOf is the name of the machine deployment of worker node
// group ng: the one the import found, or the one the driver names a node
// group it adds: the node group's name in magnum-cluster-api's topology,
// "<release>-<sanitized name>" for magnum-capi-helm's chart (its
// driver_utils.py sanitized_name and the chart's componentName).
func (f *ForeignCluster) MachineDeploymentOf(ng *NodeGroup) string {
	if n, ok := f.NodeGroups[ng.UUID]; ok {
		return n
	}
	if f.Driver == "magnum-capi-helm" {
		return f.HelmRelease + "-" + CAPIHelmNodeGroupName(ng.Name)
	}
	return ng.Name
}

var unsanitary = regexp.MustCompile("[^a-z0-9]+")

// CAPIHelmNodeGroupName is magnum-capi-helm's name for a node group in its
// chart's values (driver_utils.py sanitized_name).
func CAPIHelmNodeGroupName(name string) string {
	return strings.Trim(unsanitary.ReplaceAllString(strings.ToLower(name), "-"), "-")
}

// Adopted is the Cluster API objects of another driver that Magnetite
// took over for the cluster, or nil when Magnetite made them itself or
// took nothing over.
func (c *Cluster) Adopted() *ForeignCluster {
	if c.Imported == nil || c.Imported.Unsupported != "" || c.Imported.ClusterAPI == nil || !c.Imported.ClusterAPI.Adopted {
		return nil
	}
	return c.Imported.ClusterAPI
}

// Rebased is the Cluster API objects another driver made for the cluster
// that were moved onto Magnetite's ClusterClass, or nil.
func (c *Cluster) Rebased() *ForeignCluster {
	if c.Imported == nil || c.Imported.Unsupported != "" || c.Imported.ClusterAPI == nil || !c.Imported.ClusterAPI.Rebased {
		return nil
	}
	return c.Imported.ClusterAPI
}

// ReadOnlyReason is why Magnetite must not change the cluster, or "" when
// it may.
func (c *Cluster) ReadOnlyReason() string {
	if c.Imported == nil {
		return ""
	}
	return c.Imported.Unsupported
}

// UnsupportedReason is why Magnetite builds no cluster from the template,
// or "" when it does.
func (ct *ClusterTemplate) UnsupportedReason() string {
	if ct.Imported == nil {
		return ""
	}
	return ct.Imported.Unsupported
}
