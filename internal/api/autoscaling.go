package api

import (
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
)

// autoscalingOn reports whether a cluster's labels run a cluster
// autoscaler for it (auto_scaling_enabled).
func autoscalingOn(c *model.Cluster) bool {
	return labels.Values(c.Labels).Bool(labels.AutoScalingEnabled)
}

// pinAutoscalerMax gives a worker node group of an autoscaled cluster the
// upper bound the autoscaler works within when none was asked for: its
// node count at creation. The bound must be stored: node_count follows the
// autoscaler, so a bound derived from it would shrink with every scale
// down and never let the group grow again.
func pinAutoscalerMax(c *model.Cluster, ng *model.NodeGroup) {
	if !autoscalingOn(c) || ng.Role == model.RoleMaster || (ng.MaxNodeCount != nil && *ng.MaxNodeCount > 0) {
		return
	}
	m := max(ng.NodeCount, ng.MinNodeCount, 1)
	ng.MaxNodeCount = &m
}

// autoscaledBoundsHint explains, after Magnum's out-of-range message, why a
// resize of an autoscaled node group must stay inside its bounds and how to
// move them.
func autoscaledBoundsHint(c *model.Cluster, ng *model.NodeGroup) string {
	if !autoscalingOn(c) || ng.Role == model.RoleMaster {
		return ""
	}
	return ". The cluster autoscaler sizes node group " + ng.Name + " within these bounds, so a resize must stay inside them " +
		"(it sets the size now and the autoscaler goes on from there); move the bounds first with " +
		"`openstack coe nodegroup update " + c.Name + " " + ng.Name + " replace min_node_count=N max_node_count=M`"
}
