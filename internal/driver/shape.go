package driver

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
)

// ShapeDefaults are the operator's defaults a cluster's shape falls back on
// where its labels and fields say nothing.
type ShapeDefaults struct {
	// BootVolumeSize (GiB) is the Cinder root volume of virtual node groups
	// without a boot_volume_size label ([driver] boot_volume_size); bare
	// metal boots from its local disks unless its own label asks.
	BootVolumeSize int
	// Node timeouts when the node_startup_timeout and
	// node_unhealthy_timeout labels are not set.
	VMNodeStartupTimeout, BMNodeStartupTimeout     time.Duration
	VMNodeUnhealthyTimeout, BMNodeUnhealthyTimeout time.Duration
	// CreateTimeout and BareMetalCreateTimeout (minutes) are a cluster's
	// create_timeout when the create does not set one ([cluster]
	// create_timeout, bm_create_timeout).
	CreateTimeout, BareMetalCreateTimeout int
	// IronicComputeHosts is how many nova-compute hosts the cloud's Ironic
	// nodes sit behind ([driver] ironic_compute_hosts), when the facts do
	// not say; 0 means one.
	IronicComputeHosts int
}

// ShapeInput is what a cluster's shape is resolved from.
type ShapeInput struct {
	Template   *model.ClusterTemplate
	Cluster    *model.Cluster
	NodeGroups []*model.NodeGroup
	// Facts are what the cloud said about the flavors and images; nil or
	// partial when the cloud could not be asked.
	Facts *facts.Facts
	// Authoritative says Facts hold every flavor and image the cloud has,
	// so one that is not there is a problem (the renderer of a cloud
	// infrastructure); otherwise what Facts lack is decided without them.
	Authoritative bool
	Defaults      ShapeDefaults
}

// Shape is a cluster's effective shape: every decision about its labels
// and node groups that the API's validation, the capacity check, the
// renderer and the conductor share, made once.
type Shape struct {
	// ObjectName names the cluster's objects on the management cluster.
	ObjectName string
	// Labels are the cluster's effective labels: the template's under the
	// cluster's, template-scope labels always from the template.
	Labels labels.Values
	// Groups are the node groups in the order given.
	Groups []*GroupShape
	// ControlPlane is the master node group (nil when there is none).
	ControlPlane *GroupShape
	// OSDistro is the cluster's operating system: the control plane
	// image's os_distro, else the template's cluster_distro (normalised).
	OSDistro string
	// CreateTimeout (minutes) is the create_timeout a create that sets
	// none gets: the bare-metal one when any node group is bare metal.
	CreateTimeout int
	// AutoScaling is the cluster's auto_scaling_enabled label.
	AutoScaling bool
	// APIFloatingIP says the API gets a floating IP on the external
	// network: asked for, and the cloud has floating IPs.
	APIFloatingIP bool
	// UnknownLabels are labels the schema does not know (kept, no effect).
	UnknownLabels []string

	// Problems are what makes the cluster impossible to build as asked,
	// each saying what to change; Warnings what is built but worth saying.
	Problems []string
	Warnings []string
}

// GroupShape is one node group resolved.
type GroupShape struct {
	NodeGroup *model.NodeGroup
	// Name is the node group's name as an RFC 1123 label (topology and
	// server group names).
	Name   string
	Role   string
	Labels labels.Values

	ServerType model.ServerType
	// ServerTypeReason says how the server type was decided.
	ServerTypeReason string

	// FlavorRef is the node group's flavor, else the cluster's, else the
	// template's (master_flavor_id for the control plane).
	FlavorRef string
	Flavor    facts.Flavor
	HasFlavor bool
	// ImageRef is the node group's image, else the template's.
	ImageRef string
	Image    facts.Image
	HasImage bool

	Replicas int
	// Min and Max bound a worker group's size (Max is its node count when
	// it has no max_node_count); Autoscale says the autoscaler moves it.
	Min, Max  int
	Autoscale bool

	BootVolumeSize int
	BootVolumeType string
	BootVolumeAZ   string
	ConfigDrive    bool

	NodeStartupTimeout   time.Duration
	NodeUnhealthyTimeout time.Duration

	// Problems are the shape's problems that concern this node group.
	Problems []string
}

// BareMetal reports whether the group's machines are bare metal.
func (g *GroupShape) BareMetal() bool { return g.ServerType == model.ServerTypeBM }

// BareMetal reports whether any node group is bare metal.
func (s *Shape) BareMetal() bool {
	for _, g := range s.Groups {
		if g.BareMetal() {
			return true
		}
	}
	return false
}

func (s *Shape) problem(format string, args ...any) {
	s.Problems = append(s.Problems, fmt.Sprintf(format, args...))
}

