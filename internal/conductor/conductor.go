package conductor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/metrics"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// Options configure a conductor.
type Options struct {
	Store   *store.DB
	Mgmt    *mgmt.Client
	Drivers *driver.Registry
	Facts   FactsSource
	Log     *slog.Logger
	// Owner identifies this process in operation leases.
	Owner string
	// Lease is how long a claimed operation stays ours without a heartbeat.
	Lease time.Duration
	// Workers is how many operations run at once.
	Workers int
	// IdleWait bounds how long an idle worker waits before looking for
	// work queued by another process (work queued through this process's
	// API wakes workers at once through Notify).
	IdleWait time.Duration
	// StatusWorkers is how many clusters' statuses are computed at once.
	StatusWorkers int
	// Metrics receives finished operations and watch lag; nil records
	// nothing.
	Metrics *metrics.Registry
	// Credentials turns clusters' application credentials into Secrets and
	// deletes retired ones.
	Credentials CloudCredentials
	// KeepNamespaces leaves a project's namespace in place when its last
	// cluster is deleted ([management] delete_empty_namespaces = false).
	KeepNamespaces bool
	// ProbeInterval is how often the management cluster's API is asked
	// whether it answers; two failures in a row count as a loss.
	ProbeInterval time.Duration
	// Addons renders clusters' addon charts ([addons] source).
	Addons AddonCharts
}

// Conductor runs operations and keeps cluster status in step with the
// management cluster.
type Conductor struct {
	opts  Options
	st    *store.DB
	mc    *mgmt.Client
	log   *slog.Logger
	now   func() time.Time
	wake  chan struct{}
	queue workqueue.TypedRateLimitingInterface[string]

	mu    sync.Mutex
	watch *mgmt.Watch
	// waiting maps a cluster to the operation of it this conductor
	// requeued to wait on its objects; wakeQueue carries the operations
	// its changes make due.
	waiting   map[string]string
	wakeQueue workqueue.TypedInterface[string]
	// lastTransition is the newest condition transition seen per object
	// and unsynced the changes a cluster's next status write answers, for
	// the watch-lag metric.
	lastTransition map[string]time.Time
	unsynced       map[string][]objectChange

	reachMu sync.Mutex
	reach   ManagementState

	// remediated holds the UIDs of the machines whose health check failure
	// was recorded as an event.
	remediated sync.Map
	// faults holds Nova's fault message by server ID (a server in ERROR
	// stays so), failureNoted the UIDs of the OpenStackMachines whose
	// failure was recorded as an event, and cpReplaced when a control-plane
	// machine of a cluster was last replaced.
	faults       sync.Map
	failureNoted sync.Map
	// serverLooks holds each cluster's last look at its OpenStack machines
	// (serverLook), while some wait for their servers.
	serverLooks sync.Map
	cpReplaced  sync.Map
	// autoHealNext is when auto-healing may next look at a cluster's
	// failed machines.
	autoHealNext sync.Map
	// memo is what the conductor applied lately, so that a reconcile
	// sends only what changed.
	memo *appliedMemo
}

// New builds a conductor.
func New(opts Options) *Conductor {
	if opts.Lease <= 0 {
		opts.Lease = 2 * time.Minute
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.IdleWait <= 0 {
		opts.IdleWait = 5 * time.Second
	}
	if opts.StatusWorkers <= 0 {
		opts.StatusWorkers = 4
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = 2 * time.Second
	}
	if opts.Facts == nil {
		opts.Facts = NoCloud{}
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Conductor{
		opts: opts, st: opts.Store, mc: opts.Mgmt, log: opts.Log, now: time.Now,
		wake:           make(chan struct{}, 1),
		memo:           newAppliedMemo(),
		waiting:        map[string]string{},
		wakeQueue:      workqueue.NewTyped[string](),
		lastTransition: map[string]time.Time{},
		unsynced:       map[string][]objectChange{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "cluster-status"}),
	}
}

// Notify wakes an idle worker: the API calls it after queueing work.
func (c *Conductor) Notify() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run watches the management cluster and executes operations until ctx
// ends.
func (c *Conductor) Run(ctx context.Context) error {
	if err := c.mc.Discover(ctx); err != nil {
		return fmt.Errorf("conductor: discover the management cluster's API: %w", err)
	}
	w, err := c.mc.Watch(ctx, c.mc.Kinds().Watched(), c.onEvent)
	if err != nil {
		return fmt.Errorf("conductor: watch the management cluster: %w", err)
	}
	c.mu.Lock()
	c.watch = w
	c.mu.Unlock()
	// Every cluster is looked at once at start: status may have changed
	// while no conductor was running, and deadlines need their timers.
	ids, err := c.st.ClusterUUIDs(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		c.queue.Add(id)
	}
	var wg sync.WaitGroup
	for i := 0; i < c.opts.StatusWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.processStatus(ctx) {
			}
		}()
	}
	for i := 0; i < c.opts.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.runWorker(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.wakeWaiting(ctx)
	}()
	c.log.Info("conductor running", "owner", c.opts.Owner, "workers", c.opts.Workers)
	<-ctx.Done()
	c.queue.ShutDown()
	c.wakeQueue.ShutDown()
	wg.Wait()
	return nil
}

