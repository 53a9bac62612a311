// Package capacity keeps clusters from being accepted for bare-metal hosts
// that do not exist ([baremetal] capacity_check): it works out which node
// groups are bare metal from their flavors (read from Nova as the caller)
// and the cluster's shape, counts free hosts per resource class (Ironic)
// or host selector (Metal3) through a baremetal.Backend, and subtracts
// the hosts promised to node groups still being built. A check is planned
// before the request's transaction and verified inside it, so replicas
// sharing a database cannot both take the last free hosts.
package capacity
