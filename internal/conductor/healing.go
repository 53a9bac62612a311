package conductor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/magnetite-io/magnetite/internal/model"
)

// Conditions Cluster API's machine health checks set on a machine.
const (
	conditionHealthCheckSucceeded = "HealthCheckSucceeded"
	conditionOwnerRemediated      = "OwnerRemediated"
)

// recordRemediations records an event, once per machine, for every machine
// a health check found unhealthy: auto-healing is about to replace it (its
// MachineSet, or the control plane, deletes it and makes a new one).
func (c *Conductor) recordRemediations(ctx context.Context, clusterUUID string, ngs []*model.NodeGroup, obs Observed) {
	group := groupOf(ngs)
	for _, m := range obs.Machines {
		hc, ok := findCondition(m, conditionHealthCheckSucceeded)
		if !ok || hc.Status != "False" {
			continue
		}
		uid := nestedString(m, "metadata", "uid")
		if _, seen := c.remediated.LoadOrStore(uid, true); seen {
			continue
		}
		ng := group(labelsOf(m))
		if _, isCP := labelsOf(m)[labelControlPlane]; isCP {
			ng = "control plane"
		} else if ng == "" {
			ng = "unknown node group"
		} else {
			ng = "node group " + ng
		}
		msg := fmt.Sprintf("auto-healing: machine %s (%s) failed its health check: %s; Cluster API replaces it", name(m), ng, hc)
		if rem, ok := findCondition(m, conditionOwnerRemediated); ok && rem.Reason != "" {
			msg += " (" + rem.Reason + ")"
		}
		c.event(ctx, clusterUUID, model.EventCondition, "", "remediation", msg)
	}
}

// recordHealth records a change between HEALTHY and UNHEALTHY of a
// cluster that was created (not while it comes up), so that a failure and its
// recovery, by auto-healing or otherwise, are both in the history.
func (c *Conductor) recordHealth(ctx context.Context, clusterUUID string, before, after *model.Cluster) {
	from, to := healthOf(before), healthOf(after)
	known := func(h model.Health) bool { return h == model.Healthy || h == model.Unhealthy }
	// A cluster still being created is not ready yet rather than
	// unhealthy; its creation's own events tell that story.
	if from == to || !known(from) || !known(to) || before.Status == model.CreateInProgress {
		return
	}
	msg := "every node is ready"
	if to == model.Unhealthy {
		msg = ""
		for _, k := range slices.Sorted(maps.Keys(after.HealthStatusReason)) {
			if r := after.HealthStatusReason[k]; !strings.HasPrefix(r, "ok") {
				msg += k + ": " + r + "; "
			}
		}
		msg = strings.TrimSuffix(msg, "; ")
	}
	c.event(ctx, clusterUUID, model.EventCondition, after.Status, "health "+string(from)+" -> "+string(to), msg)
}
