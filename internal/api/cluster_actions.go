package api

import (
	"net/http"
	"reflect"
	"slices"
	"time"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

var resizeSchema = newSchema("cluster_resize_req",
	integer("node_count", 0, maxNodes),
	field{name: "nodes_to_remove", kind: kStringList},
	str("nodegroup", 1, 255),
)

var upgradeSchema = newSchema("cluster_upgrade_req",
	integer("max_batch_size", 1, 0),
	str("nodegroup", 1, 255),
	str("cluster_template", 1, 255),
)

// resolveNodeGroup finds the node group an action names, or default-worker.
func (s *Server) resolveNodeGroup(r *http.Request, c *model.Cluster, ident any) (*model.NodeGroup, error) {
	name, _ := ident.(string)
	if name == "" {
		ngs, err := s.st.NodeGroupsOf(r.Context(), []string{c.UUID})
		if err != nil {
			return nil, err
		}
		if ng := defaultWorker(ngs[c.UUID]); ng != nil {
			return ng, nil
		}
		return nil, conflict("Cluster %s has no default worker node group; name the nodegroup to act on.", c.Name)
	}
	return s.nodeGroupOf(r, c, name)
}

func (s *Server) resizeCluster(w http.ResponseWriter, r *http.Request) error {
	c, vals, err := s.clusterRequest(r, sinceResize, "cluster:resize", resizeSchema, "node_count")
	if err != nil {
		return err
	}
	n := vals["node_count"].(int)
	if err := requireNodeCount(r, n); err != nil {
		return err
	}
	if err := refuseWhileDeleting(c); err != nil {
		return err
	}
	ng, err := s.resolveNodeGroup(r, c, vals["nodegroup"])
	if err != nil {
		return err
	}
	if err := checkBounds(c, ng, n); err != nil {
		return err
	}
	if err := s.checkClusterSize(r, c, ng, n); err != nil {
		return err
	}
	if err := s.checkResizedShape(r, c, ng, n); err != nil {
		return err
	}
	remove, _ := vals["nodes_to_remove"].([]string)
	if len(remove) > 0 && ng.Role == model.RoleMaster {
		return badRequest("nodes_to_remove is not supported for the control plane; Cluster API replaces control plane machines itself.")
	}
	if len(remove) > ng.NodeCount {
		return badRequest("nodes_to_remove names %d nodes but node group %s has only %d.", len(remove), ng.Name, ng.NodeCount)
	}
	claim, err := s.checkCapacity(r, nil, c, grows(ng, n-ng.NodeCount))
	if err != nil {
		return err
	}
	t := time.Now().UTC()
	ng.NodeCount = n
	ng.Status = nextStatus(ng.Status)
	ng.UpdatedAt = &t
	before := c.Status
	c.Status = nextStatus(c.Status)
	c.UpdatedAt = &t
	if remove == nil {
		remove = []string{}
	}
	op := s.newOperation(r, model.OpClusterResize, c, ng.UUID, &model.ClusterResizePayload{
		NodeCount: n, NodesToRemove: remove, NodeGroup: ng.Name,
	})
	if err := s.applyClusterChange(r, before, store.ClusterChange{Cluster: c, NodeGroups: []*model.NodeGroup{ng}, Operation: op}, claim); err != nil {
		return err
	}
	s.recordCapacityWarning(r, c, claim)
	writeJSON(w, http.StatusAccepted, apitypes.ClusterID{UUID: c.UUID})
	return nil
}

func (s *Server) upgradeCluster(w http.ResponseWriter, r *http.Request) error {
	if err := requireVersion(r, sinceUpgrade); err != nil {
		return err
	}
	c, vals, err := s.clusterRequest(r, sinceUpgradeRuns, "cluster:upgrade", upgradeSchema, "cluster_template")
	if err != nil {
		return err
	}
	ident := vals["cluster_template"].(string)
	if err := refuseWhileDeleting(c); err != nil {
		return err
	}
	ct, err := s.lookupTemplate(r, ident)
	if err != nil {
		return err
	}
	if err := refuseUnsupportedTemplate(ct); err != nil {
		return err
	}
	cur, err := s.st.GetClusterTemplateByUUID(r.Context(), c.ClusterTemplateID)
	if err != nil {
		return err
	}
	if ct.COE != cur.COE {
		return badRequest("Cannot upgrade cluster %s from a %s template to a %s template.", c.Name, cur.COE, ct.COE)
	}
	if a := c.Adopted(); a != nil && ct.Labels["kube_tag"] == "" {
		return badRequest("Cluster template %s has no kube_tag label: cluster %s, adopted from %s, is upgraded to its template's kube_tag and image. Choose a template with a kube_tag label.", ct.Name, c.Name, a.Driver)
	}
	ng, err := s.resolveNodeGroup(r, c, vals["nodegroup"])
	if err != nil {
		return err
	}
	_, named := vals["nodegroup"].(string)
	if named && ct.UUID != c.ClusterTemplateID && !ng.IsDefault {
		return badRequest("Nodegroup %s can be upgraded only to match cluster's template (%s).", ng.Name, cur.Name)
	}
	t := time.Now().UTC()
	ch := store.ClusterChange{Cluster: c}
	ngs, err := s.st.NodeGroupsOf(r.Context(), []string{c.UUID})
	if err != nil {
		return err
	}
	if !named || ng.IsDefault {
		// The whole cluster moves to the new template; node groups still
		// on the old template's image follow it.
		c.ClusterTemplateID = ct.UUID
		c.Labels = rebaseLabels(c.Labels, cur.Labels, ct.Labels)
		for _, g := range ngs[c.UUID] {
			if g.Status == model.DeleteInProgress {
				continue // going away: nothing to upgrade, and its delete stands
			}
			labels := rebaseLabels(g.Labels, cur.Labels, ct.Labels)
			sameImage := g.ImageID != nil && *g.ImageID == cur.ImageID
			// The new template may turn the autoscaler on.
			bound := g.MaxNodeCount
			pinAutoscalerMax(c, g)
			if !sameImage && reflect.DeepEqual(labels, g.Labels) && bound == g.MaxNodeCount {
				continue
			}
			if sameImage {
				img := ct.ImageID
				g.ImageID = &img
			}
			g.Labels = labels
			g.Status = nextStatus(g.Status)
			g.UpdatedAt = &t
			ch.NodeGroups = append(ch.NodeGroups, g)
		}
	} else {
		img := ct.ImageID
		ng.ImageID = &img
		ng.Status = nextStatus(ng.Status)
		ng.UpdatedAt = &t
		ch.NodeGroups = append(ch.NodeGroups, ng)
	}
	if err := s.checkUpgradedShape(r, ct, c, ngs[c.UUID]); err != nil {
		return err
	}
	before := c.Status
	c.Status = nextStatus(c.Status)
	c.UpdatedAt = &t
	payload := &model.ClusterUpgradePayload{ClusterTemplate: ct.UUID, NodeGroup: ng.Name}
	if mbs, ok := vals["max_batch_size"].(int); ok {
		payload.MaxBatchSize = &mbs
	}
	ch.Operation = s.newOperation(r, model.OpClusterUpgrade, c, ng.UUID, payload)
	if err := s.applyClusterChange(r, before, ch, nil); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, apitypes.ClusterID{UUID: c.UUID})
	return nil
}

