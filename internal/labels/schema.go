package labels

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Type is the form a label's value takes.
type Type string

const (
	TypeString     Type = "string"
	TypeBool       Type = "boolean"
	TypeInt        Type = "integer"
	TypeDuration   Type = "duration"
	TypeCIDR       Type = "cidr"
	TypeIP         Type = "ip"
	TypeVersion    Type = "version"
	TypeEnum       Type = "enum"
	TypeList       Type = "list"
	TypeExtraFiles Type = "extra_files"
)

// Scope is the most specific level at which a label may be set: a
// template-scope label comes only from the cluster template, a cluster-scope
// label may be overridden by a cluster, a nodegroup-scope label also by a
// node group.
type Scope int

const (
	ScopeTemplate Scope = iota
	ScopeCluster
	ScopeNodeGroup
)

func (s Scope) String() string {
	switch s {
	case ScopeTemplate:
		return "template"
	case ScopeCluster:
		return "cluster"
	case ScopeNodeGroup:
		return "nodegroup"
	}
	return "unknown"
}

// Label describes one supported label.
type Label struct {
	Name string
	Type Type
	// Default is the value used when the label is not set; "" means the
	// label has no static default (DefaultDoc then says what happens).
	Default    string
	DefaultDoc string
	Scope      Scope
	// Description is one line for the label table.
	Description string
	// Form is the expected form, quoted in errors ("a whole number >= 0").
	Form string
	Enum []string
	// Elem checks each element of a list label.
	Elem func(string) error
	// Check validates a non-empty value after its type is known to fit.
	Check func(string) error
}

// ErrInvalid is wrapped by every label validation error.
var ErrInvalid = errors.New("labels: invalid value")

// FieldError says which label is wrong and what form it should take.
type FieldError struct {
	Label    string
	Value    string
	Expected string
}

func (e *FieldError) Error() string {
	v := e.Value
	if len(v) > 64 {
		v = v[:61] + "..."
	}
	return fmt.Sprintf("label %s=%q is invalid: expected %s", e.Label, v, e.Expected)
}

func (e *FieldError) Unwrap() error { return ErrInvalid }

// ValidationError collects every invalid label of one request, so a user
// fixes them all in one go.
type ValidationError []*FieldError

func (e ValidationError) Error() string {
	parts := make([]string, len(e))
	for i, f := range e {
		parts[i] = f.Error()
	}
	return strings.Join(parts, "; ")
}

func (e ValidationError) Unwrap() error { return ErrInvalid }

// Report is what validation learned besides errors.
type Report struct {
	// Unknown lists labels the schema does not describe, sorted. They are
	// kept on the object and passed through; Magnetite does not act on them.
	Unknown []string
}

var (
	versionRE  = regexp.MustCompile(`^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$`)
	nameRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,254}$`)
	domainRE   = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$`)
	uuidRE     = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)
	registryRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d+)?(/[a-z0-9._-]+)*/?$`)
)

func checkRE(re *regexp.Regexp) func(string) error {
	return func(s string) error {
		if !re.MatchString(s) {
			return errors.New("no match")
		}
		return nil
	}
}

func checkCIDR(s string) error {
	_, _, err := net.ParseCIDR(s)
	return err
}

func checkHostOrIP(s string) error {
	if net.ParseIP(s) != nil || domainRE.MatchString(strings.ToLower(s)) {
		return nil
	}
	return errors.New("not a host name or IP")
}

var (
	ifaceRE        = regexp.MustCompile(`^[A-Za-z0-9._-]{1,15}$`)
	hexDigestRE    = regexp.MustCompile(`^[0-9a-fA-F]{32,128}$`)
	labelKeyRE     = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelValueRE   = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
	nodeGroupIdxRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*:[0-9]{1,6}$`)
)

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an http(s) URL")
	}
	return nil
}

func checkChecksum(s string) error {
	if hexDigestRE.MatchString(s) {
		return nil
	}
	return checkHTTPURL(s)
}

// checkSelectorTerm checks one key=value of a host selector.
func checkSelectorTerm(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(v) {
		return errors.New("not key=value")
	}
	return nil
}

// checkPoolRange checks START-END (one family, START <= END) or a CIDR.
func checkPoolRange(s string) error {
	if strings.Contains(s, "/") {
		return checkCIDR(s)
	}
	a, b, ok := strings.Cut(s, "-")
	start, err1 := netip.ParseAddr(a)
	end, err2 := netip.ParseAddr(b)
	if !ok || err1 != nil || err2 != nil || start.Is4() != end.Is4() || end.Less(start) {
		return errors.New("not a range")
	}
	return nil
}

