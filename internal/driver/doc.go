// Package driver holds the Driver interface, the registry that finds a
// template's driver by (server_type, os_distro, coe) or by name, the cloud
// facts drivers render from, and Resolve, the one place a cluster's
// effective shape is decided (labels, each node group's flavor, image,
// server type, boot volume, timeouts and bounds, object names): the API's
// validation, the bare-metal capacity check, the renderer and the
// conductor all ask it, so they cannot disagree. Drivers are pure: the
// same request always renders the same objects, and none of them does I/O.
package driver