// groupProblem is a problem of one node group.
func (s *Shape) groupProblem(g *GroupShape, format string, args ...any) {
	msg := fmt.Sprintf("node group %s"+format, append([]any{g.NodeGroup.Name}, args...)...)
	g.Problems = append(g.Problems, msg)
	s.Problems = append(s.Problems, msg)
}

func (s *Shape) warn(format string, args ...any) {
	s.Warnings = append(s.Warnings, fmt.Sprintf(format, args...))
}

// Resolve computes a cluster's effective shape. It does no I/O: what the
// cloud says comes in through in.Facts.
func Resolve(in ShapeInput) *Shape {
	ct, c := in.Template, in.Cluster
	if ct == nil {
		ct = &model.ClusterTemplate{}
	}
	if c == nil {
		c = &model.Cluster{}
	}
	s := &Shape{ObjectName: ClusterObjectName(c)}
	if _, err := labels.Validate(ct.Labels); err != nil {
		s.problem("cluster template: %v", err)
	}
	if err := labels.CheckOverrides(ct.Labels, c.Labels, labels.ScopeCluster); err != nil {
		s.problem("%v", err)
	}
	s.Labels = ClusterLabels(ct, c)
	rep, err := labels.Validate(s.Labels)
	if err != nil {
		s.problem("%v", err)
	}
	s.UnknownLabels = rep.Unknown
	s.AutoScaling = s.Labels.Bool(labels.AutoScalingEnabled)

	names := map[string]string{}
	for _, ng := range in.NodeGroups {
		if ng == nil {
			continue
		}
		g := resolveGroup(s, in, ct, c, ng)
		if prev, dup := names[g.Name]; dup {
			s.problem("node groups %s and %s map to the same name %s; rename one", prev, ng.Name, g.Name)
		}
		names[g.Name] = ng.Name
		s.Groups = append(s.Groups, g)
		if g.Role != model.RoleMaster {
			continue
		}
		if s.ControlPlane != nil {
			s.problem("more than one master node group (%s, %s); a cluster has one control plane", s.ControlPlane.NodeGroup.Name, ng.Name)
			continue
		}
		s.ControlPlane = g
	}
	if s.ControlPlane == nil {
		s.problem("the cluster has no master node group")
	} else if n := s.ControlPlane.Replicas; n < 1 || n%2 == 0 {
		s.problem("master_count %d is not valid: the control plane runs etcd and needs an odd number of nodes (1, 3, 5)", n)
	}
	resolveOS(s, ct)
	resolvePlacement(s, in)
	resolveServices(s, in, ct, c)
	s.CreateTimeout = in.Defaults.CreateTimeout
	if ct.ServerType == model.ServerTypeBM || s.BareMetal() {
		s.CreateTimeout = in.Defaults.BareMetalCreateTimeout
	}
	return s
}

// ClusterLabels are the template's labels under the cluster's: merged when
// the cluster asked for it, and template-scope labels always from the
// template.
func ClusterLabels(ct *model.ClusterTemplate, c *model.Cluster) labels.Values {
	own := c.Labels
	if c.MergeLabels {
		own = labels.Merge(ct.Labels, c.Labels)
	}
	return labels.Effective(ct.Labels, own, labels.ScopeCluster)
}

// nodeGroupLabels are the cluster's effective labels under the node
// group's, with the same rules one level down.
func nodeGroupLabels(cluster labels.Values, ng *model.NodeGroup) labels.Values {
	own := ng.Labels
	if ng.MergeLabels {
		own = labels.Merge(cluster, ng.Labels)
	}
	return labels.Effective(cluster, own, labels.ScopeNodeGroup)
}