// checkPreallocation checks NODEGROUP:INDEX=IP.
func checkPreallocation(s string) error {
	k, ip, ok := strings.Cut(s, "=")
	if !ok || !nodeGroupIdxRE.MatchString(k) || ipCheck(ip) != nil {
		return errors.New("not NODEGROUP:INDEX=IP")
	}
	return nil
}

// Constructors for the common label shapes keep the table readable.
func boolLabel(name, def string, scope Scope, desc string) Label {
	return Label{Name: name, Type: TypeBool, Default: def, Scope: scope, Description: desc, Form: "true or false"}
}

// pinnedDoc is the default of the addon version labels.
const pinnedDoc = "pinned for the cluster's Kubernetes minor"

func versionLabel(name, def, defDoc string, scope Scope, desc string) Label {
	return Label{Name: name, Type: TypeVersion, Default: def, DefaultDoc: defDoc, Scope: scope, Description: desc,
		Form: "a version such as v1.2.3", Check: checkRE(versionRE)}
}

func cidrLabel(name, def string, scope Scope, desc string) Label {
	return Label{Name: name, Type: TypeCIDR, Default: def, Scope: scope, Description: desc,
		Form: "a CIDR such as 10.100.0.0/16", Check: checkCIDR}
}

func nameLabel(name string, scope Scope, defDoc, desc string) Label {
	return Label{Name: name, Type: TypeString, DefaultDoc: defDoc, Scope: scope, Description: desc,
		Form: "a name or ID (letters, digits, '_', '.', ':' and '-')", Check: checkRE(nameRE)}
}

// Names of labels the renderer reads. Using the constants keeps a typo from
// silently reading a default.
const (
	KubeTag                      = "kube_tag"
	ContainerInfraPrefix         = "container_infra_prefix"
	MasterLBFloatingIPEnabled    = "master_lb_floating_ip_enabled"
	APIServerFloatingIP          = "api_server_floating_ip"
	APIServerLBFlavor            = "api_server_lb_flavor"
	APIServerLBAvailabilityZone  = "api_server_lb_availability_zone"
	APIMasterLBAllowedCIDRs      = "api_master_lb_allowed_cidrs"
	APIServerCertSANs            = "api_server_cert_sans"
	OctaviaProvider              = "octavia_provider"
	CalicoTag                    = "calico_tag"
	CiliumTag                    = "cilium_tag"
	CalicoIPv4Pool               = "calico_ipv4pool"
	CiliumIPv4Pool               = "cilium_ipv4pool"
	ServiceClusterIPRange        = "service_cluster_ip_range"
	DNSClusterDomain             = "dns_cluster_domain"
	FixedSubnetCIDR              = "fixed_subnet_cidr"
	KeystoneAuthEnabled          = "keystone_auth_enabled"
	CinderCSIEnabled             = "cinder_csi_enabled"
	ManilaCSIEnabled             = "manila_csi_enabled"
	ManilaCSIShareNetworkID      = "manila_csi_share_network_id"
	CloudProviderTag             = "cloud_provider_tag"
	CinderCSIPluginTag           = "cinder_csi_plugin_tag"
	ManilaCSIPluginTag           = "manila_csi_plugin_tag"
	K8sKeystoneAuthTag           = "k8s_keystone_auth_tag"
	MetricsServerEnabled         = "metrics_server_enabled"
	AvailabilityZone             = "availability_zone"
	ControlPlaneAvailabilityZone = "control_plane_availability_zones"
	BootVolumeSize               = "boot_volume_size"
	BootVolumeType               = "boot_volume_type"
	BootVolumeAvailabilityZone   = "boot_volume_availability_zone"
	ServerGroupPolicies          = "server_group_policies"
	AutoHealingEnabled           = "auto_healing_enabled"
	AutoScalingEnabled           = "auto_scaling_enabled"
	AutoscalerTag                = "autoscaler_tag"
	MinNodeCount                 = "min_node_count"
	MaxNodeCount                 = "max_node_count"
	ExtraFilesLabel              = "extra_files"
	ManagedSecurityGroups        = "managed_security_groups"
	ConfigDrive                  = "config_drive"
	NodeStartupTimeout           = "node_startup_timeout"
	NodeUnhealthyTimeout         = "node_unhealthy_timeout"
	ServerType                   = "server_type"
	RolloutMaxSurge              = "rollout_max_surge"
	WorkloadCleanup              = "workload_cleanup"

	// Labels of clusters on Metal3 hosts (driver capi-metal3).
	HostSelector          = "host_selector"
	HostInterface         = "host_interface"
	NodeReuse             = "node_reuse"
	AutomatedCleaningMode = "automated_cleaning_mode"
	ImageURL              = "image_url"
	ImageChecksum         = "image_checksum"
	ImageChecksumType     = "image_checksum_type"
	ImageFormat           = "image_format"
	APIVIP                = "api_vip"
	KubeVIPTag            = "kube_vip_tag"
	IPPoolRanges          = "ip_pool_ranges"
	IPPoolPrefix          = "ip_pool_prefix"
	IPPoolGateway         = "ip_pool_gateway"
	IPPoolPreallocations  = "ip_pool_preallocations"
)

