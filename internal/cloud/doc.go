// Package cloud talks to OpenStack through gophercloud, finding each
// service through the Keystone catalog. As the caller, it reads what a
// cluster template or cluster names (Glance images, Nova flavors and
// keypairs, Neutron networks and subnets), as Magnum does before it accepts
// one. As the cluster (its application credential), it makes and deletes
// the cluster's Nova server groups and, at delete, finds and deletes the
// load balancers, volumes and floating IPs the workload's cloud controller
// manager and CSI drivers left behind.
package cloud