// rebaseLabels moves labels inherited from the old template to the new
// template's values (kube_tag above all: that is what an upgrade changes),
// keeping every label the cluster or node group set itself.
func rebaseLabels(own, oldTemplate, newTemplate map[string]string) map[string]string {
	out := copyLabels(newTemplate)
	for k, v := range own {
		if ov, inherited := oldTemplate[k]; inherited && ov == v {
			continue // the new template's value (or its absence) stands
		}
		out[k] = v
	}
	// Upgrading means running the new template's Kubernetes version, even
	// when the cluster had pinned kube_tag itself.
	if tag, ok := newTemplate["kube_tag"]; ok {
		out["kube_tag"] = tag
	}
	return out
}

// checkResizedShape refuses a resize to a size the renderer would refuse
// for the node group (more bare-metal machines under hard anti-affinity
// than nova-compute hosts, say), when the cloud can be asked about its
// flavor.
func (s *Server) checkResizedShape(r *http.Request, c *model.Cluster, ng *model.NodeGroup, n int) error {
	if s.opts.Resources == nil || n <= ng.NodeCount {
		return nil
	}
	ct, err := s.lookupTemplate(r, c.ClusterTemplateID)
	if err != nil {
		return err
	}
	ngs, err := s.st.NodeGroupsOf(r.Context(), []string{c.UUID})
	if err != nil {
		return err
	}
	resized := *ng
	resized.NodeCount = n
	groups := []*model.NodeGroup{&resized}
	for _, g := range ngs[c.UUID] {
		if g.UUID != ng.UUID && g.Status != model.DeleteInProgress {
			groups = append(groups, g)
		}
	}
	found, err := s.checkResources(r, cloud.Refs{Flavors: []string{driver.FlavorOf(ct, c, ng)}})
	if err != nil {
		return err
	}
	return s.refuseUnbuildable("The resized node group", s.resolveShape(ct, c, groups, found).Groups[0].Problems)
}

