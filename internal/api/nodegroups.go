package api

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

var nodeGroupNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

var nodeGroupSchema = newSchema("nodegroup",
	field{name: "name", kind: kString, min: 1, max: 255, pattern: nodeGroupNameRE,
		patternH: "A node group name must start with a letter or digit and contain only letters, digits, '_', '.' and '-'."},
	integer("docker_volume_size", 1, 0),
	field{name: "labels", kind: kLabels},
	str("flavor_id", 1, 255),
	str("image_id", 1, 255),
	integer("node_count", 0, maxNodes),
	str("role", 1, 255),
	integer("min_node_count", 0, maxNodes),
	integer("max_node_count", 0, maxNodes),
	boolean("merge_labels"),
	field{name: "node_labels", kind: kStringMap, minVersion: 14},
	field{name: "node_taints", kind: kTaints, minVersion: 14},
	readOnly("id"), readOnly("uuid"), readOnly("cluster_id"), readOnly("project_id"), readOnly("links"),
	readOnly("node_addresses"), readOnly("is_default"), readOnly("stack_id"), readOnly("status"),
	readOnly("status_reason"), readOnly("version"), readOnly("labels_overridden"), readOnly("labels_added"),
	readOnly("labels_skipped"), readOnly("created_at"), readOnly("updated_at"),
)

var nodeGroupInternalAttrs = append([]string{"/name", "/cluster_id", "/project_id", "/docker_volume_size", "/labels",
	"/flavor_id", "/image_id", "/node_addresses", "/node_count", "/role", "/is_default", "/stack_id", "/status",
	"/status_reason", "/version"}, internalAttrs...)

func nodeGroupSummary(ng *model.NodeGroup) apitypes.NodeGroupSummary {
	return apitypes.NodeGroupSummary{
		UUID: ng.UUID, Name: ng.Name, FlavorID: ng.FlavorID, ImageID: ng.ImageID, NodeCount: ng.NodeCount,
		Role: ng.Role, IsDefault: ng.IsDefault, Status: string(ng.Status), StackID: ng.StackID,
	}
}

func (s *Server) nodeGroupView(r *http.Request, c *model.Cluster, ng *model.NodeGroup) apitypes.NodeGroup {
	over, added, skipped := labelsDiff(c.Labels, ng.Labels)
	labels := ng.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	addrs := ng.NodeAddresses
	if addrs == nil {
		addrs = []string{}
	}
	base := baseURL(r)
	path := "clusters/" + c.UUID + "/nodegroups/" + ng.UUID
	out := apitypes.NodeGroup{
		NodeGroupSummary: nodeGroupSummary(ng), ID: ng.ID, ClusterID: ng.ClusterID, ProjectID: ng.ProjectID,
		DockerVolumeSize: ng.DockerVolumeSize, Labels: labels, NodeAddresses: addrs, MinNodeCount: ng.MinNodeCount,
		MaxNodeCount: ng.MaxNodeCount, StatusReason: ng.StatusReason, Version: ng.Version, MergeLabels: ng.MergeLabels,
		LabelsOverridden: over, LabelsAdded: added, LabelsSkipped: skipped,
		CreatedAt: timeString(ng.CreatedAt), UpdatedAt: timePtrString(ng.UpdatedAt),
		Links: []apitypes.Link{{Href: base + "/v1/" + path, Rel: "self"}, {Href: base + "/" + path, Rel: "bookmark"}},
	}
	if versionOf(r.Context()).AtLeast(14) {
		nl := ng.NodeLabels
		if nl == nil {
			nl = map[string]string{}
		}
		taints := make([]apitypes.Taint, 0, len(ng.NodeTaints))
		for _, t := range ng.NodeTaints {
			taints = append(taints, apitypes.Taint(t))
		}
		out.NodeLabels, out.NodeTaints = &nl, &taints
	}
	return out
}

// nodeGroupCluster resolves the cluster in the path for a node group call.
func (s *Server) nodeGroupCluster(r *http.Request, action string) (*model.Cluster, error) {
	return s.clusterSince(r, sinceNodeGroups, action)
}

