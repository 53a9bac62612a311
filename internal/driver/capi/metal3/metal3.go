// Package metal3 renders the infrastructure of Magnetite clusters on
// bare-metal hosts managed by Metal3: Cluster API Provider Metal3 (CAPM3)
// picks BareMetalHosts by each node group's host_selector label and has
// baremetal-operator write the image to them. Beside the ClusterClass's
// Metal3ClusterTemplate and Metal3MachineTemplates it renders, per cluster,
// an IPAM IPPool for node addresses (from the ip_pool_* labels), a
// Metal3DataTemplate per node group (metadata and network data), and
// Metal3RemediationTemplates, so unhealthy machines are first rebooted
// through their BMC rather than replaced. The API endpoint is a virtual IP
// that kube-vip, a static pod on the control plane nodes, announces: no
// cloud load balancer is involved.
//
// Select it with a template's driver field (capi-metal3); every node group
// must be bare metal (server_type bm).
package metal3

import (
	"fmt"
	"net/netip"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/kinds"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Variables of the Metal3 ClusterClass.
const (
	varCluster = "metal3Cluster"
	varMachine = "metal3Machine"
)

// variantNodeReuse is the ClusterClass whose machine templates reuse the
// hosts that rollouts free (nodeReuse sits beside spec.template, where
// Cluster API's patches do not reach).
const variantNodeReuse = "node-reuse"

// ipamAPIVersion is the only version IPAM serves.
const ipamAPIVersion = "ipam.metal3.io/v1alpha1"

// placeholderImage stands in the class's machine templates for the image
// every cluster's variables set; the CRD requires a URL there.
const placeholderImage = "https://image.set-by-magnetite.invalid/"

// placeholder stands for the other values every cluster's variables set
// where the CRDs require one.
const placeholder = "set-by-magnetite"

// Remediation: reboot through the BMC, and wait this long for the node to
// come back (a server's firmware alone can take minutes) before retrying.
const (
	remediationTimeoutSeconds = 900
	controlPlaneRetries       = 1
	workerRetries             = 2
)

// kubeVIPManifest is where kubelet finds the kube-vip static pod.
const kubeVIPManifest = "/etc/kubernetes/manifests/kube-vip.yaml"

// Options are the Metal3 driver's own settings.
type Options struct {
	// SharedIPPool names an IPPool in the clusters' namespace that node
	// addresses come from when a cluster sets no ip_pool_ranges; empty
	// means such clusters' nodes take their addresses by DHCP.
	SharedIPPool string
}

// Infrastructure is CAPM3.
type Infrastructure struct {
	opts Options
}

// New returns the Cluster API driver for Metal3 ("capi-metal3"). Register
// it with driver.Registry.RegisterExplicit: a template selects it by its
// driver field.
func New(opts capi.Options, m Options) *capi.Driver { return capi.New(Infrastructure{opts: m}, opts) }

func (Infrastructure) Name() string { return "metal3" }

// Kinds are CAPM3's, baremetal-operator's BareMetalHost (which CAPM3
// claims) and IPAM's IPPool (only clusters with ip_pool_ranges need it).
// The IP pool, data templates and remediation templates are made per
// cluster and removed with it.
func (Infrastructure) Kinds() []kinds.Kind {
	return capi.ContractKinds("Metal3",
		kinds.Kind{Kind: "Metal3DataTemplate", Group: kinds.GroupInfrastructure, Cleanup: true},
		kinds.Kind{Kind: "Metal3RemediationTemplate", Group: kinds.GroupInfrastructure, Cleanup: true},
		kinds.Kind{Kind: "BareMetalHost", Group: kinds.GroupMetal3},
		kinds.Kind{Kind: "IPPool", Group: kinds.GroupMetal3IPAM, Cleanup: true, Optional: true})
}
func (Infrastructure) NeedsCloud() bool { return false }
func (Infrastructure) Addons() bool     { return true }

// network is what the plan's labels say about node addresses and the API
// address.
type network struct {
	pool      *pool  // the cluster's own IPPool, nil without ip_pool_ranges
	poolName  string // the pool node addresses come from, "" for DHCP
	vip       netip.Addr
	hasRoutes bool // the pool has a gateway to route through
}

func (in Infrastructure) network(p *capi.Plan) (network, []string) {
	var n network
	pl, problems := parsePool(p)
	n.pool = pl
	switch {
	case pl != nil:
		n.poolName = poolName(p)
		n.hasRoutes = pl.gateway.IsValid()
	case in.opts.SharedIPPool != "":
		n.poolName, n.hasRoutes = in.opts.SharedIPPool, true
	}
	if v := p.Labels.String(labels.APIVIP); v != "" {
		n.vip, _ = netip.ParseAddr(v)
	} else if pl != nil {
		n.vip = pl.firstFree()
	}
	if !n.vip.IsValid() && len(problems) == 0 {
		problems = append(problems, "a Metal3 cluster needs an API address: set the api_vip label, or ip_pool_ranges for Magnetite to take one from")
	}
	if pl != nil && n.vip.IsValid() {
		pl.exclude(n.vip)
	}
	return n, problems
}

// Validate checks what CAPM3 needs beyond the shared plan.
func (in Infrastructure) Validate(p *capi.Plan) []string {
	var problems []string
	if p.OS.Ignition {
		problems = append(problems, fmt.Sprintf("os_distro %s boots with Ignition; Metal3 clusters need a cloud-init image (ubuntu, debian or rockylinux), whose node names and provider IDs come from Metal3's metadata", p.OS.Name))
	}
	for _, g := range p.Groups() {
		if !g.BareMetal() {
			problems = append(problems, fmt.Sprintf("node group %s is %s (%s): Metal3 builds bare-metal node groups only; set server_type=bm on the template",
				g.NodeGroup.Name, g.ServerType, g.ServerTypeReason))
		}
	}
	img, err := image(p)
	if err != nil {
		problems = append(problems, err.Error())
	} else if img["checksum"] == "" && img["diskFormat"] != "live-iso" {
		problems = append(problems, "image_checksum is required: baremetal-operator verifies every image but a live ISO")
	}
	n, netProblems := in.network(p)
	problems = append(problems, netProblems...)
	if n.poolName != "" {
		for _, g := range p.Groups() {
			if g.Labels.String(labels.HostInterface) == "" {
				problems = append(problems, fmt.Sprintf("node group %s: set host_interface to the host NIC (as inspection named it, e.g. enp1s0) that gets the address from IP pool %s",
					g.NodeGroup.Name, n.poolName))
			}
		}
	}
	if p.Labels.Bool(labels.NodeReuse) {
		for _, g := range p.Workers {
			if g.MaxSurge > 0 {
				p.Warnings = append(p.Warnings, fmt.Sprintf("node group %s: node_reuse needs rollouts that remove a machine before creating its replacement; rollout_max_surge=%d creates first, so its hosts are not reused",
					g.NodeGroup.Name, g.MaxSurge))
			}
		}
		if cp := p.ControlPlane; cp != nil && cp.Replicas < 3 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("node_reuse on a control plane of %d node(s) has no effect there: it is replaced by surging onto a spare host", cp.Replicas))
		}
	}
	return problems
}

