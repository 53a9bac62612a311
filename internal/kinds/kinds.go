// Package kinds describes the Kubernetes kinds Magnetite reads and writes
// on the management cluster, and what it does with each. It is the neutral
// ground of one one-way flow, so that a new infrastructure is declared in
// one place:
//
//   - each infrastructure of the Cluster API driver
//     (internal/driver/capi/openstack, metal3, inmemory) lists its own
//     kinds; driver.Registry.Kinds collects those of the registered drivers;
//   - cmd/magnetite hands them to the management client (mgmt.Options.Kinds);
//   - internal/mgmt adds them to its own table (core, apps, RBAC and Cluster
//     API's kinds, mgmt.BaseKinds) and serves the whole table to discovery,
//     the [management] api_resources override, the conductor's watch and
//     its cleanup after a cluster's deletion;
//   - `magnetite doctor` checks that each driver's kinds are served.
//
// Neither mgmt nor the conductor imports a driver. This package imports
// nothing of Magnetite's.
package kinds

import (
	"fmt"
	"maps"
	"slices"
)

// API groups of the kinds Magnetite uses.
const (
	GroupCore           = ""
	GroupCluster        = "cluster.x-k8s.io"
	GroupControlPlane   = "controlplane.cluster.x-k8s.io"
	GroupBootstrap      = "bootstrap.cluster.x-k8s.io"
	GroupInfrastructure = "infrastructure.cluster.x-k8s.io"
	GroupAddons         = "addons.cluster.x-k8s.io"
	GroupMetal3         = "metal3.io"
	GroupMetal3IPAM     = "ipam.metal3.io"
	GroupApps           = "apps"
	GroupRBAC           = "rbac.authorization.k8s.io"
)

// Kind is one kind Magnetite uses. The version is never part of it: the
// management cluster's discovery (or the configured override) says it.
type Kind struct {
	Kind  string
	Group string
	// Watched: the conductor watches the kind's objects of its clusters;
	// their changes drive cluster status.
	Watched bool
	// Cleanup: Magnetite makes objects of the kind for one cluster (they
	// carry the cluster's labels) and nothing else removes them, unlike
	// what Cluster API deletes with the Cluster: the conductor deletes the
	// cluster's once Cluster API has removed the Cluster and its machines.
	Cleanup bool
	// Optional: the infrastructure works without the kind being served
	// (only some clusters need it), so doctor does not require it.
	Optional bool
	// Versions are the versions Magnetite writes the kind at, preferred
	// first; empty means any version the group serves it at. Discovery
	// picks the first of them the management cluster serves, rather than
	// the group's preferred version: a group that several providers share
	// may prefer a version one of them does not write, or a newer one
	// Magnetite does not know yet.
	Versions []string
	// Releases names the provider releases that serve the kind at one of
	// Versions, for doctor to tell an operator what to install.
	Releases string
}

// Table is a set of kinds by name.
type Table map[string]Kind

// NewTable merges lists of kinds. A kind may be listed more than once (two
// infrastructures may need the same kind) but always in the same group; its
// flags are the union of the listings'.
func NewTable(lists ...[]Kind) (Table, error) {
	t := Table{}
	for _, l := range lists {
		for _, k := range l {
			have, dup := t[k.Kind]
			if dup && have.Group != k.Group {
				return nil, fmt.Errorf("kinds: %s is listed in API group %q and in %q", k.Kind, have.Group, k.Group)
			}
			if dup {
				k.Watched = k.Watched || have.Watched
				k.Cleanup = k.Cleanup || have.Cleanup
				if len(k.Versions) == 0 {
					k.Versions, k.Releases = have.Versions, have.Releases
				}
			}
			t[k.Kind] = k
		}
	}
	return t, nil
}

// Names lists the kinds in order.
func (t Table) Names() []string { return slices.Sorted(maps.Keys(t)) }

// Watched lists the watched kinds in order.
func (t Table) Watched() []string { return t.names(func(k Kind) bool { return k.Watched }) }

// Cleanup lists the kinds cleaned up after a cluster, in order.
func (t Table) Cleanup() []string { return t.names(func(k Kind) bool { return k.Cleanup }) }

func (t Table) names(keep func(Kind) bool) []string {
	var out []string
	for _, n := range t.Names() {
		if keep(t[n]) {
			out = append(out, n)
		}
	}
	return out
}
