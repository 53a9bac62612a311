// Package builtin is the one list of Magnetite's drivers: the Cluster API
// driver on each infrastructure (internal/driver/capi/openstack, metal3,
// inmemory). cmd/magnetite builds its driver registry here and hands the
// registry's kinds to the management client; a new infrastructure is a
// package under internal/driver/capi and one line below.
package builtin

import (
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/inmemory"
	"github.com/magnetite-io/magnetite/internal/driver/capi/metal3"
	"github.com/magnetite-io/magnetite/internal/driver/capi/openstack"
	"github.com/magnetite-io/magnetite/internal/kinds"
)

// Registry registers every driver. The one of the default infrastructure
// ([conductor] infrastructure: "openstack" or "inmemory") is also chosen by
// (server_type, os_distro, coe); the others only by a template's driver
// field.
func Registry(opts capi.Options, infrastructure string, mem inmemory.Options) (*driver.Registry, error) {
	r := driver.NewRegistry()
	cloud, inMemory := driver.Driver(openstack.New(opts)), driver.Driver(inmemory.New(opts, mem))
	byTuple, byName := cloud, inMemory
	if infrastructure == "inmemory" {
		byTuple, byName = inMemory, cloud
	}
	if err := r.Register(byTuple); err != nil {
		return nil, err
	}
	if err := r.RegisterExplicit(byName); err != nil {
		return nil, err
	}
	if err := r.RegisterExplicit(metal3.New(opts, metal3.Options{})); err != nil {
		return nil, err
	}
	return r, nil
}

// Kinds are the kinds of every driver's infrastructure (see package kinds),
// for the management clients built where no registry is at hand.
func Kinds() []kinds.Kind { return all().Kinds() }

// KindsByDriver are each driver's kinds, by driver name, for doctor.
func KindsByDriver() map[string][]kinds.Kind { return all().KindsByDriver() }

func all() *driver.Registry {
	r, err := Registry(capi.Options{}, "", inmemory.Options{})
	if err != nil {
		panic(err) // Registry registers each driver once: it cannot fail
	}
	return r
}
