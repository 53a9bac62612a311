package backend

import (
	"context"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/metal3"
	"github.com/magnetite-io/magnetite/internal/store"
)

// Counter counts hosts for the capacity check (capacity.HostCounter).
type Counter interface {
	Name() string
	Capacity(ctx context.Context, resourceClass string) (baremetal.Capacity, error)
}

// Mirrored counts the capacity of backend b's hosts from the store's mirror
// of them, which the conductor keeps after each host action and pass, so
// the API's capacity check asks the backend nothing. Each host counts as
// the backend said when it was mirrored (Host.Free, Host.Deployed); Metal3
// hosts are chosen as Cluster API Provider Metal3 would: by namespace and
// labels.
func Mirrored(st *store.DB, b baremetal.Backend) Counter {
	m := &mirrored{st: st, b: b}
	if mb, ok := b.(*metal3.Backend); ok {
		return &mirroredMetal3{mirrored: m, m3: mb}
	}
	return m
}

type mirrored struct {
	st *store.DB
	b  baremetal.Backend
}

func (m *mirrored) Name() string { return m.b.Name() }

func (m *mirrored) Capacity(ctx context.Context, resourceClass string) (baremetal.Capacity, error) {
	return m.count(ctx, resourceClass, baremetal.OfResourceClass(resourceClass))
}

func (m *mirrored) count(ctx context.Context, resourceClass string, match func(*baremetal.Host) bool) (baremetal.Capacity, error) {
	hosts, err := m.st.MirroredHosts(ctx)
	if err != nil {
		return baremetal.Capacity{ResourceClass: resourceClass}, err
	}
	c := baremetal.Count(hosts, match)
	c.ResourceClass = resourceClass
	return c, nil
}

// mirroredMetal3 also counts by host selector (baremetal.SelectorCapacity).
type mirroredMetal3 struct {
	*mirrored
	m3 *metal3.Backend
}

func (m *mirroredMetal3) Capacity(ctx context.Context, resourceClass string) (baremetal.Capacity, error) {
	return m.count(ctx, resourceClass,
		m.m3.Matching("", map[string]string{metal3.LabelResourceClass: baremetal.NormalizeResourceClass(resourceClass)}))
}

func (m *mirroredMetal3) CapacityMatching(ctx context.Context, projectID string, selector map[string]string) (baremetal.Capacity, error) {
	return m.count(ctx, "", m.m3.Matching(projectID, selector))
}
