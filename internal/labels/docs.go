package labels

import (
	"fmt"
	"strings"
)

//go:generate go test -run TestLabelDocIsCurrent -update .

// Markdown renders the label schema as the reference page docs/labels.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString(`# Cluster labels

Generated from the label schema in internal/labels/schema.go by
` + "`go generate ./internal/labels`" + `; do not edit by hand.

Labels are set on a cluster template, a cluster or a node group. As on Magnum,
a cluster's labels replace the template's (and a node group's the cluster's)
unless ` + "`merge_labels`" + ` is true or ` + "`[api] merge_labels_by_default`" + ` is set; a
create that sends no labels inherits them. **Scope** is the most specific
object that may set a label: *template* labels come only from the cluster
template, *cluster* labels may be overridden by a cluster, *nodegroup* labels
also by a node group. Invalid values are refused with a 400 that names the
label and the form expected; labels not listed here are kept and passed
through, and ` + "`magnetite render`" + ` reports them.

| Label | Type | Default | Scope | Description |
| --- | --- | --- | --- | --- |
`)
	for _, l := range schema {
		def := "`" + l.Default + "`"
		switch {
		case l.DefaultDoc != "" && l.Default != "":
			def += "; " + l.DefaultDoc
		case l.DefaultDoc != "":
			def = l.DefaultDoc
		case l.Default == "":
			def = "unset"
		}
		typ := string(l.Type)
		if l.Type == TypeEnum {
			typ = strings.Join(l.Enum, " \\| ")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", l.Name, typ, cell(def), l.Scope, cell(l.Description))
	}
	b.WriteString(autoscalingDoc)
	b.WriteString(placementDoc)
	return b.String()
}

// autoscalingDoc explains what the autoscaling and auto-healing labels do
// beyond one table cell.
const autoscalingDoc = `
## Autoscaling and auto-healing

` + "`auto_scaling_enabled=true`" + ` runs one cluster autoscaler per cluster, as a
Deployment in the cluster's namespace of the management cluster: the
Cluster API provider of the upstream cluster autoscaler, with the workload
cluster's kubeconfig (the Secret ` + "`<cluster>-kubeconfig`" + ` Cluster API writes)
mounted to watch nodes and pods, and node-group auto-discovery limited to
the cluster's namespace and name. Its ServiceAccount is bound to a Role (never
a ClusterRole) in that namespace that may read machine deployments, machine
sets, machines and the infrastructure's machine templates, and scale
machine deployments and mark machines for deletion; the project's namespace
holds only that project's clusters. Its image is
the upstream cluster-autoscaler image at ` + "`autoscaler_tag`" + `, or at
the autoscaler release of the cluster's Kubernetes minor (an upgrade to a
new minor moves it), pulled through ` + "`container_infra_prefix`" + ` when set. The
management cluster account Magnetite uses must be allowed to grant those
permissions (an administrator is).

Each worker node group is sized between its ` + "`min_node_count`" + ` and
` + "`max_node_count`" + ` (the default worker takes them from the labels of the same
names at create; a node group of an autoscaled cluster without
` + "`max_node_count`" + ` gets its node count as the bound, so the bound does not move
with the autoscaler). ` + "`node_count`" + ` then reports the autoscaler's size; a
resize inside the bounds sets the size once and the autoscaler goes on
from it, a resize outside them is refused with a 400, and a node group
update moves the bounds. Turning autoscaling off (an upgrade to a template
with ` + "`auto_scaling_enabled=false`" + `) removes the autoscaler and its RBAC and
keeps the node groups at their current sizes; deleting the cluster removes
it first.

` + "`auto_healing_enabled`" + ` (on by default) gives every node group and the
control plane a Cluster API machine health check: a machine whose node has
not joined after ` + "`node_startup_timeout`" + `, or stays NotReady or Unknown for
` + "`node_unhealthy_timeout`" + `, is replaced. Bare-metal node groups wait longer by
default (45m and 15m against 10m and 5m for virtual machines). Every
replacement, and the cluster's return to HEALTHY, is recorded in
` + "`magnetite cluster events`" + `.
`

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// placementDoc explains what Magnetite checks before it builds anything
// about where servers go and what the cloud offers.
const placementDoc = `
## Availability zones and bare metal

