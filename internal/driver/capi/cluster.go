package capi

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Annotations the cluster autoscaler's Cluster API provider reads.
const (
	annMinSize       = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
	annMaxSize       = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
	annCPU           = "capacity.cluster-autoscaler.kubernetes.io/cpu"
	annMemory        = "capacity.cluster-autoscaler.kubernetes.io/memory"
	annEphemeralDisk = "capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk"
)

// Labels Magnetite puts on the objects it renders.
const (
	LabelClusterUUID = "magnetite.io/cluster-uuid"
	LabelProjectID   = "magnetite.io/project-id"
	LabelServerType  = "magnetite.io/server-type"
	LabelNodeGroup   = "magnetite.io/nodegroup"
)

func (d *Driver) buildCluster(p *Plan, cl *class) map[string]any {
	network := map[string]any{
		"pods":          map[string]any{"cidrBlocks": []any{p.PodCIDR}},
		"services":      map[string]any{"cidrBlocks": []any{p.ServiceCIDR}},
		"serviceDomain": p.ServiceDomain,
	}
	if p.APIServerPort > 0 {
		network["apiServerPort"] = int64(p.APIServerPort)
	}
	cp := p.ControlPlane
	topology := map[string]any{
		"classRef": map[string]any{"name": cl.name, "namespace": p.Namespace},
		"version":  p.KubeVersion,
		"controlPlane": map[string]any{
			"replicas":    int64(cp.Replicas),
			"metadata":    map[string]any{"labels": topologyLabels(p, cp)},
			"healthCheck": d.withRemediation(p, cp, healthCheck(p, cp)),
		},
		"variables": d.topologyVariables(p),
	}
	var mds []any
	for _, g := range p.Workers {
		mds = append(mds, d.machineDeployment(p, g))
	}
	if len(mds) > 0 {
		topology["workers"] = map[string]any{"machineDeployments": mds}
	}
	meta := map[string]any{
		"name": p.Name,
		"labels": map[string]any{
			LabelClusterUUID: p.UUID, LabelProjectID: labelValue(p.ProjectID),
			"magnetite.io/infrastructure": d.infra.Name(),
		},
		"annotations": map[string]any{"magnetite.io/cluster-name": p.DisplayName},
	}
	return map[string]any{
		"apiVersion": p.Versions.cluster(), "kind": "Cluster", "metadata": meta,
		"spec": map[string]any{"clusterNetwork": network, "topology": topology},
	}
}

var labelUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

func labelValue(s string) string {
	s = strings.Trim(labelUnsafe.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-")
	}
	return s
}

// topologyLabels are the labels of a group's topology metadata, which
// Cluster API stamps on the control plane or machine deployment and every
// machine of it: the group's server type and name, the node group's UUID
// (driver.LabelNodeGroupUUID) and the request's ownership labels.
func topologyLabels(p *Plan, g *Group) map[string]any {
	l := map[string]any{}
	for k, v := range p.ObjectLabels {
		l[k] = v
	}
	l[LabelServerType], l[LabelNodeGroup] = string(g.ServerType), g.Name
	if g.NodeGroup != nil && g.NodeGroup.UUID != "" {
		l[driver.LabelNodeGroupUUID] = g.NodeGroup.UUID
	}
	return l
}

func healthCheck(p *Plan, g *Group) map[string]any {
	if !p.AutoHealing {
		return map[string]any{"enabled": false}
	}
	return map[string]any{
		"enabled": true,
		"checks":  checks(int64(g.NodeStartupTimeout.Seconds()), int64(g.NodeUnhealthyTimeout.Seconds())),
	}
}

func (d *Driver) machineDeployment(p *Plan, g *Group) map[string]any {
	md := map[string]any{
		"class": string(g.ServerType),
		"name":  g.Name,
		"metadata": map[string]any{
			"labels": topologyLabels(p, g),
		},
		"healthCheck": d.withRemediation(p, g, healthCheck(p, g)),
		"rollout":     map[string]any{"strategy": rollout(g)},
	}
	if g.AvailabilityZone != "" {
		md["failureDomain"] = g.AvailabilityZone
	}
	if g.Autoscale {
		// The autoscaler owns the size: leaving replicas out keeps the
		// topology controller from fighting it.
		md["metadata"].(map[string]any)["annotations"] = autoscalerAnnotations(g)
	} else {
		md["replicas"] = int64(g.Replicas)
	}
	md["variables"] = map[string]any{"overrides": sortedVars(d.machineVariables(p, g))}
	return md
}

