package metal3_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/backend"
	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"
	"github.com/magnetite-io/magnetite/internal/testing/testmetal3"
)

// TestCapacityCountsAvailableUnclaimedAttachedHosts counts BareMetalHosts
// as baremetal-operator and Cluster API Provider Metal3 leave them: free
// are the available hosts nobody claimed, that are attached, not in error
// and not being deleted.
func TestCapacityCountsAvailableUnclaimedAttachedHosts(t *testing.T) {
	w := testmetal3.Start(t, slog.New(slog.NewTextHandler(&testironic.LogBuffer{}, nil)))
	b, bmo, ctx := w.Backend, w.Operator, context.Background()
	for i, st := range []testmetal3.Status{
		{State: "available"}, {State: "available"}, {State: "available", Operational: "error", ErrType: "power management error", ErrMessage: "BMC timeout", ErrCount: 1},
		{State: "preparing"}, {State: "provisioned", Consumer: "c2-md-abc"}, {State: "available"},
		// Claimed by Cluster API Provider Metal3, not yet provisioning.
		{State: "available", Consumer: "c3-md-claimed"},
		// Deployed before Cluster API Provider Metal3 recorded a claim.
		{State: "provisioned"},
	} {
		name := "gold-" + string(rune('a'+i))
		spec := baremetal.HostSpec{Name: name, BMCAddress: fmt.Sprintf("ipmi://10.0.1.%d", i+1),
			HostSettings: baremetal.HostSettings{ResourceClass: "CUSTOM_BAREMETAL_GOLD",
				Labels: map[string]string{"pool": map[bool]string{true: "gpu", false: "general"}[i == 5]}},
			Credentials: bmc.Credentials{Username: "admin", Password: testironic.BMCPassword}}
		if _, err := baremetal.ValidateSpec(&spec, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Enroll(ctx, spec); err != nil {
			t.Fatalf("enroll %s: %v", name, err)
		}
		bmo.Register(name)
		bmo.Report(name, st)
	}
	if _, err := b.Detach(ctx, "gold-b", ""); err != nil {
		t.Fatal(err)
	}
	c, err := b.Capacity(ctx, "baremetal-gold")
	if err != nil {
		t.Fatal(err)
	}
	if want := (baremetal.Capacity{ResourceClass: "baremetal-gold", Free: 2, Total: 8, Deployed: 3, InMaintenance: 1}); c != want {
		t.Errorf("capacity = %+v, want %+v", c, want)
	}
	c, err = b.CapacityMatching(ctx, "", map[string]string{"pool": "gpu"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Free != 1 || c.Total != 1 {
		t.Errorf("capacity of pool=gpu = %+v", c)
	}

	// The capacity check counts the same from the conductor's mirror in the
	// database, without reading a BareMetalHost.
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hosts, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MirrorHosts(ctx, b.Name(), hosts, time.Now()); err != nil {
		t.Fatal(err)
	}
	mirrored := backend.Mirrored(st, b)
	if m, err := mirrored.Capacity(ctx, "baremetal-gold"); err != nil || m != (baremetal.Capacity{ResourceClass: "baremetal-gold", Free: 2, Total: 8, Deployed: 3, InMaintenance: 1}) {
		t.Errorf("mirrored capacity = %+v, %v", m, err)
	}
	sc, ok := mirrored.(baremetal.SelectorCapacity)
	if !ok {
		t.Fatal("the Metal3 mirror does not count host selectors")
	}
	if m, err := sc.CapacityMatching(ctx, "", map[string]string{"pool": "gpu"}); err != nil || m.Free != 1 || m.Total != 1 {
		t.Errorf("mirrored capacity of pool=gpu = %+v, %v", m, err)
	}
	if m, err := sc.CapacityMatching(ctx, "other-project", map[string]string{"pool": "gpu"}); err != nil || m.Total != 0 {
		t.Errorf("another project's namespace counts the shared hosts: %+v, %v", m, err)
	}
}
