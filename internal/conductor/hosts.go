package conductor

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/store"
)

// HostPass steps the bare-metal backend's hosts towards their targets
// (Backend.Reconcile) and mirrors them into the store every Every, in one replica at a time: a replica runs
// a pass only while it holds the store's lease on it, so replicas sharing a
// database never run the pass at once, and another takes over when the
// holder stops or dies. When the backend does not answer, the next pass
// waits twice as long with each failure in a row, up to MaxBackoff; hosts
// that fail on their own back off by their error counts (see next).
type HostPass struct {
	Store   *store.DB
	Backend baremetal.Backend
	// Owner names this process in the lease.
	Owner string
	Every time.Duration
	// MaxBackoff caps the wait after failed passes (five minutes when 0).
	MaxBackoff time.Duration
	Log        *slog.Logger
}

// lease is how long a pass's lease lasts from each renewal: long enough
// for the pass it covers, which is cut off before the lease ends.
func (p *HostPass) lease() time.Duration { return max(4*p.Every, time.Minute) }

// Run runs passes until ctx ends, then gives the lease up.
func (p *HostPass) Run(ctx context.Context) {
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	backoff := store.RetryPolicy{Base: p.Every, Max: max(p.MaxBackoff, p.Every)}
	if p.MaxBackoff <= 0 {
		backoff.Max = max(5*time.Minute, p.Every)
	}
	failures, held := 0, false
	defer func() {
		if held {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := p.Store.ReleasePeriodicLease(rctx, store.PassBareMetalHosts, p.Owner); err != nil {
				log.Warn("bare-metal host pass lease not released", "error", err)
			}
		}
	}()
	for {
		wait := p.Every
		ok, err := p.Store.AcquirePeriodicLease(ctx, store.PassBareMetalHosts, p.Owner, p.lease())
		switch {
		case err != nil:
			if ctx.Err() == nil {
				log.WarnContext(ctx, "bare-metal host pass: lease not taken", "error", err)
			}
		case !ok:
			if held {
				log.InfoContext(ctx, "bare-metal host pass taken over by another replica")
			}
		default:
			if !held {
				log.InfoContext(ctx, "bare-metal host pass runs in this replica", "backend", p.Backend.Name())
			}
			passErr := p.pass(ctx)
			if ctx.Err() != nil {
				break
			}
			wait, failures = p.next(backoff, passErr, failures)
			if passErr != nil {
				log.WarnContext(ctx, "bare-metal host pass failed", "backend", p.Backend.Name(), "error", passErr,
					"backend_failures", failures, "next_pass_in", wait.Round(time.Millisecond))
			}
		}
		held = err == nil && ok
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// next is the wait before the pass after one that ended with err, and the
// count of passes in a row the backend did not answer. A backend that does
// not answer (ErrUnavailable: Ironic or the management cluster down) is
// given exponentially more time; a host that could not be stepped waits on
// its own error count, which the backend keeps on the host, so the other
// hosts go on at the usual interval.
func (p *HostPass) next(backoff store.RetryPolicy, err error, failures int) (time.Duration, int) {
	if errors.Is(err, baremetal.ErrUnavailable) {
		failures++
		return backoff.Delay(failures), failures
	}
	return p.Every, 0
}

// pass runs one Reconcile and then mirrors every host the backend shows
// into the store, cut off well before the lease that covers it ends, so
// that no other replica can start one while it runs.
func (p *HostPass) pass(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.lease()/2)
	defer cancel()
	return errors.Join(p.Backend.Reconcile(ctx), p.Mirror(ctx))
}

// Mirror writes every host the backend shows into the store, as each pass
// does after stepping them.
func (p *HostPass) Mirror(ctx context.Context) error {
	listedAt := time.Now()
	hosts, err := p.Backend.List(ctx)
	if err != nil {
		return err
	}
	return p.Store.MirrorHosts(ctx, p.Backend.Name(), hosts, listedAt)
}
