package store

import (
	"context"
	"testing"
	"time"
)

// testPeriodicLeaseHasOneHolder takes a periodic pass's lease from two
// processes: only one holds it until it expires or is released.
func testPeriodicLeaseHasOneHolder(t *testing.T, open func() *DB) {
	clock := useFakeClock(t)
	ctx := context.Background()
	a, b := open(), open()
	take := func(s *DB, owner string) bool {
		t.Helper()
		ok, err := s.AcquirePeriodicLease(ctx, PassBareMetalHosts, owner, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !take(a, "a") {
		t.Fatal("a did not take the free lease")
	}
	if take(b, "b") {
		t.Fatal("b took a lease a holds")
	}
	clock.advance(50 * time.Second)
	if !take(a, "a") {
		t.Fatal("a could not renew its lease")
	}
	clock.advance(50 * time.Second)
	if take(b, "b") {
		t.Fatal("b took a lease a renewed 50s ago for a minute")
	}
	clock.advance(11 * time.Second)
	if !take(b, "b") {
		t.Fatal("b did not take the lease a let expire")
	}
	if take(a, "a") {
		t.Fatal("a took back a lease b holds")
	}
	if err := a.ReleasePeriodicLease(ctx, PassBareMetalHosts, "a"); err != nil {
		t.Fatal(err)
	}
	if take(a, "a") {
		t.Fatal("a's release of a lease it does not hold freed b's")
	}
	if err := b.ReleasePeriodicLease(ctx, PassBareMetalHosts, "b"); err != nil {
		t.Fatal(err)
	}
	if !take(a, "a") {
		t.Fatal("a did not take the lease b released")
	}
	if _, err := a.AcquirePeriodicLease(ctx, PassBareMetalHosts, "", time.Minute); err == nil {
		t.Fatal("a lease without an owner was accepted")
	}
}
