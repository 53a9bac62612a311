package store

import (
	"context"
	"fmt"
	"time"
)

// Periodic passes that hold a lease (table periodic_leases).
const (
	// PassBareMetalHosts steps the bare-metal hosts of the configured
	// backend towards their targets.
	PassBareMetalHosts = "baremetal_hosts"
)

// AcquirePeriodicLease takes or renews the lease on a periodic pass for
// owner until leaseFor from now: true when owner holds it afterwards, false
// when another owner's lease has not expired. Only one owner holds a pass's
// lease at a time, across every process sharing the database.
func (s *DB) AcquirePeriodicLease(ctx context.Context, pass, owner string, leaseFor time.Duration) (bool, error) {
	if owner == "" || leaseFor <= 0 {
		return false, fmt.Errorf("store: a periodic lease needs an owner and a positive duration")
	}
	t := now()
	res, err := s.db.ExecContext(ctx, `UPDATE periodic_leases SET owner = ?, lease_expires = ?, renewals = renewals + 1
		WHERE name = ? AND (owner IS NULL OR owner = ? OR lease_expires <= ?)`,
		owner, formatTime(t.Add(leaseFor)), pass, owner, formatTime(t))
	if err != nil {
		return false, fmt.Errorf("store: take the lease on %s: %w", pass, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// ReleasePeriodicLease gives up owner's lease on a pass, so another
// replica takes it at once instead of when it expires.
func (s *DB) ReleasePeriodicLease(ctx context.Context, pass, owner string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE periodic_leases SET owner = NULL, lease_expires = NULL
		WHERE name = ? AND owner = ?`, pass, owner); err != nil {
		return fmt.Errorf("store: release the lease on %s: %w", pass, err)
	}
	return nil
}
