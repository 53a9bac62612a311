// Package bmc parses BMC addresses (ipmi://, redfish+https://,
// idrac-virtualmedia://, ...) into what Ironic needs to drive the host:
// its hardware type, interfaces, boot method and driver_info. It is pure:
// no network, no backend, so the API checks addresses with it before any
// host is written, and `magnetite host validate-bmc` shows its result.
package bmc
