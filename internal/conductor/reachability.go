package conductor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// ManagementState is whether the management cluster answers, as the
// conductor's probes last saw it.
type ManagementState struct {
	// Known is false until the first probe has answered or failed.
	Known     bool
	Reachable bool
	// Since is when the management cluster last began to answer or stopped.
	Since time.Time
	// Error is why it does not answer.
	Error string
}

// unreachableAfter is how many probes in a row must fail before the
// management cluster counts as lost: one failed request is a blip.
const unreachableAfter = 2

// Management reports the conductor's view of the management cluster.
func (c *Conductor) Management() ManagementState {
	c.reachMu.Lock()
	defer c.reachMu.Unlock()
	return c.reach
}

// reachable reports whether the management cluster answers (true until a
// probe says otherwise).
func (c *Conductor) reachable() bool {
	st := c.Management()
	return !st.Known || st.Reachable
}

// ProbeManagement asks the management cluster's API server for its version
// every ProbeInterval until ctx ends, and turns a loss or a recovery into a
// log line, a metric, the status_reason of the clusters in progress and,
// on recovery, a fresh status computation for every cluster. It runs
// beside Run, also while Run cannot start because the management cluster
// does not answer.
func (c *Conductor) ProbeManagement(ctx context.Context) {
	t := time.NewTicker(c.opts.ProbeInterval)
	defer t.Stop()
	failures := 0
	var firstFailure time.Time
	for {
		pctx, cancel := context.WithTimeout(ctx, c.opts.ProbeInterval)
		err := c.mc.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		now := c.now()
		if err != nil {
			if failures == 0 {
				firstFailure = now
			}
			failures++
			if failures >= unreachableAfter {
				c.lost(ctx, firstFailure, err)
			}
		} else {
			failures = 0
			c.answered(ctx, now)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// lost records the management cluster as unreachable since when it first
// failed; only the change is logged and written.
func (c *Conductor) lost(ctx context.Context, since time.Time, cause error) {
	c.reachMu.Lock()
	changed := !c.reach.Known || c.reach.Reachable
	if changed {
		c.reach = ManagementState{Known: true, Since: since}
	}
	c.reach.Error = cause.Error()
	c.reachMu.Unlock()
	if !changed {
		return
	}
	c.log.Warn("management cluster unreachable: cluster status is not being watched and operations wait", "since", since.UTC().Format(time.RFC3339), "error", cause.Error())
	if c.opts.Metrics != nil {
		c.opts.Metrics.SetManagementReachable(false)
	}
	c.markInProgress(ctx, unreachableReason(since, cause))
}

// answered records the management cluster as reachable; after an outage it
// logs the recovery and recomputes every cluster's status from the watch,
// which has caught up by listing again.
func (c *Conductor) answered(ctx context.Context, now time.Time) {
	c.reachMu.Lock()
	prev := c.reach
	if !prev.Known || !prev.Reachable {
		c.reach = ManagementState{Known: true, Reachable: true, Since: now}
	}
	c.reachMu.Unlock()
	if prev.Known && prev.Reachable {
		return
	}
	if c.opts.Metrics != nil {
		c.opts.Metrics.SetManagementReachable(true)
	}
	if !prev.Known {
		return
	}
	c.log.Warn("management cluster reachable again; cluster status resumes", "unreachable_for", now.Sub(prev.Since).Round(time.Second).String())
	ids, err := c.st.ClusterUUIDs(ctx)
	if err != nil {
		c.log.Error("list clusters to refresh their status", "error", err)
		return
	}
	for _, id := range ids {
		c.queue.Add(id)
	}
}

func unreachableReason(since time.Time, cause error) string {
	return fmt.Sprintf("The management cluster has been unreachable since %s (%v); status updates and queued work resume when it answers.",
		since.UTC().Format(time.RFC3339), cause)
}

// markInProgress shows why clusters in progress do not move: their
// status_reason says the management cluster is unreachable.
func (c *Conductor) markInProgress(ctx context.Context, reason string) {
	ids, err := c.st.ClusterUUIDs(ctx)
	if err != nil {
		c.log.Error("list clusters to mark them", "error", err)
		return
	}
	for _, id := range ids {
		marked := false
		_, err := c.st.UpdateClusterStatus(ctx, id, func(cl *model.Cluster, _ []*model.NodeGroup) ([]*model.NodeGroup, bool) {
			if !cl.Status.InProgress() {
				return nil, false
			}
			cl.StatusReason, marked = &reason, true
			return nil, true
		})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			c.log.Warn("record the management cluster's loss", "cluster", id, "error", err)
		}
		if marked {
			c.event(ctx, id, model.EventCondition, "", "ManagementClusterUnreachable", reason)
		}
	}
}