// schema is every label Magnetite understands, in documentation order.
var schema = []Label{
	versionLabel(KubeTag, "", "the image's kube_version property", ScopeCluster,
		"Kubernetes version of the cluster; changing it on upgrade rolls the control plane, then the workers."),
	{Name: ContainerInfraPrefix, Type: TypeString, DefaultDoc: "upstream registries", Scope: ScopeCluster,
		Description: "Registry prefix (a private mirror) that Kubernetes and addon images are pulled from.",
		Form:        "a registry path such as registry.example.com:5000/k8s/", Check: checkRE(registryRE)},
	boolLabel(MasterLBFloatingIPEnabled, "true", ScopeCluster,
		"Give the API load balancer a floating IP on the external network."),
	{Name: APIServerFloatingIP, Type: TypeIP, DefaultDoc: "allocated", Scope: ScopeCluster,
		Description: "Existing floating IP to use for the Kubernetes API.", Form: "an IP address",
		Check: func(s string) error { return ipCheck(s) }},
	nameLabel(APIServerLBFlavor, ScopeCluster, "the cloud's default", "Octavia flavor of the API load balancer."),
	nameLabel(APIServerLBAvailabilityZone, ScopeCluster, "the cloud's default", "Availability zone of the API load balancer."),
	{Name: APIMasterLBAllowedCIDRs, Type: TypeList, DefaultDoc: "any source", Scope: ScopeCluster,
		Description: "Comma-separated CIDRs allowed to reach the Kubernetes API through the load balancer.",
		Form:        "comma-separated CIDRs such as 192.0.2.0/24,198.51.100.7/32", Elem: checkCIDR},
	{Name: APIServerCertSANs, Type: TypeList, Scope: ScopeCluster,
		Description: "Extra host names or IPs in the API server certificate.",
		Form:        "comma-separated host names or IP addresses", Elem: checkHostOrIP},
	nameLabel(OctaviaProvider, ScopeCluster, "the cloud's default", "Octavia provider of the API load balancer (amphora, ovn, ...)."),
	versionLabel(CalicoTag, "", pinnedDoc, ScopeTemplate,
		"Calico version (network_driver=calico): one of the versions pinned in docs/addons.md."),
	versionLabel(CiliumTag, "", pinnedDoc, ScopeTemplate,
		"Cilium version (network_driver=cilium): one of the versions pinned in docs/addons.md."),
	cidrLabel(CalicoIPv4Pool, "10.100.0.0/16", ScopeCluster, "Pod network CIDR with Calico."),
	cidrLabel(CiliumIPv4Pool, "10.100.0.0/16", ScopeCluster, "Pod network CIDR with Cilium."),
	cidrLabel(ServiceClusterIPRange, "10.254.0.0/16", ScopeCluster, "Service CIDR; must not overlap the pod or node networks."),
	{Name: DNSClusterDomain, Type: TypeString, Default: "cluster.local", Scope: ScopeCluster,
		Description: "DNS domain of Services inside the cluster.", Form: "a DNS domain such as cluster.local",
		Check: checkRE(domainRE)},
	cidrLabel(FixedSubnetCIDR, "10.0.0.0/24", ScopeCluster, "Node subnet CIDR when Magnetite creates the cluster network (no fixed_network)."),
	boolLabel(KeystoneAuthEnabled, "false", ScopeCluster,
		"Authenticate Kubernetes API users with Keystone tokens (k8s-keystone-auth webhook)."),
	{Name: CinderCSIEnabled, Type: TypeBool, DefaultDoc: "true; false when every node group is bare metal", Scope: ScopeCluster,
		Description: "Install the Cinder CSI driver and a default StorageClass.", Form: "true or false"},
	boolLabel(ManilaCSIEnabled, "false", ScopeCluster,
		"Install the Manila CSI driver (shared file systems; the usual storage for bare-metal nodes)."),
	{Name: ManilaCSIShareNetworkID, Type: TypeString, Scope: ScopeCluster,
		Description: "Manila share network for the Manila StorageClass (needed with manila_csi_enabled).",
		Form:        "a share network UUID", Check: checkRE(uuidRE)},
	versionLabel(CloudProviderTag, "", pinnedDoc, ScopeTemplate, "OpenStack cloud controller manager version: one of the versions pinned in docs/addons.md."),
	versionLabel(CinderCSIPluginTag, "", pinnedDoc, ScopeTemplate, "Cinder CSI plugin version: one of the versions pinned in docs/addons.md."),
	versionLabel(ManilaCSIPluginTag, "", pinnedDoc, ScopeTemplate, "Manila CSI plugin version: one of the versions pinned in docs/addons.md."),
	versionLabel(K8sKeystoneAuthTag, "", pinnedDoc, ScopeTemplate, "k8s-keystone-auth webhook version: one of the versions pinned in docs/addons.md."),
	boolLabel(MetricsServerEnabled, "true", ScopeCluster,
		"Install metrics-server (kubectl top, Horizontal Pod Autoscalers)."),
	nameLabel(AvailabilityZone, ScopeNodeGroup, "any zone", "Nova availability zone of the node group's servers; it must be one of the zones Nova lists to the user, or the create is refused (see Availability zones and bare metal below)."),
	{Name: ControlPlaneAvailabilityZone, Type: TypeList, DefaultDoc: "every zone Nova lists (as CAPO spreads them)", Scope: ScopeCluster,
		Description: "Comma-separated availability zones to spread control plane servers over, each one Nova lists. A bare-metal control plane on a cloud of several zones must name the zones that hold its flavor's Ironic nodes.",
		Form:        "comma-separated availability zone names", Elem: checkRE(nameRE)},
	{Name: BootVolumeSize, Type: TypeInt, DefaultDoc: "[driver] boot_volume_size for VMs; 0 (boot from the local disk) for bare metal",
		Scope: ScopeNodeGroup, Description: "Size in GiB of a Cinder root volume; 0 boots from the flavor's disk, which Nova refuses for users without the admin role when the flavor's disk is 0 (refused at create). Refused on a cloud without Cinder.",
		Form: "a whole number of GiB >= 0", Check: intRange(0, 1<<20)},
	nameLabel(BootVolumeType, ScopeNodeGroup, "the cloud's default", "Cinder volume type of the root volume."),
	nameLabel(BootVolumeAvailabilityZone, ScopeNodeGroup, "the server's zone", "Availability zone of the root volume."),
	{Name: ServerGroupPolicies, Type: TypeEnum, Default: "soft-anti-affinity", Scope: ScopeNodeGroup,
		Description: "Nova server group policy of each node group: the conductor makes one server group per node group with it, as the cluster (its application credential), before the machines, names it to Cluster API by ID, and deletes it once the group's machines are gone. With bare metal, Nova counts nova-compute hosts, not Ironic nodes, so a bare-metal node group under hard anti-affinity may have at most [driver] ironic_compute_hosts machines (refused at create and resize). Nova cannot change a group's policy: an update that changes this label on a running node group fails with the reason. A group deleted behind Magnetite's back is made again at the cluster's next operation (a resize to the same size retries), and the control-plane machines that waited for a server in the deleted group are replaced.",
		Enum:        []string{"affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"}},
	boolLabel(AutoHealingEnabled, "true", ScopeCluster, "Replace machines whose node does not start or stays unhealthy (MachineHealthChecks)."),
	boolLabel(AutoScalingEnabled, "false", ScopeCluster, "Run a cluster autoscaler for the cluster (in the management cluster, scoped to the cluster's namespace and machine deployments) that sizes every worker node group between its min_node_count and max_node_count; node_count then follows what the autoscaler decides. Turning it off removes the autoscaler and keeps the current sizes."),
	versionLabel(AutoscalerTag, "", "the cluster autoscaler release of the cluster's Kubernetes minor", ScopeCluster,
		"Cluster autoscaler version (the upstream cluster-autoscaler image, or cluster-autoscaler under container_infra_prefix)."),
	{Name: MinNodeCount, Type: TypeInt, DefaultDoc: "0", Scope: ScopeCluster,
		Description: "Lower bound of the default worker node group's size, set at cluster create (other node groups have a min_node_count field).",
		Form:        "a whole number >= 0", Check: intRange(0, 1<<20)},
	{Name: MaxNodeCount, Type: TypeInt, DefaultDoc: "the node count", Scope: ScopeCluster,
		Description: "Upper bound of the default worker node group's size, set at cluster create (other node groups have a max_node_count field).",
		Form:        "a whole number >= 1", Check: intRange(1, 1<<20)},
	{Name: ExtraFilesLabel, Type: TypeExtraFiles, Scope: ScopeCluster,
		Description: "Files written on every node: a YAML/JSON list of {path, content, encoding, permissions (default 0644), owner}, plain, base64 or gzip+base64. With the rest of a node's bootstrap data they must fit Nova's 64 KiB of user data (docs/bootstrap.md); larger files are refused at create.",
		Form:        "a list of files as YAML or JSON, optionally base64-encoded as a whole"},
	{Name: ManagedSecurityGroups, Type: TypeEnum, Default: "auto", Scope: ScopeCluster,
		Description: "Security groups managed for the cluster: auto = off when the network has port security disabled.",
		Enum:        []string{"auto", "true", "false"}},
	{Name: ConfigDrive, Type: TypeBool, DefaultDoc: "true for bare metal, false for VMs", Scope: ScopeNodeGroup,
		Description: "Attach a config drive so nodes boot without the metadata service.", Form: "true or false"},
	{Name: NodeStartupTimeout, Type: TypeDuration, DefaultDoc: "10m for VMs, 45m for bare metal", Scope: ScopeNodeGroup,
		Description: "How long a machine may take to become a node before auto-healing replaces it.",
		Form:        "a duration such as 30m, or seconds", Check: positiveDuration},
	{Name: NodeUnhealthyTimeout, Type: TypeDuration, DefaultDoc: "5m for VMs, 15m for bare metal", Scope: ScopeNodeGroup,
		Description: "How long a node may stay NotReady before auto-healing replaces it.",
		Form:        "a duration such as 5m, or seconds", Check: positiveDuration},
	{Name: ServerType, Type: TypeEnum, DefaultDoc: "bm for an Ironic flavor, else the template's server_type", Scope: ScopeNodeGroup,
		Description: "Server type of one node group, for mixed clusters: vm or bm.", Enum: []string{"vm", "bm"}},
	{Name: RolloutMaxSurge, Type: TypeInt, DefaultDoc: "1 for VMs, 0 for bare metal (no spare host needed)", Scope: ScopeNodeGroup,
		Description: "Extra machines a rolling update may create; 0 replaces machines one at a time in place.",
		Form:        "a whole number >= 0", Check: intRange(0, 100)},
	{Name: WorkloadCleanup, Type: TypeEnum, Default: "delete", Scope: ScopeCluster,
		Description: "What happens at cluster delete, after the machines are gone, to the Octavia load balancers, floating IPs, load-balancer security groups, Cinder snapshots and volumes the cluster's cloud controller manager and Cinder CSI driver made (found by their kube_service_<cluster>_ names, their floating IP and lb-sg- security group descriptions and the cinder.csi.openstack.org/cluster property), deleted as the cluster: delete all of them; keep-volumes deletes the load balancers, floating IPs and security groups and keeps the snapshots and volumes (their data); keep leaves everything. What the cloud refuses to delete fails the delete with its reason.",
		Enum:        []string{"delete", "keep-volumes", "keep"}},
	{Name: HostSelector, Type: TypeList, DefaultDoc: "any available host", Scope: ScopeNodeGroup,
		Description: "Metal3: labels a node group's BareMetalHosts must carry (the Metal3MachineTemplate's hostSelector); the capacity check counts the free hosts that match.",
		Form:        "comma-separated key=value Kubernetes labels such as rack=r1,pool=gpu", Elem: checkSelectorTerm},
	{Name: HostInterface, Type: TypeString, DefaultDoc: "none: nodes take their address by DHCP", Scope: ScopeNodeGroup,
		Description: "Metal3: the host NIC (as inspection named it, e.g. enp1s0) that gets the node's address from the IP pool, and that kube-vip announces the API address on.",
		Form:        "a network interface name of up to 15 letters, digits, '.', '_' or '-'", Check: checkRE(ifaceRE)},
	boolLabel(NodeReuse, "false", ScopeCluster,
		"Metal3: give a rolling update's new machine the host the old one left (nodeReuse), keeping local data; needs in-place rollouts (rollout_max_surge=0, 3 or more control plane nodes)."),
	{Name: AutomatedCleaningMode, Type: TypeEnum, DefaultDoc: "each host's own mode", Scope: ScopeNodeGroup,
		Description: "Metal3: wipe disk metadata when a host is first provisioned and on every deprovisioning (metadata), or never (disabled).",
		Enum:        []string{"metadata", "disabled"}},
	{Name: ImageURL, Type: TypeString, DefaultDoc: "image_id when it is an http(s) URL", Scope: ScopeCluster,
		Description: "Metal3: URL of the disk image written to the hosts.", Form: "an http:// or https:// URL", Check: checkHTTPURL},
	{Name: ImageChecksum, Type: TypeString, Scope: ScopeCluster,
		Description: "Metal3: checksum of image_url, or the URL of a checksum file that lists it.",
		Form:        "a hex digest or an http(s) URL", Check: checkChecksum},
	{Name: ImageChecksumType, Type: TypeEnum, Default: "sha256", Scope: ScopeCluster,
		Description: "Metal3: algorithm of image_checksum.", Enum: []string{"md5", "sha256", "sha512"}},
	{Name: ImageFormat, Type: TypeEnum, DefaultDoc: "detected by Ironic", Scope: ScopeCluster,
		Description: "Metal3: format of the disk image.", Enum: []string{"raw", "qcow2", "vdi", "vmdk", "live-iso"}},
	{Name: APIVIP, Type: TypeIP, DefaultDoc: "the first address of ip_pool_ranges that is not the gateway (kept out of the pool)", Scope: ScopeCluster,
		Description: "Metal3: the Kubernetes API address, announced by kube-vip from the control plane nodes (no cloud load balancer).",
		Form:        "an IP address", Check: ipCheck},
	versionLabel(KubeVIPTag, "v0.8.9", "", ScopeTemplate, "Metal3: kube-vip version of the control plane's API address."),
	{Name: IPPoolRanges, Type: TypeList, DefaultDoc: "no pool: DHCP, or the IPPool named in the driver's configuration", Scope: ScopeCluster,
		Description: "Metal3: node addresses, given out by IPAM from an IPPool of the cluster: ranges START-END and subnets CIDR, used in order.",
		Form:        "comma-separated START-END ranges or CIDR subnets such as 192.168.111.20-192.168.111.60,192.168.112.0/26", Elem: checkPoolRange},
	{Name: IPPoolPrefix, Type: TypeInt, DefaultDoc: "the subnet's prefix", Scope: ScopeCluster,
		Description: "Metal3: prefix length of the node addresses.", Form: "a whole number from 1 to 128", Check: intRange(1, 128)},
	{Name: IPPoolGateway, Type: TypeIP, Scope: ScopeCluster,
		Description: "Metal3: default gateway of the node addresses.", Form: "an IP address", Check: ipCheck},
	{Name: IPPoolPreallocations, Type: TypeList, Scope: ScopeCluster,
		Description: "Metal3: fixed addresses for a node group's machines by index (the index IPAM gives the node group's n-th data).",
		Form:        "comma-separated NODEGROUP:INDEX=IP such as default-master:0=192.168.111.20", Elem: checkPreallocation},
}