Before it accepts a cluster, a node group or a resize, Magnetite asks the
cloud with the user's token what Nova and Neutron would refuse later, and
answers 400 saying what to change (` + "`magnetite render`" + ` gives the same reasons
from a facts file):

- ` + "`availability_zone`" + ` and every zone of ` + "`control_plane_availability_zones`" + ` must be
  one of the zones Nova lists (` + "`GET /os-availability-zone`" + `, open to every user).
- Without ` + "`control_plane_availability_zones`" + `, the control plane is spread over
  every zone Nova lists, as CAPO offers them all to Cluster API as failure
  domains. A bare-metal control plane on a cloud of several zones must name
  the zones that hold its flavor's Ironic nodes: elsewhere Nova answers "No
  valid host". Bare-metal workers without ` + "`availability_zone`" + ` go wherever Nova
  finds a node.
- A flavor whose root disk is 0 GiB boots only from a volume for users
  without the admin role (Nova: "Only volume-backed servers are allowed for
  flavors with zero disk."): give the node group its own ` + "`boot_volume_size`" + `, or
  (for Ironic) a flavor whose disk is the nodes' root disk size. The
  template's or cluster's ` + "`boot_volume_size`" + ` applies to virtual node groups only.
- Nova's hard ` + "`anti-affinity`" + ` counts nova-compute service hosts, and Ironic nodes
  sit behind one or a few of them. A user without the admin role cannot ask
  Nova how many (its hypervisor and service APIs are admin-only), so the
  operator sets ` + "`[driver] ironic_compute_hosts`" + ` (1 by default); a bare-metal node
  group under ` + "`anti-affinity`" + ` may have at most that many machines (its
  ` + "`max_node_count`" + ` when autoscaled). ` + "`soft-anti-affinity`" + `, the default, spreads where it can.
- A floating IP for the API (` + "`floating_ip_enabled`" + ` with
  ` + "`master_lb_floating_ip_enabled`" + `) on a template's own ` + "`fixed_network`" + ` needs a router
  with its gateway on the external network and an interface on that network's
  subnet, or Neutron refuses it (ExternalGatewayForFloatingIPNotFound). Shared
  networks are not checked: their routers belong to another project.

A cloud may lack Neutron's L3 extension (no routers or floating IPs, as bare
metal on provider networks often runs), Octavia, or Cinder; Magnetite reads
the catalog and Neutron's extension list. Without L3 the API gets no floating
IP and the cluster's network is not routed to an external network
(` + "`api_server_floating_ip`" + ` or an explicit ` + "`master_lb_floating_ip_enabled`" + ` is refused);
without Octavia a template with ` + "`master_lb_enabled`" + ` is refused. The API needs a load
balancer or a floating IP: CAPO takes the control plane's address from one of them
and otherwise answers "unable to determine control plane endpoint" until the cluster
times out, so a cluster that would get neither is refused (on a cloud without L3 its
template needs ` + "`master_lb_enabled`" + `; on a cloud without L3 or Octavia no OpenStack
cluster can be reached). A load balancer without a floating IP needs CAPO v0.14
(infrastructure v1beta1): from v0.15 CAPO's v1beta2 status requires the load
balancer's floating IP, which it then cannot record, so such a cluster fails its
render with that reason on a management cluster serving v1beta2. Without Cinder a
` + "`boot_volume_size`" + ` or ` + "`cinder_csi_enabled=true`" + ` is refused, the operator's default
root volume is not used and the Cinder CSI driver is off. Deleting a cluster
sweeps only the kinds the cloud has. On a cloud without L3, released CAPO (v0.14.7,
v0.15.0-beta.0) cannot delete a cluster's API load balancer: it first lists the
floating IPs on it, which Neutron answers with 404. Once the cluster's machines are
gone Magnetite deletes that load balancer as the cluster, and CAPO, finding none, goes
on (at its next retry of the delete).
`