// clusterSince resolves the cluster in the path for a call that gate's
// microversion introduced, refusing older requests first.
func (s *Server) clusterSince(r *http.Request, gate since, action string) (*model.Cluster, error) {
	if err := requireVersion(r, gate); err != nil {
		return nil, err
	}
	return s.lookupCluster(r, action)
}

// clusterRequest resolves the cluster in the path for a call gate's
// microversion introduced, then reads the body by sch, requiring the
// required fields.
func (s *Server) clusterRequest(r *http.Request, gate since, action string, sch schema, required ...string) (*model.Cluster, map[string]any, error) {
	c, err := s.clusterSince(r, gate, action)
	if err != nil {
		return nil, nil, err
	}
	vals, err := requestValues(r, sch, required...)
	return c, vals, err
}

// lookupNodeGroup resolves the cluster and the node group the request's
// path names, for action.
func (s *Server) lookupNodeGroup(r *http.Request, action string) (*model.Cluster, *model.NodeGroup, error) {
	c, err := s.nodeGroupCluster(r, action)
	if err != nil {
		return nil, nil, err
	}
	ng, err := s.nodeGroupOf(r, c, r.PathValue("ng"))
	return c, ng, err
}

// nodeGroupOf finds c's node group by name or UUID, answering Magnum's 404
// when it has none.
func (s *Server) nodeGroupOf(r *http.Request, c *model.Cluster, ident string) (*model.NodeGroup, error) {
	ng, err := s.st.GetNodeGroup(r.Context(), c.UUID, ident)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFound("Nodegroup %s could not be found in cluster %s.", ident, c.Name)
		}
		return nil, err
	}
	return ng, nil
}

func (s *Server) listNodeGroups(w http.ResponseWriter, r *http.Request) error {
	c, err := s.nodeGroupCluster(r, "nodegroup:get_all")
	if err != nil {
		return err
	}
	p, err := s.parseList(r, "id")
	if err != nil {
		return err
	}
	// The cluster is resolved before the page's generations are read: its
	// UUID is part of the page's key.
	return s.servePage(w, r, s.scope(r), c.UUID, clusterPages, func(dst []byte) ([]byte, error) {
		if p.Marker != "" {
			// Magnum takes a node group's id, UUID or name as the marker
			// (gophercloud sends the numeric id); pages are keyed by UUID.
			m, err := s.st.GetNodeGroup(r.Context(), c.UUID, p.Marker)
			if errors.Is(err, store.ErrNotFound) {
				return nil, fault.New(store.ErrInvalidMarker, "%s", p.Marker)
			}
			if err != nil {
				return nil, err
			}
			p.Marker = m.UUID
		}
		rows, err := s.st.StoredNodeGroups(r.Context(), c.UUID, store.NodeGroupFilter{Role: r.URL.Query().Get("role")}, p.ListOptions)
		if err != nil {
			return nil, err
		}
		next := ""
		if len(rows) > 0 {
			next = nextLink(r, "clusters/"+c.UUID+"/nodegroups", p, len(rows), rows[len(rows)-1].UUID)
		}
		return appendNodeGroupPage(dst, rows, next)
	})
}

// getNodeGroup serves a node group from its stored JSON, as lists are.
func (s *Server) getNodeGroup(w http.ResponseWriter, r *http.Request) error {
	if err := requireVersion(r, sinceNodeGroups); err != nil {
		return err
	}
	c, err := s.lookupStoredCluster(r, "nodegroup:get")
	if err != nil {
		return err
	}
	ident := r.PathValue("ng")
	ng, err := s.st.StoredNodeGroup(r.Context(), c.UUID, ident)
	if errors.Is(err, store.ErrNotFound) {
		var name []byte
		_ = eachMember(c.Data, func(key, val []byte) {
			if string(key) == "name" {
				name = val
			}
		})
		return notFound("Nodegroup %s could not be found in cluster %s.", ident, jsonString(name))
	}
	if err != nil {
		return err
	}
	return writeBuilt(w, http.StatusOK, func(dst []byte) ([]byte, error) { return appendNodeGroup(dst, r, c, ng) })
}

