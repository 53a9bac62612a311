package conductor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/certs"
	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// LabelNodeGroupUUID ties machine deployments, the control plane and their
// machines to the Magnetite node group they implement; the driver renders
// it into the Cluster's topology.
const LabelNodeGroupUUID = driver.LabelNodeGroupUUID

// annotationDeleteMachine is Cluster API's mark for the machines a scale
// down removes first.
const annotationDeleteMachine = "cluster.x-k8s.io/delete-machine"

// scope is what one operation loads once.
type scope struct {
	cluster    *model.Cluster
	template   *model.ClusterTemplate
	nodeGroups []*model.NodeGroup // without node groups being deleted
	namespace  string
	owner      mgmt.Owner
	// serverGroups are the cluster's Nova server group IDs by name, as
	// rendered.
	serverGroups map[string]string
}

func (c *Conductor) load(ctx context.Context, clusterUUID string) (*scope, error) {
	cl, err := c.st.GetClusterByUUID(ctx, clusterUUID)
	if err != nil {
		return nil, err
	}
	ct, err := c.st.GetClusterTemplateByUUID(ctx, cl.ClusterTemplateID)
	if err != nil {
		return nil, permanentf("cluster template %s of cluster %s is gone", cl.ClusterTemplateID, cl.Name)
	}
	all, err := c.st.NodeGroupsOf(ctx, []string{cl.UUID})
	if err != nil {
		return nil, err
	}
	sc := &scope{cluster: cl, template: ct, owner: mgmt.Owner{ClusterUUID: cl.UUID, ProjectID: cl.ProjectID}}
	for _, ng := range all[cl.UUID] {
		if ng.Status != model.DeleteInProgress {
			sc.nodeGroups = append(sc.nodeGroups, ng)
		}
	}
	sc.namespace = c.mc.NamespaceName(cl.ProjectID)
	if a := cl.Adopted(); a != nil {
		sc.namespace = a.Namespace
	} else if r := cl.Rebased(); r != nil {
		sc.namespace = r.Namespace
	}
	return sc, nil
}

// reconcile renders the cluster's desired state and applies it. Applying is
// idempotent (server-side apply), so an operation re-run after a crash
// converges instead of duplicating anything.
func (c *Conductor) reconcile(ctx context.Context, op *model.Operation) (Result, error) {
	sc, err := c.load(ctx, op.ClusterID)
	if errors.Is(err, store.ErrNotFound) {
		return Done, nil // deleted meanwhile: nothing to build
	}
	if err != nil {
		return Done, err
	}
	if sc.cluster.Status == model.DeleteInProgress {
		return Done, nil // the queued delete supersedes
	}
	if a := sc.cluster.Adopted(); a != nil {
		return c.applyAdopted(ctx, sc, a, op)
	}
	return c.apply(ctx, sc, op)
}

// apply renders and applies one cluster's desired state.
func (c *Conductor) apply(ctx context.Context, sc *scope, op *model.Operation) (Result, error) {
	res, err := c.render(ctx, sc)
	if err != nil {
		return Done, err
	}
	if _, err := c.mc.EnsureNamespace(ctx, sc.cluster.ProjectID); err != nil {
		return Done, err
	}
	secrets, err := c.desiredSecrets(ctx, sc, res.Secrets)
	if err != nil {
		return Done, err
	}
	if op.Type == model.OpClusterResize {
		if err := c.markMachinesForRemoval(ctx, sc, op); err != nil {
			return Done, err
		}
	}
	desired := append(secrets, res.Objects...)
	applied, _, err := c.applyDesired(ctx, sc, desired)
	if err != nil {
		return Done, err
	}
	if applied != nil {
		if err := c.recordAppliedGeneration(ctx, sc.cluster.UUID, applied.GetGeneration(), sc.cluster.Generation); err != nil {
			return Done, err
		}
	}
	if err := c.writeKeptAddonsCredential(ctx, sc); err != nil {
		return Done, err
	}
	// The Secrets carry the active credential now: the retired ones can go.
	if err := c.deleteCredentials(ctx, sc.cluster, false); err != nil {
		return Done, err
	}
	if err := c.approveReplacements(ctx, sc, sc.serverGroups); err != nil {
		return Done, err
	}
	wait, err := c.reconcileAutoscaler(ctx, sc, res, op)
	if err != nil || !wait.IsDone() {
		return wait, err
	}
	if len(res.Warnings) > 0 {
		c.event(ctx, sc.cluster.UUID, model.EventOperation, "", string(op.Type), "warnings: "+strings.Join(res.Warnings, "; "))
	}
	c.event(ctx, sc.cluster.UUID, model.EventOperation, "", string(op.Type),
		fmt.Sprintf("applied %d objects to the management cluster", len(desired)))
	return Done, nil
}

