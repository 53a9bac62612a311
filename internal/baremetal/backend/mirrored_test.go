package backend

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/ironic"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"
)

// TestMirroredCountsFromTheStoreAlone counts capacity from the mirror of an
// Ironic backend that cannot be reached: any call to it would fail, so the
// counts come from the store only, host by host as the backend judged them
// when they were mirrored.
func TestMirroredCountsFromTheStoreAlone(t *testing.T) {
	ctx := context.Background()
	b, err := ironic.New(ironic.Config{Endpoint: testironic.DeadEndpoint(t)})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.MirrorHosts(ctx, b.Name(), []*baremetal.Host{
		{ID: "1", Name: "gold-0", HostSettings: baremetal.HostSettings{ResourceClass: "baremetal-gold"}, Free: true},
		{ID: "2", Name: "gold-1", HostSettings: baremetal.HostSettings{ResourceClass: "CUSTOM_BAREMETAL_GOLD"}, Free: true},
		{ID: "3", Name: "gold-2", HostSettings: baremetal.HostSettings{ResourceClass: "baremetal-gold"}, Deployed: true},
		{ID: "4", Name: "gold-3", HostSettings: baremetal.HostSettings{ResourceClass: "baremetal-gold"}, Detached: true},
		{ID: "5", Name: "silver-0", HostSettings: baremetal.HostSettings{ResourceClass: "baremetal-silver"}, Free: true},
		{ID: "6", Name: "none-0"},
	}, time.Now()); err != nil {
		t.Fatal(err)
	}
	c, err := Mirrored(st, b).Capacity(ctx, "CUSTOM_BAREMETAL_GOLD")
	if err != nil {
		t.Fatal(err)
	}
	if want := (baremetal.Capacity{ResourceClass: "CUSTOM_BAREMETAL_GOLD", Free: 2, Total: 4, Deployed: 1, InMaintenance: 1}); c != want {
		t.Errorf("gold capacity = %+v, want %+v", c, want)
	}
	if _, ok := Mirrored(st, b).(baremetal.SelectorCapacity); ok {
		t.Error("the Ironic mirror claims to count Metal3 host selectors")
	}
}