// rollout replaces bare-metal machines one at a time by default: a surge
// needs a spare physical host, which a bare-metal pool usually lacks.
func rollout(g *Group) map[string]any {
	unavailable := 0
	if g.MaxSurge == 0 {
		unavailable = 1
	}
	return map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{
		"maxSurge": int64(g.MaxSurge), "maxUnavailable": int64(unavailable),
	}}
}

func autoscalerAnnotations(g *Group) map[string]any {
	ann := map[string]any{annMinSize: fmt.Sprint(g.Min), annMaxSize: fmt.Sprint(g.Max)}
	if g.HasFlavor {
		if g.Flavor.VCPUs > 0 {
			ann[annCPU] = fmt.Sprint(g.Flavor.VCPUs)
		}
		if g.Flavor.RAM > 0 {
			ann[annMemory] = fmt.Sprintf("%dMi", g.Flavor.RAM)
		}
	}
	disk := g.BootVolumeSize
	if disk == 0 && g.HasFlavor {
		disk = g.Flavor.Disk
	}
	// A zero ephemeral-disk capacity makes the autoscaler refuse every pod
	// that requests ephemeral storage; bare-metal flavors report disk 0
	// because the disk lives on the Ironic node, so say nothing instead.
	if disk > 0 {
		ann[annEphemeralDisk] = fmt.Sprintf("%dGi", disk)
	}
	return ann
}

func (d *Driver) topologyVariables(p *Plan) []any {
	vars := map[string]any{
		varClusterConfiguration: d.clusterConfiguration(p),
		varFiles:                files(p, false),
		varControlPlaneFiles:    d.controlPlaneFiles(p),
		varControlPlaneRollout:  controlPlaneRollout(p),
	}
	for k, v := range d.infra.ClusterVariables(p) {
		vars[k] = v
	}
	// The control plane's machine values double as the defaults.
	for k, v := range d.machineVariables(p, p.ControlPlane) {
		vars[k] = v
	}
	return sortedVars(vars)
}

func (d *Driver) machineVariables(p *Plan, g *Group) map[string]any {
	vars := map[string]any{varNodeRegistration: d.nodeRegistration(p, g)}
	for k, v := range d.infra.MachineVariables(p, g) {
		vars[k] = v
	}
	return vars
}

func sortedVars(m map[string]any) []any {
	out := make([]any, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, map[string]any{"name": k, "value": m[k]})
	}
	return out
}

// controlPlaneRollout: the control plane surges by one machine, except a
// bare-metal control plane of three or more, which is replaced in place
// when rollout_max_surge says 0 (kubeadm needs a surge below three).
func controlPlaneRollout(p *Plan) map[string]any {
	surge := p.ControlPlane.MaxSurge
	if p.ControlPlane.Replicas < 3 {
		if surge == 0 && p.ControlPlane.BareMetal() {
			p.warn("the bare-metal control plane has %d node(s): upgrades need one spare bare-metal host to surge onto", p.ControlPlane.Replicas)
		}
		surge = 1
	}
	return map[string]any{"strategy": map[string]any{"type": "RollingUpdate",
		"rollingUpdate": map[string]any{"maxSurge": int64(surge)}}}
}

func (d *Driver) clusterConfiguration(p *Plan) map[string]any {
	apiServer := map[string]any{}
	if len(p.CertSANs) > 0 {
		sans := make([]any, len(p.CertSANs))
		for i, s := range p.CertSANs {
			sans[i] = s
		}
		apiServer["certSANs"] = sans
	}
	if p.KeystoneAuth {
		apiServer["extraArgs"] = []any{
			map[string]any{"name": "authentication-token-webhook-config-file", "value": keystoneWebhookPath},
			map[string]any{"name": "authentication-token-webhook-cache-ttl", "value": "5m"},
		}
		apiServer["extraVolumes"] = []any{map[string]any{
			"name": "keystone-webhook", "hostPath": keystoneWebhookPath, "mountPath": keystoneWebhookPath,
			"readOnly": true, "pathType": "File",
		}}
	}
	cc := map[string]any{}
	if len(apiServer) > 0 {
		cc["apiServer"] = apiServer
	}
	if p.ImageRepository != "" {
		cc["imageRepository"] = p.ImageRepository
	}
	return cc
}

