package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

var healthValues = []string{string(model.Healthy), string(model.Unhealthy), string(model.Unknown)}

var clusterSchema = newSchema("cluster",
	field{name: "name", kind: kString, min: 1, max: 242, pattern: clusterNameRE,
		patternH: "A cluster name must start with a letter and contain only letters, digits, '_', '.' and '-'."},
	str("cluster_template_id", 1, 255),
	str("keypair", 1, 255),
	integer("node_count", 0, maxNodes),
	integer("master_count", 1, maxNodes),
	integer("docker_volume_size", 1, 0),
	field{name: "labels", kind: kLabels},
	str("master_flavor_id", 1, 255),
	str("flavor_id", 1, 255),
	integer("create_timeout", 0, 0),
	optionalText("discovery_url", 255),
	str("fixed_network", 1, 255),
	str("fixed_subnet", 1, 255),
	boolean("floating_ip_enabled"),
	boolean("merge_labels"),
	boolean("master_lb_enabled"),
	readOnly("uuid"), readOnly("links"), readOnly("stack_id"), readOnly("cluster_id"), readOnly("status"),
	readOnly("status_reason"), readOnly("health_status"), readOnly("health_status_reason"),
	readOnly("api_address"), readOnly("coe_version"), readOnly("container_version"), readOnly("project_id"),
	readOnly("user_id"), readOnly("node_addresses"), readOnly("master_addresses"), readOnly("faults"),
	readOnly("labels_overridden"), readOnly("labels_added"), readOnly("labels_skipped"),
	readOnly("created_at"), readOnly("updated_at"),
)

// clusterUpdatable are the only cluster properties PATCH may change
// (Magnum's cluster_update_allowed_properties).
var clusterUpdatable = map[string]field{
	"node_count":           integer("node_count", 0, maxNodes),
	"health_status":        {name: "health_status", kind: kEnum, enum: healthValues},
	"health_status_reason": {name: "health_status_reason", kind: kStringMap},
}

var clusterInternalAttrs = append([]string{"/api_address", "/node_addresses", "/master_addresses", "/stack_id",
	"/cluster_id", "/ca_cert_ref", "/magnum_cert_ref", "/etcd_ca_cert_ref", "/front_proxy_ca_cert_ref"}, internalAttrs...)

// clusterShape aggregates node group facts into the cluster fields Magnum
// reports (node_count, master_count and addresses).
type clusterShape struct {
	nodeCount, masterCount int
	nodeAddrs, masterAddrs []string
	faults                 map[string]string
}

func shapeOf(ngs []*model.NodeGroup) clusterShape {
	sh := clusterShape{nodeAddrs: []string{}, masterAddrs: []string{}}
	for _, ng := range ngs {
		if ng.Role == model.RoleMaster {
			sh.masterCount += ng.NodeCount
			sh.masterAddrs = append(sh.masterAddrs, ng.NodeAddresses...)
		} else {
			sh.nodeCount += ng.NodeCount
			sh.nodeAddrs = append(sh.nodeAddrs, ng.NodeAddresses...)
		}
		if ng.Status.Failed() && ng.StatusReason != nil {
			if sh.faults == nil {
				sh.faults = map[string]string{}
			}
			sh.faults[ng.Name] = *ng.StatusReason
		}
	}
	return sh
}

// clusterFields are the short-form fields clusters and bays show alike.
func clusterFields(c *model.Cluster, sh clusterShape) apitypes.ClusterFields {
	labels := c.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	return apitypes.ClusterFields{
		UUID: c.UUID, Name: c.Name, DockerVolumeSize: c.DockerVolumeSize, Labels: labels, NodeCount: sh.nodeCount,
		MasterCount: sh.masterCount, Status: string(c.Status), MasterFlavorID: c.MasterFlavorID, FlavorID: c.FlavorID,
	}
}

// clusterDetailFields are the full-form fields clusters and bays show alike.
func clusterDetailFields(c *model.Cluster, sh clusterShape) apitypes.ClusterDetailFields {
	return apitypes.ClusterDetailFields{
		StatusReason: c.StatusReason, ClusterRuntime: c.ClusterRuntime, NodeAddresses: sh.nodeAddrs,
		MasterAddresses: sh.masterAddrs, ClusterNetwork: c.ClusterNetwork,
		CreatedAt: timeString(c.CreatedAt), UpdatedAt: timePtrString(c.UpdatedAt),
	}
}

