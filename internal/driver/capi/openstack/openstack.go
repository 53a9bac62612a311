// Package openstack renders the infrastructure of Magnetite clusters with
// Cluster API Provider OpenStack: virtual machines through Nova, and bare
// metal through Nova flavors backed by Ironic. Its kinds are written as
// unstructured objects, rendered in the shape of CAPO's v1beta2 CRDs and
// converted to v1beta1 for releases older than v0.15 (versions.go).
package openstack

import (
	"fmt"
	"strings"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/kinds"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Variables of the OpenStack ClusterClass.
const (
	varCluster = "openStackCluster"
	varMachine = "openStackMachine"
)

// cloudName is the entry of the credentials Secret's clouds.yaml.
const cloudName = "openstack"

// Infrastructure is CAPO.
type Infrastructure struct{}

// New returns the Cluster API driver for OpenStack ("capi-openstack").
func New(opts capi.Options) *capi.Driver { return capi.New(Infrastructure{}, opts) }

func (Infrastructure) Name() string { return "openstack" }

// Kinds are CAPO's: its cluster and machine kinds and their templates,
// the OpenStackServer (v1alpha1 in every release) that CAPO makes per
// machine, where it records that a server failed for good, and the Events
// where it says why it retries one (a refused port).
func (Infrastructure) Kinds() []kinds.Kind {
	return capi.ContractKinds("OpenStack", kinds.Kind{Kind: "OpenStackServer", Group: kinds.GroupInfrastructure, Optional: true},
		kinds.Kind{Kind: "Event", Group: kinds.GroupCore, Optional: true})
}
func (Infrastructure) NeedsCloud() bool { return true }
func (Infrastructure) Addons() bool     { return true }

// Validate refuses an API load balancer without a floating IP where CAPO
// writes its kinds at v1beta2 (v0.15 and newer): that version's
// OpenStackCluster status requires the load balancer's ip, at least one
// character (its CRD, v0.15.0-beta.0 and main), while CAPO fills it only
// from the floating IP (ReconcileLoadBalancer,
// pkg/cloud/services/loadbalancer/loadbalancer.go) and omits it otherwise,
// so the API server refuses every status CAPO writes and the cluster never
// gets its infrastructure. v1beta1 (v0.14) writes it empty, which its CRD
// takes. Flavors, images and networks were checked against the facts by
// the shared planner.
func (Infrastructure) Validate(p *capi.Plan) []string {
	if n := p.Network; n.LoadBalancer && !n.APIFloatingIP && p.Versions.Infrastructure == "v1beta2" {
		return []string{"the API load balancer would get no floating IP, and CAPO at infrastructure.cluster.x-k8s.io/v1beta2 (v0.15 and newer) " +
			"cannot record a load balancer without one (its OpenStackCluster status requires the load balancer's ip), so the cluster would never get its infrastructure; " +
			"give the API a floating IP (floating_ip_enabled and an external network on a cloud with Neutron's L3 extension), or run CAPO v0.14, which serves v1beta1"}
	}
	return nil
}

// placeholder marks base-template fields that every cluster's variables
// replace; the CRDs require them to be present.
const placeholder = "set-by-magnetite"

func (Infrastructure) ClassTemplates(_ capi.OSProfile, _ capi.APIVersions) capi.ClassTemplates {
	machine := func(bm bool) map[string]any {
		m := map[string]any{
			"flavor": map[string]any{"filter": map[string]any{"name": placeholder}},
			"image":  map[string]any{"filter": map[string]any{"name": placeholder}},
		}
		if bm {
			m["configDrive"] = true
		}
		return m
	}
	return capi.ClassTemplates{
		ClusterKind: "OpenStackClusterTemplate",
		ClusterSpec: map[string]any{
			"identityRef":           map[string]any{"type": "Secret", "name": placeholder, "cloudName": cloudName},
			"managedSecurityGroups": map[string]any{"allowAllInClusterTraffic": true},
		},
		MachineKind:             "OpenStackMachineTemplate",
		ControlPlaneMachineSpec: machine(false),
		WorkerMachineSpecs: map[model.ServerType]map[string]any{
			model.ServerTypeVM: machine(false),
			model.ServerTypeBM: machine(true),
		},
	}
}

var specs = capi.Specs{Name: "openstack", KindPrefix: "OpenStack",
	ClusterVariable: varCluster, ClusterHolds: "network, load balancer, security groups, credentials",
	MachineVariable: varMachine, MachineHolds: "flavor, image, root volume, ports"}

func (Infrastructure) Variables() []capi.Variable               { return specs.Variables() }
func (Infrastructure) Patches(refs capi.ClassRefs) []capi.Patch { return specs.Patches(refs) }

func (Infrastructure) ClusterVariables(p *capi.Plan) map[string]any {
	n := p.Network
	lb := map[string]any{"enabled": n.LoadBalancer}
	setIf(lb, "provider", n.LBProvider)
	setIf(lb, "flavor", n.LBFlavor)
	setIf(lb, "availabilityZone", n.LBAvailabilityZone)
	if len(n.AllowedCIDRs) > 0 && n.LoadBalancer {
		lb["allowedCIDRs"] = anys(n.AllowedCIDRs)
	}
	apiServer := map[string]any{"managedLoadBalancer": lb, "enableFloatingIP": n.APIFloatingIP}
	setIf(apiServer, "floatingIP", n.APIServerFloatingIP)
	if p.APIServerPort > 0 {
		apiServer["port"] = int64(p.APIServerPort)
	}
	spec := map[string]any{
		"identityRef": map[string]any{"type": "Secret", "name": p.Name + "-cloud-config", "cloudName": cloudName},
		"apiServer":   apiServer,
		"tags":        []any{"magnetite-cluster-" + p.UUID},
	}
	if n.ExternalNetworkID != "" {
		spec["externalNetwork"] = map[string]any{"id": n.ExternalNetworkID}
	}
	if n.NoExternalNetwork {
		// Else CAPO looks for the cloud's one external network and makes
		// a router to it (v1beta2 spec.enableExternalNetwork).
		spec["enableExternalNetwork"] = false
	}
	if n.FixedNetworkID != "" {
		spec["network"] = map[string]any{"id": n.FixedNetworkID}
		if n.FixedSubnetID != "" {
			spec["subnets"] = []any{map[string]any{"id": n.FixedSubnetID}}
		}
	} else {
		subnet := map[string]any{"cidr": n.SubnetCIDR}
		if len(n.DNSNameservers) > 0 {
			subnet["dnsNameservers"] = anys(n.DNSNameservers)
		}
		spec["managedSubnets"] = []any{subnet}
	}
	if n.ManagedSecurityGroups {
		spec["managedSecurityGroups"] = map[string]any{"allowAllInClusterTraffic": true}
	}
	if len(n.ControlPlaneAZs) > 0 {
		spec["controlPlaneAvailabilityZones"] = anys(n.ControlPlaneAZs)
	}
	return map[string]any{varCluster: spec}
}

// serverGroupRef names the group's Nova server group by the ID the
// conductor found or made it with; by name until it has.
func serverGroupRef(p *capi.Plan, g *capi.Group) map[string]any {
	if p.Facts != nil {
		if id := p.Facts.ServerGroups[g.ServerGroup]; id != "" {
			return map[string]any{"id": id}
		}
	}
	return map[string]any{"filter": map[string]any{"name": g.ServerGroup}}
}

func (Infrastructure) MachineVariables(p *capi.Plan, g *capi.Group) map[string]any {
	spec := map[string]any{
		"flavor":      byIDOrName(g.HasFlavor, g.Flavor.ID, g.FlavorRef),
		"image":       byIDOrName(g.HasImage, g.Image.ID, g.ImageRef),
		"serverGroup": serverGroupRef(p, g),
		"serverMetadata": []any{
			map[string]any{"key": "magnetite_cluster", "value": p.UUID},
			map[string]any{"key": "magnetite_nodegroup", "value": g.NodeGroup.Name},
			map[string]any{"key": "magnetite_server_type", "value": string(g.ServerType)},
		},
	}
	setIf(spec, "sshKeyName", p.SSHKeyName)
	if g.ConfigDrive {
		// Bare-metal provisioning networks often cannot reach the
		// metadata service; cloud-init and Ignition read the config drive.
		spec["configDrive"] = true
	}
	if g.BootVolumeSize > 0 {
		rv := map[string]any{"sizeGiB": int64(g.BootVolumeSize)}
		setIf(rv, "type", g.BootVolumeType)
		if g.BootVolumeAZ != "" {
			rv["availabilityZone"] = map[string]any{"from": "Name", "name": g.BootVolumeAZ}
		}
		spec["rootVolume"] = rv
	}
	if ps := p.Network.PortSecurity; ps != nil && !*ps {
		// Neutron refuses security groups and allowed address pairs on
		// ports of a network without port security: ask for neither.
		spec["ports"] = []any{map[string]any{
			"network":            map[string]any{"id": p.Network.FixedNetworkID},
			"enablePortSecurity": false,
		}}
	}
	return map[string]any{varMachine: spec}
}

func byIDOrName(known bool, id, ref string) map[string]any {
	if known && id != "" {
		return map[string]any{"id": id}
	}
	return map[string]any{"filter": map[string]any{"name": ref}}
}

// NodeRegistration names nodes after their server and gives the kubelet
// the provider ID the OpenStack cloud controller manager matches.
func (Infrastructure) NodeRegistration(p *capi.Plan, _ *capi.Group) capi.NodeRegistration {
	if p.OS.Ignition {
		return capi.NodeRegistration{Name: "${COREOS_OPENSTACK_HOSTNAME}", KubeletExtraArg: [][2]string{
			{"cloud-provider", "external"}, {"provider-id", "openstack:///${COREOS_OPENSTACK_INSTANCE_UUID}"},
		}}
	}
	// The node name is cloud-init's jinja variable as the whole value: the
	// kubeadm configuration's YAML quotes it, and cloud-init renders it on
	// the instance. Quotes inside the value would reach kubeadm and make
	// an invalid node name. The provider ID's quotes are CAPO's own: they
	// reach kubelet's environment file, where systemd takes them away.
	return capi.NodeRegistration{Name: "{{ local_hostname }}", KubeletExtraArg: [][2]string{
		{"cloud-provider", "external"}, {"provider-id", "openstack:///'{{ instance_id }}'"},
	}}
}

// PreKubeadmCommands: Ignition has no templating, so Flatcar fills the
// metadata variables into the kubeadm configuration itself.
func (Infrastructure) PreKubeadmCommands(os capi.OSProfile) []string {
	if !os.Ignition {
		return nil
	}
	return []string{
		"export COREOS_OPENSTACK_HOSTNAME=${COREOS_OPENSTACK_HOSTNAME%.*}",
		"envsubst < /etc/kubeadm.yml > /etc/kubeadm.yml.tmp",
		"mv /etc/kubeadm.yml.tmp /etc/kubeadm.yml",
	}
}

// IgnitionConfig runs kubeadm after the OpenStack metadata agent, whose
// environment file carries the variables the commands above substitute.
func (Infrastructure) IgnitionConfig(capi.OSProfile) string {
	return `systemd:
  units:
  - name: coreos-metadata-sshkeys@.service
    enabled: true
  - name: kubeadm.service
    enabled: true
    dropins:
    - name: 10-flatcar.conf
      contents: |
        [Unit]
        Requires=containerd.service coreos-metadata.service
        After=containerd.service coreos-metadata.service
        [Service]
        EnvironmentFile=/run/metadata/flatcar
`
}

// CloudControllerManager: nodes join with cloud-provider=external and stay
// tainted until the OpenStack cloud controller manager runs.
func (Infrastructure) CloudControllerManager() bool { return true }

func (Infrastructure) Secrets(p *capi.Plan) []driver.SecretRef {
	return []driver.SecretRef{
		{Name: p.Name + "-cloud-config", Purpose: "CAPO credentials: clouds.yaml with the cluster's application credential under cloud " + clusterCloudName(p),
			Credentials: driver.CredentialsCloudsYAML, CloudName: clusterCloudName(p)},
		{Name: p.Name + "-cloud-config-addon", Purpose: "ClusterResourceSet Secret with the workload cluster's kube-system/cloud-config (cloud.conf) and Manila credentials",
			Credentials: driver.CredentialsCloudConfigAddon, CloudConf: cloudConf(p), Manila: p.ManilaCSI},
	}
}

// clusterCloudName is the cloud CAPO reads in the cluster's clouds.yaml:
// Magnetite's, or the one a rebased cluster's OpenStackCluster kept from
// the driver that made it (magnum-cluster-api's "default"), so that its
// credentials Secret can be rewritten without CAPO losing its cloud.
func clusterCloudName(p *capi.Plan) string {
	if p.Kept != nil {
		if name, _ := capi.NestedValue(p.Kept.InfrastructureCluster, "identityRef", "cloudName").(string); name != "" {
			return name
		}
	}
	return cloudName
}

// cloudConf is the part of the cloud controller manager's cloud.conf that
// holds no credentials: how it makes load balancers for Services.
func cloudConf(p *capi.Plan) string {
	var b strings.Builder
	b.WriteString("[LoadBalancer]\n")
	if n := p.Network.ExternalNetworkID; n != "" {
		fmt.Fprintf(&b, "floating-network-id=%s\n", n)
	}
	if v := p.Network.LBProvider; v != "" {
		fmt.Fprintf(&b, "lb-provider=%s\n", v)
	}
	if p.Network.FixedSubnetID != "" {
		fmt.Fprintf(&b, "subnet-id=%s\n", p.Network.FixedSubnetID)
	}
	b.WriteString("create-monitor=true\n")
	return b.String()
}

func setIf(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
