// Package doctor holds the preflight checks behind `magnetite doctor`: one
// function per check, each answering PASS, WARN or FAIL (or SKIP when the
// check does not apply to this configuration) with what it found and, when
// something is wrong, the one-line fix.
//
// The checks are the manual gates operators walk through to attach a Cluster
// API driver to an OpenStack cloud — configuration files and drop-ins really
// read, database reachable and migrated, the management-cluster kubeconfig
// present and private, the management API reachable and accepting the
// credentials, the Cluster API kinds served at versions Magnetite speaks,
// provider controllers answering, Keystone and the service endpoints
// reachable, bare-metal flavors present — done by a program.
package doctor