// render asks the template's driver for the cluster's complete desired
// state, at the API versions the management cluster serves and with the
// cluster's ownership labels on every object (and, through the Cluster's
// topology, on every machine).
func (c *Conductor) render(ctx context.Context, sc *scope) (*driver.Result, error) {
	facts, err := c.opts.Facts.Facts(ctx, sc.template, sc.cluster, sc.nodeGroups)
	if err != nil {
		return nil, fmt.Errorf("read cloud facts: %w", err)
	}
	distro := ""
	if sc.template.ClusterDistro != nil {
		distro = *sc.template.ClusterDistro
	}
	if img, ok := facts.Image(sc.template.ImageID); ok && img.OSDistro() != "" {
		distro = img.OSDistro()
	}
	drv, err := c.opts.Drivers.ForTemplate(sc.template, distro)
	if err != nil {
		return nil, permanentf("%v", err)
	}
	served, err := c.mc.APIVersions(ctx)
	if err != nil {
		return nil, err
	}
	req := driver.Request{Template: sc.template, Cluster: sc.cluster, NodeGroups: sc.nodeGroups, Facts: facts, Namespace: sc.namespace,
		APIVersions: served, Labels: sc.owner.Labels()}
	if r := sc.cluster.Rebased(); r != nil {
		req.Kept = r.Kept
	}
	res, err := drv.Render(req)
	if err != nil {
		return nil, permanentf("%v", err)
	}
	if len(res.ServerGroups) == 0 && len(res.Addons) == 0 {
		return res, nil
	}
	if len(res.ServerGroups) > 0 {
		// The machines name their server groups by ID: make the groups,
		// then render again with what Nova answered.
		ids, err := c.ensureServerGroups(ctx, sc, res.ServerGroups)
		if err != nil {
			return nil, err
		}
		withGroups := *facts
		withGroups.ServerGroups = ids
		req.Facts = &withGroups
	}
	// Rendering charts is I/O: the driver takes the result as input.
	if req.Addons, err = c.renderAddons(ctx, sc, res.Addons); err != nil {
		return nil, err
	}
	if res, err = drv.Render(req); err != nil {
		return nil, permanentf("%v", err)
	}
	return res, nil
}

