package conductor

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Clusters imported from Magnum whose Cluster API objects magnum-cluster-api
// (MCA) or magnum-capi-helm (MCH) made are adopted: Magnetite changes those
// objects in place, in the shape their driver gave them
// (internal/magnumimport/adopt.go checked it at import), and never renders
// its own for them.
//
//   - Taking over (OpClusterAdopt) applies only Magnetite's ownership labels:
//     on the Cluster, on the control plane's and each machine deployment's
//     machine template, so that Cluster API carries them to the machines in
//     place (it propagates machine template labels without a rollout), and
//     the watch sees every object as the cluster's. Nothing a machine is
//     made from changes, so no machine is replaced.
//   - A resize sets the replicas of the node group's machine deployment:
//     the topology's for MCA, the MachineDeployment's for MCH.
//   - An upgrade sets the new version and image as the driver would: in
//     MCA's topology, in new machine templates of MCH's release
//     (adopt_upgrade.go).
//   - A delete deletes what the driver would: MCA's Cluster (Cluster API
//     takes its dependents), MCH's Helm release as `helm uninstall` would;
//     then what either left behind (deleteAdoptedLeftovers).
const (
	driverMCA = "magnum-cluster-api"
	driverMCH = "magnum-capi-helm"
	// mcaClusterUUIDLabel is the label magnum-cluster-api v0.38.1 puts on
	// everything it makes for a cluster: its Magnum UUID
	// (magnum_cluster_api/resources.py ClusterBase.labels).
	mcaClusterUUIDLabel = "cluster-uuid"
)

// adoptedObjects are the server-side apply patches that take over an
// adopted cluster's objects, or resize them when resize is set: only the
// fields Magnetite owns from then on. clusterObj is the Cluster as the
// management cluster serves it. The owner labels of every top-level object
// are added by the management client; labels are the ones the machines
// must carry.
func adoptedObjects(a *model.ForeignCluster, clusterObj *unstructured.Unstructured, owner map[string]string, ngs []*model.NodeGroup, versions map[string]string, resize bool) ([]*unstructured.Unstructured, error) {
	meta := func(kind, name string) map[string]any {
		return map[string]any{"apiVersion": versions[kind], "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": a.Namespace}}
	}
	labelsFor := func(ng *model.NodeGroup) map[string]any {
		l := map[string]any{}
		for k, v := range owner {
			l[k] = v
		}
		if ng != nil {
			l[LabelNodeGroupUUID] = ng.UUID
		}
		return l
	}
	var cp *model.NodeGroup
	for _, ng := range ngs {
		if ng.Role == model.RoleMaster {
			cp = ng
		}
	}
	switch a.Driver {
	case driverMCA:
		topo, _, _ := unstructured.NestedMap(clusterObj.Object, "spec", "topology")
		present, _, _ := unstructured.NestedSlice(topo, "workers", "machineDeployments")
		entries := map[string]map[string]any{}
		var first map[string]any
		for _, md := range present {
			if m, ok := md.(map[string]any); ok {
				entries[fmt.Sprint(m["name"])] = m
				if first == nil {
					first = m
				}
			}
		}
		var mds []any
		for _, ng := range ngs {
			if ng.Role == model.RoleMaster {
				continue
			}
			name := a.MachineDeploymentOf(ng)
			md := map[string]any{"name": name, "metadata": map[string]any{"labels": labelsFor(ng)}}
			live, exists := entries[name]
			_, imported := a.NodeGroups[ng.UUID]
			switch {
			case !exists:
				if first == nil {
					return nil, permanentf("the Cluster's topology has no machine deployment to make node group %s like", ng.Name)
				}
				mcaNewMachineDeployment(md, ng, first)
			case !imported:
				// Magnetite made this entry whole: it is applied whole
				// again, or server-side apply would remove the fields
				// (class, variables) this apply left out.
				for k, v := range live {
					if k != "metadata" && k != "replicas" {
						md[k] = runtime.DeepCopyJSONValue(v)
					}
				}
				md["replicas"] = int64(ng.NodeCount)
			case resize:
				if _, has := live["replicas"]; !has {
					return nil, permanentf("node group %s is autoscaled by magnum-cluster-api's autoscaler (its machine deployment has no replicas): Magnetite does not set its size", ng.Name)
				}
				md["replicas"] = int64(ng.NodeCount)
			}
			mds = append(mds, md)
		}
		controlPlane := map[string]any{"metadata": map[string]any{"labels": labelsFor(cp)}}
		c := meta("Cluster", a.Name)
		c["spec"] = map[string]any{"topology": map[string]any{"controlPlane": controlPlane, "workers": map[string]any{"machineDeployments": mds}}}
		return []*unstructured.Unstructured{{Object: c}}, nil
	case driverMCH:
		out := []*unstructured.Unstructured{{Object: meta("Cluster", a.Name)}}
		kcp := meta("KubeadmControlPlane", a.ControlPlane)
		kcp["spec"] = map[string]any{"machineTemplate": map[string]any{"metadata": map[string]any{"labels": labelsFor(cp)}}}
		if cp != nil {
			kcp["metadata"].(map[string]any)["labels"] = map[string]any{LabelNodeGroupUUID: cp.UUID}
		}
		out = append(out, &unstructured.Unstructured{Object: kcp})
		for _, ng := range ngs {
			if _, imported := a.NodeGroups[ng.UUID]; ng.Role == model.RoleMaster || !imported {
				// A MachineDeployment Magnetite made whole (an added node
				// group's) is scaled instead (scaleMadeMachineDeployments):
				// applying only its replicas and labels would remove the
				// rest of what Magnetite's apply made.
				continue
			}
			md := meta("MachineDeployment", a.MachineDeploymentOf(ng))
			md["metadata"].(map[string]any)["labels"] = map[string]any{LabelNodeGroupUUID: ng.UUID}
			spec := map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": labelsFor(ng)}}}
			if resize {
				spec["replicas"] = int64(ng.NodeCount)
			}
			md["spec"] = spec
			out = append(out, &unstructured.Unstructured{Object: md})
		}
		return out, nil
	}
	return nil, permanentf("Magnetite does not know the shape of %s's objects", a.Driver)
}