// checkUpgradedShape refuses an upgrade to a template the cluster could not
// be built from (a server_type=bm template over virtual flavors, say),
// when the cloud can be asked about the node groups' flavors and images.
func (s *Server) checkUpgradedShape(r *http.Request, ct *model.ClusterTemplate, c *model.Cluster, ngs []*model.NodeGroup) error {
	if s.opts.Resources == nil {
		return nil
	}
	var live []*model.NodeGroup
	refs := cloud.Refs{Image: ct.ImageID}
	for _, g := range ngs {
		if g.Status == model.DeleteInProgress {
			continue
		}
		live = append(live, g)
		if f := driver.FlavorOf(ct, c, g); f != "" && !slices.Contains(refs.Flavors, f) {
			refs.Flavors = append(refs.Flavors, f)
		}
	}
	found, err := s.checkResources(r, refs)
	if err != nil {
		return err
	}
	return s.refuseUnbuildable("The upgraded cluster", s.resolveShape(ct, c, live, found).Problems)
}

// rebaseCluster moves a cluster adopted from magnum-cluster-api onto
// Magnetite's own ClusterClass (a Magnetite action, not Magnum's): Cluster
// API then replaces every machine, and the cluster is Magnetite's from
// then on (internal/conductor/rebase.go says what it keeps).
func (s *Server) rebaseCluster(w http.ResponseWriter, r *http.Request) error {
	c, err := s.clusterSince(r, sinceUpgradeRuns, "cluster:rebase")
	if err != nil {
		return err
	}
	if err := refuseWhileDeleting(c); err != nil {
		return err
	}
	a := c.Adopted()
	switch {
	case c.Rebased() != nil:
		return conflict("Cluster %s was moved onto Magnetite's ClusterClass already.", c.Name)
	case a == nil:
		return conflict("Cluster %s was not adopted from a Magnum Cluster API driver: there is nothing to move onto Magnetite's ClusterClass.", c.Name)
	case a.Driver != "magnum-cluster-api":
		return conflict("Cluster %s was adopted from %s, whose Cluster has no ClusterClass; Cluster API refuses to put an existing Cluster under one, so it cannot be moved onto Magnetite's without being rebuilt. Magnetite keeps changing it in place.", c.Name, a.Driver)
	}
	if s.opts.Credentials == nil {
		return conflict("Magnetite runs without Keystone ([auth] strategy = noauth): a cluster on Magnetite's ClusterClass acts in the cloud with its application credential (its server groups, flavors and images), which needs Keystone. Cluster %s stays adopted.", c.Name)
	}
	t := time.Now().UTC()
	before := c.Status
	c.Status = model.UpdateInProgress
	c.UpdatedAt = &t
	op := s.newOperation(r, model.OpClusterRebase, c, "", nil)
	if err := s.applyClusterChange(r, before, store.ClusterChange{Cluster: c, Operation: op}, nil); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, apitypes.ClusterID{UUID: c.UUID})
	return nil
}
