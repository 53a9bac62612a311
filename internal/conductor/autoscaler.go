package conductor

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Annotations by which Cluster API's autoscaler provider recognises a
// machine deployment it sizes.
const (
	annotationAutoscalerMin = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
	annotationAutoscalerMax = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
)

// reconcileAutoscaler runs after a cluster's desired state was applied:
// the autoscaler's objects were among them when autoscaling is on (and
// pruned with everything else the desired state no longer has when it is
// off). A resize of an autoscaled node group then sets its size once, as
// the autoscaler would, and a create starts its autoscaled node groups at
// their node counts.
func (c *Conductor) reconcileAutoscaler(ctx context.Context, sc *scope, res *driver.Result, op *model.Operation) (Result, error) {
	rendered := false
	for _, o := range res.Objects {
		if o.GetLabels()[driver.LabelComponent] == driver.ComponentAutoscaler {
			rendered = true
			break
		}
	}
	switch op.Type {
	case model.OpClusterResize, model.OpClusterUpdate:
		var n int
		switch p := op.Payload.(type) {
		case *model.ClusterResizePayload:
			n = p.NodeCount
		case *model.ClusterUpdatePayload:
			n = p.NodeCount
		default:
			return Done, nil
		}
		target := op.NodeGroupID
		if target == "" {
			// A PATCH of the cluster's node_count sizes default-worker.
			for _, ng := range sc.nodeGroups {
				if ng.IsDefault && ng.Role != model.RoleMaster {
					target = ng.UUID
				}
			}
		}
		return Done, c.scaleAutoscaled(ctx, sc, op, target, n)
	case model.OpClusterCreate, model.OpNodeGroupCreate:
		if rendered {
			return c.startAutoscaledGroups(ctx, sc, op), nil
		}
	}
	return Done, nil
}

// createdGroupWait bounds how long a create waits for Cluster API to make
// the machine deployments of its autoscaled node groups, and
// createdGroupRecheck how long it waits before it looks again without
// having seen a change.
const (
	createdGroupWait    = 2 * time.Minute
	createdGroupRecheck = 10 * time.Second
)

// startAutoscaledGroups gives the new autoscaled node groups of a create
// the node_count asked for: Cluster API starts a new autoscaled machine
// deployment at its minimum size. Until the machine deployments exist the
// create waits (requeued, never holding a worker), for at most
// createdGroupWait from when it was queued; one that does not appear in
// time starts at its minimum, which node_count then reports.
func (c *Conductor) startAutoscaledGroups(ctx context.Context, sc *scope, op *model.Operation) Result {
	var missing []string
	for _, ng := range sc.nodeGroups {
		if ng.Role == model.RoleMaster || ng.NodeCount <= ng.MinNodeCount ||
			(op.Type == model.OpNodeGroupCreate && ng.UUID != op.NodeGroupID) {
			continue
		}
		md, err := c.machineDeploymentOf(sc.cluster.UUID, ng.UUID)
		if err == nil && md == nil {
			if c.now().Sub(op.CreatedAt) < createdGroupWait {
				missing = append(missing, ng.Name)
				continue
			}
			err = fmt.Errorf("no machine deployment %s after it was asked for", createdGroupWait)
		}
		if err != nil {
			c.log.Info("autoscaled node group starts at its minimum size: its machine deployment did not appear in time",
				"cluster", sc.cluster.UUID, "nodegroup", ng.Name, "error", err)
			continue
		}
		if err := c.scaleAutoscaled(ctx, sc, op, ng.UUID, ng.NodeCount); err != nil {
			c.log.Warn("start autoscaled node group at its node count", "cluster", sc.cluster.UUID, "nodegroup", ng.Name, "error", err)
		}
	}
	if len(missing) > 0 {
		return waitingFor(createdGroupRecheck, "Waiting for Cluster API to make the machine deployments of the autoscaled node groups %s, to start them at their node counts",
			strings.Join(missing, ", "))
	}
	return Done
}

// machineDeploymentOf returns the machine deployment of a node group from
// the watch cache, or nil.
func (c *Conductor) machineDeploymentOf(clusterUUID, nodeGroupUUID string) (*unstructured.Unstructured, error) {
	if c.watch == nil {
		return nil, nil
	}
	mds, err := c.watch.Objects("MachineDeployment", clusterUUID)
	if err != nil {
		return nil, err
	}
	for _, md := range mds {
		if md.GetLabels()[LabelNodeGroupUUID] == nodeGroupUUID {
			return md, nil
		}
	}
	return nil, nil
}

