package mgmt

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// API groups of the kinds Magnetite uses.
const (
	GroupCore           = ""
	GroupCluster        = "cluster.x-k8s.io"
	GroupControlPlane   = "controlplane.cluster.x-k8s.io"
	GroupBootstrap      = "bootstrap.cluster.x-k8s.io"
	GroupInfrastructure = "infrastructure.cluster.x-k8s.io"
	GroupAddons         = "addons.cluster.x-k8s.io"
	GroupMetal3         = "metal3.io"
	GroupMetal3IPAM     = "ipam.metal3.io"
	GroupApps           = "apps"
	GroupRBAC           = "rbac.authorization.k8s.io"
)

// Kinds maps every kind Magnetite reads or writes to its API group. The
// version is never listed here: it comes from discovery or the override.
var Kinds = map[string]string{
	"Namespace": GroupCore,
	"Secret":    GroupCore,
	"ConfigMap": GroupCore,

	// A cluster's autoscaler runs in the management cluster.
	"Deployment":     GroupApps,
	"ServiceAccount": GroupCore,
	"Role":           GroupRBAC,
	"RoleBinding":    GroupRBAC,

	"Cluster":            GroupCluster,
	"ClusterClass":       GroupCluster,
	"MachineDeployment":  GroupCluster,
	"MachineSet":         GroupCluster,
	"Machine":            GroupCluster,
	"MachineHealthCheck": GroupCluster,

	// Addons reach workload clusters through ClusterResourceSets.
	"ClusterResourceSet": GroupAddons,

	"KubeadmControlPlane":         GroupControlPlane,
	"KubeadmControlPlaneTemplate": GroupControlPlane,
	"KubeadmConfig":               GroupBootstrap,
	"KubeadmConfigTemplate":       GroupBootstrap,

	"OpenStackCluster":          GroupInfrastructure,
	"OpenStackClusterTemplate":  GroupInfrastructure,
	"OpenStackMachine":          GroupInfrastructure,
	"OpenStackMachineTemplate":  GroupInfrastructure,
	"DevCluster":                GroupInfrastructure,
	"DevClusterTemplate":        GroupInfrastructure,
	"DevMachine":                GroupInfrastructure,
	"DevMachineTemplate":        GroupInfrastructure,
	"Metal3Cluster":             GroupInfrastructure,
	"Metal3ClusterTemplate":     GroupInfrastructure,
	"Metal3Machine":             GroupInfrastructure,
	"Metal3MachineTemplate":     GroupInfrastructure,
	"Metal3DataTemplate":        GroupInfrastructure,
	"Metal3RemediationTemplate": GroupInfrastructure,

	"BareMetalHost": GroupMetal3,
	"IPPool":        GroupMetal3IPAM,
}

// WatchedKinds are the kinds whose changes drive cluster status.
var WatchedKinds = []string{"Cluster", "KubeadmControlPlane", "MachineDeployment", "Machine", "ClusterResourceSet"}

// Resource is where the management cluster serves a kind.
type Resource struct {
	Kind         string
	GroupVersion schema.GroupVersion
	// Resource is the plural name used in URLs.
	Resource   string
	Namespaced bool
	// Source is "discovery" or "override".
	Source string
}

// GVR is the group, version and resource the dynamic client needs.
func (r Resource) GVR() schema.GroupVersionResource {
	return r.GroupVersion.WithResource(r.Resource)
}

// APIVersion is the value of an object's apiVersion field.
func (r Resource) APIVersion() string { return r.GroupVersion.String() }

// ParseAPIResources reads the [management] api_resources option: a
// comma-separated list of Kind=group/version (core kinds: Kind=v1), for
// example "Cluster=cluster.x-k8s.io/v1beta1,KubeadmControlPlane=controlplane.cluster.x-k8s.io/v1beta2".
func ParseAPIResources(s string) (map[string]schema.GroupVersion, error) {
	out := map[string]schema.GroupVersion{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		kind, gvText, ok := strings.Cut(item, "=")
		kind, gvText = strings.TrimSpace(kind), strings.TrimSpace(gvText)
		if !ok || kind == "" || gvText == "" {
			return nil, fmt.Errorf("mgmt: [management] api_resources entry %q is not Kind=group/version", item)
		}
		group, known := Kinds[kind]
		if !known {
			return nil, fmt.Errorf("mgmt: [management] api_resources names kind %q, which Magnetite does not use; known kinds: %s",
				kind, strings.Join(sortedKinds(), ", "))
		}
		gv, err := schema.ParseGroupVersion(gvText)
		if err != nil || gv.Version == "" {
			return nil, fmt.Errorf("mgmt: [management] api_resources entry %q: %q is not group/version", item, gvText)
		}
		if gv.Group != group {
			return nil, fmt.Errorf("mgmt: [management] api_resources entry %q: %s belongs to API group %q, not %q",
				item, kind, group, gv.Group)
		}
		if _, dup := out[kind]; dup {
			return nil, fmt.Errorf("mgmt: [management] api_resources names %s twice", kind)
		}
		out[kind] = gv
	}
	return out, nil
}

func sortedKinds() []string {
	out := make([]string, 0, len(Kinds))
	for k := range Kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
