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

Labels are set on a cluster template, a cluster (merged over the template's
unless ` + "`merge_labels`" + ` is false) or a node group. **Scope** is the most specific
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
