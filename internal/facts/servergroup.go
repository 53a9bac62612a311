package facts

// ServerGroup is a Nova server group a cluster's machines are placed in:
// the driver asks for it (driver.Result.ServerGroups), the conductor has
// the cloud make it before applying, and its ID comes back in
// Facts.ServerGroups by name.
type ServerGroup struct {
	Name   string
	Policy string
	// NodeGroupUUID is the node group whose machines it holds.
	NodeGroupUUID string
}