func (s *Server) createNodeGroup(w http.ResponseWriter, r *http.Request) error {
	c, vals, err := s.clusterRequest(r, sinceNodeGroups, "nodegroup:create", nodeGroupSchema, "name")
	if err != nil {
		return err
	}
	if err := refuseWhileDeleting(c); err != nil {
		return err
	}
	ng := &model.NodeGroup{NodeCount: 1, Role: model.RoleWorker}
	if err := into(vals, ng); err != nil {
		return badRequest("The node group is invalid: %v", err)
	}
	if vals["node_count"] == nil {
		ng.NodeCount = 1
	}
	if vals["role"] == nil {
		ng.Role = model.RoleWorker
	}
	if err := requireNodeCount(r, ng.NodeCount); err != nil {
		return err
	}
	if ng.Role == model.RoleMaster {
		return badRequest("Creating master nodegroups is currently not supported.")
	}
	if err := validateNodeGroup(ng); err != nil {
		return err
	}
	pinAutoscalerMax(c, ng)
	ct, err := s.st.GetClusterTemplateByUUID(r.Context(), c.ClusterTemplateID)
	if err != nil {
		return err
	}
	if ng.ImageID == nil {
		img := ct.ImageID
		ng.ImageID = &img
	}
	if ng.FlavorID == nil {
		ng.FlavorID = c.FlavorID
	}
	if ng.DockerVolumeSize == nil {
		ng.DockerVolumeSize = c.DockerVolumeSize
	}
	ng.MergeLabels = s.mergeLabels(vals)
	switch {
	case vals["labels"] == nil:
		ng.Labels = copyLabels(c.Labels)
	case ng.MergeLabels:
		ng.Labels = labelsOver(c.Labels, ng.Labels)
	}
	if err := s.checkLabels(ct, ng.Labels); err != nil {
		return err
	}
	if err := s.checkClusterSize(r, c, ng, ng.NodeCount); err != nil {
		return err
	}
	if err := s.checkNodeGroupShape(r, ct, c, ng); err != nil {
		return err
	}
	claim, err := s.checkCapacity(r, ct, c, grows(ng, ng.NodeCount))
	if err != nil {
		return err
	}
	storeEmptyNodeLabels(ng)
	t := time.Now().UTC()
	ng.UUID = uuid.NewString()
	ng.ClusterID, ng.ProjectID = c.UUID, c.ProjectID
	ng.NodeAddresses = []string{}
	ng.IsDefault = false
	ng.StackID = c.StackID
	ng.Status = model.CreateInProgress
	ng.CreatedAt = t
	c.UpdatedAt = &t
	before := c.Status
	if c.Status != model.CreateInProgress {
		c.Status = model.UpdateInProgress
	}
	op := s.newOperation(r, model.OpNodeGroupCreate, c, ng.UUID, &model.NodeGroupCreatePayload{NodeGroup: ng.Name})
	if err := s.applyClusterChange(r, before, store.ClusterChange{Cluster: c, NodeGroups: []*model.NodeGroup{ng}, Operation: op}, claim); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return conflict("A node group with name %s already exists in the cluster %s.", ng.Name, c.Name)
		}
		return err
	}
	return s.acceptNodeGroupChange(w, r, c, ng, claim)
}

// acceptNodeGroupChange answers a node group create or update the store
// took: 202 with the node group, and the capacity warning claim carries.
func (s *Server) acceptNodeGroupChange(w http.ResponseWriter, r *http.Request, c *model.Cluster, ng *model.NodeGroup, claim *capacityClaim) error {
	s.recordCapacityWarning(r, c, claim)
	writeJSON(w, http.StatusAccepted, s.nodeGroupView(r, c, ng))
	return nil
}

