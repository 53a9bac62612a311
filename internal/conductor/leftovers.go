package conductor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
)

// leftoverTimeout bounds one attempt's wait for the cloud to finish
// deleting; the operation is then retried with backoff.
const leftoverTimeout = 10 * time.Minute

// cleanWorkloadLeftovers deletes, as the cluster, the load balancers,
// floating IPs, security groups, snapshots and volumes its workload's cloud controller manager and
// Cinder CSI driver made, once its machines are gone, and waits until the
// cloud has removed them; status_reason says what it waits for. What the
// cloud refuses to delete fails the delete with the cloud's reason: the
// cluster is not forgotten while it still has resources billed.
func (c *Conductor) cleanWorkloadLeftovers(ctx context.Context, cl *model.Cluster) error {
	wl, ok := c.opts.Facts.(WorkloadLeftovers)
	if !ok {
		return nil
	}
	policy := c.workloadCleanup(ctx, cl)
	if policy == "keep" {
		c.event(ctx, cl.UUID, model.EventOperation, "", "workload cleanup",
			"left the workload's load balancers, floating IPs, security groups, snapshots and volumes in the cloud: the cluster has "+labels.WorkloadCleanup+"=keep")
		return nil
	}
	creds, err := c.st.ClusterCredentials(ctx, cl.UUID)
	if err != nil {
		return err
	}
	if len(creds) == 0 || creds[0].Retired {
		c.event(ctx, cl.UUID, model.EventOperation, "", "workload cleanup",
			"the cluster has no application credential to look for what its workload left in the cloud with; nothing was deleted")
		return nil
	}
	name := clusterObjectName(cl)
	deadline := c.now().Add(leftoverTimeout)
	wait := time.Second
	for {
		res, err := wl.CleanWorkloadLeftovers(ctx, cl, name, cloud.LeftoverPolicy{KeepVolumes: policy == "keep-volumes"})
		if err != nil {
			if errors.Is(err, errPermanent) {
				return err
			}
			return fmt.Errorf("clean up what the workload left in the cloud: %w", err)
		}
		if len(res.Deleted) > 0 {
			c.event(ctx, cl.UUID, model.EventOperation, "", "workload cleanup",
				"deleting what the workload left in the cloud: "+joinStrings(res.Deleted))
		}
		// Refusals end the attempt once what was accepted is gone, so that
		// what the user finds afterwards is only what needs them.
		if len(res.Remaining) == 0 && len(res.Refused) > 0 {
			return permanentf("the cloud refused to delete what the cluster's workload left in it: %s. Remove what holds them (or delete them yourself), then delete the cluster again",
				joinStrings(res.Refused))
		}
		if len(res.Remaining) == 0 {
			return nil
		}
		reason := "Deleting what the workload left in the cloud: " + joinStrings(res.Remaining)
		if len(res.Refused) > 0 {
			reason += ". Refused: " + joinStrings(res.Refused)
		}
		c.setDeleteReason(ctx, cl.UUID, reason)
		if c.now().After(deadline) {
			return fmt.Errorf("the cloud is still deleting what the workload left after %s: %s", leftoverTimeout, joinStrings(res.Remaining))
		}
		if err := Sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// workloadCleanup is the cluster's workload_cleanup label over its
// template's.
func (c *Conductor) workloadCleanup(ctx context.Context, cl *model.Cluster) string {
	var tmpl map[string]string
	if ct, err := c.st.GetClusterTemplateByUUID(ctx, cl.ClusterTemplateID); err == nil {
		tmpl = ct.Labels
	}
	own := cl.Labels
	if cl.MergeLabels {
		own = labels.Merge(tmpl, cl.Labels)
	}
	return labels.Effective(tmpl, own, labels.ScopeCluster).String(labels.WorkloadCleanup)
}

// setDeleteReason shows what a delete waits for.
func (c *Conductor) setDeleteReason(ctx context.Context, clusterUUID, msg string) {
	_, err := c.st.UpdateClusterStatus(ctx, clusterUUID, func(cl *model.Cluster, _ []*model.NodeGroup) ([]*model.NodeGroup, bool) {
		if cl.Status != model.DeleteInProgress || (cl.StatusReason != nil && *cl.StatusReason == msg) {
			return nil, false
		}
		cl.StatusReason = &msg
		return nil, true
	})
	if err != nil {
		c.log.Warn("record delete progress", "cluster", clusterUUID, "error", err)
	}
}

func joinStrings[T fmt.Stringer](items []T) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = it.String()
	}
	return strings.Join(parts, "; ")
}