// faultsOf is what a failed cluster reports as its faults (the reasons of
// its failed node groups); nil, and so absent, for any other cluster.
func faultsOf(c *model.Cluster, sh clusterShape) map[string]string {
	if !c.Status.Failed() {
		return nil
	}
	if sh.faults == nil {
		return map[string]string{}
	}
	return sh.faults
}

func (s *Server) clusterSummary(r *http.Request, c *model.Cluster, sh clusterShape) apitypes.ClusterSummary {
	out := apitypes.ClusterSummary{
		ClusterFields: clusterFields(c, sh), ClusterTemplateID: c.ClusterTemplateID, Keypair: c.Keypair,
		CreateTimeout: c.CreateTimeout, Links: toAPILinks(resourceLinks(baseURL(r), "clusters", c.UUID)),
	}
	if c.HealthStatus != nil {
		h := string(*c.HealthStatus)
		out.HealthStatus = &h
	}
	if versionOf(r.Context()).AtLeast(13) {
		out.ClusterID = &apitypes.OptionalString{Value: c.StackID}
	} else {
		out.StackID = &apitypes.OptionalString{Value: c.StackID}
	}
	return out
}

func (s *Server) clusterDetail(r *http.Request, c *model.Cluster, sh clusterShape, parentLabels map[string]string) apitypes.Cluster {
	over, added, skipped := labelsDiff(parentLabels, c.Labels)
	hsr := c.HealthStatusReason
	if hsr == nil {
		hsr = map[string]string{}
	}
	return apitypes.Cluster{
		ClusterSummary: s.clusterSummary(r, c, sh), ClusterDetailFields: clusterDetailFields(c, sh),
		HealthStatusReason: hsr, ProjectID: c.ProjectID, UserID: c.UserID, Faults: faultsOf(c, sh),
		MergeLabels: c.MergeLabels, LabelsOverridden: over, LabelsAdded: added, LabelsSkipped: skipped,
	}
}

// labelsDiff is Magnum's get_labels_diff: overridden holds the parent's
// value of keys the child changed, added the child's new keys, skipped the
// parent's keys the child does not have.
func labelsDiff(parent, child map[string]string) (overridden, added, skipped map[string]string) {
	overridden, added, skipped = map[string]string{}, map[string]string{}, map[string]string{}
	for k, v := range parent {
		if _, ok := child[k]; !ok {
			skipped[k] = v
		}
	}
	for k, v := range child {
		pv, ok := parent[k]
		switch {
		case !ok:
			added[k] = v
		case pv != v:
			overridden[k] = pv
		}
	}
	return overridden, added, skipped
}

func (s *Server) listClusters(detail bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.authorizeList(r, listAction("cluster", detail))
		if err != nil {
			return err
		}
		sc := s.scope(r)
		return s.servePage(w, r, sc, "", clusterPages, func(dst []byte) ([]byte, error) {
			rows, err := s.st.StoredClusters(r.Context(), sc, p.ListOptions)
			if err != nil {
				return nil, err
			}
			cw, err := s.newClusterWriter(r, detail, rows)
			if err != nil {
				return nil, err
			}
			return appendCollectionPage(dst, r, familyOf(r).clusters, detail, p, rows, cw.appendTo)
		})
	}
}

func (s *Server) templateLabels(ctx context.Context, uuid string) map[string]string {
	ct, err := s.st.GetClusterTemplateByUUID(ctx, uuid)
	if err != nil || ct.Labels == nil {
		return map[string]string{}
	}
	return ct.Labels
}

// lookupCluster resolves a cluster the caller may act on.
func (s *Server) lookupCluster(r *http.Request, action string) (*model.Cluster, error) {
	ident := r.PathValue("ident")
	c, err := s.st.GetCluster(r.Context(), s.scope(r), ident)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFound("Cluster %s could not be found.", ident)
		}
		return nil, err
	}
	if err := s.authorize(r, action, &auth.Target{ProjectID: c.ProjectID}); err != nil {
		return nil, err
	}
	if err := refuseReadOnly(c, action); err != nil {
		return nil, err
	}
	return c, nil
}

