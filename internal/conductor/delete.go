package conductor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// deleteCluster deletes the Cluster, waits until Cluster API has removed it
// and its machines, cleans up everything else Magnetite created for it, and
// removes the row: a later GET is a 404, as clients expect.
func (c *Conductor) deleteCluster(ctx context.Context, op *model.Operation) error {
	cl, err := c.st.GetClusterByUUID(ctx, op.ClusterID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	ns := c.mc.NamespaceName(cl.ProjectID)
	name := clusterObjectName(cl)
	// Nothing may scale the cluster while Cluster API takes it apart.
	if _, err := c.removeAutoscaler(ctx, ns, cl.UUID); err != nil {
		return err
	}
	if _, err := c.mc.Delete(ctx, "Cluster", ns, name); err != nil {
		return err
	}
	c.event(ctx, cl.UUID, model.EventOperation, "", string(op.Type), "asked Cluster API to delete the cluster")
	if err := c.waitGone(ctx, cl.UUID, []string{"Cluster", "Machine"}); err != nil {
		return err
	}
	if err := c.cleanWorkloadLeftovers(ctx, cl); err != nil {
		return err
	}
	if err := c.cleanup(ctx, cl, ns); err != nil {
		return err
	}
	ngs, err := c.st.NodeGroupsOf(ctx, []string{cl.UUID})
	if err != nil {
		return err
	}
	if err := c.deleteServerGroups(ctx, cl, ngs[cl.UUID]); err != nil {
		return err
	}
	// Nothing uses the cluster's application credentials any more.
	if err := c.deleteCredentials(ctx, cl, true); err != nil {
		return err
	}
	if err := c.st.DeleteCluster(ctx, cl.UUID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if !c.opts.KeepNamespaces {
		_, kept, err := c.mc.ReleaseNamespace(ctx, cl.ProjectID)
		switch {
		case err != nil:
			c.log.Warn("release project namespace", "namespace", ns, "error", err)
		case len(kept) > 0:
			c.log.Info("project namespace kept: it holds objects Magnetite did not create", "namespace", ns, "objects", strings.Join(kept, ", "))
		}
	}
	c.log.Info("cluster deleted", "cluster", cl.UUID, "name", cl.Name)
	return nil
}

// waitGone waits until no object of the kinds belongs to the cluster.
func (c *Conductor) waitGone(ctx context.Context, clusterUUID string, kinds []string) error {
	return c.waitUntil(ctx, clusterUUID, func() (bool, error) {
		for _, k := range kinds {
			objs, err := c.watch.Objects(k, clusterUUID)
			if err != nil || len(objs) > 0 {
				return false, err
			}
		}
		return true, nil
	})
}

// waitUntil re-checks done at every change of the cluster's objects (the
// watch wakes it) until it holds.
func (c *Conductor) waitUntil(ctx context.Context, clusterUUID string, done func() (bool, error)) error {
	for {
		changed := c.changed(clusterUUID)
		ok, err := done()
		if err != nil || ok {
			return err
		}
		// A slow safety net in case an event was missed while a watch
		// restarted; events normally wake us long before.
		t := time.NewTimer(30 * time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// cleanup deletes what Magnetite created for the cluster besides the
// Cluster (whose dependents Cluster API removes): the objects of the kinds
// the management client's table marks for cleanup (Secrets, addon
// ConfigMaps, the ClusterResourceSet, and the infrastructures' per-cluster
// objects such as Metal3's IP pool and data templates).
func (c *Conductor) cleanup(ctx context.Context, cl *model.Cluster, ns string) error {
	for _, kind := range c.mc.Kinds().Cleanup() {
		if _, err := c.mc.Resource(ctx, kind); err != nil {
			continue // not served here (e.g. no addons API): nothing to clean
		}
		objs, err := c.mc.List(ctx, kind, ns, mgmt.ClusterSelector(cl.UUID))
		if err != nil {
			return err
		}
		for _, o := range objs {
			if _, err := c.mc.Delete(ctx, kind, ns, o.GetName()); err != nil {
				return fmt.Errorf("clean up %s %s: %w", kind, o.GetName(), err)
			}
		}
	}
	return nil
}

// removeNodeGroup waits until the node group's machines are gone, then
// removes its row.
func (c *Conductor) removeNodeGroup(ctx context.Context, op *model.Operation) error {
	err := c.waitUntil(ctx, op.ClusterID, func() (bool, error) {
		for _, kind := range []string{"MachineDeployment", "Machine"} {
			objs, err := c.watch.Objects(kind, op.ClusterID)
			if err != nil {
				return false, err
			}
			for _, o := range objs {
				if o.GetLabels()[LabelNodeGroupUUID] == op.NodeGroupID {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if cl, err := c.st.GetClusterByUUID(ctx, op.ClusterID); err == nil {
		ng, err := c.st.GetNodeGroup(ctx, op.ClusterID, op.NodeGroupID)
		if err == nil {
			if err := c.deleteServerGroups(ctx, cl, []*model.NodeGroup{ng}); err != nil {
				return err
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	if err := c.st.DeleteNodeGroup(ctx, op.NodeGroupID); err != nil {
		return err
	}
	name := op.NodeGroupID
	if p, ok := op.Payload.(*model.NodeGroupDeletePayload); ok && p.NodeGroup != "" {
		name = p.NodeGroup
	}
	c.event(ctx, op.ClusterID, model.EventOperation, "", string(op.Type), fmt.Sprintf("node group %s removed", name))
	return nil
}