// mcaNewMachineDeployment makes md, a node group's machine deployment that
// the topology does not have yet, as magnum-cluster-api makes a new one
// (mutate_machine_deployment in magnum_cluster_api/resources.py, v0.38.1):
// its class, its node-role and node group labels, its size, and the
// variable overrides of like, the topology's first machine deployment,
// with the node group's flavor. like's server group is not taken: that is
// the other node group's own.
func mcaNewMachineDeployment(md map[string]any, ng *model.NodeGroup, like map[string]any) {
	md["class"] = like["class"]
	md["replicas"] = int64(ng.NodeCount)
	labels := md["metadata"].(map[string]any)["labels"].(map[string]any)
	labels["node-role.kubernetes.io/"+ng.Role] = ""
	labels["node.cluster.x-k8s.io/nodegroup"] = ng.Name
	overrides, _, _ := unstructured.NestedSlice(like, "variables", "overrides")
	var out []any
	for _, o := range overrides {
		v, ok := o.(map[string]any)
		if !ok || v["name"] == "serverGroupId" {
			continue
		}
		v = maps.Clone(v)
		if v["name"] == "flavor" && ng.FlavorID != nil && *ng.FlavorID != "" {
			v["value"] = *ng.FlavorID
		}
		out = append(out, v)
	}
	if len(out) > 0 {
		md["variables"] = map[string]any{"overrides": out}
	}
}

// removeAdoptedNodeGroup takes a deleted node group's machine deployment
// out of a magnum-cluster-api Cluster's topology, so that Cluster API
// deletes it and its machines. The entry is another writer's, so it is
// removed by position, with a test that the position still holds it.
func (c *Conductor) removeAdoptedNodeGroup(ctx context.Context, a *model.ForeignCluster, cl *unstructured.Unstructured, ng *model.NodeGroup) error {
	name := a.MachineDeploymentOf(ng)
	mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
	for i, md := range mds {
		if m, ok := md.(map[string]any); ok && m["name"] == name {
			path := fmt.Sprintf("/spec/topology/workers/machineDeployments/%d", i)
			patch, _ := json.Marshal([]map[string]any{{"op": "test", "path": path + "/name", "value": name}, {"op": "remove", "path": path}})
			return c.mc.JSONPatch(ctx, "Cluster", a.Namespace, a.Name, patch)
		}
	}
	return nil
}