// ensureServerGroups finds or makes the Nova server group of every node
// group, as the cluster, and records each group's ID on its node group so
// that it can be deleted once the group's machines are gone.
func (c *Conductor) ensureServerGroups(ctx context.Context, sc *scope, groups []driver.ServerGroup) (map[string]string, error) {
	sg, ok := c.opts.Facts.(ServerGroups)
	if !ok {
		return nil, permanentf("the cluster's machines need Nova server groups and the conductor has no cloud to make them in; configure Keystone ([auth] strategy = keystone) so clusters act in the cloud with their application credentials")
	}
	ids, err := sg.EnsureServerGroups(ctx, sc.cluster, groups)
	if errors.Is(err, cloud.ErrInvalid) {
		return nil, permanentf("%v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("make the cluster's server groups: %w", err)
	}
	byNodeGroup := map[string]string{}
	for _, g := range groups {
		byNodeGroup[g.NodeGroupUUID] = ids[g.Name]
	}
	_, err = c.st.UpdateClusterStatus(ctx, sc.cluster.UUID, func(_ *model.Cluster, ngs []*model.NodeGroup) ([]*model.NodeGroup, bool) {
		var changed []*model.NodeGroup
		for _, ng := range ngs {
			if id, ok := byNodeGroup[ng.UUID]; ok && id != ng.ServerGroupID {
				ng.ServerGroupID = id
				changed = append(changed, ng)
			}
		}
		return changed, len(changed) > 0
	})
	if err != nil {
		return nil, err
	}
	sc.serverGroups = ids
	return ids, nil
}

// deleteServerGroups deletes the server groups recorded on node groups
// whose machines are gone.
func (c *Conductor) deleteServerGroups(ctx context.Context, cl *model.Cluster, ngs []*model.NodeGroup) error {
	var ids []string
	for _, ng := range ngs {
		if ng.ServerGroupID != "" {
			ids = append(ids, ng.ServerGroupID)
		}
	}
	sg, ok := c.opts.Facts.(ServerGroups)
	if len(ids) == 0 || !ok {
		return nil
	}
	if err := sg.DeleteServerGroups(ctx, cl, ids); err != nil {
		return fmt.Errorf("delete the server groups %s: %w", strings.Join(ids, ", "), err)
	}
	return nil
}

// desiredSecrets are the Secrets the rendered objects refer to: the
// cluster's certificate authorities (generated by the API when the cluster
// was created) and the Secrets that carry its application credential.
func (c *Conductor) desiredSecrets(ctx context.Context, sc *scope, refs []driver.SecretRef) ([]*unstructured.Unstructured, error) {
	stored, err := c.st.ClusterCertificates(ctx, sc.cluster.UUID)
	if err != nil {
		return nil, err
	}
	objName := clusterObjectName(sc.cluster)
	var out []*unstructured.Unstructured
	have := map[string]bool{}
	for _, cert := range stored {
		s := certs.Secret(objName, sc.namespace, certs.KeyPair{Purpose: certs.Purpose(cert.Purpose), Cert: cert.CertPEM, Key: cert.KeyPEM})
		out = append(out, s)
		have[s.GetName()] = true
	}
	creds, err := c.credentialSecrets(ctx, sc, refs)
	if err != nil {
		return nil, err
	}
	for _, s := range creds {
		have[s.GetName()] = true
	}
	for _, ref := range refs {
		if have[ref.Name] || ref.Optional {
			continue
		}
		return nil, permanentf("the cluster needs the Secret %s (%s) and Magnetite has no source for it; configure cloud credentials for the conductor", ref.Name, ref.Purpose)
	}
	return append(out, creds...), nil
}

// clusterObjectName is the name of the cluster's objects, as the renderer
// names them.
func clusterObjectName(cl *model.Cluster) string { return driver.ClusterObjectName(cl) }

// markMachinesForRemoval marks the machines a resize names in
// nodes_to_remove, so Cluster API removes exactly those when it scales
// down. Nodes are named by machine name, node name or provider id suffix
// (the server id).
func (c *Conductor) markMachinesForRemoval(ctx context.Context, sc *scope, op *model.Operation) error {
	p, _ := op.Payload.(*model.ClusterResizePayload)
	if p == nil || len(p.NodesToRemove) == 0 {
		return nil
	}
	machines, err := c.mc.List(ctx, "Machine", sc.namespace, mgmt.ClusterSelector(sc.cluster.UUID))
	if err != nil {
		return err
	}
	for _, want := range p.NodesToRemove {
		found := false
		for i := range machines {
			m := &machines[i]
			node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
			provider, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
			if want == m.GetName() || want == node || (provider != "" && strings.HasSuffix(provider, want)) {
				found = true
				patch := &unstructured.Unstructured{}
				patch.SetAPIVersion(m.GetAPIVersion())
				patch.SetKind("Machine")
				patch.SetName(m.GetName())
				patch.SetNamespace(m.GetNamespace())
				patch.SetAnnotations(map[string]string{annotationDeleteMachine: "yes"})
				if _, err := c.mc.Apply(ctx, sc.owner, patch); err != nil {
					return classifyApplyError(err)
				}
			}
		}
		if !found {
			return permanentf("nodes_to_remove names %q, which is no machine, node or server of cluster %s", want, sc.cluster.Name)
		}
	}
	return nil
}

// recordAppliedGeneration remembers which Cluster generation carries the
// latest desired state, so status waits until Cluster API has observed it,
// and the cluster's own generation (its spec's, in the store) that this
// desired state was computed from: the cluster's observed generation. The
// observed generation never goes back: an apply of an older read, finishing
// after a newer one, does not undo what the newer one observed.
func (c *Conductor) recordAppliedGeneration(ctx context.Context, clusterUUID string, gen, specGeneration int64) error {
	_, err := c.st.UpdateClusterStatus(ctx, clusterUUID, func(cl *model.Cluster, _ []*model.NodeGroup) ([]*model.NodeGroup, bool) {
		observed := max(cl.ObservedGeneration, specGeneration)
		if cl.AppliedGeneration == gen && cl.ObservedGeneration == observed {
			return nil, false
		}
		cl.AppliedGeneration, cl.ObservedGeneration = gen, observed
		return nil, true
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