var byName = func() map[string]*Label {
	m := make(map[string]*Label, len(schema))
	for i := range schema {
		l := &schema[i]
		if _, dup := m[l.Name]; dup {
			panic("labels: duplicate schema entry " + l.Name)
		}
		if l.Type == TypeEnum && l.Form == "" {
			l.Form = "one of " + strings.Join(l.Enum, ", ")
		}
		m[l.Name] = l
	}
	return m
}()

// Schema returns every supported label in documentation order.
func Schema() []Label {
	out := make([]Label, len(schema))
	copy(out, schema)
	return out
}

// Lookup returns the schema entry of a label.
func Lookup(name string) (Label, bool) {
	l, ok := byName[name]
	if !ok {
		return Label{}, false
	}
	return *l, true
}

func ipCheck(s string) error {
	if net.ParseIP(s) == nil {
		return errors.New("not an IP")
	}
	return nil
}

func intRange(lo, hi int) func(string) error {
	return func(s string) error {
		n, _ := strconv.Atoi(s)
		if n < lo || n > hi {
			return fmt.Errorf("out of range %d..%d", lo, hi)
		}
		return nil
	}
}

func positiveDuration(s string) error {
	d, _ := ParseDuration(s)
	if d <= 0 {
		return errors.New("not positive")
	}
	return nil
}

