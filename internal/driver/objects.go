package driver

// Labels and annotations by which the conductor recognises what a driver
// rendered. They are part of the seam: drivers put them on their objects,
// the conductor reads them back from the management cluster.
const (
	// LabelNodeGroupUUID ties the control plane, the machine deployments
	// and their machines to the Magnetite node group they implement. A
	// driver puts it, with Request.Labels, in the metadata of the Cluster's
	// topology (controlPlane and each machine deployment), so that Cluster
	// API stamps it on every object and machine it creates.
	LabelNodeGroupUUID = "magnetite.io/nodegroup-uuid"

	// LabelAddon marks the ConfigMaps that carry an addon's rendered
	// charts, with the addon's name; the conductor deletes the cluster's
	// ConfigMaps so labelled that the latest render no longer has.
	LabelAddon = "magnetite.io/addon"
	// AnnotationAddonCharts lists the charts (name and version) an addon
	// ConfigMap was rendered from.
	AnnotationAddonCharts = "magnetite.io/addon-charts"

	// LabelComponent marks the objects of one part of a cluster that the
	// conductor removes as a whole when a render no longer has them.
	LabelComponent = "magnetite.io/component"
	// ComponentAutoscaler is the LabelComponent value of the cluster
	// autoscaler's objects (AutoscalerKinds).
	ComponentAutoscaler = "cluster-autoscaler"
)

// AutoscalerKinds are the kinds of a cluster autoscaler's objects, in the
// order they are removed (the Deployment first, so that nothing runs
// without its permissions).
var AutoscalerKinds = []string{"Deployment", "RoleBinding", "Role", "ServiceAccount"}
