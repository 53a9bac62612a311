package conductor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// HostActions carries out the host actions the API queues (enroll, power,
// inspect, provide, detach, attach, cleaning mode, delete), in every
// replica: each operation is claimed under a lease, so exactly one replica
// calls the backend for it, and the operations of one host run one at a
// time in order. Failures are sorted by Classify, as cluster operations'
// are: a refusal of the backend (unknown host, invalid request,
// conflicting state) ends the operation with the backend's message; any
// other failure (the backend did not answer, was busy with the host, timed
// out) is tried again after a delay that grows with its attempts (the
// store's retry policy). After each action the host as the backend shows it is
// written to the store's mirror, which the API serves.
type HostActions struct {
	Store   *store.DB
	Backend baremetal.Backend
	// Owner names this process in the operations' leases.
	Owner string
	// Lease is how long a claimed action stays ours without a heartbeat
	// (two minutes when 0).
	Lease time.Duration
	// IdleWait bounds how long an idle worker waits before looking for
	// actions another replica queued (five seconds when 0).
	IdleWait time.Duration
	Log      *slog.Logger

	once sync.Once
	wake chan struct{}
}

func (h *HostActions) init() {
	h.once.Do(func() {
		h.wake = make(chan struct{}, 1)
		if h.Lease <= 0 {
			h.Lease = 2 * time.Minute
		}
		if h.IdleWait <= 0 {
			h.IdleWait = 5 * time.Second
		}
		if h.Log == nil {
			h.Log = slog.Default()
		}
	})
}

// Notify wakes an idle worker: the API calls it after queueing an action.
func (h *HostActions) Notify() {
	h.init()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Run carries out actions until ctx ends.
func (h *HostActions) Run(ctx context.Context) {
	h.init()
	work(ctx, h.Log, "claim host action", func(ctx context.Context) (*store.HostOperation, error) {
		return h.Store.ClaimHostOperation(ctx, h.Owner, h.Lease)
	}, h.idle, h.execute)
}

func (h *HostActions) idle(ctx context.Context) {
	idleUntil(ctx, h.wake, h.IdleWait, time.Now, h.Store.NextHostOperationAt)
}

// execute carries out one claimed action with a heartbeat on its lease and
// records how it ended.
func (h *HostActions) execute(ctx context.Context, op *store.HostOperation) {
	log := operationLog(h.Log, &op.Operation, "host", op.Host)
	opCtx, cancel := withLease(ctx, h.Store, &op.Operation, h.Lease, log)
	defer cancel()
	res, err := op.Action.Do(opCtx, h.Backend, op.Host)
	if ctx.Err() != nil {
		// Shutting down: the lease expires and another replica resumes.
		return
	}
	if opCtx.Err() != nil && err != nil {
		// The lease was lost: the replica that took it over records the outcome.
		return
	}
	if err == nil {
		h.mirror(ctx, op, res, log)
		log.Info("host action done")
	} else {
		class, reason := Classify(err)
		if class == Transient {
			if ferr := h.Store.FailOperation(ctx, &op.Operation, errors.New(reason), false); ferr != nil {
				log.Error("record host action retry", "error", ferr)
				return
			}
			log.Warn("host action failed; it will be retried", "error", err, "next_attempt_at", op.NextAttemptAt)
			return
		}
		res = baremetal.Failure(err, reason)
		if errors.Is(err, baremetal.ErrHostNotFound) && op.Action.Kind != baremetal.ActEnroll {
			h.forget(ctx, op.Host, log)
		}
		log.Warn("host action failed", "error", err)
	}
	if eerr := h.Store.EndHostOperation(ctx, op, res); eerr != nil {
		log.Error("record host action outcome", "error", eerr)
	}
}

// mirror writes what the action left of the host to the store.
func (h *HostActions) mirror(ctx context.Context, op *store.HostOperation, res baremetal.ActionResult, log *slog.Logger) {
	switch {
	case res.Deleted:
		h.forget(ctx, op.Host, log)
	case res.Host != nil:
		if err := h.Store.MirrorHost(ctx, h.Backend.Name(), res.Host); err != nil {
			log.Warn("mirror host", "error", err)
		}
	}
}

func (h *HostActions) forget(ctx context.Context, ident string, log *slog.Logger) {
	if err := h.Store.ForgetHost(ctx, ident); err != nil {
		log.Warn("remove host from the mirror", "error", err)
	}
}

// operationLog is log with a claimed operation's fields: its UUID, type,
// what it acts on (key and subject), attempt and the request that queued
// it, which ties the operation's logs to the API's.
func operationLog(log *slog.Logger, op *model.Operation, key, subject string) *slog.Logger {
	log = log.With("operation", op.UUID, "type", op.Type, key, subject, "attempt", op.Attempts)
	if op.RequestID != "" {
		log = log.With("request_id", op.RequestID)
	}
	return log
}

// withLease keeps the lease on a claimed operation while it runs: the
// context it returns ends when cancel is called or the lease is lost.
func withLease(ctx context.Context, st *store.DB, op *model.Operation, leaseFor time.Duration, log *slog.Logger) (context.Context, context.CancelFunc) {
	opCtx, cancel := context.WithCancel(ctx)
	go keepLease(opCtx, cancel, st, op, leaseFor, log)
	return opCtx, cancel
}

// keepLease renews the lease on op every third of leaseFor until ctx
// ends; when the lease is lost to another worker it cancels the work.
func keepLease(ctx context.Context, cancel context.CancelFunc, st *store.DB, op *model.Operation, leaseFor time.Duration, log *slog.Logger) {
	t := time.NewTicker(leaseFor / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := st.Heartbeat(ctx, op, leaseFor); err != nil && ctx.Err() == nil {
				log.Warn("lost the operation's lease; stopping", "error", err)
				cancel()
				return
			}
		}
	}
}