// ParseBool reads the boolean spellings Magnum accepts.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "t", "yes", "y", "on", "1":
		return true, nil
	case "false", "f", "no", "n", "off", "0":
		return false, nil
	}
	return false, errors.New("not a boolean")
}

// ParseDuration reads a Go duration ("30m", "1h30m") or a whole number of
// seconds.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > int64(365*24*time.Hour/time.Second) || n < 0 {
			return 0, errors.New("out of range")
		}
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(s)
}

// SplitList splits a comma-separated label value, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// check validates one value against its schema entry.
func (l *Label) check(v string) error {
	bad := func() error { return &FieldError{Label: l.Name, Value: v, Expected: l.Form} }
	switch l.Type {
	case TypeBool:
		if _, err := ParseBool(v); err != nil {
			return bad()
		}
	case TypeInt:
		if _, err := strconv.Atoi(strings.TrimSpace(v)); err != nil {
			return bad()
		}
		v = strings.TrimSpace(v)
	case TypeDuration:
		if _, err := ParseDuration(v); err != nil {
			return bad()
		}
	case TypeEnum:
		found := false
		for _, e := range l.Enum {
			if v == e {
				found = true
			}
		}
		if !found {
			return bad()
		}
	case TypeList:
		for _, item := range SplitList(v) {
			if l.Elem != nil && l.Elem(item) != nil {
				return &FieldError{Label: l.Name, Value: v, Expected: fmt.Sprintf("%s (%q is not valid)", l.Form, item)}
			}
		}
		return nil
	case TypeExtraFiles:
		if _, err := DecodeExtraFiles(v); err != nil {
			return &FieldError{Label: l.Name, Value: v, Expected: l.Form + ": " + err.Error()}
		}
		return nil
	}
	if l.Check != nil && v != "" && l.Check(v) != nil {
		return bad()
	}
	return nil
}

