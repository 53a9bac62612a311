package conductor

import (
	"context"
	"time"

	"github.com/magnetite-io/magnetite/internal/metrics"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Quick successive changes of one cluster (a script PATCHing it ten times,
// a user clicking through a form) are applied as one: every change is
// stored whole with its operation, so the newest desired state holds them
// all. A change operation waits until its cluster has had no newer change
// for coalesceQuiet (at most coalesceMax after it was queued); it then
// applies the newest desired state and records as done the operations of
// the same kind queued right behind it. The store raises the cluster's
// generation with every change; the apply records the generation of the
// spec it read as the cluster's observed generation, so the changes it
// carried out are those the operations behind it stand for.
const (
	coalesceQuiet = 500 * time.Millisecond
	coalesceMax   = 5 * time.Second
)

// coalescable reports whether an operation converges the cluster to its
// stored spec and nothing else: the PATCHes of a cluster or a node group.
// Resizes (nodes_to_remove), upgrades, creates, deletes and credential
// rotations run one by one, as asked.
func coalescable(op *model.Operation) bool {
	return op.Type == model.OpClusterUpdate || op.Type == model.OpNodeGroupUpdate
}

// changesBehind lists the pending operations queued right behind op that
// its apply will carry out too (same kind, same node group), and says how
// long to wait first when the newest of them is younger than
// coalesceQuiet. It must be called before the cluster's spec is read, so
// that every change it returns is in the spec the apply reads.
func (c *Conductor) changesBehind(ctx context.Context, op *model.Operation) ([]*model.Operation, time.Duration, error) {
	ops, err := c.st.OperationsForCluster(ctx, op.ClusterID)
	if err != nil {
		return nil, 0, err
	}
	var behind []*model.Operation
	newest := op.CreatedAt
	for _, o := range ops {
		if o.ID <= op.ID || o.State == model.OpSucceeded || o.State == model.OpFailed {
			continue
		}
		if o.State != model.OpPending || o.Type != op.Type || o.NodeGroupID != op.NodeGroupID {
			break
		}
		behind = append(behind, o)
		newest = o.CreatedAt
	}
	now := c.now()
	if quiet := newest.Add(coalesceQuiet); now.Before(quiet) && now.Before(op.CreatedAt.Add(coalesceMax)) {
		return behind, min(quiet.Sub(now), op.CreatedAt.Add(coalesceMax).Sub(now)), nil
	}
	return behind, 0, nil
}

// reconcileChanges applies a cluster's newest desired state for op and the
// changes queued right behind it, then records those as done.
func (c *Conductor) reconcileChanges(ctx context.Context, op *model.Operation) (Result, error) {
	behind, wait, err := c.changesBehind(ctx, op)
	if err != nil {
		return Done, err
	}
	if wait > 0 {
		return Result{RequeueAfter: wait}, nil
	}
	applied := op
	if len(behind) > 0 {
		// The newest change says what the user asked last (a PATCH's
		// node_count, which an autoscaled group is scaled to).
		last := *op
		last.Payload = behind[len(behind)-1].Payload
		applied = &last
	}
	res, err := c.reconcile(ctx, applied)
	if err != nil || !res.IsDone() || len(behind) == 0 {
		return res, err
	}
	ids := make([]int64, len(behind))
	for i, o := range behind {
		ids[i] = o.ID
	}
	n, err := c.st.AbsorbOperations(ctx, ids)
	if err != nil {
		// They run on their own later; applying again changes nothing.
		c.log.Warn("record coalesced changes", "cluster", op.ClusterID, "error", err)
	}
	for _, o := range behind[:n] {
		c.operationEnded(o, metrics.Succeeded)
	}
	if n > 0 {
		c.log.Info("changes coalesced into one apply", "cluster", op.ClusterID, "operation", op.UUID, "coalesced", n)
	}
	return res, nil
}