func resolveGroup(s *Shape, in ShapeInput, ct *model.ClusterTemplate, c *model.Cluster, ng *model.NodeGroup) *GroupShape {
	l := nodeGroupLabels(s.Labels, ng)
	g := &GroupShape{NodeGroup: ng, Role: ng.Role, Name: DNSLabel(ng.Name, 40), Labels: l, Replicas: ng.NodeCount}
	if g.Role == "" {
		g.Role = model.RoleWorker
	}
	if _, err := labels.Validate(l); err != nil {
		s.groupProblem(g, ": %v", err)
	}

	g.FlavorRef = FlavorOf(ct, c, ng)
	g.ImageRef = FirstSet(ng.ImageID, &ct.ImageID)
	g.Flavor, g.HasFlavor = in.Facts.Flavor(g.FlavorRef)
	g.Image, g.HasImage = in.Facts.Image(g.ImageRef)
	if in.Authoritative {
		switch {
		case g.FlavorRef == "":
			s.groupProblem(g, " has no flavor; set flavor_id (or master_flavor_id) on the template, cluster or node group")
		case !g.HasFlavor:
			s.groupProblem(g, ": flavor %s was not found in the cloud", g.FlavorRef)
		}
		if !g.HasImage {
			s.groupProblem(g, ": image %s was not found in the cloud", g.ImageRef)
		}
	}
	resolveServerType(s, g, ct)

	bm := g.BareMetal()
	d := in.Defaults
	n, set := l.LookupInt(labels.BootVolumeSize)
	if set && bm && !ownLabel(s.Labels, ng.Labels, labels.BootVolumeSize) {
		// Bare metal boots from its local disk, and Ironic refuses a
		// Cinder root volume it cannot boot: the template's or cluster's
		// size is meant for the virtual machines of a mixed cluster.
		s.warn("node group %s is bare metal: boot_volume_size=%d of the template or cluster applies to virtual node groups only, so its machines boot from their local disks; give the node group its own boot_volume_size label for a Cinder root volume (Ironic boot from volume)", ng.Name, n)
		set = false
	}
	switch {
	case set:
		g.BootVolumeSize = n
	case !bm && in.Facts.Has().BlockStorage:
		g.BootVolumeSize = d.BootVolumeSize
	}
	g.BootVolumeType = l.String(labels.BootVolumeType)
	g.BootVolumeAZ = l.String(labels.BootVolumeAvailabilityZone)
	if v, set := l.LookupBool(labels.ConfigDrive); set {
		g.ConfigDrive = v
	} else {
		g.ConfigDrive = bm
	}
	g.NodeStartupTimeout = pick(l, labels.NodeStartupTimeout, bm, d.VMNodeStartupTimeout, d.BMNodeStartupTimeout)
	g.NodeUnhealthyTimeout = pick(l, labels.NodeUnhealthyTimeout, bm, d.VMNodeUnhealthyTimeout, d.BMNodeUnhealthyTimeout)
	if g.Role != model.RoleMaster {
		resolveBounds(s, g)
	}
	return g
}

// ownLabel reports whether a node group asks for key itself: it carries a
// value other than the one it inherited from the cluster's labels (node
// groups start with a copy of those).
func ownLabel(clusterLabels, nodeGroupLabels map[string]string, key string) bool {
	v, ok := nodeGroupLabels[key]
	if !ok {
		return false
	}
	inherited, has := clusterLabels[key]
	return !has || inherited != v
}

func pick(l labels.Values, name string, bm bool, vm, metal time.Duration) time.Duration {
	if d, set := l.LookupDuration(name); set {
		return d
	}
	if bm {
		return metal
	}
	return vm
}

// resolveServerType decides vm or bm for a group: an Ironic-backed flavor
// means bare metal; a node group (or a bm template) asking for bare metal
// must have one, and a virtual flavor is refused rather than silently
// landing the nodes on a hypervisor. Without the flavor's facts, what the
// labels and the template ask for decides.
func resolveServerType(s *Shape, g *GroupShape, ct *model.ClusterTemplate) {
	asked := model.ServerType(g.Labels.String(labels.ServerType))
	spec, ironic := g.Flavor.BareMetal()
	switch {
	case g.HasFlavor && ironic && asked == model.ServerTypeVM:
		g.ServerType, g.ServerTypeReason = model.ServerTypeBM, "flavor "+g.FlavorRef+" has "+spec
		s.groupProblem(g, " asks for server_type=vm but flavor %s is Ironic-backed (%s); use a virtual flavor or server_type=bm",
			g.FlavorRef, spec)
	case g.HasFlavor && ironic:
		g.ServerType, g.ServerTypeReason = model.ServerTypeBM, "flavor "+g.FlavorRef+" has "+spec
	case asked == model.ServerTypeBM || (asked == "" && ct.ServerType == model.ServerTypeBM):
		g.ServerType = model.ServerTypeBM
		g.ServerTypeReason = "server_type=bm"
		if g.HasFlavor {
			who, fix := "the bare-metal template", "give the template (master_flavor_id for the control plane) or the cluster an Ironic-backed flavor, or use a vm template whose bare-metal node groups have Ironic-backed flavors"
			if asked != "" {
				who, fix = "the node group's server_type=bm label", "give the node group an Ironic-backed flavor or drop its server_type=bm label"
			}
			s.groupProblem(g, ": flavor %s is not a bare-metal flavor: %s needs an Ironic-backed flavor whose extra specs have resources:CUSTOM_<CLASS>=1 (or baremetal=true); %s",
				g.FlavorRef, who, fix)
		}
	default:
		g.ServerType, g.ServerTypeReason = model.ServerTypeVM, "virtual flavor"
		if asked == model.ServerTypeVM {
			g.ServerTypeReason = "server_type=vm"
		}
	}
}