// Validate checks every known label of m and reports the unknown ones. An
// empty value means "unset" for every label, as Magnum treats it.
func Validate(m map[string]string) (Report, error) {
	var rep Report
	var errs ValidationError
	for k, v := range m {
		l, ok := byName[k]
		if !ok {
			rep.Unknown = append(rep.Unknown, k)
			continue
		}
		if v == "" {
			continue
		}
		if err := l.check(v); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				errs = append(errs, fe)
			}
		}
	}
	sort.Strings(rep.Unknown)
	if len(errs) == 0 {
		errs = append(errs, crossChecks(Values(m))...)
	}
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Label < errs[j].Label })
		return rep, errs
	}
	return rep, nil
}

// crossChecks validates relations between labels whose values are each
// valid on their own.
func crossChecks(v Values) ValidationError {
	var errs ValidationError
	if v.IsSet(MinNodeCount) && v.IsSet(MaxNodeCount) && v.Int(MaxNodeCount) < v.Int(MinNodeCount) {
		errs = append(errs, &FieldError{Label: MaxNodeCount, Value: v.String(MaxNodeCount),
			Expected: fmt.Sprintf("a whole number >= min_node_count (%d)", v.Int(MinNodeCount))})
	}
	svc := v.String(ServiceClusterIPRange)
	for _, pod := range []string{CalicoIPv4Pool, CiliumIPv4Pool, FixedSubnetCIDR} {
		if overlaps(svc, v.String(pod)) {
			errs = append(errs, &FieldError{Label: ServiceClusterIPRange, Value: svc,
				Expected: fmt.Sprintf("a CIDR that does not overlap %s (%s)", pod, v.String(pod))})
		}
	}
	if v.Bool(ManilaCSIEnabled) && !v.IsSet(ManilaCSIShareNetworkID) {
		errs = append(errs, &FieldError{Label: ManilaCSIShareNetworkID, Value: "",
			Expected: "a share network UUID when manila_csi_enabled=true"})
	}
	return errs
}

