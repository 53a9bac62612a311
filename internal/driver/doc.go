// Package driver is the seam between the conductor and the renderers. It
// holds the Driver interface, the registry that finds a template's driver
// by (server_type, os_distro, coe) or by name, and Resolve, the one place a
// cluster's effective shape is decided (labels, each node group's flavor,
// image, server type, boot volume, timeouts and bounds, object names): the
// API's validation, the bare-metal capacity check, the renderer and the
// conductor all ask it, so they cannot disagree.
//
// As in Cluster API's topology controller (current state, desired state,
// reconcile), a driver returns a cluster's complete desired state: the
// Request carries everything it depends on (the cluster, its template and
// node groups, the cloud facts of package facts, the API versions the
// management cluster serves and the ownership labels every object must
// carry) and the Result is applied as it is. The labels by which the
// conductor finds rendered objects again (LabelNodeGroupUUID, LabelAddon,
// LabelComponent) are defined here. Each driver also declares the kinds it
// needs beyond the management client's own (Driver.Kinds, package kinds).
//
// Drivers are pure: the same request always renders the same objects, and
// none of them does I/O. The conductor imports this package, never a
// driver's; internal/driver/builtin lists the drivers and cmd/magnetite
// wires them in.
package driver
