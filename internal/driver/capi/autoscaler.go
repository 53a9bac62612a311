package capi

import (
	"strings"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/labels"
)

// The cluster autoscaler of a cluster runs in the management cluster, next
// to the cluster's Cluster API objects: its Cluster API provider scales the
// machine deployments (management side, through a namespaced Role) and
// watches nodes and pods through the workload cluster's kubeconfig, the
// Secret Cluster API writes as <cluster>-kubeconfig.

// autoscalerRegistry is where the cluster autoscaler's images are published.
const autoscalerRegistry = "registry.k8s.io/autoscaling"

// autoscalerReleases is the newest cluster autoscaler patch release of each
// Kubernetes minor; the autoscaler is released per minor and supports that
// minor's API. Minors not listed take v1.<minor>.0.
var autoscalerReleases = map[string]string{
	"1.29": "v1.29.5", "1.30": "v1.30.7", "1.31": "v1.31.5", "1.32": "v1.32.7",
	"1.33": "v1.33.5", "1.34": "v1.34.4", "1.35": "v1.35.1", "1.36": "v1.36.0",
}

// workloadKubeconfigDir is where the workload cluster's kubeconfig Secret is
// mounted; Cluster API keeps the kubeconfig under the key "value".
const workloadKubeconfigDir = "/etc/kubernetes/workload"

// AutoscalerName is the name of a cluster's autoscaler objects.
func AutoscalerName(clusterObjectName string) string { return clusterObjectName + "-autoscaler" }

// autoscalerImage is the autoscaler_tag label's release, else the one of the
// cluster's Kubernetes minor, pulled through container_infra_prefix when set.
func autoscalerImage(p *Plan) string {
	tag := p.Labels.String(labels.AutoscalerTag)
	if tag == "" {
		minor := p.KubeMinor()
		if tag = autoscalerReleases[minor]; tag == "" {
			tag = "v" + minor + ".0"
		}
	}
	if !strings.HasPrefix(tag, "v") {
		tag = "v" + tag
	}
	registry := autoscalerRegistry
	if p.ImageRepository != "" {
		registry = p.ImageRepository
	}
	return registry + "/cluster-autoscaler:" + tag
}

// autoscalerObjects renders the cluster autoscaler of a cluster with
// autoscaling on, and nothing otherwise (the conductor then removes what
// an earlier render left).
func (d *Driver) autoscalerObjects(p *Plan) []map[string]any {
	if !p.AutoScaling {
		return nil
	}
	name := AutoscalerName(p.Name)
	selector := map[string]any{"app.kubernetes.io/name": driver.ComponentAutoscaler, "app.kubernetes.io/instance": p.Name}
	meta := func() map[string]any {
		l := map[string]any{
			LabelClusterUUID: p.UUID, LabelProjectID: labelValue(p.ProjectID), driver.LabelComponent: driver.ComponentAutoscaler,
		}
		for k, v := range selector {
			l[k] = v
		}
		return map[string]any{"name": name, "labels": l}
	}
	machineTemplates := strings.ToLower(d.infra.ClassTemplates(p.OS, p.Versions).MachineKind) + "s"
	rules := []any{
		// Discovery of node groups and their machines, in this namespace
		// only (the Role's); auto-discovery narrows it to this cluster.
		rule("cluster.x-k8s.io", []string{"machinedeployments", "machinesets", "machines", "machinepools"},
			"get", "list", "watch"),
		// Scaling: replicas through the scale subresource, and the
		// delete-machine annotation on the machines a scale down removes.
		rule("cluster.x-k8s.io", []string{"machinedeployments/scale", "machines"}, "update", "patch"),
		// Node capacity for scaling from zero, when the capacity
		// annotations do not say it.
		rule("infrastructure.cluster.x-k8s.io", []string{machineTemplates}, "get", "list", "watch"),
	}
	args := []any{
		"--cloud-provider=clusterapi",
		// The workload cluster (nodes, pods) through its kubeconfig; the
		// management cluster through the pod's service account.
		"--kubeconfig=" + workloadKubeconfigDir + "/value",
		"--clusterapi-cloud-config-authoritative",
		"--node-group-auto-discovery=clusterapi:namespace=" + p.Namespace + ",clusterName=" + p.Name,
		// Raising a node group's min_node_count scales it up to the new
		// minimum instead of waiting for pending pods.
		"--enforce-node-group-min-size=true",
		// One replica replaced with the Recreate strategy never runs twice,
		// and without leader election it waits for a workload API that is
		// not up yet instead of exiting.
		"--leader-elect=false",
	}
	container := map[string]any{
		"name":    "cluster-autoscaler",
		"image":   autoscalerImage(p),
		"command": []any{"/cluster-autoscaler"},
		"args":    args,
		"volumeMounts": []any{map[string]any{
			"name": "workload-kubeconfig", "mountPath": workloadKubeconfigDir, "readOnly": true,
		}},
		"resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "128Mi"}},
		"securityContext": map[string]any{
			"allowPrivilegeEscalation": false,
			"readOnlyRootFilesystem":   true,
			"capabilities":             map[string]any{"drop": []any{"ALL"}},
		},
	}
	deployment := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(),
		"spec": map[string]any{
			"replicas": int64(1),
			"strategy": map[string]any{"type": "Recreate"},
			"selector": map[string]any{"matchLabels": selector},
			"template": map[string]any{
				"metadata": map[string]any{"labels": selector},
				"spec": map[string]any{
					"serviceAccountName":            name,
					"terminationGracePeriodSeconds": int64(10),
					"securityContext": map[string]any{
						"runAsNonRoot": true, "runAsUser": int64(65534), "runAsGroup": int64(65534),
						"seccompProfile": map[string]any{"type": "RuntimeDefault"},
					},
					"containers": []any{container},
					"volumes": []any{map[string]any{
						"name": "workload-kubeconfig",
						"secret": map[string]any{
							"secretName": p.Name + "-kubeconfig",
							"items":      []any{map[string]any{"key": "value", "path": "value"}},
						},
					}},
					// Small management clusters run everything on their
					// control plane nodes.
					"tolerations": []any{map[string]any{
						"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule",
					}},
				},
			},
		},
	}
	return []map[string]any{
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta()},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(), "rules": rules},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(),
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": name, "namespace": p.Namespace}}},
		deployment,
	}
}

func rule(group string, resources []string, verbs ...string) map[string]any {
	rs := make([]any, len(resources))
	for i, r := range resources {
		rs[i] = r
	}
	vs := make([]any, len(verbs))
	for i, v := range verbs {
		vs[i] = v
	}
	return map[string]any{"apiGroups": []any{group}, "resources": rs, "verbs": vs}
}
