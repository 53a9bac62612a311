package conductor

import (
	"errors"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/store"
)

// TestHostPassBacksOffOnlyWhenTheBackendDoesNotAnswer: passes in a row
// that find the backend unavailable wait exponentially longer, up to the
// cap; a pass where only some hosts failed (they back off by their own
// error counts) or that succeeded keeps the interval and resets the count.
func TestHostPassBacksOffOnlyWhenTheBackendDoesNotAnswer(t *testing.T) {
	p := &HostPass{Every: time.Second}
	backoff := store.RetryPolicy{Base: p.Every, Max: 16 * time.Second}
	down := fault.New(baremetal.ErrUnavailable, "Ironic did not answer")
	failures := 0
	var wait time.Duration
	for n, ceiling := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 16 * time.Second} {
		wait, failures = p.next(backoff, errors.Join(errors.New("node-3: conflict"), down), failures)
		if failures != n+1 || wait < ceiling/2 || wait > ceiling {
			t.Fatalf("unavailable pass %d: wait %s, failures %d; want %d failures and a wait in [%s, %s]", n+1, wait, failures, n+1, ceiling/2, ceiling)
		}
	}
	hostFailed := fault.New(baremetal.ErrConflict, "node-3 is locked")
	if wait, failures = p.next(backoff, hostFailed, failures); wait != p.Every || failures != 0 {
		t.Errorf("a pass where one host failed: wait %s, failures %d; want the interval and 0", wait, failures)
	}
	if _, failures = p.next(backoff, down, 0); failures != 1 {
		t.Fatalf("failures %d", failures)
	}
	if wait, failures = p.next(backoff, nil, failures); wait != p.Every || failures != 0 {
		t.Errorf("a pass that succeeded: wait %s, failures %d; want the interval and 0", wait, failures)
	}
}
