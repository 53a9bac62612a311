package capi

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/facts"
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

	// Versions are the API versions the objects are rendered at.
	Versions APIVersions

	Template *model.ClusterTemplate
	Cluster  *model.Cluster
	Facts    *facts.Facts
	Labels   labels.Values
	// ObjectLabels are the ownership labels every object carries
	// (driver.Request.Labels), the topology's metadata included.
	ObjectLabels map[string]string

	OS          OSProfile
	KubeVersion string

	ControlPlane *Group
	Workers      []*Group

	// Kept is what a rebased cluster keeps as its driver built it
	// (driver.Request.Kept).
	Kept *model.KeptInfrastructure

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
	// NoExternalNetwork: the cloud has no routers (Neutron without its L3
	// extension), so the cluster's network is not connected to one.
	NoExternalNetwork bool
}

// Group is one node group resolved: the control plane or a worker group.
// Its shape (flavor, image, server type, boot volume, timeouts, bounds) is
// the resolver's (driver.Resolve); the rest is how this renderer places it.
type Group struct {
	*driver.GroupShape

	AvailabilityZone string
	ServerGroup      string
	ServerGroupRule  string
	MaxSurge         int

	NodeLabels map[string]string
	Taints     []model.Taint
}

func (p *Plan) problem(format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

func (p *Plan) warn(format string, args ...any) {
	p.Warnings = append(p.Warnings, fmt.Sprintf(format, args...))
}

// Groups lists the control plane, then the workers.
func (p *Plan) Groups() []*Group { return append([]*Group{p.ControlPlane}, p.Workers...) }

// planner holds the driver's options and infrastructure while planning.
type planner struct {
	opts  Options
	infra Infrastructure
}

func (pl planner) plan(req driver.Request, v APIVersions) (*Plan, error) {
	if req.Template == nil || req.Cluster == nil {
		return nil, &driver.ValidationError{Problems: []string{"a cluster template and a cluster are required"}}
	}
	ct, c := req.Template, req.Cluster
	p := &Plan{Versions: v, ObjectLabels: req.Labels, Template: ct, Cluster: c, Facts: req.Facts, Namespace: req.Namespace, UUID: c.UUID,
		ProjectID: c.ProjectID, DisplayName: c.Name}
	if p.Namespace == "" {
		p.Namespace = "magnetite-system"
	}
	in := driver.ShapeInput{Template: ct, Cluster: c, NodeGroups: req.NodeGroups, Facts: req.Facts,
		Authoritative: pl.infra.NeedsCloud(), Defaults: pl.opts.shapeDefaults()}
	shape := driver.Resolve(in)
	p.Name = shape.ObjectName
	p.problems = append(p.problems, shape.Problems...)
	if sc, ok := pl.infra.(driver.ShapeChecker); ok {
		p.problems = append(p.problems, sc.CheckShape(in, shape)...)
	}
	pl.planLabels(p, shape)
	pl.planGroups(p, shape)
	pl.planOS(p, shape)
	pl.planVersion(p)
	pl.planNetwork(p, shape)
	p.Kept = req.Kept
	keepClusterNetwork(p)
	pl.planAddons(p)
	if len(p.problems) == 0 {
		p.problems = append(p.problems, pl.infra.Validate(p)...)
	}
	if len(p.problems) > 0 {
		return nil, &driver.ValidationError{Problems: p.problems}
	}
	return p, nil
}

func (pl planner) planLabels(p *Plan, shape *driver.Shape) {
	ct, c := p.Template, p.Cluster
	p.Labels = shape.Labels
	if len(shape.UnknownLabels) > 0 {
		p.warn("labels %s are not known to Magnetite; they are kept but have no effect", strings.Join(shape.UnknownLabels, ", "))
	}
	p.Warnings = append(p.Warnings, shape.Warnings...)
	p.AutoHealing = p.Labels.Bool(labels.AutoHealingEnabled)
	p.AutoScaling = shape.AutoScaling
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

func (pl planner) planGroups(p *Plan, shape *driver.Shape) {
	for _, gs := range shape.Groups {
		g := pl.planGroup(p, gs)
		if gs == shape.ControlPlane {
			p.ControlPlane = g
		} else if gs.Role != model.RoleMaster {
			p.Workers = append(p.Workers, g)
		}
	}
	sort.SliceStable(p.Workers, func(i, j int) bool {
		wi, wj := p.Workers[i].NodeGroup, p.Workers[j].NodeGroup
		if wi.IsDefault != wj.IsDefault {
			return wi.IsDefault
		}
		return wi.Name < wj.Name
	})
}

func (pl planner) planGroup(p *Plan, gs *driver.GroupShape) *Group {
	ng, l := gs.NodeGroup, gs.Labels
	g := &Group{GroupShape: gs}
	g.AvailabilityZone = l.String(labels.AvailabilityZone)
	g.ServerGroupRule = l.String(labels.ServerGroupPolicies)
	g.ServerGroup = p.Name + "-" + g.Name
	if n, set := l.LookupInt(labels.RolloutMaxSurge); set {
		g.MaxSurge = n
	} else if !g.BareMetal() {
		g.MaxSurge = 1
	}

	g.NodeLabels = map[string]string{}
	for k, v := range ng.NodeLabels {
		g.NodeLabels[k] = v
	}
	g.NodeLabels["magnetite.io/server-type"] = string(g.ServerType)
	g.NodeLabels["magnetite.io/nodegroup"] = g.Name
	g.NodeLabels["magnetite.io/nodegroup-role"] = driver.DNSLabel(g.Role, 63)
	g.Taints = append(g.Taints, ng.NodeTaints...)
	return g
}

func (pl planner) planOS(p *Plan, shape *driver.Shape) {
	os, ok := osProfiles[shape.OSDistro]
	if !ok {
		p.problem("os_distro %q is not supported; use an image whose os_distro is one of %s", shape.OSDistro, strings.Join(SupportedOS(), ", "))
		return
	}
	p.OS = os
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

func (pl planner) planNetwork(p *Plan, shape *driver.Shape) {
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
	if fixed := driver.FirstSet(c.FixedNetwork, ct.FixedNetwork); fixed != "" {
		net, ok := p.Facts.Network(fixed)
		switch {
		case ok:
			n.FixedNetworkID, n.PortSecurity = net.ID, net.PortSecurityEnabled
		case pl.infra.NeedsCloud():
			p.problem("fixed_network %s was not found in the cloud", fixed)
		default:
			n.FixedNetworkID = fixed
		}
		n.FixedSubnetID = driver.FirstSet(c.FixedSubnet, ct.FixedSubnet)
	}
	if ext := driver.FirstSet(ct.ExternalNetworkID); ext != "" {
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
	if !p.Facts.Has().FloatingIPs {
		// Without Neutron's routers CAPO must not look up an external
		// network and route the cluster's network to it.
		n.ExternalNetworkID, n.NoExternalNetwork = "", true
	}
	n.APIFloatingIP = shape.APIFloatingIP && n.ExternalNetworkID != ""
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
		p.CinderCSI = !allBM && p.Facts.Has().BlockStorage
	}
	p.ManilaCSI = p.Labels.Bool(labels.ManilaCSIEnabled)
	if allBM && p.CinderCSI && p.Labels.IsSet(labels.CinderCSIEnabled) {
		p.warn("cinder_csi_enabled=true on a bare-metal-only cluster: Cinder volumes attach only where Ironic supports volume attachment; Manila (manila_csi_enabled) is the usual choice")
	}
}

// KeepsAddons says the workload keeps the addons its driver installed
// (a rebased cluster's): Magnetite delivers none, nor their Secrets.
func (p *Plan) KeepsAddons() bool { return p.Kept != nil && p.Kept.Addons }

// keepClusterNetwork takes a rebased cluster's pod and service ranges, DNS
// domain and API server port from its Cluster as its driver made it: the
// nodes' kubeadm configuration follows them, and changing them would break
// the running workload.
func keepClusterNetwork(p *Plan) {
	if p.Kept == nil || p.Kept.ClusterNetwork == nil {
		return
	}
	n := p.Kept.ClusterNetwork
	first := func(path ...string) string {
		blocks, _ := NestedValue(n, path...).([]any)
		if len(blocks) == 0 {
			return ""
		}
		s, _ := blocks[0].(string)
		return s
	}
	if c := first("pods", "cidrBlocks"); c != "" {
		p.PodCIDR = c
	}
	if c := first("services", "cidrBlocks"); c != "" {
		p.ServiceCIDR = c
	}
	if d, _ := n["serviceDomain"].(string); d != "" {
		p.ServiceDomain = d
	}
	switch port := n["apiServerPort"].(type) {
	case int64:
		p.APIServerPort = int(port)
	case float64:
		p.APIServerPort = int(port)
	}
}