// applyAdopted takes over an adopted cluster's objects, or resizes them.
func (c *Conductor) applyAdopted(ctx context.Context, sc *scope, a *model.ForeignCluster, op *model.Operation) (Result, error) {
	switch op.Type {
	case model.OpClusterAdopt, model.OpClusterResize, model.OpClusterUpdate, model.OpClusterUpgrade, model.OpCredentialRotate, model.OpClusterRebase:
	case model.OpNodeGroupCreate, model.OpNodeGroupDelete:
	default:
		return Done, permanentf("cluster %s was adopted from %s: Magnetite resizes, upgrades and deletes it, and does not %s it", sc.cluster.Name, a.Driver, op.Type)
	}
	cl, err := c.mc.Get(ctx, "Cluster", a.Namespace, a.Name)
	if err != nil {
		return Done, fmt.Errorf("read the adopted Cluster %s/%s: %w", a.Namespace, a.Name, err)
	}
	versions, err := c.mc.APIVersions(ctx)
	if err != nil {
		return Done, err
	}
	switch op.Type {
	case model.OpClusterRebase:
		return c.rebaseAdopted(ctx, sc, op, a, cl)
	case model.OpClusterUpgrade:
		return Done, c.upgradeAdopted(ctx, sc, a, cl)
	case model.OpCredentialRotate:
		return Done, c.rotateAdoptedCredential(ctx, sc, a, cl)
	}
	if op.Type == model.OpNodeGroupDelete {
		ng, err := c.st.GetNodeGroup(ctx, sc.cluster.UUID, op.NodeGroupID)
		if err != nil {
			return Done, err
		}
		if a.Driver == driverMCH {
			if err := c.removeMCHNodeGroup(ctx, a, ng); err != nil {
				return Done, err
			}
			c.event(ctx, sc.cluster.UUID, model.EventOperation, "", string(op.Type),
				fmt.Sprintf("deleted node group %s's MachineDeployment %s/%s", ng.Name, a.Namespace, a.MachineDeploymentOf(ng)))
			return Done, nil
		}
		if err := c.removeAdoptedNodeGroup(ctx, a, cl, ng); err != nil {
			return Done, classifyApplyError(err)
		}
		c.event(ctx, sc.cluster.UUID, model.EventOperation, "", string(op.Type),
			fmt.Sprintf("took node group %s's machine deployment out of %s's topology (Cluster %s/%s)", ng.Name, a.Driver, a.Namespace, a.Name))
		return Done, nil
	}
	if op.Type == model.OpNodeGroupCreate && a.Driver == driverMCH {
		ng, err := c.st.GetNodeGroup(ctx, sc.cluster.UUID, op.NodeGroupID)
		if err != nil {
			return Done, err
		}
		if err := c.addMCHNodeGroup(ctx, sc, a, ng); err != nil {
			return Done, err
		}
	}
	resize := op.Type != model.OpClusterAdopt
	if resize {
		if err := c.markMachinesForRemoval(ctx, sc, op); err != nil {
			return Done, err
		}
	}
	objs, err := adoptedObjects(a, cl, sc.owner.Labels(), sc.nodeGroups, versions, resize)
	if err != nil {
		return Done, err
	}
	applied := cl
	for _, o := range objs {
		out, err := c.mc.Apply(ctx, sc.owner, o)
		if err != nil {
			return Done, classifyApplyError(err)
		}
		if o.GetKind() == "Cluster" {
			applied = out
		}
	}
	if resize && a.Driver == driverMCH {
		if err := c.scaleMadeMachineDeployments(ctx, a, sc.nodeGroups); err != nil {
			return Done, err
		}
	}
	if err := c.recordAppliedGeneration(ctx, sc.cluster.UUID, applied.GetGeneration(), sc.cluster.Generation); err != nil {
		return Done, err
	}
	what := "took over"
	if resize {
		what = "resized"
	}
	c.event(ctx, sc.cluster.UUID, model.EventOperation, "", string(op.Type),
		fmt.Sprintf("%s %s's Cluster API objects (Cluster %s/%s) in place: %d objects applied", what, a.Driver, a.Namespace, a.Name, len(objs)))
	return Done, nil
}