func (s *Server) updateNodeGroup(w http.ResponseWriter, r *http.Request) error {
	c, ng, err := s.lookupNodeGroup(r, "nodegroup:update")
	if err != nil {
		return err
	}
	ops, err := requestPatch(r, nodeGroupInternalAttrs, nil)
	if err != nil {
		return err
	}
	updated := &model.NodeGroup{}
	changed, err := applyPatch(ng, ops, nodeGroupSchema, versionOf(r.Context()), updated)
	if err != nil {
		return err
	}
	if err := refuseWhileDeleting(c); err != nil {
		return err
	}
	if ng.Status == model.DeleteInProgress {
		return conflict("Nodegroup %s is being deleted; it can no longer be changed.", ng.Name)
	}
	if err := validateNodeGroup(updated); err != nil {
		return err
	}
	if len(changed) == 0 {
		writeJSON(w, http.StatusAccepted, s.nodeGroupView(r, c, ng))
		return nil
	}
	claim, err := s.checkCapacity(r, nil, c, grows(updated, updated.NodeCount-ng.NodeCount))
	if err != nil {
		return err
	}
	storeEmptyNodeLabels(updated)
	t := time.Now().UTC()
	updated.ID, updated.UUID, updated.ClusterID, updated.ProjectID, updated.CreatedAt = ng.ID, ng.UUID, ng.ClusterID, ng.ProjectID, ng.CreatedAt
	// Written only while the node group is still as read: a request that
	// lost a race to another write is made again from a new read.
	updated.ResourceVersion, updated.ServerGroupID = ng.ResourceVersion, ng.ServerGroupID
	updated.Status = nextStatus(ng.Status)
	updated.UpdatedAt = &t
	before := c.Status
	c.Status = nextStatus(c.Status)
	c.UpdatedAt = &t
	op := s.newOperation(r, model.OpNodeGroupUpdate, c, ng.UUID, &model.NodeGroupUpdatePayload{NodeGroup: ng.Name, Changed: changed})
	if err := s.applyClusterChange(r, before, store.ClusterChange{Cluster: c, NodeGroups: []*model.NodeGroup{updated}, Operation: op}, claim); err != nil {
		return err
	}
	return s.acceptNodeGroupChange(w, r, c, updated, claim)
}

