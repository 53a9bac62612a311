package conductor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// deleteRecheck is how long a delete waiting on Cluster API waits before
// it looks again without having seen a change (a watch that restarted may
// have missed one); every change of the cluster's objects wakes it sooner.
const deleteRecheck = 30 * time.Second

// deleteCluster takes a cluster apart one step per attempt and never waits
// in a worker: it asks Cluster API to delete the Cluster, and while the
// Cluster or any of its machines remains it returns a waiting result that
// names them and what keeps them. Once they are gone it cleans up
// everything else Magnetite created for the cluster and removes the row: a
// later GET is a 404, as clients expect. Every step is idempotent, so an
// attempt cut short (a SIGKILL, a lost lease) is simply taken again.
func (c *Conductor) deleteCluster(ctx context.Context, op *model.Operation) (Result, error) {
	cl, err := c.st.GetClusterByUUID(ctx, op.ClusterID)
	if errors.Is(err, store.ErrNotFound) {
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	ns := c.mc.NamespaceName(cl.ProjectID)
	name := clusterObjectName(cl)
	adopted := cl.Adopted()
	if adopted != nil {
		ns, name = adopted.Namespace, adopted.Name
	}
	rebased := cl.Rebased()
	if rebased != nil {
		ns = rebased.Namespace
	}
	// The cluster's objects go: nothing applied of it is to be trusted.
	c.memo.forget(cl.UUID)
	c.serverLooks.Delete(cl.UUID)
	// Once Cluster API is taking the Cluster apart (Cluster API keeps it,
	// being deleted, until its machines are gone), an attempt woken by a
	// change only looks at what remains.
	if !c.deletionAsked(cl.UUID) {
		// Nothing may scale the cluster while Cluster API takes it apart.
		if _, err := c.removeAutoscaler(ctx, ns, cl.UUID); err != nil {
			return Done, err
		}
		var deleted bool
		if adopted != nil {
			deleted, err = c.askToDeleteAdopted(ctx, adopted)
		} else {
			deleted, err = c.mc.Delete(ctx, "Cluster", ns, name)
		}
		if err != nil {
			return Done, err
		}
		if deleted {
			c.event(ctx, cl.UUID, model.EventOperation, "", string(op.Type), "asked Cluster API to delete the cluster")
		}
	}
	remaining := func() ([]*unstructured.Unstructured, error) { return c.remaining(cl.UUID, "Cluster", "Machine") }
	if adopted != nil {
		remaining = func() ([]*unstructured.Unstructured, error) { return c.remainingAdopted(ctx, adopted) }
	}
	if holding, err := remaining(); err != nil || len(holding) > 0 {
		if err == nil && len(holding) == 1 && holding[0].GetKind() == "Cluster" {
			// The machines are gone: what holds the Cluster is its
			// infrastructure.
			if res, err := c.releaseAPILoadBalancer(ctx, cl, ns, name); err != nil || !res.IsDone() {
				return res, err
			}
		}
		return waitingFor(deleteRecheck, "Deleting: waiting for Cluster API to remove %s", describeHolding(holding)), err
	}
	if res, err := c.cleanWorkloadLeftovers(ctx, cl); err != nil || !res.IsDone() {
		return res, err
	}
	if err := c.cleanup(ctx, cl, ns); err != nil {
		return Done, err
	}
	if adopted != nil {
		if err := c.deleteAdoptedLeftovers(ctx, cl, adopted); err != nil {
			return Done, err
		}
	}
	if rebased != nil {
		// What the driver made beside the Cluster: the Secrets and
		// ClusterResourceSets of the addons the cluster kept.
		if err := c.deleteAdoptedLeftovers(ctx, cl, rebased); err != nil {
			return Done, err
		}
	}
	ngs, err := c.st.NodeGroupsOf(ctx, []string{cl.UUID})
	if err != nil {
		return Done, err
	}
	if err := c.deleteServerGroups(ctx, cl, ngs[cl.UUID]); err != nil {
		return Done, err
	}
	// Nothing uses the cluster's application credentials any more.
	if err := c.deleteCredentials(ctx, cl, true); err != nil {
		return Done, err
	}
	if err := c.st.DeleteCluster(ctx, cl.UUID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return Done, err
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
	return Done, nil
}

// releaseAPILoadBalancer deletes, as the cluster, the API load balancer
// released CAPO cannot delete on a cloud without Neutron's L3 extension
// (cloud.Resources.ReleaseAPILoadBalancer), once the cluster's machines are
// gone and only its infrastructure holds the Cluster. While Octavia
// deletes it the delete waits, saying why; on other clouds it does
// nothing.
func (c *Conductor) releaseAPILoadBalancer(ctx context.Context, cl *model.Cluster, ns, name string) (Result, error) {
	rel, ok := c.opts.Facts.(APILoadBalancerRelease)
	if !ok {
		return Done, nil
	}
	if creds, err := c.st.ClusterCredentials(ctx, cl.UUID); err != nil || len(creds) == 0 || creds[0].Retired {
		return Done, err
	}
	// CAPO's name for it (getLoadBalancerName of the cluster's resource
	// name, namespace-name: pkg/cloud/services/loadbalancer/loadbalancer.go
	// and pkg/utils/names, v0.14.7).
	lb := "k8s-clusterapi-cluster-" + ns + "-" + name + "-kubeapi"
	res, err := rel.ReleaseAPILoadBalancer(ctx, cl, lb)
	if err != nil {
		return Done, fmt.Errorf("delete the API load balancer CAPO cannot delete on a cloud without Neutron's L3 extension: %w", err)
	}
	if len(res.Deleted) > 0 {
		c.event(ctx, cl.UUID, model.EventOperation, "", "delete",
			"deleting the API load balancer "+lb+": the cloud's Neutron has no L3 extension, and CAPO deletes a load balancer only after listing its floating IPs, which Neutron answers with 404")
	}
	if len(res.Refused) > 0 {
		return Done, permanentf("the cloud refused to delete the cluster's API load balancer: %s", joinStrings(res.Refused))
	}
	if len(res.Remaining) > 0 {
		return waitingFor(leftoverRecheck, "Deleting the API load balancer that CAPO cannot delete on a cloud without Neutron's L3 extension: %s", joinStrings(res.Remaining)), nil
	}
	return Done, nil
}

// deletionAsked reports whether the watch already shows the cluster's
// Cluster object being deleted, so that an attempt taken again does not
// record the request twice.
func (c *Conductor) deletionAsked(clusterUUID string) bool {
	objs, err := c.watch.Objects("Cluster", clusterUUID)
	return err == nil && len(objs) > 0 && objs[0].GetDeletionTimestamp() != nil
}

// remaining returns the cluster's objects of the kinds that still exist,
// as the watch shows them.
func (c *Conductor) remaining(clusterUUID string, kinds ...string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, k := range kinds {
		objs, err := c.watch.Objects(k, clusterUUID)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// maxHoldingShown bounds how many remaining objects status_reason names.
const maxHoldingShown = 5

// describeHolding says which objects a delete waits for and what keeps
// each: not yet asked to go, the finalizers on it, and Cluster API's
// Deleting condition (v1beta2) or the first failed deletion step
// (v1beta1's DrainingSucceeded, VolumeDetachSucceeded). Machines come
// first: they are what the Cluster waits for.
func describeHolding(objs []*unstructured.Unstructured) string {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		if ak, bk := a.GetKind() == "Machine", b.GetKind() == "Machine"; ak != bk {
			if ak {
				return -1
			}
			return 1
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	machines := 0
	for _, o := range objs {
		if o.GetKind() == "Machine" {
			machines++
		}
	}
	var parts []string
	for i, o := range objs {
		if i == maxHoldingShown {
			parts = append(parts, fmt.Sprintf("and %d more", len(objs)-i))
			break
		}
		parts = append(parts, strings.ToLower(o.GetKind())+" "+o.GetName()+" ("+holdingReason(o)+")")
	}
	what := strings.Join(parts, "; ")
	if machines > 0 {
		what = plural(machines, "machine") + ": " + what
	}
	return what
}

func holdingReason(o *unstructured.Unstructured) string {
	if o.GetDeletionTimestamp() == nil {
		return "not yet being deleted"
	}
	var why []string
	if fs := o.GetFinalizers(); len(fs) > 0 {
		why = append(why, "finalizers "+strings.Join(fs, ", "))
	}
	if cond, ok := findCondition(o.Object, "Deleting"); ok && cond.Status == "True" {
		why = append(why, cond.String())
	} else if cond, ok := falseCondition(o.Object, "DrainingSucceeded", "VolumeDetachSucceeded"); ok {
		why = append(why, cond.String())
	}
	if len(why) == 0 {
		return "being deleted"
	}
	return strings.Join(why, "; ")
}

// cleanup deletes what Magnetite created for the cluster besides the
// Cluster (whose dependents Cluster API removes): the objects of the kinds
// the management client's table marks for cleanup (Secrets, addon
// ConfigMaps, the ClusterResourceSet, the autoscaler's objects, and the
// infrastructures' per-cluster objects such as Metal3's IP pool and data
// templates).
func (c *Conductor) cleanup(ctx context.Context, cl *model.Cluster, ns string) error {
	for _, kind := range c.mc.Kinds().Cleanup() {
		if _, err := c.mc.Resource(ctx, kind); err != nil {
			continue // not served here (e.g. no addons API): nothing to clean
		}
		objs, err := c.mc.ListMetadata(ctx, kind, ns, mgmt.ClusterSelector(cl.UUID))
		if apierrors.IsForbidden(err) {
			// An account that may not list them never made them either.
			c.log.Warn("cannot look for objects to clean up", "kind", kind, "namespace", ns, "error", err)
			continue
		}
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

// removeNodeGroup removes a node group's row once its machine deployment
// and machines are gone; until then it waits, naming them.
func (c *Conductor) removeNodeGroup(ctx context.Context, op *model.Operation) (Result, error) {
	name := op.NodeGroupID
	if p, ok := op.Payload.(*model.NodeGroupDeletePayload); ok && p.NodeGroup != "" {
		name = p.NodeGroup
	}
	objs, err := c.remaining(op.ClusterID, "MachineDeployment", "Machine")
	if err != nil {
		return Done, err
	}
	var holding []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetLabels()[LabelNodeGroupUUID] == op.NodeGroupID {
			holding = append(holding, o)
		}
	}
	if len(holding) > 0 {
		return waitingFor(deleteRecheck, "Removing node group %s: waiting for Cluster API to remove %s", name, describeHolding(holding)), nil
	}
	if cl, err := c.st.GetClusterByUUID(ctx, op.ClusterID); err == nil {
		if a := cl.Adopted(); a != nil && a.Driver == driverMCH {
			if err := c.deleteMadeTemplates(ctx, a, LabelNodeGroupUUID+"="+op.NodeGroupID); err != nil {
				return Done, err
			}
		}
		ng, err := c.st.GetNodeGroup(ctx, op.ClusterID, op.NodeGroupID)
		if err == nil {
			if err := c.deleteServerGroups(ctx, cl, []*model.NodeGroup{ng}); err != nil {
				return Done, err
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return Done, err
		}
	}
	if err := c.st.DeleteNodeGroup(ctx, op.NodeGroupID); err != nil {
		return Done, err
	}
	c.event(ctx, op.ClusterID, model.EventOperation, "", string(op.Type), fmt.Sprintf("node group %s removed", name))
	return Done, nil
}