// onEvent turns a management-cluster change into a status recomputation of
// the cluster it belongs to, and makes due an operation waiting on that
// cluster.
func (c *Conductor) onEvent(ev mgmt.Event) {
	id := ev.ClusterUUID()
	if id == "" {
		return
	}
	c.noteChange(ev, id)
	if ev.Type == mgmt.Deleted && ev.Kind == "Cluster" {
		// Deleted on purpose, or lost with the management cluster's
		// state: either way, what was applied of the cluster is gone.
		c.memo.forget(id)
	}
	c.queue.Add(id)
	c.mu.Lock()
	opUUID, ok := c.waiting[id]
	delete(c.waiting, id)
	c.mu.Unlock()
	if ok {
		c.wakeQueue.Add(opUUID)
	}
}

func (c *Conductor) runWorker(ctx context.Context) {
	work(ctx, c.log, "claim operation", func(ctx context.Context) (*model.Operation, error) {
		return c.st.ClaimOperation(ctx, c.opts.Owner, c.opts.Lease)
	}, c.idle, c.execute)
}

// work takes work from a queue until ctx ends: it claims the next due
// operation and executes it, or idles when there is none or the claim
// failed (logged as what, unless ctx ended).
func work[T any](ctx context.Context, log *slog.Logger, what string, claim func(context.Context) (*T, error),
	idle func(context.Context), execute func(context.Context, *T)) {
	for ctx.Err() == nil {
		op, err := claim(ctx)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				log.Error(what, "error", err)
			}
			idle(ctx)
		case op == nil:
			idle(ctx)
		default:
			execute(ctx, op)
		}
	}
}

// idle waits for a wake-up, the next retry becoming due, or IdleWait (work
// queued by another replica).
func (c *Conductor) idle(ctx context.Context) {
	idleUntil(ctx, c.wake, c.opts.IdleWait, c.now, c.st.NextOperationAt)
}

// idleUntil waits on a queue: for wake, for the queue's next retry to come
// due (next), or at most wait, whichever is first, with jitter so that
// replicas do not poll in lockstep.
func idleUntil(ctx context.Context, wake <-chan struct{}, wait time.Duration, now func() time.Time,
	next func(context.Context) (time.Time, bool, error)) {
	if at, ok, err := next(ctx); err == nil && ok {
		if d := at.Sub(now()); d < wait {
			wait = max(d, 10*time.Millisecond)
		}
	}
	wait += time.Duration(rand.Int64N(int64(wait/10) + 1))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-wake:
	case <-t.C:
	}
}

// execute runs one claimed operation with a heartbeat, and records how it
// ended: done, waiting (requeued without counting as an attempt, the
// worker freed at once), or failed (Classify: retried with backoff, or
// ended for good).
func (c *Conductor) execute(ctx context.Context, op *model.Operation) {
	log := operationLog(c.log, op, "cluster", op.ClusterID)
	opCtx, cancel := withLease(ctx, c.st, op, c.opts.Lease, log)
	defer cancel()
	log.Info("operation started")
	res, err := c.run(opCtx, op)
	if ctx.Err() != nil {
		// Shutting down: the lease expires and another worker resumes.
		return
	}
	switch {
	case err == nil && res.IsDone():
		if cerr := c.st.CompleteOperation(ctx, op); cerr != nil {
			log.Error("record operation completion", "error", cerr)
		}
		c.operationEnded(op, metrics.Succeeded)
		log.Info("operation finished")
	case err == nil:
		c.requeue(ctx, op, res, log)
	default:
		class, reason := Classify(err)
		permanent := class == Permanent
		if ferr := c.st.FailOperation(ctx, op, errors.New(reason), permanent); ferr != nil {
			log.Error("record operation failure", "error", ferr)
		}
		if permanent {
			c.operationEnded(op, metrics.Failed)
		} else {
			c.operationEnded(op, metrics.Retried)
		}
		log.Warn("operation failed", "error", err, "permanent", permanent)
		if permanent {
			c.failCluster(ctx, op, reason)
		} else {
			c.noteRetry(ctx, op, reason)
		}
	}
	c.queue.Add(op.ClusterID)
}

// requeue puts an operation that waits back in the queue. One that waits
// on something (Waiting says what, and status_reason shows it) is made due
// at once by the next change of the cluster's objects (wakeWaiting), with
// RequeueAfter as the safety net for a missed event and for waits on the
// cloud, which sends none; one that only waits for time to pass (changes
// being coalesced) runs after RequeueAfter.
func (c *Conductor) requeue(ctx context.Context, op *model.Operation, res Result, log *slog.Logger) {
	if err := c.st.RequeueOperation(ctx, op, c.now().Add(res.RequeueAfter)); err != nil {
		log.Error("requeue waiting operation", "error", err)
		return
	}
	if res.Waiting == "" {
		return
	}
	c.mu.Lock()
	c.waiting[op.ClusterID] = op.UUID
	c.mu.Unlock()
	c.showReason(ctx, op.ClusterID, res.Waiting)
	log.Info("operation waiting", "for", res.Waiting, "requeue_after", res.RequeueAfter)
}

