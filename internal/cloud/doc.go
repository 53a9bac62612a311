// Package cloud reads what OpenStack says about the resources a cluster
// template or cluster names — Glance images, Nova flavors and keypairs,
// Neutron networks and subnets — with the caller's token, finding each
// service through the Keystone catalog, as Magnum does before it accepts a
// template or a cluster.
package cloud