// removeAutoscaler deletes a cluster's autoscaler objects, the Deployment
// first, and reports how many there were.
func (c *Conductor) removeAutoscaler(ctx context.Context, namespace, clusterUUID string) (int, error) {
	selector := mgmt.ClusterSelector(clusterUUID) + "," + driver.LabelComponent + "=" + driver.ComponentAutoscaler
	// What the next reconcile applies must not be taken for present.
	c.memo.forget(clusterUUID)
	removed := 0
	for _, kind := range driver.AutoscalerKinds {
		objs, err := c.mc.ListMetadata(ctx, kind, namespace, selector)
		if apierrors.IsForbidden(err) {
			// An account that may not list them never made them either:
			// clusters without autoscaling need no such right.
			c.log.Warn("cannot look for a cluster autoscaler to remove", "kind", kind, "namespace", namespace, "error", err)
			continue
		}
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

// scaleAutoscaled sets the replicas of a node group's machine deployment
// when the autoscaler sizes it: the topology leaves its replicas alone, so
// a resize (or the size a create asked for) is carried out the way the
// autoscaler scales, through the scale subresource, and the autoscaler goes
// on from the new size within the same bounds.
func (c *Conductor) scaleAutoscaled(ctx context.Context, sc *scope, op *model.Operation, nodeGroupUUID string, n int) error {
	md, err := c.machineDeploymentOf(sc.cluster.UUID, nodeGroupUUID)
	if err != nil || md == nil || !autoscaled(md.GetAnnotations()) {
		return err
	}
	if cur, _ := nestedInt(md.Object, "spec", "replicas"); cur == n {
		return nil
	}
	if err := c.mc.Scale(ctx, "MachineDeployment", md.GetNamespace(), md.GetName(), n); err != nil {
		return classifyApplyError(err)
	}
	name := md.GetName()
	for _, ng := range sc.nodeGroups {
		if ng.UUID == nodeGroupUUID {
			name = ng.Name
		}
	}
	c.event(ctx, sc.cluster.UUID, model.EventOperation, "", string(op.Type),
		fmt.Sprintf("node group %s scaled to %d nodes; the cluster autoscaler keeps sizing it between %s and %s",
			name, n, md.GetAnnotations()[annotationAutoscalerMin], md.GetAnnotations()[annotationAutoscalerMax]))
	return nil
}

func autoscaled(annotations map[string]string) bool {
	_, hasMin := annotations[annotationAutoscalerMin]
	_, hasMax := annotations[annotationAutoscalerMax]
	return hasMin && hasMax
}

// followAutoscaler makes the node_count of every autoscaled node group the
// replicas of its machine deployments, which the autoscaler sets (and
// Cluster API, to min_node_count, for a new one): Magnetite
// reports the autoscaler's size and never writes its own over it. It
// returns the node groups as they should be, those it changed, and what to
// record as events.
func followAutoscaler(ngs []*model.NodeGroup, obs Observed) (all, moved []*model.NodeGroup, notes []string) {
	replicas := map[string]int{}
	for _, md := range obs.MachineDeployments {
		ann, _ := nested(md, "metadata", "annotations").(map[string]any)
		_, hasMin := ann[annotationAutoscalerMin]
		_, hasMax := ann[annotationAutoscalerMax]
		id := labelsOf(md)[LabelNodeGroupUUID]
		r, ok := nestedInt(md, "spec", "replicas")
		if !hasMin || !hasMax || id == "" || !ok || nestedString(md, "metadata", "deletionTimestamp") != "" {
			continue
		}
		replicas[id] += r
	}
	all = make([]*model.NodeGroup, len(ngs))
	for i, ng := range ngs {
		all[i] = ng
		n, ok := replicas[ng.UUID]
		if !ok || ng.Role == model.RoleMaster || ng.Status == model.DeleteInProgress || ng.NodeCount == n {
			continue
		}
		g := *ng
		g.NodeCount = n
		all[i] = &g
		moved = append(moved, &g)
		notes = append(notes, fmt.Sprintf("node group %s: node_count %d -> %d, following the replicas of its machine deployment, which the cluster autoscaler sizes",
			ng.Name, ng.NodeCount, n))
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