const keystoneWebhookPath = "/etc/kubernetes/keystone-webhook.yaml"

// keystoneWebhook points the API server at k8s-keystone-auth, which the
// addon runs on every control plane node's host network.
const keystoneWebhook = `apiVersion: v1
kind: Config
clusters:
- name: keystone-webhook
  cluster:
    insecure-skip-tls-verify: true
    server: https://127.0.0.1:8443/webhook
users:
- name: keystone-webhook
contexts:
- name: keystone-webhook
  context:
    cluster: keystone-webhook
    user: keystone-webhook
current-context: keystone-webhook
`

func files(p *Plan, controlPlane bool) []any {
	out := []any{}
	for _, f := range p.ExtraFiles {
		m := map[string]any{"path": f.Path, "content": f.Content}
		if f.Encoding == "gzip+base64" && p.OS.Ignition {
			// The bootstrap provider's Container Linux Config decodes only
			// base64 (as !!binary) and would write gzip+base64 as its
			// text: the file goes as base64 of what it holds.
			m["content"], m["encoding"] = gunzipBase64(f.Content), "base64"
		} else if f.Encoding != "" {
			m["encoding"] = f.Encoding
		} else if !p.OS.Ignition && jinjaSyntax(f.Content) {
			// The bootstrap provider makes the whole cloud-config a jinja
			// template (its `## template: jinja` header), which cloud-init
			// renders on the node: a file's own {{ }} would be replaced.
			// base64 has no braces, and cloud-init decodes it as it writes.
			m["content"], m["encoding"] = base64.StdEncoding.EncodeToString([]byte(f.Content)), "base64"
		}
		// cloud-init writes 0644 when no permissions are given; the
		// bootstrap provider's Container Linux Config for Ignition refuses
		// a file without a mode (its strict parse fails on the transpiler's
		// "mode unspecified for file" warning), so the default is stated.
		m["permissions"] = "0644"
		if f.Permissions != "" {
			m["permissions"] = f.Permissions
		}
		if f.Owner != "" {
			m["owner"] = f.Owner
		}
		out = append(out, m)
	}
	if controlPlane && p.KeystoneAuth {
		out = append(out, map[string]any{"path": keystoneWebhookPath, "content": keystoneWebhook, "permissions": "0600", "owner": "root:root"})
	}
	return out
}

func (d *Driver) nodeRegistration(p *Plan, g *Group) map[string]any {
	ir := d.infra.NodeRegistration(p, g)
	args := []any{}
	for _, kv := range ir.KubeletExtraArg {
		args = append(args, map[string]any{"name": kv[0], "value": kv[1]})
	}
	args = append(args, map[string]any{"name": "node-labels", "value": nodeLabels(g.NodeLabels)})
	nr := map[string]any{"kubeletExtraArgs": args}
	if ir.Name != "" {
		nr["name"] = ir.Name
	}
	if ir.CRISocket != "" {
		nr["criSocket"] = ir.CRISocket
	}
	var taints []any
	if g.Role == model.RoleMaster {
		taints = append(taints, map[string]any{"key": controlPlaneTaint, "effect": "NoSchedule"})
	}
	for _, t := range g.Taints {
		m := map[string]any{"key": t.Key, "effect": t.Effect}
		if t.Value != "" {
			m["value"] = t.Value
		}
		taints = append(taints, m)
	}
	if len(taints) > 0 {
		nr["taints"] = taints
	}
	return nr
}

func nodeLabels(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// jinjaSyntax reports text that jinja would read as a template: an
// expression, a statement or a comment opening.
func jinjaSyntax(s string) bool {
	return strings.Contains(s, "{{") || strings.Contains(s, "{%") || strings.Contains(s, "{#")
}

// gunzipBase64 returns base64 of the data that gzip+base64 content holds
// (the label schema has checked it is base64; content that is not gzip is
// kept as it is).
func gunzipBase64(content string) string {
	b, err := base64.StdEncoding.DecodeString(content)
	if err != nil {
		return content
	}
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return content
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return content
	}
	return base64.StdEncoding.EncodeToString(data)
}
