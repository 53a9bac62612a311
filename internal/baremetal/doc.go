// Package baremetal is the vocabulary of Magnetite's host inventory: what
// an operator enrolls (HostSpec, checked by ValidateSpec before any backend
// is called), a host as the inventory shows it (Host), and the Backend
// interface the two backends implement: Ironic's bare-metal API
// (package ironic) and Metal3's BareMetalHost objects on the management
// cluster (package metal3). Package bmc parses BMC addresses; package
// backend builds the configured backend from [baremetal]. The capacity
// policy that counts free hosts for a cluster lives in internal/capacity.
//
// The API never calls a Backend: it queues an Action (the payloads of host
// operations, defined in actions.go) and the conductor's HostActions
// carries it out with Action.Do, telling transient failures (Transient)
// from permanent ones (Failure) as Metal3's baremetal-operator does.
//
// BMC passwords enter through bmc.Credentials and leave only towards the
// backend; nothing here logs them or puts them in a Host. An enrollment's
// password waits in its operation sealed by the store and is dropped
// (Action.WithoutSecrets) when the operation ends.
package baremetal
