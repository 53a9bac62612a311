// Package metal3 is the host inventory over Metal3: every host is a
// BareMetalHost with its BMC credentials in a Secret on the management
// cluster, in a namespace per project (or the shared one), and the
// baremetal-operator drives it. Hosts are counted by label selector, as a
// Metal3MachineTemplate's hostSelector picks them.
package metal3
