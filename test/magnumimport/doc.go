// Package magnumimport is the acceptance test of moving a Magnum to
// Magnetite: a real Magnum database made by Debian's Magnum
// (magnum-db-manage on a real MariaDB), filled through Magnum's own objects
// and certificate code, imported with `magnetite import magnum`, then read
// back through Debian's openstack CLI against `magnetite serve`.
package magnumimport