func (s *Server) deleteNodeGroup(w http.ResponseWriter, r *http.Request) error {
	c, ng, err := s.lookupNodeGroup(r, "nodegroup:delete")
	if err != nil {
		return err
	}
	if ng.IsDefault {
		return badRequest("Deleting a default nodegroup is not supported.")
	}
	if err := refuseWhileDeleting(c); err != nil {
		return err
	}
	if ng.Status == model.DeleteInProgress {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	t := time.Now().UTC()
	ng.Status = model.DeleteInProgress
	ng.UpdatedAt = &t
	before := c.Status
	c.Status = nextStatus(c.Status)
	c.UpdatedAt = &t
	op := s.newOperation(r, model.OpNodeGroupDelete, c, ng.UUID, &model.NodeGroupDeletePayload{NodeGroup: ng.Name})
	if err := s.applyClusterChange(r, before, store.ClusterChange{Cluster: c, NodeGroups: []*model.NodeGroup{ng}, Operation: op}, nil); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// storeEmptyNodeLabels gives a node group without node labels or taints
// empty ones, so it is stored and shown with {} and [] rather than null.
func storeEmptyNodeLabels(ng *model.NodeGroup) {
	if ng.NodeLabels == nil {
		ng.NodeLabels = map[string]string{}
	}
	if ng.NodeTaints == nil {
		ng.NodeTaints = []model.Taint{}
	}
}

func invalidNodeGroup(attr, name, expl string) *apiError {
	return conflict("%s for %s is invalid (%s).", attr, name, expl)
}

// validateNodeGroup applies Magnum's node group rules: count bounds, no
// labels or taints on masters, and node labels the kubelet will accept.
func validateNodeGroup(ng *model.NodeGroup) error {
	if ng.MaxNodeCount != nil && *ng.MaxNodeCount > 0 {
		if *ng.MaxNodeCount < ng.MinNodeCount {
			return invalidNodeGroup("max_node_count", ng.Name, fmt.Sprintf("min_node_count (%d) should be less or equal to max_node_count (%d)", ng.MinNodeCount, *ng.MaxNodeCount))
		}
		if ng.NodeCount > *ng.MaxNodeCount {
			return invalidNodeGroup("max_node_count", ng.Name, fmt.Sprintf("node_count (%d) should be less or equal to max_node_count (%d)", ng.NodeCount, *ng.MaxNodeCount))
		}
	}
	if ng.MinNodeCount > ng.NodeCount {
		return invalidNodeGroup("min_node_count", ng.Name, fmt.Sprintf("min_node_count (%d) should be less or equal to node_count (%d)", ng.MinNodeCount, ng.NodeCount))
	}
	if ng.Role == model.RoleMaster {
		if len(ng.NodeLabels) > 0 {
			return invalidNodeGroup("node_labels", ng.Name, "node_labels may not be set on master nodegroups")
		}
		if len(ng.NodeTaints) > 0 {
			return invalidNodeGroup("node_taints", ng.Name, "node_taints may not be set on master nodegroups")
		}
	}
	for k, v := range ng.NodeLabels {
		if err := checkNodeLabel(k, v); err != "" {
			return invalidNodeGroup("node_labels", ng.Name, err)
		}
	}
	for i, t := range ng.NodeTaints {
		if err := checkQualifiedName(t.Key); err != "" {
			return invalidNodeGroup("node_taints", ng.Name, fmt.Sprintf("node_taints[%d] key: %s", i, err))
		}
		if t.Value != "" && !labelValueRE.MatchString(t.Value) {
			return invalidNodeGroup("node_taints", ng.Name, fmt.Sprintf("node_taints[%d] value %q must be at most 63 letters, digits, '-', '_' or '.'", i, t.Value))
		}
	}
	return nil
}

var (
	labelNameRE    = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelValueRE   = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

var (
	kubeletAllowedNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}
	kubeletAllowedLabels     = []string{
		"beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type", "beta.kubernetes.io/os",
		"failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
		"kubernetes.io/arch", "kubernetes.io/hostname", "kubernetes.io/os", "node.kubernetes.io/instance-type",
		"topology.kubernetes.io/region", "topology.kubernetes.io/zone",
	}
)

// checkQualifiedName validates a Kubernetes label or taint key.
func checkQualifiedName(k string) string {
	name := k
	if i := strings.LastIndex(k, "/"); i >= 0 {
		prefix := k[:i]
		name = k[i+1:]
		if len(prefix) > 253 || !dnsSubdomainRE.MatchString(prefix) {
			return fmt.Sprintf("key %q has an invalid prefix; it must be a DNS subdomain such as example.com", k)
		}
	}
	if !labelNameRE.MatchString(name) {
		return fmt.Sprintf("key %q must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", k)
	}
	return ""
}

func checkNodeLabel(k, v string) string {
	if msg := checkQualifiedName(k); msg != "" {
		return msg
	}
	if !labelValueRE.MatchString(v) {
		return fmt.Sprintf("value %q of node label %q must be at most 63 letters, digits, '-', '_' or '.'", v, k)
	}
	if strings.HasPrefix(k, "magnetite.io/") {
		return fmt.Sprintf("node label %q is reserved: Magnetite sets the magnetite.io/ labels itself", k)
	}
	prefix, _, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		return ""
	}
	restricted := prefix == "kubernetes.io" || prefix == "k8s.io" || strings.HasSuffix(prefix, ".kubernetes.io") || strings.HasSuffix(prefix, ".k8s.io")
	if !restricted || slices.Contains(kubeletAllowedNamespaces, prefix) || slices.Contains(kubeletAllowedLabels, k) {
		return ""
	}
	return fmt.Sprintf("node label '%s' is in a restricted Kubernetes namespace; the kubelet will refuse to start. Labels in the kubernetes.io/ and k8s.io/ namespaces must use one of the allowed prefixes (%s) or be one of the allowed labels (%s).",
		k, strings.Join(kubeletAllowedNamespaces, ", "), strings.Join(kubeletAllowedLabels, ", "))
}

// checkNodeGroupShape refuses a new node group the renderer would refuse
// (a virtual flavor under server_type=bm, an Ironic-backed one under
// server_type=vm, a flavor or image the cloud does not have), resolved
// beside the cluster's other node groups.
func (s *Server) checkNodeGroupShape(r *http.Request, ct *model.ClusterTemplate, c *model.Cluster, ng *model.NodeGroup) error {
	found, err := s.checkResources(r, cloud.Refs{Image: driver.FirstSet(ng.ImageID), Flavors: []string{driver.FlavorOf(ct, c, ng)}})
	if err != nil {
		return err
	}
	ngs, err := s.st.NodeGroupsOf(r.Context(), []string{c.UUID})
	if err != nil {
		return err
	}
	shape := s.resolveShape(ct, c, append(ngs[c.UUID], ng), found)
	return s.refuseUnbuildable("The node group", shape.Groups[len(shape.Groups)-1].Problems)
}