// wakeWaiting makes due, in the store, the operations that wait on the
// clusters whose objects changed, and wakes a worker to claim them; it
// runs until ctx ends.
func (c *Conductor) wakeWaiting(ctx context.Context) {
	for {
		opUUID, shutdown := c.wakeQueue.Get()
		if shutdown {
			return
		}
		if err := c.st.WakeOperation(ctx, opUUID); err != nil && ctx.Err() == nil {
			c.log.Warn("wake waiting operation", "operation", opUUID, "error", err)
		}
		c.wakeQueue.Done(opUUID)
		c.Notify()
	}
}

// run dispatches an operation to its handler.
func (c *Conductor) run(ctx context.Context, op *model.Operation) (Result, error) {
	c.mu.Lock()
	delete(c.waiting, op.ClusterID)
	c.mu.Unlock()
	if coalescable(op) {
		return c.reconcileChanges(ctx, op)
	}
	switch op.Type {
	case model.OpClusterDelete:
		return c.deleteCluster(ctx, op)
	case model.OpNodeGroupDelete:
		// Once Cluster API is removing the group's machine deployment, an
		// attempt woken by a change only looks at what remains.
		if md, err := c.machineDeploymentOf(op.ClusterID, op.NodeGroupID); err != nil || md == nil || md.GetDeletionTimestamp() == nil {
			if res, err := c.reconcile(ctx, op); err != nil || !res.IsDone() {
				return res, err
			}
		}
		return c.removeNodeGroup(ctx, op)
	case model.OpClusterCreate, model.OpClusterResize, model.OpClusterUpgrade, model.OpNodeGroupCreate, model.OpCredentialRotate,
		model.OpClusterAdopt, model.OpClusterRebase:
		return c.reconcile(ctx, op)
	}
	return Done, permanentf("unknown operation type %q", op.Type)
}

// failCluster records a permanent failure on the cluster so users see why.
func (c *Conductor) failCluster(ctx context.Context, op *model.Operation, msg string) {
	_, err := c.st.UpdateClusterStatus(ctx, op.ClusterID, func(cl *model.Cluster, ngs []*model.NodeGroup) ([]*model.NodeGroup, bool) {
		switch cl.Status {
		case model.CreateInProgress:
			cl.Status = model.CreateFailed
		case model.UpdateInProgress:
			cl.Status = model.UpdateFailed
		case model.DeleteInProgress:
			cl.Status = model.DeleteFailed
		}
		cl.StatusReason = &msg
		t := c.now().UTC()
		cl.UpdatedAt = &t
		return nil, true
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		c.log.Error("record cluster failure", "cluster", op.ClusterID, "error", err)
		return
	}
	c.event(ctx, op.ClusterID, model.EventStatus, "", string(op.Type)+" failed", msg)
}

// noteRetry shows why an operation is being retried in the status_reason
// of a cluster still in progress, so users waiting on it see what it waits
// for; status from Cluster API replaces it as soon as there is any.
func (c *Conductor) noteRetry(ctx context.Context, op *model.Operation, cause string) {
	msg := retryReason(op, cause)
	if st := c.Management(); st.Known && !st.Reachable {
		// Why the attempt failed is already said, better.
		msg = unreachableReason(st.Since, errors.New(st.Error))
	}
	c.showReason(ctx, op.ClusterID, msg)
}

// retryReason is the status_reason of a cluster whose operation retries a
// failure.
func retryReason(op *model.Operation, cause string) string {
	return fmt.Sprintf("Retrying (attempt %d failed): %s", op.Attempts, cause)
}

// showReason writes what an operation of a cluster in progress waits for,
// or why it is retried, into its status_reason; a settled cluster's
// status_reason is left alone.
func (c *Conductor) showReason(ctx context.Context, clusterUUID, msg string) {
	if msg == "" {
		return
	}
	_, err := c.st.UpdateClusterStatus(ctx, clusterUUID, func(cl *model.Cluster, _ []*model.NodeGroup) ([]*model.NodeGroup, bool) {
		if !cl.Status.InProgress() || (cl.StatusReason != nil && *cl.StatusReason == msg) {
			return nil, false
		}
		cl.StatusReason = &msg
		return nil, true
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		c.log.Warn("record status reason", "cluster", clusterUUID, "error", err)
	}
}

// event records a cluster event, logging (not failing) when it cannot.
func (c *Conductor) event(ctx context.Context, clusterUUID string, kind model.EventKind, status model.Status, reason, msg string) {
	cl, err := c.st.GetClusterByUUID(ctx, clusterUUID)
	if err != nil {
		return
	}
	if status == "" {
		status = cl.Status
	}
	ev := model.ClusterEvent{ClusterID: clusterUUID, ProjectID: cl.ProjectID, Time: c.now().UTC(), Kind: kind,
		Status: status, Reason: reason, Message: msg}
	if err := c.st.RecordEvent(ctx, ev); err != nil {
		c.log.Warn("record cluster event", "cluster", clusterUUID, "error", err)
	}
}

// Sleep waits for d, or less when ctx ends first; then it returns ctx's
// error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