// image is the Metal3MachineTemplate's image from the labels.
func image(p *capi.Plan) (map[string]any, error) {
	url := p.Labels.String(labels.ImageURL)
	if url == "" {
		if id := strings.TrimSpace(p.Template.ImageID); strings.HasPrefix(id, "http://") || strings.HasPrefix(id, "https://") {
			url = id
		}
	}
	if url == "" {
		return nil, fmt.Errorf("Metal3 writes an image from a URL: set the image_url label (and image_checksum), or the template's image_id to an http(s) URL")
	}
	// Every CAPM3 release requires the checksum field (v1.12.7's v1beta1
	// and v1.13.2's v1beta2 CRDs), empty for a live ISO, as CAPM3's own
	// v1beta1 Go type always writes it.
	img := map[string]any{"url": url, "checksum": ""}
	if c := p.Labels.String(labels.ImageChecksum); c != "" {
		img["checksum"] = c
		img["checksumType"] = p.Labels.String(labels.ImageChecksumType)
	}
	if f := p.Labels.String(labels.ImageFormat); f != "" {
		img["diskFormat"] = f
	}
	return img, nil
}

func (in Infrastructure) ClassTemplates(os capi.OSProfile, v capi.APIVersions) capi.ClassTemplates {
	return in.VariantTemplates(os, v, "")
}

// ClassVariant implements capi.ClassVariants: clusters with node_reuse
// use the class whose machine templates reuse hosts.
func (Infrastructure) ClassVariant(p *capi.Plan) string {
	if p.Labels.Bool(labels.NodeReuse) {
		return variantNodeReuse
	}
	return ""
}

// VariantTemplates implements capi.ClassVariants.
func (Infrastructure) VariantTemplates(_ capi.OSProfile, _ capi.APIVersions, variant string) capi.ClassTemplates {
	machine := func() map[string]any {
		return map[string]any{"image": map[string]any{"url": placeholderImage, "checksum": placeholder}}
	}
	return capi.ClassTemplates{
		ClusterKind: "Metal3ClusterTemplate",
		// kubelet sets each node's provider ID from Metal3's metadata, so
		// CAPM3 reads it rather than labelling nodes itself.
		ClusterSpec: map[string]any{"cloudProviderEnabled": true},
		MachineKind: "Metal3MachineTemplate", ControlPlaneMachineSpec: machine(),
		WorkerMachineSpecs:    map[model.ServerType]map[string]any{model.ServerTypeVM: machine(), model.ServerTypeBM: machine()},
		MachineTemplateFields: map[string]any{"nodeReuse": variant == variantNodeReuse},
	}
}

