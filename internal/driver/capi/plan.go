package capi

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Plan is a cluster request resolved against the label schema and the
// cloud facts: every decision the renderer makes, made once, with the
// problems found on the way. Infrastructures read it to write their kinds.
type Plan struct {
	Name      string // Cluster object name (the cluster's stack id)
	Namespace string
	UUID      string
	ProjectID string
	// DisplayName is the name the user gave the cluster.
	DisplayName string

	Template *model.ClusterTemplate
	Cluster  *model.Cluster
	Facts    *driver.Facts
	Labels   labels.Values

	OS          OSProfile
	KubeVersion string

	ControlPlane *Group
	Workers      []*Group

	NetworkDriver string
	PodCIDR       string
	ServiceCIDR   string
	ServiceDomain string
	APIServerPort int

	Network Network

	AutoHealing     bool
	AutoScaling     bool
	ExtraFiles      []labels.File
	CertSANs        []string
	ImageRepository string
	KeystoneAuth    bool
	CinderCSI       bool
	ManilaCSI       bool
	SSHKeyName      string

	Warnings []string
	problems []string
}

// Network is what the plan decided about the cluster's network.
type Network struct {
	// FixedNetworkID/FixedSubnetID are set when the template names an
	// existing network; otherwise the infrastructure creates one with
	// SubnetCIDR.
	FixedNetworkID    string
	FixedSubnetID     string
	SubnetCIDR        string
	DNSNameservers    []string
	ExternalNetworkID string
	// PortSecurity is false when the fixed network has port security
	// disabled, nil when unknown.
	PortSecurity *bool
	// ManagedSecurityGroups says whether the infrastructure manages
	// security groups for the cluster (and puts them on ports).
	ManagedSecurityGroups bool

	LoadBalancer        bool
	APIFloatingIP       bool
	APIServerFloatingIP string
	LBProvider          string
	LBFlavor            string
	LBAvailabilityZone  string
	AllowedCIDRs        []string
	ControlPlaneAZs     []string
}

// Group is one node group resolved: the control plane or a worker group.
type Group struct {
	NodeGroup *model.NodeGroup
	// Name is the topology name (RFC 1123) derived from the node group's.
	Name string
	Role string

	ServerType model.ServerType
	// ServerTypeReason says how the server type was decided.
	ServerTypeReason string

	FlavorRef string
	Flavor    driver.Flavor
	HasFlavor bool
	ImageRef  string
	Image     driver.Image
	HasImage  bool

	Replicas  int
	Autoscale bool
	Min, Max  int

	BootVolumeSize   int
	BootVolumeType   string
	BootVolumeAZ     string
	ConfigDrive      bool
	AvailabilityZone string
	ServerGroup      string
	ServerGroupRule  string

	NodeStartupTimeout   time.Duration
	NodeUnhealthyTimeout time.Duration
	MaxSurge             int

	NodeLabels map[string]string
	Taints     []model.Taint
	Labels     labels.Values
}

// BareMetal reports whether the group's machines are bare metal.
func (g *Group) BareMetal() bool { return g.ServerType == model.ServerTypeBM }