func overlaps(a, b string) bool {
	_, na, err1 := net.ParseCIDR(a)
	_, nb, err2 := net.ParseCIDR(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return na.Contains(nb.IP) || nb.Contains(na.IP)
}

// CheckOverrides refuses labels that child (set at level) changes although
// their scope does not allow it there, e.g. a cluster overriding a
// template-scope label. Labels the child omits keep the parent's value.
func CheckOverrides(parent, child map[string]string, level Scope) error {
	var errs ValidationError
	for k, v := range child {
		l, ok := byName[k]
		if !ok || l.Scope >= level {
			continue
		}
		if pv, ok := parent[k]; ok && pv == v {
			continue
		}
		errs = append(errs, &FieldError{Label: k, Value: v,
			Expected: fmt.Sprintf("the %s's value (%q): %s can only be set on the %s", level.parent(), parent[k], k, l.Scope)})
	}
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Label < errs[j].Label })
		return errs
	}
	return nil
}

func (s Scope) parent() string {
	if s == ScopeNodeGroup {
		return "cluster"
	}
	return "cluster template"
}

// Check validates labels set over a cluster template's: every value must
// fit its label, and template-scope labels must keep the template's value.
// It is the check the API runs on templates, clusters and node groups.
func Check(template, l map[string]string) error {
	if _, err := Validate(l); err != nil {
		return err
	}
	return CheckOverrides(template, l, ScopeCluster)
}