var specs = capi.Specs{Name: "metal3", KindPrefix: "Metal3",
	ClusterVariable: varCluster, ClusterHolds: "the API endpoint (kube-vip's address)",
	MachineVariable: varMachine, MachineHolds: "image, host selector, cleaning mode, data template"}

func (Infrastructure) Variables() []capi.Variable               { return specs.Variables() }
func (Infrastructure) Patches(refs capi.ClassRefs) []capi.Patch { return specs.Patches(refs) }

func (in Infrastructure) ClusterVariables(p *capi.Plan) map[string]any {
	n, _ := in.network(p)
	port := int64(6443)
	if p.APIServerPort > 0 {
		port = int64(p.APIServerPort)
	}
	return map[string]any{varCluster: map[string]any{
		"controlPlaneEndpoint": map[string]any{"host": n.vip.String(), "port": port},
		"cloudProviderEnabled": true,
	}}
}

func dataTemplateName(p *capi.Plan, g *capi.Group) string { return p.Name + "-" + g.Name }

func (Infrastructure) MachineVariables(p *capi.Plan, g *capi.Group) map[string]any {
	img, _ := image(p)
	spec := map[string]any{"image": img, "dataTemplate": map[string]any{"name": dataTemplateName(p, g)}}
	if sel := hostSelector(g); len(sel) > 0 {
		spec["hostSelector"] = map[string]any{"matchLabels": sel}
	}
	if mode := g.Labels.String(labels.AutomatedCleaningMode); mode != "" {
		spec["automatedCleaningMode"] = mode
	}
	return map[string]any{varMachine: spec}
}

func hostSelector(g *capi.Group) map[string]any {
	out := map[string]any{}
	for _, kv := range g.Labels.List(labels.HostSelector) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// NodeRegistration names nodes and sets their provider ID from the
// metadata CAPM3 renders for the host (metal3://namespace/host/machine).
func (Infrastructure) NodeRegistration(*capi.Plan, *capi.Group) capi.NodeRegistration {
	return capi.NodeRegistration{Name: "{{ ds.meta_data.name }}", KubeletExtraArg: [][2]string{
		{"provider-id", "metal3://{{ ds.meta_data.providerid }}"},
	}}
}

// PreKubeadmCommands: from Kubernetes 1.29 kubeadm gives admin.conf its
// rights only once the control plane is up, which kube-vip must announce
// first; on the first control plane node (the one that runs kubeadm init)
// kube-vip uses super-admin.conf instead.
func (Infrastructure) PreKubeadmCommands(os capi.OSProfile) []string {
	if os.Ignition {
		return nil
	}
	return []string{
		"if [ -f /run/kubeadm/kubeadm.yaml ] && [ -f " + kubeVIPManifest + " ]; then " +
			"sed -i 's#path: /etc/kubernetes/admin.conf#path: /etc/kubernetes/super-admin.conf#' " + kubeVIPManifest + "; fi",
	}
}

func (Infrastructure) IgnitionConfig(capi.OSProfile) string  { return "" }
func (Infrastructure) CloudControllerManager() bool          { return false }
func (Infrastructure) Secrets(*capi.Plan) []driver.SecretRef { return nil }

// ClusterObjects implements capi.ClusterExtras: the cluster's IPPool, a
// Metal3DataTemplate per node group and, with auto-healing, the
// remediation templates.
func (in Infrastructure) ClusterObjects(p *capi.Plan, v capi.APIVersions) []map[string]any {
	n, _ := in.network(p)
	meta := func(name string) map[string]any {
		return map[string]any{"name": name, "labels": map[string]any{capi.LabelClusterUUID: p.UUID}}
	}
	var out []map[string]any
	if n.pool != nil {
		out = append(out, map[string]any{"apiVersion": ipamAPIVersion, "kind": "IPPool", "metadata": meta(n.poolName),
			"spec": n.pool.spec(p, n.poolName)})
	}
	for _, g := range p.Groups() {
		out = append(out, map[string]any{"apiVersion": v.Infra(), "kind": "Metal3DataTemplate", "metadata": meta(dataTemplateName(p, g)),
			"spec": dataTemplateSpec(p, g, n)})
	}
	if p.AutoHealing {
		for _, r := range []struct {
			name    string
			retries int64
		}{{remediationName(p, true), controlPlaneRetries}, {remediationName(p, false), workerRetries}} {
			out = append(out, map[string]any{"apiVersion": v.Infra(), "kind": "Metal3RemediationTemplate", "metadata": meta(r.name),
				"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"strategy": map[string]any{
					"type": "Reboot", "retryLimit": r.retries, "timeoutSeconds": int64(remediationTimeoutSeconds)}}}}})
		}
	}
	return out
}

