// Package backend builds the configured bare-metal backend ([baremetal]
// backend = ironic or metal3) from Magnetite's configuration, checking
// every [baremetal] option with the option named in the error.
package backend
