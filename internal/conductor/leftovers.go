package conductor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
)

// leftoverRecheck is how long a delete waits before it asks the cloud
// again whether what the workload left is gone (the cloud sends no events).
const leftoverRecheck = 10 * time.Second

// cleanWorkloadLeftovers deletes, as the cluster, the load balancers,
// floating IPs, security groups, snapshots and volumes its workload's cloud
// controller manager and Cinder CSI driver made, once its machines are
// gone. While the cloud is still deleting them it returns a waiting result
// that names them, so no worker waits on the cloud. What the cloud refuses
// to delete fails the delete with the cloud's reason: the cluster is not
// forgotten while it still has resources billed.
func (c *Conductor) cleanWorkloadLeftovers(ctx context.Context, cl *model.Cluster) (Result, error) {
	wl, ok := c.opts.Facts.(WorkloadLeftovers)
	if !ok {
		return Done, nil
	}
	policy := c.workloadCleanup(ctx, cl)
	if policy == "keep" {
		c.event(ctx, cl.UUID, model.EventOperation, "", "workload cleanup",
			"left the workload's load balancers, floating IPs, security groups, snapshots and volumes in the cloud: the cluster has "+labels.WorkloadCleanup+"=keep")
		return Done, nil
	}
	creds, err := c.st.ClusterCredentials(ctx, cl.UUID)
	if err != nil {
		return Done, err
	}
	if len(creds) == 0 || creds[0].Retired {
		c.event(ctx, cl.UUID, model.EventOperation, "", "workload cleanup",
			"the cluster has no application credential to look for what its workload left in the cloud with; nothing was deleted")
		return Done, nil
	}
	res, err := wl.CleanWorkloadLeftovers(ctx, cl, clusterObjectName(cl), cloud.LeftoverPolicy{KeepVolumes: policy == "keep-volumes"})
	if err != nil {
		return Done, fmt.Errorf("clean up what the workload left in the cloud: %w", err)
	}
	if len(res.Deleted) > 0 {
		c.event(ctx, cl.UUID, model.EventOperation, "", "workload cleanup",
			"deleting what the workload left in the cloud: "+joinStrings(res.Deleted))
	}
	// Refusals end the delete once what was accepted is gone, so that
	// what the user finds afterwards is only what needs them.
	if len(res.Remaining) == 0 && len(res.Refused) > 0 {
		return Done, permanentf("the cloud refused to delete what the cluster's workload left in it: %s. Remove what holds them (or delete them yourself), then delete the cluster again",
			joinStrings(res.Refused))
	}
	if len(res.Remaining) == 0 {
		return Done, nil
	}
	reason := "Deleting what the workload left in the cloud: " + joinStrings(res.Remaining)
	if len(res.Refused) > 0 {
		reason += ". Refused: " + joinStrings(res.Refused)
	}
	return waitingFor(leftoverRecheck, "%s", reason), nil
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

func joinStrings[T fmt.Stringer](items []T) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = it.String()
	}
	return strings.Join(parts, "; ")
}
