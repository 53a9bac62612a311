package conductor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Annotations by which Cluster API's autoscaler provider recognises a
// machine deployment it sizes.
const (
	annotationAutoscalerMin = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
	annotationAutoscalerMax = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
)

// reconcileAutoscaler runs after a cluster's objects were applied: the
// autoscaler's objects were among them when autoscaling is on; otherwise
// whatever an earlier apply left of them is removed. A resize of an
// autoscaled node group then sets its size once, as the autoscaler would.
func (c *Conductor) reconcileAutoscaler(ctx context.Context, sc *scope, res *driver.Result, op *model.Operation) error {
	rendered := false
	for _, o := range res.Objects {
		if o.GetLabels()[capi.LabelComponent] == capi.ComponentAutoscaler {
			rendered = true
			break
		}
	}
	if !rendered {
		removed, err := c.removeAutoscaler(ctx, sc.namespace, sc.cluster.UUID)
		if err != nil {
			return err
		}
		if removed > 0 {
			c.event(ctx, sc.cluster.UUID, model.EventOperation, "", string(op.Type),
				"autoscaling is off: removed the cluster autoscaler; node groups keep their current sizes")
		}
	}
	if op.Type == model.OpClusterResize {
		return c.scaleAutoscaled(ctx, sc, op)
	}
	return nil
}

// removeAutoscaler deletes a cluster's autoscaler objects, the Deployment
// first, and reports how many there were.
func (c *Conductor) removeAutoscaler(ctx context.Context, namespace, clusterUUID string) (int, error) {
	selector := mgmt.ClusterSelector(clusterUUID) + "," + capi.LabelComponent + "=" + capi.ComponentAutoscaler
	removed := 0
	for _, kind := range capi.AutoscalerKinds {
		objs, err := c.mc.List(ctx, kind, namespace, selector)
		if err != nil {
			return removed, err
		}
		for _, o := range objs {
			gone, err := c.mc.Delete(ctx, kind, namespace, o.GetName())
			if err != nil {
				return removed, err
			}
			if gone {
				removed++
			}
		}
	}
	return removed, nil
}

// scaleAutoscaled sets the replicas of a resized node group's machine
// deployment when the autoscaler sizes it: the topology leaves its
// replicas alone, so the resize is carried out the way the autoscaler
// scales, through the scale subresource, and the autoscaler goes on from
// the new size within the same bounds.
func (c *Conductor) scaleAutoscaled(ctx context.Context, sc *scope, op *model.Operation) error {
	n, ok := payloadInt(op.Payload["node_count"])
	if !ok || c.watch == nil {
		return nil
	}
	mds, err := c.watch.Objects("MachineDeployment", sc.cluster.UUID)
	if err != nil {
		return err
	}
	for _, md := range mds {
		if md.GetLabels()[LabelNodeGroupUUID] != op.NodeGroupID || !autoscaled(md.GetAnnotations()) {
			continue
		}
		if cur, _ := nestedInt(md.Object, "spec", "replicas"); cur == n {
			return nil
		}
		if err := c.mc.Scale(ctx, "MachineDeployment", md.GetNamespace(), md.GetName(), n); err != nil {
			return classifyApplyError(err)
		}
		c.event(ctx, sc.cluster.UUID, model.EventOperation, "", string(op.Type),
			fmt.Sprintf("node group %v scaled to %d nodes; the cluster autoscaler keeps sizing it between %s and %s",
				op.Payload["nodegroup"], n, md.GetAnnotations()[annotationAutoscalerMin], md.GetAnnotations()[annotationAutoscalerMax]))
	}
	return nil
}

func payloadInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

func autoscaled(annotations map[string]string) bool {
	_, hasMin := annotations[annotationAutoscalerMin]
	_, hasMax := annotations[annotationAutoscalerMax]
	return hasMin && hasMax
}

// followAutoscaler makes the node_count of every autoscaled node group the
// replicas of its machine deployments, which the autoscaler (or Cluster
// API's defaulting of a new autoscaled machine deployment) set: Magnetite
// reports the autoscaler's size and never writes its own over it. It
// returns the node groups as they should be, those it changed, and what to
// record as events.
func followAutoscaler(ngs []*model.NodeGroup, obs Observed) (all, moved []*model.NodeGroup, notes []string) {
	type observed struct {
		replicas int
		managers []string
	}
	byGroup := map[string]*observed{}
	for _, md := range obs.MachineDeployments {
		ann, _ := nested(md, "metadata", "annotations").(map[string]any)
		_, hasMin := ann[annotationAutoscalerMin]
		_, hasMax := ann[annotationAutoscalerMax]
		id := labelsOf(md)[LabelNodeGroupUUID]
		r, ok := nestedInt(md, "spec", "replicas")
		if !hasMin || !hasMax || id == "" || !ok || nestedString(md, "metadata", "deletionTimestamp") != "" {
			continue
		}
		o := byGroup[id]
		if o == nil {
			o = &observed{}
			byGroup[id] = o
		}
		o.replicas += r
		if m := replicasManager(md); m != "" {
			o.managers = append(o.managers, describeManager(m))
		}
	}
	all = make([]*model.NodeGroup, len(ngs))
	for i, ng := range ngs {
		all[i] = ng
		o := byGroup[ng.UUID]
		if o == nil || ng.Role == model.RoleMaster || ng.Status == model.DeleteInProgress || ng.NodeCount == o.replicas {
			continue
		}
		g := *ng
		g.NodeCount = o.replicas
		all[i] = &g
		moved = append(moved, &g)
		by := "the cluster autoscaler"
		if len(o.managers) > 0 {
			by = strings.Join(o.managers, ", ")
		}
		notes = append(notes, fmt.Sprintf("node group %s: node_count %d -> %d, following its machine deployment's replicas (set by %s)",
			ng.Name, ng.NodeCount, o.replicas, by))
	}
	return all, moved, notes
}

// withMoved adds to a decision the node groups followAutoscaler changed
// that the decision did not change further.
func withMoved(d *Decision, moved []*model.NodeGroup) {
	for _, m := range moved {
		found := false
		for _, g := range d.NodeGroups {
			found = found || g.UUID == m.UUID
		}
		if !found {
			d.NodeGroups = append(d.NodeGroups, m)
		}
		d.Changed = true
	}
}

// replicasManager names the field manager that last set an object's
// spec.replicas ("cluster-autoscaler" when the autoscaler scaled it), from
// its managed fields.
func replicasManager(obj map[string]any) string {
	entries, _ := nested(obj, "metadata", "managedFields").([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if _, ok := nested(m, "fieldsV1", "f:spec", "f:replicas").(map[string]any); ok {
			manager, _ := m["manager"].(string)
			return manager
		}
	}
	return ""
}

// describeManager says who a field manager is, for events.
func describeManager(m string) string {
	switch m {
	case "capi-topology":
		return "Cluster API, which starts a new autoscaled machine deployment at its min_node_count"
	case mgmt.FieldManager:
		return "Magnetite, for a resize"
	}
	return m
}