// lookupStoredCluster is lookupCluster for reads served from the stored
// JSON.
func (s *Server) lookupStoredCluster(r *http.Request, action string) (store.StoredRow, error) {
	ident := r.PathValue("ident")
	row, err := s.st.StoredCluster(r.Context(), s.scope(r), ident)
	if errors.Is(err, store.ErrNotFound) {
		return row, notFound("Cluster %s could not be found.", ident)
	}
	if err != nil {
		return row, err
	}
	return row, s.authorize(r, action, &auth.Target{ProjectID: row.ProjectID})
}

func (s *Server) getCluster(w http.ResponseWriter, r *http.Request) error {
	row, err := s.lookupStoredCluster(r, "cluster:get")
	if err != nil {
		return err
	}
	cw, err := s.newClusterWriter(r, true, []store.StoredRow{row})
	if err != nil {
		return err
	}
	return writeBuilt(w, http.StatusOK, func(dst []byte) ([]byte, error) { return cw.appendTo(dst, row) })
}

func (s *Server) createCluster(w http.ResponseWriter, r *http.Request) error {
	if err := s.authorize(r, "cluster:create", nil); err != nil {
		return err
	}
	v := versionOf(r.Context())
	vals, err := familyOf(r).clusterValues(s, r)
	if err != nil {
		return err
	}
	nodeCount, masterCount := 1, 1
	if n, ok := vals["node_count"].(int); ok {
		nodeCount = n
	}
	if n, ok := vals["master_count"].(int); ok {
		masterCount = n
	}
	if err := requireNodeCount(r, nodeCount); err != nil {
		return err
	}
	ctIdent := vals["cluster_template_id"].(string)
	ct, err := s.lookupTemplate(r, ctIdent)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || isNotFound(err) {
			if !v.AtLeast(10) {
				return badRequest("ClusterTemplate %s could not be found.", ctIdent)
			}
			return notFound("ClusterTemplate %s could not be found.", ctIdent)
		}
		return err
	}
	id := identity(r)
	if ct.Hidden && !s.isAdmin(r) {
		return forbidden("Not authorized: cluster template %s is hidden; ask an administrator for a visible template.", ct.Name)
	}
	if err := refuseUnsupportedTemplate(ct); err != nil {
		return err
	}
	c := &model.Cluster{}
	if err := into(vals, c); err != nil {
		return badRequest("The cluster is invalid: %v", err)
	}
	c.UUID = uuid.NewString()
	c.ProjectID, c.UserID = id.ProjectID, id.UserID
	c.ClusterTemplateID = ct.UUID
	if c.Name == "" {
		c.Name = generateName("cluster")
	}
	if c.Keypair == nil {
		c.Keypair = ct.KeypairID
	}
	c.MergeLabels = s.mergeLabels(vals)
	switch {
	case len(c.Labels) == 0:
		c.Labels = copyLabels(ct.Labels)
	case c.MergeLabels:
		c.Labels = labelsOver(ct.Labels, c.Labels)
	}
	if vals["floating_ip_enabled"] == nil {
		c.FloatingIPEnabled = ct.FloatingIPEnabled
	}
	if vals["master_lb_enabled"] == nil {
		c.MasterLBEnabled = ct.MasterLBEnabled
	}
	if c.DockerVolumeSize == nil {
		c.DockerVolumeSize = ct.DockerVolumeSize
	}
	if c.MasterFlavorID == nil {
		c.MasterFlavorID = ct.MasterFlavorID
	}
	if c.FlavorID == nil {
		c.FlavorID = ct.FlavorID
	}
	if c.FixedNetwork == nil {
		c.FixedNetwork = ct.FixedNetwork
	}
	if c.FixedSubnet == nil {
		c.FixedSubnet = ct.FixedSubnet
	}
	if err := checkMasterCount(c, masterCount); err != nil {
		return err
	}
	if err := checkTotalNodes(masterCount + nodeCount); err != nil {
		return err
	}
	if ct.DockerStorageDriver != nil && *ct.DockerStorageDriver == "devicemapper" && (c.DockerVolumeSize == nil || *c.DockerVolumeSize < 3) {
		return badRequest("docker volume size %s GB is not valid, expecting minimum value 3GB for devicemapper storage", intString(c.DockerVolumeSize))
	}
	minNodes, maxNodes, err := driver.NodeBounds(c.Labels)
	if err != nil {
		return badRequest("%v", err)
	}
	if nodeCount < minNodes || (maxNodes != nil && nodeCount > *maxNodes) {
		return badRequest("node_count %d is outside the range set by the labels min_node_count=%d and max_node_count=%s.", nodeCount, minNodes, intString(maxNodes))
	}
	if err := s.checkDriver(ct); err != nil {
		return err
	}
	if err := s.checkLabels(ct, c.Labels); err != nil {
		return err
	}
	found, err := s.checkResources(r, clusterRefs(ct, c))
	if err != nil {
		return err
	}
	t := time.Now().UTC()
	sn := driver.ObjectName(c.Name, c.UUID)
	c.StackID = &sn
	c.Status = model.CreateInProgress
	reason := "Waiting for a conductor to start provisioning"
	c.StatusReason = &reason
	c.HealthStatusReason = map[string]string{}
	c.CreatedAt = t
	master := s.newNodeGroup(c, model.DefaultMasterNodeGroup, model.RoleMaster, masterCount, c.MasterFlavorID, ct.ImageID, t)
	master.MinNodeCount = 1
	worker := s.newNodeGroup(c, model.DefaultWorkerNodeGroup, model.RoleWorker, nodeCount, c.FlavorID, ct.ImageID, t)
	worker.MinNodeCount, worker.MaxNodeCount = minNodes, maxNodes
	pinAutoscalerMax(c, worker)
	shape := s.resolveShape(ct, c, []*model.NodeGroup{master, worker}, found)
	if err := s.refuseUnbuildable("The cluster", shape.Problems); err != nil {
		return err
	}
	if vals["create_timeout"] == nil {
		// Bare metal boots slowly, whether the template asks for it or
		// node groups' flavors are Ironic-backed.
		c.CreateTimeout = shape.CreateTimeout
	}
	claim, err := s.checkCapacity(r, ct, c, grows(master, masterCount), grows(worker, nodeCount))
	if err != nil {
		return err
	}
	op := s.newOperation(r, model.OpClusterCreate, c, "", &model.ClusterCreatePayload{
		MasterCount: masterCount, NodeCount: nodeCount, CreateTimeout: c.CreateTimeout,
	})
	// The CAs are stored with the cluster, so certificate requests can be
	// answered before the conductor has run.
	keyPairs, err := s.clusterKeyPairs(c.UUID)
	if err != nil {
		return err
	}
	cred, err := s.issueCredential(r, c)
	if err != nil {
		return err
	}
	err = s.applyClusterChange(r, "", store.ClusterChange{
		Cluster: c, Create: true, QuotaLimit: s.opts.DefaultClusterQuota,
		NodeGroups: []*model.NodeGroup{master, worker}, Operation: op, Certificates: keyPairs, Credential: cred,
	}, claim)
	if err != nil {
		s.withdrawCredential(r, cred)
		return err
	}
	s.recordCapacityWarning(r, c, claim)
	return familyOf(r).writeQueued(s, w, r, c, http.StatusCreated)
}