func remediationName(p *capi.Plan, controlPlane bool) string {
	if controlPlane {
		return p.Name + "-control-plane-remediation"
	}
	return p.Name + "-worker-remediation"
}

// Remediation implements capi.ClusterExtras: reboot first.
func (Infrastructure) Remediation(p *capi.Plan, g *capi.Group, v capi.APIVersions) map[string]any {
	if !p.AutoHealing {
		return nil
	}
	return map[string]any{"apiVersion": v.Infra(), "kind": "Metal3RemediationTemplate",
		"name": remediationName(p, g.Role == model.RoleMaster)}
}

// dataTemplateSpec names nodes after their machines and, with an IP pool,
// configures the host interface with the pool's address, gateway and DNS.
func dataTemplateSpec(p *capi.Plan, g *capi.Group, n network) map[string]any {
	names := []any{}
	for _, k := range []string{"name", "local-hostname", "local_hostname"} {
		names = append(names, map[string]any{"key": k, "object": "machine"})
	}
	spec := map[string]any{"clusterName": p.Name, "metaData": map[string]any{"objectNames": names}}
	iface := g.Labels.String(labels.HostInterface)
	if n.poolName == "" || iface == "" {
		return spec
	}
	family, defaultRoute := "ipv4", "0.0.0.0"
	if n.pool != nil && !n.pool.v4 {
		family, defaultRoute = "ipv6", "::"
	}
	nw := map[string]any{"id": n.poolName, "link": iface, "fromPoolRef": map[string]any{"name": n.poolName}}
	if n.hasRoutes {
		nw["routes"] = []any{map[string]any{"network": defaultRoute, "prefix": int64(0),
			"gateway": map[string]any{"fromIPPool": n.poolName}}}
	}
	nd := map[string]any{
		"links":    map[string]any{"ethernets": []any{map[string]any{"id": iface, "type": "phy", "macAddress": map[string]any{"fromHostInterface": iface}}}},
		"networks": map[string]any{family: []any{nw}},
	}
	if len(p.Network.DNSNameservers) > 0 || n.pool == nil {
		nd["services"] = map[string]any{"dnsFromIPPool": n.poolName}
	}
	spec["networkData"] = nd
	return spec
}

// ControlPlaneFiles implements capi.ClusterExtras: the kube-vip static
// pod that announces the API address from the control plane node holding
// the lease.
func (in Infrastructure) ControlPlaneFiles(p *capi.Plan) []map[string]any {
	n, _ := in.network(p)
	if !n.vip.IsValid() {
		return nil
	}
	repo := p.ImageRepository
	if repo == "" {
		repo = "ghcr.io/kube-vip"
	}
	port := 6443
	if p.APIServerPort > 0 {
		port = p.APIServerPort
	}
	bits := "32"
	if n.vip.Is6() {
		bits = "128"
	}
	env := [][2]string{
		{"vip_arp", "true"}, {"port", fmt.Sprint(port)}, {"vip_cidr", bits}, {"cp_enable", "true"}, {"cp_namespace", "kube-system"},
		{"vip_leaderelection", "true"}, {"vip_leasename", "plndr-cp-lock"}, {"vip_leaseduration", "15"},
		{"vip_renewdeadline", "10"}, {"vip_retryperiod", "2"}, {"address", n.vip.String()},
	}
	if iface := p.ControlPlane.Labels.String(labels.HostInterface); iface != "" {
		env = append(env, [2]string{"vip_interface", iface})
	}
	var envs []any
	for _, e := range env {
		envs = append(envs, map[string]any{"name": e[0], "value": e[1]})
	}
	pod := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "kube-vip", "namespace": "kube-system"},
		"spec": map[string]any{
			"hostNetwork": true,
			"hostAliases": []any{map[string]any{"ip": "127.0.0.1", "hostnames": []any{"kubernetes"}}},
			"containers": []any{map[string]any{
				"name": "kube-vip", "image": repo + "/kube-vip:" + p.Labels.String(labels.KubeVIPTag),
				"imagePullPolicy": "IfNotPresent", "args": []any{"manager"}, "env": envs,
				"securityContext": map[string]any{"capabilities": map[string]any{"add": []any{"NET_ADMIN", "NET_RAW"}}},
				"volumeMounts":    []any{map[string]any{"name": "kubeconfig", "mountPath": "/etc/kubernetes/admin.conf"}},
			}},
			"volumes": []any{map[string]any{"name": "kubeconfig",
				"hostPath": map[string]any{"path": "/etc/kubernetes/admin.conf", "type": "FileOrCreate"}}},
		},
	}
	manifest, _ := yaml.Marshal(pod)
	return []map[string]any{{"path": kubeVIPManifest, "owner": "root:root", "permissions": "0644", "content": string(manifest)}}
}
