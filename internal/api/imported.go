package api

import "github.com/magnetite-io/magnetite/internal/model"

// Clusters and templates imported from Magnum (`magnetite import magnum`,
// internal/magnumimport) may be ones Magnetite cannot build or change: a
// Heat driver's, or a Cluster API driver's whose objects Magnetite has not
// taken over. They are shown like any other; what would change them is
// refused here, before anything is queued, with the reason the import
// recorded.

// readOnlyActions are the policy actions that change a cluster or what it
// runs on. Reads, and signing client certificates with the cluster's CA,
// stay allowed.
var readOnlyActions = map[string]bool{
	"cluster:update": true, "cluster:delete": true, "cluster:resize": true, "cluster:upgrade": true,
	"nodegroup:create": true, "nodegroup:update": true, "nodegroup:delete": true,
	"credential:rotate": true, "certificate:rotate_ca": true, "cluster:rebase": true,
}

// adoptedActions are the changes Magnetite makes to a cluster whose Cluster
// API objects it adopted from a Magnum Cluster API driver: it changes
// those objects in place, in their driver's shape, and only in these ways.
var adoptedActions = map[string]bool{"cluster:update": true, "cluster:resize": true, "cluster:upgrade": true, "cluster:delete": true,
	"nodegroup:create": true, "nodegroup:delete": true, "credential:rotate": true, "cluster:rebase": true}

// refusedToAdopted says what Magnetite does not do to an adopted cluster.
var refusedToAdopted = map[string]string{
	"nodegroup:update":      "change its node groups (resize the cluster instead)",
	"certificate:rotate_ca": "rotate its CA",
}

// refuseReadOnly refuses a change of a cluster Magnetite must not change.
func refuseReadOnly(c *model.Cluster, action string) error {
	if a := c.Adopted(); a != nil && readOnlyActions[action] && !adoptedActions[action] {
		return conflict("Cluster %s was adopted from %s, whose Cluster API objects Magnetite changes in place: it resizes, upgrades and deletes the cluster, adds and removes node groups and rotates its credential, and does not %s.", c.Name, a.Driver, refusedToAdopted[action])
	}
	why := c.ReadOnlyReason()
	if why == "" || !readOnlyActions[action] {
		return nil
	}
	return conflict("Cluster %s is read-only in Magnetite, which refuses to change or delete it. %s", c.Name, why)
}

// refuseUnsupportedTemplate refuses building a cluster from a template
// Magnetite cannot build from.
func refuseUnsupportedTemplate(ct *model.ClusterTemplate) error {
	why := ct.UnsupportedReason()
	if why == "" {
		return nil
	}
	return badRequest("Cluster template %s was imported from Magnum and cannot be used for new clusters: %s. Choose another template.", ct.Name, why)
}