// Merge returns the labels of a child object over its parent's: the
// cluster's over the template's, or a node group's over the cluster's.
// Neither input is changed.
func Merge(parent, child map[string]string) map[string]string {
	out := make(map[string]string, len(parent)+len(child))
	for k, v := range parent {
		out[k] = v
	}
	for k, v := range child {
		out[k] = v
	}
	return out
}

// Effective returns the labels that apply at level: child over parent, but
// labels whose scope is broader than level always come from parent.
func Effective(parent, child map[string]string, level Scope) Values {
	out := Merge(parent, child)
	for k := range out {
		if l, ok := byName[k]; ok && l.Scope < level {
			if pv, ok := parent[k]; ok {
				out[k] = pv
			} else {
				delete(out, k)
			}
		}
	}
	return Values(out)
}

// Values gives typed access to a validated label map. Accessors return the
// label's value, or its schema default when unset or (for unvalidated input)
// not parseable; asking for a label outside the schema is a programming
// error and panics.
type Values map[string]string

func (v Values) raw(name string) (string, *Label) {
	l, ok := byName[name]
	if !ok {
		panic("labels: " + name + " is not in the schema")
	}
	s := strings.TrimSpace(v[name])
	if s == "" {
		return l.Default, l
	}
	return s, l
}

// IsSet reports whether the label has a non-empty value.
func (v Values) IsSet(name string) bool {
	v.raw(name)
	return strings.TrimSpace(v[name]) != ""
}

// String returns the value or the default.
func (v Values) String(name string) string {
	s, _ := v.raw(name)
	return s
}

// Bool returns the value or the default (false without one).
func (v Values) Bool(name string) bool {
	b, _ := v.LookupBool(name)
	return b
}

// LookupBool returns the value and whether it was set explicitly; unset
// labels report their default.
func (v Values) LookupBool(name string) (bool, bool) {
	s, l := v.raw(name)
	b, err := ParseBool(s)
	if err != nil {
		b, _ = ParseBool(l.Default)
	}
	return b, v.IsSet(name)
}

// Int returns the value or the default (0 without one).
func (v Values) Int(name string) int {
	n, _ := v.LookupInt(name)
	return n
}

// LookupInt returns the value and whether it was set explicitly.
func (v Values) LookupInt(name string) (int, bool) {
	s, l := v.raw(name)
	n, err := strconv.Atoi(s)
	if err != nil {
		n, _ = strconv.Atoi(l.Default)
	}
	return n, v.IsSet(name) && err == nil
}

// LookupDuration returns the value and whether it was set explicitly.
func (v Values) LookupDuration(name string) (time.Duration, bool) {
	s, l := v.raw(name)
	d, err := ParseDuration(s)
	if err != nil {
		d, _ = ParseDuration(l.Default)
	}
	return d, v.IsSet(name) && err == nil
}

// List returns a comma-separated label as its items.
func (v Values) List(name string) []string {
	s, _ := v.raw(name)
	return SplitList(s)
}

// ExtraFiles decodes the extra_files label.
func (v Values) ExtraFiles() ([]File, error) {
	s, _ := v.raw(ExtraFilesLabel)
	if s == "" {
		return nil, nil
	}
	return DecodeExtraFiles(s)
}