// resolveBounds reads a worker group's bounds from its min_node_count and
// max_node_count fields (the API fills the default worker's from the
// labels of the same names at create time); without a maximum the group
// may not grow beyond its node count.
func resolveBounds(s *Shape, g *GroupShape) {
	ng := g.NodeGroup
	g.Min, g.Max = ng.MinNodeCount, ng.NodeCount
	if ng.MaxNodeCount != nil && *ng.MaxNodeCount > 0 {
		g.Max = *ng.MaxNodeCount
	}
	if !s.AutoScaling {
		return
	}
	g.Autoscale = true
	if g.Max < g.Min || g.Max < 1 {
		s.groupProblem(g, ": max_node_count %d must be at least 1 and at least min_node_count %d for autoscaling", g.Max, g.Min)
	}
}

// resolveOS decides the cluster's operating system; every node group
// shares it.
func resolveOS(s *Shape, ct *model.ClusterTemplate) {
	if s.ControlPlane != nil && s.ControlPlane.HasImage {
		s.OSDistro = s.ControlPlane.Image.OSDistro()
	}
	if s.OSDistro == "" && ct.ClusterDistro != nil {
		s.OSDistro = facts.NormalizeOSDistro(*ct.ClusterDistro)
	}
	for _, g := range s.Groups {
		if g.HasImage && g.Image.OSDistro() != "" && s.OSDistro != "" && g.Image.OSDistro() != s.OSDistro {
			s.groupProblem(g, ": image %s runs %s but the cluster runs %s; all node groups share one operating system",
				g.ImageRef, g.Image.OSDistro(), s.OSDistro)
		}
	}
}

// FlavorOf is the flavor a node group's nodes get: its own, else the
// cluster's, else the template's (master_flavor_id for the control plane).
func FlavorOf(ct *model.ClusterTemplate, c *model.Cluster, ng *model.NodeGroup) string {
	if ng.Role == model.RoleMaster {
		return FirstSet(ng.FlavorID, c.MasterFlavorID, ct.MasterFlavorID)
	}
	return FirstSet(ng.FlavorID, c.FlavorID, ct.FlavorID)
}

// NodeBounds reads the bounds Magnum takes from the min_node_count and
// max_node_count labels for a cluster's default worker group.
func NodeBounds(l map[string]string) (minNodes int, maxNodes *int, err error) {
	if v, ok := l[labels.MinNodeCount]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			//lint:ignore ST1005 Magnum's wording, which its clients see
			return 0, nil, fmt.Errorf("Label min_node_count must be a whole number >= 0, got %q.", v)
		}
		minNodes = n
	}
	if v, ok := l[labels.MaxNodeCount]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			//lint:ignore ST1005 Magnum's wording, which its clients see
			return 0, nil, fmt.Errorf("Label max_node_count must be a whole number >= 0, got %q.", v)
		}
		if n < minNodes {
			//lint:ignore ST1005 Magnum's wording, which its clients see
			return 0, nil, fmt.Errorf("Label max_node_count (%d) must be >= min_node_count (%d).", n, minNodes)
		}
		maxNodes = &n
	}
	return minNodes, maxNodes, nil
}

// ObjectName names a cluster's objects on the management cluster: its
// name made DNS-safe and cut to 30 characters, then the first 8 hex digits
// of its UUID (unique, at most 39 characters).
func ObjectName(name, uuid string) string {
	id := strings.ReplaceAll(uuid, "-", "")
	if len(id) > 8 {
		id = id[:8]
	}
	return DNSLabel(name, 30) + "-" + id
}

// ClusterObjectName is the name of a cluster's objects: the stack_id the
// API gave it at create time, else what that would have been.
func ClusterObjectName(c *model.Cluster) string {
	if c.StackID != nil && *c.StackID != "" {
		return *c.StackID
	}
	return ObjectName(c.Name, c.UUID)
}

var dnsUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// DNSLabel turns a name into an RFC 1123 label of at most max characters
// that starts with a letter.
func DNSLabel(name string, max int) string {
	n := strings.Trim(dnsUnsafe.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(n) > max {
		n = strings.Trim(n[:max], "-")
	}
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = strings.Trim(("g-" + n), "-")
		if len(n) > max {
			n = strings.Trim(n[:max], "-")
		}
	}
	return n
}

// FirstSet is the first of a chain of optional fields that is set (not
// empty once trimmed): a node group's, else its cluster's, else the
// template's.
func FirstSet(ps ...*string) string {
	for _, p := range ps {
		if p != nil && strings.TrimSpace(*p) != "" {
			return strings.TrimSpace(*p)
		}
	}
	return ""
}