func (p *Plan) problem(format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

func (p *Plan) warn(format string, args ...any) {
	p.Warnings = append(p.Warnings, fmt.Sprintf(format, args...))
}

// Groups lists the control plane, then the workers.
func (p *Plan) Groups() []*Group { return append([]*Group{p.ControlPlane}, p.Workers...) }

var dnsUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsLabel turns a name into an RFC 1123 label of at most max characters.
func dnsLabel(name string, max int) string {
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

// planner holds the driver's options and infrastructure while planning.
type planner struct {
	opts  Options
	infra Infrastructure
}

func (pl planner) plan(req driver.Request) (*Plan, error) {
	if req.Template == nil || req.Cluster == nil {
		return nil, &driver.ValidationError{Problems: []string{"a cluster template and a cluster are required"}}
	}
	ct, c := req.Template, req.Cluster
	p := &Plan{Template: ct, Cluster: c, Facts: req.Facts, Namespace: req.Namespace, UUID: c.UUID,
		ProjectID: c.ProjectID, DisplayName: c.Name}
	if p.Namespace == "" {
		p.Namespace = "magnetite-system"
	}
	p.Name = clusterObjectName(c)
	pl.planLabels(p)
	pl.planGroups(p, req.NodeGroups)
	pl.planOS(p)
	pl.planVersion(p)
	pl.planNetwork(p)
	pl.planAddons(p)
	if len(p.problems) == 0 {
		p.problems = append(p.problems, pl.infra.Validate(p)...)
	}
	if len(p.problems) > 0 {
		return nil, &driver.ValidationError{Problems: p.problems}
	}
	return p, nil
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

func clusterObjectName(c *model.Cluster) string {
	if c.StackID != nil && *c.StackID != "" {
		return *c.StackID
	}
	id := strings.ReplaceAll(c.UUID, "-", "")
	if len(id) > 8 {
		id = id[:8]
	}
	return dnsLabel(c.Name, 30) + "-" + id
}

// clusterLabels are the template's labels under the cluster's: merged when
// the cluster asked for it, and template-scope labels always from the
// template.
func clusterLabels(ct *model.ClusterTemplate, c *model.Cluster) labels.Values {
	own := c.Labels
	if c.MergeLabels {
		own = labels.Merge(ct.Labels, c.Labels)
	}
	return labels.Effective(ct.Labels, own, labels.ScopeCluster)
}

func (pl planner) planLabels(p *Plan) {
	ct, c := p.Template, p.Cluster
	if _, err := labels.Validate(ct.Labels); err != nil {
		p.problem("cluster template: %v", err)
	}
	if err := labels.CheckOverrides(ct.Labels, c.Labels, labels.ScopeCluster); err != nil {
		p.problem("%v", err)
	}
	p.Labels = clusterLabels(ct, c)
	rep, err := labels.Validate(p.Labels)
	if err != nil {
		p.problem("%v", err)
	}
	if len(rep.Unknown) > 0 {
		p.warn("labels %s are not known to Magnetite; they are kept but have no effect", strings.Join(rep.Unknown, ", "))
	}
	p.AutoHealing = p.Labels.Bool(labels.AutoHealingEnabled)
	p.AutoScaling = p.Labels.Bool(labels.AutoScalingEnabled)
	p.CertSANs = p.Labels.List(labels.APIServerCertSANs)
	p.ImageRepository = strings.TrimSuffix(p.Labels.String(labels.ContainerInfraPrefix), "/")
	p.KeystoneAuth = p.Labels.Bool(labels.KeystoneAuthEnabled)
	if files, err := p.Labels.ExtraFiles(); err == nil {
		p.ExtraFiles = files
	}
	if c.Keypair != nil {
		p.SSHKeyName = *c.Keypair
	} else if ct.KeypairID != nil {
		p.SSHKeyName = *ct.KeypairID
	}
}

func (pl planner) planGroups(p *Plan, ngs []*model.NodeGroup) {
	names := map[string]string{}
	for _, ng := range ngs {
		if ng == nil {
			continue
		}
		g := pl.planGroup(p, ng)
		if prev, dup := names[g.Name]; dup {
			p.problem("node groups %s and %s map to the same name %s; rename one", prev, ng.Name, g.Name)
		}
		names[g.Name] = ng.Name
		if ng.Role == model.RoleMaster {
			if p.ControlPlane != nil {
				p.problem("more than one master node group (%s, %s); a cluster has one control plane", p.ControlPlane.NodeGroup.Name, ng.Name)
				continue
			}
			p.ControlPlane = g
			continue
		}
		p.Workers = append(p.Workers, g)
	}
	if p.ControlPlane == nil {
		p.problem("the cluster has no master node group")
		return
	}
	if n := p.ControlPlane.Replicas; n < 1 || n%2 == 0 {
		p.problem("master_count %d is not valid: the control plane runs etcd and needs an odd number of nodes (1, 3, 5)", n)
	}
	sort.SliceStable(p.Workers, func(i, j int) bool {
		wi, wj := p.Workers[i].NodeGroup, p.Workers[j].NodeGroup
		if wi.IsDefault != wj.IsDefault {
			return wi.IsDefault
		}
		return wi.Name < wj.Name
	})
}

func (pl planner) planGroup(p *Plan, ng *model.NodeGroup) *Group {
	ct, c := p.Template, p.Cluster
	own := ng.Labels
	if ng.MergeLabels {
		own = labels.Merge(p.Labels, ng.Labels)
	}
	l := labels.Effective(p.Labels, own, labels.ScopeNodeGroup)
	g := &Group{NodeGroup: ng, Role: ng.Role, Name: dnsLabel(ng.Name, 40), Labels: l, Replicas: ng.NodeCount}
	if ng.Role == "" {
		g.Role = model.RoleWorker
	}
	if _, err := labels.Validate(l); err != nil {
		p.problem("node group %s: %v", ng.Name, err)
	}

	g.FlavorRef = deref(ng.FlavorID)
	if g.FlavorRef == "" {
		if g.Role == model.RoleMaster {
			g.FlavorRef = firstNonEmpty(deref(c.MasterFlavorID), deref(ct.MasterFlavorID))
		} else {
			g.FlavorRef = firstNonEmpty(deref(c.FlavorID), deref(ct.FlavorID))
		}
	}
	g.ImageRef = firstNonEmpty(deref(ng.ImageID), ct.ImageID)
	if g.FlavorRef == "" && pl.infra.NeedsCloud() {
		p.problem("node group %s has no flavor; set flavor_id (or master_flavor_id) on the template, cluster or node group", ng.Name)
	}
	g.Flavor, g.HasFlavor = p.Facts.Flavor(g.FlavorRef)
	g.Image, g.HasImage = p.Facts.Image(g.ImageRef)
	if pl.infra.NeedsCloud() {
		if g.FlavorRef != "" && !g.HasFlavor {
			p.problem("node group %s: flavor %s was not found in the cloud", ng.Name, g.FlavorRef)
		}
		if !g.HasImage {
			p.problem("node group %s: image %s was not found in the cloud", ng.Name, g.ImageRef)
		}
	}
	pl.planServerType(p, g, ct)

	bm := g.BareMetal()
	n, set := l.LookupInt(labels.BootVolumeSize)
	if set && bm && !ownLabel(p.Labels, ng.Labels, labels.BootVolumeSize) {
		// Bare metal boots from its local disk, and Ironic refuses a
		// Cinder root volume it cannot boot: the template's or cluster's
		// size is meant for the virtual machines of a mixed cluster.
		p.warn("node group %s is bare metal: boot_volume_size=%d of the template or cluster applies to virtual node groups only, so its machines boot from their local disks; give the node group its own boot_volume_size label for a Cinder root volume (Ironic boot from volume)", ng.Name, n)
		set = false
	}
	switch {
	case set:
		g.BootVolumeSize = n
	case !bm:
		g.BootVolumeSize = pl.opts.DefaultBootVolumeSize
	}
	g.BootVolumeType = l.String(labels.BootVolumeType)
	g.BootVolumeAZ = l.String(labels.BootVolumeAvailabilityZone)
	if v, set := l.LookupBool(labels.ConfigDrive); set {
		g.ConfigDrive = v
	} else {
		g.ConfigDrive = bm
	}
	g.AvailabilityZone = l.String(labels.AvailabilityZone)
	g.ServerGroupRule = l.String(labels.ServerGroupPolicies)
	g.ServerGroup = p.Name + "-" + g.Name
	g.NodeStartupTimeout = pick(l, labels.NodeStartupTimeout, bm, pl.opts.VMNodeStartupTimeout, pl.opts.BMNodeStartupTimeout)
	g.NodeUnhealthyTimeout = pick(l, labels.NodeUnhealthyTimeout, bm, pl.opts.VMNodeUnhealthyTimeout, pl.opts.BMNodeUnhealthyTimeout)
	if n, set := l.LookupInt(labels.RolloutMaxSurge); set {
		g.MaxSurge = n
	} else if !bm {
		g.MaxSurge = 1
	}

	g.NodeLabels = map[string]string{}
	for k, v := range ng.NodeLabels {
		g.NodeLabels[k] = v
	}
	g.NodeLabels["magnetite.io/server-type"] = string(g.ServerType)
	g.NodeLabels["magnetite.io/nodegroup"] = g.Name
	g.NodeLabels["magnetite.io/nodegroup-role"] = dnsLabel(g.Role, 63)
	g.Taints = append(g.Taints, ng.NodeTaints...)

	if g.Role != model.RoleMaster {
		pl.planScaling(p, g)
	}
	return g
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

// planServerType decides vm or bm for a group: an Ironic-backed flavor
// means bare metal; a node group (or a bm template) asking for bare metal
// must have one, and a virtual flavor is refused rather than silently
// landing the nodes on a hypervisor.
func (pl planner) planServerType(p *Plan, g *Group, ct *model.ClusterTemplate) {
	asked := model.ServerType(g.Labels.String(labels.ServerType))
	spec, ironic := g.Flavor.BareMetal()
	switch {
	case g.HasFlavor && ironic && asked == model.ServerTypeVM:
		p.problem("node group %s asks for server_type=vm but flavor %s is Ironic-backed (%s); use a virtual flavor or server_type=bm",
			g.NodeGroup.Name, g.FlavorRef, spec)
	case g.HasFlavor && ironic:
		g.ServerType, g.ServerTypeReason = model.ServerTypeBM, "flavor "+g.FlavorRef+" has "+spec
	case asked == model.ServerTypeBM || (asked == "" && ct.ServerType == model.ServerTypeBM):
		g.ServerType = model.ServerTypeBM
		g.ServerTypeReason = "server_type=bm"
		if g.HasFlavor {
			who := "the bare-metal template"
			if asked != "" {
				who = "the node group's server_type=bm label"
			}
			p.problem("node group %s: flavor %s is not a bare-metal flavor: %s needs an Ironic-backed flavor whose extra specs have resources:CUSTOM_<CLASS>=1 (or baremetal=true)",
				g.NodeGroup.Name, g.FlavorRef, who)
		}
	default:
		g.ServerType, g.ServerTypeReason = model.ServerTypeVM, "virtual flavor"
		if asked == model.ServerTypeVM {
			g.ServerTypeReason = "server_type=vm"
		}
	}
}

// planScaling reads a worker group's bounds from its min_node_count and
// max_node_count fields (the API fills the default worker's from the
// labels of the same names at create time); without a maximum the group
// may not grow beyond its node count.
func (pl planner) planScaling(p *Plan, g *Group) {
	ng := g.NodeGroup
	g.Min, g.Max = ng.MinNodeCount, ng.NodeCount
	if ng.MaxNodeCount != nil && *ng.MaxNodeCount > 0 {
		g.Max = *ng.MaxNodeCount
	}
	if !p.AutoScaling {
		return
	}
	g.Autoscale = true
	if g.Max < g.Min || g.Max < 1 {
		p.problem("node group %s: max_node_count %d must be at least 1 and at least min_node_count %d for autoscaling", ng.Name, g.Max, g.Min)
	}
}

func (pl planner) planOS(p *Plan) {
	distro := ""
	if p.ControlPlane != nil && p.ControlPlane.HasImage {
		distro = p.ControlPlane.Image.OSDistro()
	}
	if distro == "" && p.Template.ClusterDistro != nil {
		distro = driver.NormalizeOSDistro(*p.Template.ClusterDistro)
	}
	os, ok := osProfiles[distro]
	if !ok {
		p.problem("os_distro %q is not supported; use an image whose os_distro is one of %s", distro, strings.Join(SupportedOS(), ", "))
		return
	}
	p.OS = os
	for _, g := range p.Groups() {
		if g != nil && g.HasImage && g.Image.OSDistro() != "" && g.Image.OSDistro() != distro {
			p.problem("node group %s: image %s runs %s but the cluster runs %s; all node groups share one operating system",
				g.NodeGroup.Name, g.ImageRef, g.Image.OSDistro(), distro)
		}
	}
}

var kubeVersionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)`)

func (pl planner) planVersion(p *Plan) {
	v := p.Labels.String(labels.KubeTag)
	source := "label kube_tag"
	if v == "" && p.ControlPlane != nil && p.ControlPlane.HasImage {
		v, source = p.ControlPlane.Image.KubeVersion(), "the kube_version property of image "+p.ControlPlane.ImageRef
	}
	if v == "" {
		p.problem("the Kubernetes version is unknown: set the kube_tag label or the image's kube_version property")
		return
	}
	if !kubeVersionRE.MatchString(v) {
		p.problem("Kubernetes version %q from %s is not a version such as v1.33.1", v, source)
		return
	}
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	p.KubeVersion = v
}

// KubeMinor returns "1.33" for v1.33.1.
func (p *Plan) KubeMinor() string {
	m := kubeVersionRE.FindStringSubmatch(p.KubeVersion)
	if m == nil {
		return ""
	}
	return m[1] + "." + m[2]
}

func (pl planner) planNetwork(p *Plan) {
	ct, c, l := p.Template, p.Cluster, p.Labels
	p.NetworkDriver = "calico"
	if ct.NetworkDriver != nil && *ct.NetworkDriver != "" {
		p.NetworkDriver = *ct.NetworkDriver
	}
	switch p.NetworkDriver {
	case "calico":
		p.PodCIDR = l.String(labels.CalicoIPv4Pool)
	case "cilium":
		p.PodCIDR = l.String(labels.CiliumIPv4Pool)
	default:
		p.problem("network_driver %s is not supported by the Cluster API driver; use calico or cilium", p.NetworkDriver)
	}
	p.ServiceCIDR = l.String(labels.ServiceClusterIPRange)
	p.ServiceDomain = l.String(labels.DNSClusterDomain)
	if ct.APIServerPort != nil {
		p.APIServerPort = *ct.APIServerPort
	}

	n := &p.Network
	n.SubnetCIDR = l.String(labels.FixedSubnetCIDR)
	if ct.DNSNameserver != nil {
		for _, s := range strings.Split(*ct.DNSNameserver, ",") {
			if s = strings.TrimSpace(s); s != "" {
				n.DNSNameservers = append(n.DNSNameservers, s)
			}
		}
	}
	if fixed := firstNonEmpty(deref(c.FixedNetwork), deref(ct.FixedNetwork)); fixed != "" {
		net, ok := p.Facts.Network(fixed)
		switch {
		case ok:
			n.FixedNetworkID, n.PortSecurity = net.ID, net.PortSecurityEnabled
		case pl.infra.NeedsCloud():
			p.problem("fixed_network %s was not found in the cloud", fixed)
		default:
			n.FixedNetworkID = fixed
		}
		n.FixedSubnetID = firstNonEmpty(deref(c.FixedSubnet), deref(ct.FixedSubnet))
	}
	if ext := deref(ct.ExternalNetworkID); ext != "" {
		net, ok := p.Facts.Network(ext)
		switch {
		case ok:
			n.ExternalNetworkID = net.ID
		case pl.infra.NeedsCloud():
			p.problem("external_network_id %s was not found in the cloud", ext)
		default:
			n.ExternalNetworkID = ext
		}
	}
	portSecurityOff := n.PortSecurity != nil && !*n.PortSecurity
	switch l.String(labels.ManagedSecurityGroups) {
	case "true":
		n.ManagedSecurityGroups = true
		if portSecurityOff {
			p.warn("managed_security_groups=true on network %s, whose port security is disabled: Neutron will refuse the security groups on the nodes' ports", n.FixedNetworkID)
		}
	case "false":
		n.ManagedSecurityGroups = false
	default:
		// Neutron rejects security groups on ports of a network without
		// port security (PortSecurityAndIPRequiredForSecurityGroups), which
		// is how bare-metal provisioning networks are usually set up.
		n.ManagedSecurityGroups = !portSecurityOff
	}

	n.LoadBalancer = c.MasterLBEnabled
	n.APIFloatingIP = c.FloatingIPEnabled && l.Bool(labels.MasterLBFloatingIPEnabled) && n.ExternalNetworkID != ""
	n.APIServerFloatingIP = l.String(labels.APIServerFloatingIP)
	n.LBProvider = l.String(labels.OctaviaProvider)
	n.LBFlavor = l.String(labels.APIServerLBFlavor)
	n.LBAvailabilityZone = l.String(labels.APIServerLBAvailabilityZone)
	n.AllowedCIDRs = l.List(labels.APIMasterLBAllowedCIDRs)
	n.ControlPlaneAZs = l.List(labels.ControlPlaneAvailabilityZone)
	if n.APIServerFloatingIP != "" && !n.APIFloatingIP {
		p.problem("label api_server_floating_ip is set but the API gets no floating IP; enable floating_ip_enabled and master_lb_floating_ip_enabled and set an external network")
	}
}

func (pl planner) planAddons(p *Plan) {
	allBM := len(p.Groups()) > 0
	for _, g := range p.Groups() {
		if g == nil || !g.BareMetal() {
			allBM = false
		}
	}
	if v, set := p.Labels.LookupBool(labels.CinderCSIEnabled); set {
		p.CinderCSI = v
	} else {
		// Cinder volumes attach to VMs; Ironic nodes rarely can attach them.
		p.CinderCSI = !allBM
	}
	p.ManilaCSI = p.Labels.Bool(labels.ManilaCSIEnabled)
	if allBM && p.CinderCSI && p.Labels.IsSet(labels.CinderCSIEnabled) {
		p.warn("cinder_csi_enabled=true on a bare-metal-only cluster: Cinder volumes attach only where Ironic supports volume attachment; Manila (manila_csi_enabled) is the usual choice")
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
