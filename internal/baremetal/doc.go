// Package baremetal is Magnetite's host inventory: it parses BMC addresses
// into what Ironic needs (hardware type, interfaces, driver_info), enrolls
// and drives hosts through a Backend (Ironic today, Metal3's BareMetalHost
// next), and counts the hosts free for a resource class so a cluster is not
// accepted for hardware that does not exist.
//
// BMC passwords enter through Credentials and leave only towards the
// backend; nothing in this package logs them or puts them in a Host.
package baremetal
