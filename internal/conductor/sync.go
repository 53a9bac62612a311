package conductor

import (
	"context"
	"errors"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// processStatus takes one cluster off the status queue and recomputes its
// status. It returns false once the queue is shut down.
func (c *Conductor) processStatus(ctx context.Context) bool {
	id, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(id)
	if err := c.syncStatus(ctx, id); err != nil {
		if ctx.Err() == nil {
			c.log.Warn("sync cluster status", "cluster", id, "error", err)
			c.queue.AddRateLimited(id)
		}
		return true
	}
	c.queue.Forget(id)
	return true
}

// observe reads a cluster's objects from the watch caches.
func (c *Conductor) observe(clusterUUID string) (Observed, error) {
	var obs Observed
	one := func(kind string) (map[string]any, error) {
		objs, err := c.watch.Objects(kind, clusterUUID)
		if err != nil || len(objs) == 0 {
			return nil, err
		}
		return objs[0].Object, nil
	}
	all := func(kind string) ([]map[string]any, error) {
		objs, err := c.watch.Objects(kind, clusterUUID)
		out := make([]map[string]any, 0, len(objs))
		for _, o := range objs {
			out = append(out, o.Object)
		}
		return out, err
	}
	var err error
	if obs.Cluster, err = one("Cluster"); err != nil {
		return obs, err
	}
	if obs.ControlPlane, err = one("KubeadmControlPlane"); err != nil {
		return obs, err
	}
	if obs.MachineDeployments, err = all("MachineDeployment"); err != nil {
		return obs, err
	}
	if obs.Machines, err = all("Machine"); err != nil {
		return obs, err
	}
	obs.Addons, err = one("ClusterResourceSet")
	return obs, err
}

// groupOf maps object labels to node group names through the node group
// UUID label the conductor puts into the topology.
func groupOf(ngs []*model.NodeGroup) func(map[string]string) string {
	byUUID := make(map[string]string, len(ngs))
	for _, ng := range ngs {
		byUUID[ng.UUID] = ng.Name
	}
	return func(l map[string]string) string { return byUUID[l[LabelNodeGroupUUID]] }
}

// syncStatus recomputes one cluster's status from the watch caches and
// writes it when it changed. Deadlines (create_timeout) are timers on the
// queue, not polling.
func (c *Conductor) syncStatus(ctx context.Context, id string) error {
	if !c.reachable() {
		// The caches hold what was seen before the loss; every cluster is
		// looked at again when the management cluster answers.
		return nil
	}
	obs, err := c.observe(id)
	if err != nil {
		return err
	}
	servers := c.lookAtServers(ctx, id, &obs)
	pending, err := c.st.PendingOperations(ctx, id)
	if err != nil {
		return err
	}
	// While an operation retries a failure, its cause is what holds the
	// cluster up, whatever Cluster API reports meanwhile.
	var retrying *model.Operation
	if pending > 0 {
		if retrying, err = c.st.RetryingOperation(ctx, id); err != nil {
			return err
		}
	}
	now := c.now()
	var before, after model.Cluster
	var followed []string
	var groups []*model.NodeGroup
	var snap Snapshot
	cl, err := c.st.UpdateClusterStatus(ctx, id, func(cl *model.Cluster, ngs []*model.NodeGroup) ([]*model.NodeGroup, bool) {
		before, groups = *cl, ngs
		if cl.Status == model.DeleteInProgress {
			after = *cl
			return nil, false
		}
		var moved []*model.NodeGroup
		if pending == 0 {
			// While an operation runs, sizes are its own to set.
			ngs, moved, followed = followAutoscaler(ngs, obs)
		}
		snap = Summarize(obs, groupOf(ngs))
		d := Decide(cl, ngs, snap, pending > 0, now)
		withMoved(&d, moved)
		if retrying != nil && d.Cluster.Status.InProgress() {
			d.Cluster.StatusReason = strPtr(retryReason(retrying, retrying.LastError))
			d.Changed = d.Changed || !sameClusterStatus(cl, d.Cluster)
		}
		if d.Changed {
			t := now.UTC()
			d.Cluster.UpdatedAt = &t
		}
		*cl = *d.Cluster
		after = *cl
		return d.NodeGroups, d.Changed
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	c.statusStored(id, c.now())
	for _, note := range followed {
		c.event(ctx, id, model.EventCondition, after.Status, "autoscaler", note)
	}
	c.recordRemediations(ctx, id, groups, obs)
	c.recordHealth(ctx, id, &before, &after)
	switch {
	case before.Status != after.Status:
		c.event(ctx, id, model.EventStatus, after.Status, string(before.Status)+" -> "+string(after.Status), derefOr(after.StatusReason, ""))
	case derefOr(before.StatusReason, "") != derefOr(after.StatusReason, "") && after.StatusReason != nil:
		c.event(ctx, id, model.EventCondition, after.Status, "status reason", *after.StatusReason)
	}
	if after.Status != model.DeleteInProgress {
		c.autoHeal(ctx, id, obs, servers)
		c.replaceFailedMachines(ctx, id, obs, snap, servers, after.AppliedGeneration, pending > 0)
	}
	if cl.Status == model.CreateInProgress && cl.CreateTimeout > 0 {
		deadline := cl.CreatedAt.Add(time.Duration(cl.CreateTimeout) * time.Minute)
		c.queue.AddAfter(id, deadline.Sub(now)+time.Second)
	}
	return nil
}

// Observe exposes a cluster's cached objects, for tests and tools.
func (c *Conductor) Observe(clusterUUID string) (Observed, error) { return c.observe(clusterUUID) }