func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

func intString(p *int) string {
	if p == nil {
		return "null"
	}
	return strconv.Itoa(*p)
}

func copyLabels(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// mergeLabels says whether a new object's labels are laid over its
// parent's: as the request's merge_labels says, else the deployment's
// default.
func (s *Server) mergeLabels(vals map[string]any) bool {
	if m, ok := vals["merge_labels"].(bool); ok {
		return m
	}
	return !s.opts.ReplaceLabelsByDefault
}

// labelsOver returns a new map of the parent's labels with own laid over
// them.
func labelsOver(parent, own map[string]string) map[string]string {
	merged := copyLabels(parent)
	for k, v := range own {
		merged[k] = v
	}
	return merged
}

func (s *Server) newNodeGroup(c *model.Cluster, name, role string, count int, flavor *string, image string, t time.Time) *model.NodeGroup {
	img := image
	return &model.NodeGroup{
		UUID: uuid.NewString(), Name: name, ClusterID: c.UUID, ProjectID: c.ProjectID,
		DockerVolumeSize: c.DockerVolumeSize, Labels: copyLabels(c.Labels), FlavorID: flavor, ImageID: &img,
		NodeAddresses: []string{}, NodeCount: count, Role: role, IsDefault: name == model.DefaultMasterNodeGroup || name == model.DefaultWorkerNodeGroup,
		StackID: c.StackID, Status: model.CreateInProgress, NodeLabels: map[string]string{}, NodeTaints: []model.Taint{},
		CreatedAt: t,
	}
}

func (s *Server) newOperation(r *http.Request, typ model.OperationType, c *model.Cluster, ngID string, payload model.Payload) *model.Operation {
	return &model.Operation{
		UUID: uuid.NewString(), Type: typ, ClusterID: c.UUID, NodeGroupID: ngID, ProjectID: c.ProjectID,
		RequestID: requestID(r.Context()), Payload: payload, State: model.OpPending,
	}
}

// nextStatus is the status a cluster moves to when new work is queued: a
// cluster still being created keeps CREATE_IN_PROGRESS (the conductor
// converges on the latest desired state), anything else starts an update.
func nextStatus(cur model.Status) model.Status {
	if cur == model.CreateInProgress {
		return cur
	}
	return model.UpdateInProgress
}

func refuseWhileDeleting(c *model.Cluster) error {
	if c.Status == model.DeleteInProgress {
		return conflict("Cluster %s is being deleted (DELETE_IN_PROGRESS); it can no longer be changed.", c.Name)
	}
	return nil
}

func (s *Server) updateCluster(w http.ResponseWriter, r *http.Request) error {
	c, err := s.lookupCluster(r, "cluster:update")
	if err != nil {
		return err
	}
	v := versionOf(r.Context())
	if r.URL.Query().Get("rollback") != "" {
		if _, err := toBool(r.URL.Query().Get("rollback")); err != nil {
			return badRequest("Invalid input for query parameter rollback: expected true or false.")
		}
	}
	// Removing node_count would scale the workers to zero unasked.
	ops, err := requestPatch(r, clusterInternalAttrs, []string{"/cluster_template_id", "/name", "/node_count"})
	if err != nil {
		return err
	}
	fam := familyOf(r)
	ops = fam.clusterPatch(ops)
	updatable := fam.updatable()
	ctx := r.Context()
	ngs, err := s.st.NodeGroupsOf(ctx, []string{c.UUID})
	if err != nil {
		return err
	}
	view := s.clusterDetail(r, c, shapeOf(ngs[c.UUID]), nil)
	updSchema := newSchema("cluster")
	for k := range clusterSchema.fields {
		updSchema.fields[k] = field{name: k, readOnly: true}
	}
	for k, f := range updatable {
		updSchema.fields[k] = f
	}
	var patched struct {
		NodeCount          int               `json:"node_count"`
		HealthStatus       *string           `json:"health_status"`
		HealthStatusReason map[string]string `json:"health_status_reason"`
	}
	for _, o := range ops {
		top := o.Path[1:]
		if i := indexByte(top, '/'); i >= 0 {
			top = top[:i]
		}
		if _, ok := updatable[top]; !ok {
			if _, known := clusterSchema.fields[top]; known {
				return badRequest("cannot change cluster property(ies) %s. Only node_count, health_status and health_status_reason can be updated; use actions/resize or actions/upgrade for the rest.", top)
			}
			return badRequest("Couldn't apply patch: the cluster has no attribute '/%s'.", top)
		}
	}
	changed, err := applyPatch(view, ops, updSchema, v, &patched)
	if err != nil {
		return err
	}
	if err := refuseWhileDeleting(c); err != nil {
		return err
	}
	t := time.Now().UTC()
	ch := store.ClusterChange{Cluster: c}
	var needsOp bool
	var claim *capacityClaim
	for _, f := range changed {
		switch f {
		case "health_status":
			if patched.HealthStatus != nil {
				h := model.Health(*patched.HealthStatus)
				c.HealthStatus = &h
			} else {
				c.HealthStatus = nil
			}
		case "health_status_reason":
			c.HealthStatusReason = patched.HealthStatusReason
		case "node_count":
			if err := requireNodeCount(r, patched.NodeCount); err != nil {
				return err
			}
			worker := defaultWorker(ngs[c.UUID])
			if worker == nil {
				return conflict("Cluster %s has no default-worker node group to resize; use actions/resize with a nodegroup.", c.Name)
			}
			if err := checkBounds(c, worker, patched.NodeCount); err != nil {
				return err
			}
			if err := s.checkClusterSize(r, c, worker, patched.NodeCount); err != nil {
				return err
			}
			if worker.NodeCount == patched.NodeCount {
				// The cluster's node_count sums every worker group; PATCH
				// sets default-worker, which may already have this size.
				continue
			}
			if claim, err = s.checkCapacity(r, nil, c, grows(worker, patched.NodeCount-worker.NodeCount)); err != nil {
				return err
			}
			worker.NodeCount = patched.NodeCount
			worker.Status = nextStatus(worker.Status)
			worker.UpdatedAt = &t
			ch.NodeGroups = append(ch.NodeGroups, worker)
			needsOp = true
		}
	}
	if len(changed) == 0 {
		return fam.writeQueued(s, w, r, c, http.StatusOK)
	}
	before := c.Status
	c.UpdatedAt = &t
	if needsOp {
		c.Status = nextStatus(c.Status)
		ch.Operation = s.newOperation(r, model.OpClusterUpdate, c, "", &model.ClusterUpdatePayload{NodeCount: patched.NodeCount})
	}
	if err := s.applyClusterChange(r, before, ch, claim); err != nil {
		return err
	}
	s.recordCapacityWarning(r, c, claim)
	return fam.writeQueued(s, w, r, c, http.StatusOK)
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

func defaultWorker(ngs []*model.NodeGroup) *model.NodeGroup {
	for _, ng := range ngs {
		if ng.Name == model.DefaultWorkerNodeGroup {
			return ng
		}
	}
	for _, ng := range ngs {
		if ng.IsDefault && ng.Role != model.RoleMaster {
			return ng
		}
	}
	return nil
}

// checkBounds applies to the node count a resize asks for the rules a
// create applies: the control plane follows master_count's, the others
// their node group's bounds.
func checkBounds(c *model.Cluster, ng *model.NodeGroup, n int) error {
	if ng.Role == model.RoleMaster {
		if n < 1 {
			return badRequest("The control plane node group %s needs at least one node; got %d.", ng.Name, n)
		}
		return checkMasterCount(c, n)
	}
	if n < ng.MinNodeCount || (ng.MaxNodeCount != nil && *ng.MaxNodeCount > 0 && n > *ng.MaxNodeCount) {
		return badRequest("Resizing %s outside the allowed range: min_node_count = %d, max_node_count = %s%s", ng.Name, ng.MinNodeCount, intString(ng.MaxNodeCount),
			autoscaledBoundsHint(c, ng))
	}
	return nil
}

// checkMasterCount: several control plane nodes need the load balancer
// that spreads the API across them.
func checkMasterCount(c *model.Cluster, n int) error {
	if n > 1 && !c.MasterLBEnabled {
		return badRequest("master_count must be 1 when master_lb_enabled is False; enable master_lb_enabled to run %d control plane nodes.", n)
	}
	return nil
}

// checkClusterSize refuses a change that would give the cluster more nodes
// than Kubernetes supports: ng (new, or one of the cluster's) with n nodes
// beside the cluster's other node groups.
func (s *Server) checkClusterSize(r *http.Request, c *model.Cluster, ng *model.NodeGroup, n int) error {
	ngs, err := s.st.NodeGroupsOf(r.Context(), []string{c.UUID})
	if err != nil {
		return err
	}
	total := n
	for _, g := range ngs[c.UUID] {
		if g.UUID != ng.UUID {
			total += g.NodeCount
		}
	}
	return checkTotalNodes(total)
}

func checkTotalNodes(total int) error {
	if total > maxNodes {
		return badRequest("The cluster would have %d nodes; Kubernetes supports at most %d nodes in one cluster.", total, maxNodes)
	}
	return nil
}

func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request) error {
	c, err := s.lookupCluster(r, "cluster:delete")
	if err != nil {
		return err
	}
	if c.Status == model.DeleteInProgress {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	t := time.Now().UTC()
	before := c.Status
	c.Status = model.DeleteInProgress
	reason := "Deletion requested"
	c.StatusReason = &reason
	c.UpdatedAt = &t
	op := s.newOperation(r, model.OpClusterDelete, c, "", nil)
	if err := s.applyClusterChange(r, before, store.ClusterChange{Cluster: c, Operation: op}, nil); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
