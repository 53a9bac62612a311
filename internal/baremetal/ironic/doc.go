// Package ironic is the host inventory over Ironic's bare-metal API
// (standalone or beside Nova): it enrolls nodes with the interfaces the
// BMC address asks for, keeps Magnetite's own record of each host under
// the node's extra.magnetite, steps managed nodes towards their target
// state (manage, inspect, clean, provide) with a backoff counted per
// host, and counts the nodes of a resource class for the capacity check.
package ironic
