package mgmt

import (
	"fmt"
	"strings"

	"github.com/magnetite-io/magnetite/internal/kinds"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BaseKinds are the kinds Magnetite uses whatever the infrastructure: the
// project namespaces, the cluster's Secrets and addon ConfigMaps, the
// cluster autoscaler's objects, Cluster API's core, kubeadm and addons kinds,
// and the bare-metal host inventory's BareMetalHosts. An infrastructure's
// own kinds come in through Options.Kinds (see package kinds for the flow).
var BaseKinds = []kinds.Kind{
	{Kind: "Namespace", Group: kinds.GroupCore},
	{Kind: "Secret", Group: kinds.GroupCore, Cleanup: true},
	{Kind: "ConfigMap", Group: kinds.GroupCore, Cleanup: true},

	// A cluster's autoscaler runs in the management cluster.
	{Kind: "Deployment", Group: kinds.GroupApps, Cleanup: true},
	{Kind: "ServiceAccount", Group: kinds.GroupCore, Cleanup: true},
	{Kind: "Role", Group: kinds.GroupRBAC, Cleanup: true},
	{Kind: "RoleBinding", Group: kinds.GroupRBAC, Cleanup: true},

	{Kind: "Cluster", Group: kinds.GroupCluster, Watched: true},
	{Kind: "ClusterClass", Group: kinds.GroupCluster},
	{Kind: "MachineDeployment", Group: kinds.GroupCluster, Watched: true},
	{Kind: "MachineSet", Group: kinds.GroupCluster},
	{Kind: "Machine", Group: kinds.GroupCluster, Watched: true},
	{Kind: "MachineHealthCheck", Group: kinds.GroupCluster},

	// Addons reach workload clusters through ClusterResourceSets.
	{Kind: "ClusterResourceSet", Group: kinds.GroupAddons, Watched: true, Cleanup: true},

	{Kind: "KubeadmControlPlane", Group: kinds.GroupControlPlane, Watched: true},
	{Kind: "KubeadmControlPlaneTemplate", Group: kinds.GroupControlPlane},
	{Kind: "KubeadmConfig", Group: kinds.GroupBootstrap},
	{Kind: "KubeadmConfigTemplate", Group: kinds.GroupBootstrap},

	// The bare-metal host inventory (internal/baremetal) on Metal3.
	{Kind: "BareMetalHost", Group: kinds.GroupMetal3},
}

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
// Every kind must be one of known.
func ParseAPIResources(s string, known kinds.Table) (map[string]schema.GroupVersion, error) {
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
		k, isKnown := known[kind]
		if !isKnown {
			return nil, fmt.Errorf("mgmt: [management] api_resources names kind %q, which Magnetite does not use; known kinds: %s",
				kind, strings.Join(known.Names(), ", "))
		}
		gv, err := schema.ParseGroupVersion(gvText)
		if err != nil || gv.Version == "" {
			return nil, fmt.Errorf("mgmt: [management] api_resources entry %q: %q is not group/version", item, gvText)
		}
		if gv.Group != k.Group {
			return nil, fmt.Errorf("mgmt: [management] api_resources entry %q: %s belongs to API group %q, not %q",
				item, kind, k.Group, gv.Group)
		}
		if _, dup := out[kind]; dup {
			return nil, fmt.Errorf("mgmt: [management] api_resources names %s twice", kind)
		}
		out[kind] = gv
	}
	return out, nil
}