// scaleMadeMachineDeployments sets the size of the MachineDeployments
// Magnetite made for node groups added to an adopted magnum-capi-helm
// cluster, through their scale subresource.
func (c *Conductor) scaleMadeMachineDeployments(ctx context.Context, a *model.ForeignCluster, ngs []*model.NodeGroup) error {
	for _, ng := range ngs {
		if _, imported := a.NodeGroups[ng.UUID]; ng.Role == model.RoleMaster || imported {
			continue
		}
		if err := c.mc.Scale(ctx, "MachineDeployment", a.Namespace, a.MachineDeploymentOf(ng), ng.NodeCount); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// askToDeleteAdopted asks for an adopted cluster to be taken apart the way
// its driver does: MCA deletes the Cluster; MCH uninstalls its Helm
// release, deleting every object of it but those the chart marks to keep
// (which the Cluster's deletion needs: its cloud credentials, its
// infrastructure and templates).
func (c *Conductor) askToDeleteAdopted(ctx context.Context, a *model.ForeignCluster) (bool, error) {
	if a.Driver != driverMCH {
		return c.mc.Delete(ctx, "Cluster", a.Namespace, a.Name)
	}
	objs, err := c.mc.HelmReleaseObjects(ctx, a.Namespace, a.HelmRelease)
	if err != nil {
		return false, err
	}
	asked := false
	for _, o := range objs {
		if o.Keep {
			continue
		}
		deleted, err := c.mc.DeleteObject(ctx, o.APIVersion, o.Kind, o.Namespace, o.Name)
		if err != nil {
			return false, err
		}
		asked = asked || deleted
	}
	return asked, nil
}

// deleteAdoptedLeftovers deletes, once the Cluster and its machines are
// gone, what the driver made besides them: the application credential it
// made in Keystone (deleteForeignCredentialOf); for MCH the objects its chart
// kept, the machine templates of upgrades and the release's records; for
// MCA the objects labelled with the
// cluster's UUID (its cloud-config and cloud-provider Secrets, its
// ClusterResourceSets).
func (c *Conductor) deleteAdoptedLeftovers(ctx context.Context, cl *model.Cluster, a *model.ForeignCluster) error {
	if err := c.deleteForeignCredentialOf(ctx, cl, a); err != nil {
		return err
	}
	if a.Driver == driverMCH {
		objs, err := c.mc.HelmReleaseObjects(ctx, a.Namespace, a.HelmRelease)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		for _, o := range objs {
			if _, err := c.mc.DeleteObject(ctx, o.APIVersion, o.Kind, o.Namespace, o.Name); err != nil {
				return err
			}
		}
		// The templates upgrades and added node groups made are
		// Magnetite's.
		if err := c.deleteMadeTemplates(ctx, a, mgmt.LabelClusterUUID+"="+cl.UUID); err != nil {
			return err
		}
		_, err = c.mc.DeleteHelmRelease(ctx, a.Namespace, a.HelmRelease)
		return err
	}
	return c.deleteLabelled(ctx, a.Namespace, mcaClusterUUIDLabel+"="+cl.UUID, c.mc.Kinds().Cleanup()...)
}

// deleteLabelled deletes the objects of kinds in namespace that selector
// selects; a kind the management cluster does not serve has none.
func (c *Conductor) deleteLabelled(ctx context.Context, namespace, selector string, kinds ...string) error {
	for _, kind := range kinds {
		if _, err := c.mc.Resource(ctx, kind); err != nil {
			continue
		}
		objs, err := c.mc.ListMetadata(ctx, kind, namespace, selector)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if _, err := c.mc.Delete(ctx, kind, namespace, o.GetName()); err != nil {
				return fmt.Errorf("clean up %s %s: %w", kind, o.GetName(), err)
			}
		}
	}
	return nil
}

// remainingAdopted is what of an adopted cluster its delete waits for: its
// Cluster and Machines, read from the management cluster rather than the
// watch, since a cluster deleted before its take-over ran carries none of
// the labels the watch selects by.
func (c *Conductor) remainingAdopted(ctx context.Context, a *model.ForeignCluster) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	cl, err := c.mc.Get(ctx, "Cluster", a.Namespace, a.Name)
	switch {
	case err == nil:
		out = append(out, cl)
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	machines, err := c.mc.List(ctx, "Machine", a.Namespace, labelClusterName+"="+a.Name)
	if err != nil {
		return nil, err
	}
	for i := range machines {
		out = append(out, &machines[i])
	}
	return out, nil
}
