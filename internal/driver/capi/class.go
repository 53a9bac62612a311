package capi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/model"
)

// Variables every ClusterClass declares, whatever the infrastructure.
const (
	varClusterConfiguration = "clusterConfiguration"
	varFiles                = "files"
	varControlPlaneFiles    = "controlPlaneFiles"
	varNodeRegistration     = "nodeRegistration"
	varControlPlaneRollout  = "controlPlaneRollout"
)

// workerClasses are the machine deployment classes, one per server type.
var workerClasses = []model.ServerType{model.ServerTypeVM, model.ServerTypeBM}

const controlPlaneTaint = "node-role.kubernetes.io/control-plane"

// class is a rendered ClusterClass and its templates.
type class struct {
	name    string
	objects []map[string]any // templates first, the ClusterClass last
	encoded []*unstructured.Unstructured
	refs    ClassRefs
}

// classNames are the names of a class's objects, derived from its base name.
type classNames struct{ base string }

func (n classNames) class() string               { return n.base }
func (n classNames) infraCluster() string        { return n.base + "-cluster" }
func (n classNames) controlPlane() string        { return n.base + "-control-plane" }
func (n classNames) controlPlaneMachine() string { return n.base + "-control-plane-machine" }
func (n classNames) workerMachine(st model.ServerType) string {
	return n.base + "-" + string(st) + "-machine"
}
func (n classNames) workerBootstrap() string { return n.base + "-worker-bootstrap" }

// buildClass renders the ClusterClass of an infrastructure and operating
// system. Its name ends with a hash of its content, so any change to it
// yields a new class and live clusters keep theirs until moved.
func (d *Driver) buildClass(os OSProfile, variant string, v APIVersions) (*class, error) {
	tmpl, err := d.convertTemplates(d.classTemplates(os, v, variant), v.Infrastructure)
	if err != nil {
		return nil, err
	}
	refs := ClassRefs{Versions: v, InfraClusterKind: tmpl.ClusterKind, InfraMachineKind: tmpl.MachineKind}
	for _, st := range workerClasses {
		refs.WorkerClasses = append(refs.WorkerClasses, string(st))
	}
	build := func(n classNames) []map[string]any {
		return withMachineTemplateFields(d.classObjects(os, tmpl, refs, n), tmpl)
	}
	// Hash the content with an empty base name, then name everything.
	content, err := json.Marshal(build(classNames{}))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(content)
	base := "magnetite-" + d.infra.Name() + "-" + os.Name + "-" + hex.EncodeToString(sum[:])[:10]
	return &class{name: base, objects: build(classNames{base: base}), refs: refs}, nil
}

func (d *Driver) classObjects(os OSProfile, tmpl ClassTemplates, refs ClassRefs, n classNames) []map[string]any {
	v := refs.Versions
	infra := v.Infra()
	labels := map[string]any{"magnetite.io/infrastructure": d.infra.Name(), "magnetite.io/os-distro": os.Name}
	templateObj := func(apiVersion, kind, name string, spec map[string]any) map[string]any {
		return map[string]any{
			"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "labels": labels},
			"spec":     map[string]any{"template": map[string]any{"spec": spec}},
		}
	}
	ref := func(apiVersion, kind, name string) map[string]any {
		return map[string]any{"templateRef": map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name}}
	}
	objs := []map[string]any{
		templateObj(infra, tmpl.ClusterKind, n.infraCluster(), tmpl.ClusterSpec),
		templateObj(v.controlPlane(), "KubeadmControlPlaneTemplate", n.controlPlane(),
			map[string]any{"kubeadmConfigSpec": d.kubeadmConfigSpec(os, true)}),
		templateObj(infra, tmpl.MachineKind, n.controlPlaneMachine(), tmpl.ControlPlaneMachineSpec),
		templateObj(v.bootstrap(), "KubeadmConfigTemplate", n.workerBootstrap(), d.kubeadmConfigSpec(os, false)),
	}
	var mds []any
	for _, st := range workerClasses {
		objs = append(objs, templateObj(infra, tmpl.MachineKind, n.workerMachine(st), tmpl.WorkerMachineSpecs[st]))
		md := map[string]any{
			"class":          string(st),
			"bootstrap":      ref(v.bootstrap(), "KubeadmConfigTemplate", n.workerBootstrap()),
			"infrastructure": ref(infra, tmpl.MachineKind, n.workerMachine(st)),
			"healthCheck":    map[string]any{"checks": d.defaultChecks(st)},
		}
		mds = append(mds, md)
	}
	cc := map[string]any{
		"apiVersion": v.cluster(), "kind": "ClusterClass",
		"metadata": map[string]any{"name": n.class(), "labels": labels},
		"spec": map[string]any{
			"infrastructure": ref(infra, tmpl.ClusterKind, n.infraCluster()),
			"controlPlane": map[string]any{
				"templateRef":           ref(v.controlPlane(), "KubeadmControlPlaneTemplate", n.controlPlane())["templateRef"],
				"machineInfrastructure": ref(infra, tmpl.MachineKind, n.controlPlaneMachine()),
				"healthCheck":           map[string]any{"checks": d.defaultChecks(model.ServerTypeVM)},
			},
			"workers":   map[string]any{"machineDeployments": mds},
			"variables": d.classVariables(),
			"patches":   d.classPatches(refs),
		},
	}
	return append(objs, cc)
}

// defaultChecks are a class's health checks; clusters override them with
// their labels' timeouts.
func (d *Driver) defaultChecks(st model.ServerType) map[string]any {
	startup, unhealthy := d.opts.VMNodeStartupTimeout, d.opts.VMNodeUnhealthyTimeout
	if st == model.ServerTypeBM {
		startup, unhealthy = d.opts.BMNodeStartupTimeout, d.opts.BMNodeUnhealthyTimeout
	}
	return checks(int64(startup.Seconds()), int64(unhealthy.Seconds()))
}

func checks(startup, unhealthy int64) map[string]any {
	return map[string]any{
		"nodeStartupTimeoutSeconds": startup,
		"unhealthyNodeConditions": []any{
			map[string]any{"type": "Ready", "status": "False", "timeoutSeconds": unhealthy},
			map[string]any{"type": "Ready", "status": "Unknown", "timeoutSeconds": unhealthy},
		},
	}
}

// kubeadmConfigSpec is the base bootstrap configuration. Everything that
// varies per cluster or machine group comes from variables; the base keeps
// the objects those patches write into.
func (d *Driver) kubeadmConfigSpec(os OSProfile, controlPlane bool) map[string]any {
	base := map[string]any{"nodeRegistration": map[string]any{
		"kubeletExtraArgs": []any{map[string]any{"name": "node-labels", "value": "magnetite.io/managed=true"}},
	}}
	spec := map[string]any{
		"format":            os.bootstrapFormat(),
		"joinConfiguration": base,
	}
	if controlPlane {
		spec["initConfiguration"] = map[string]any{"nodeRegistration": base["nodeRegistration"]}
	}
	if cmds := d.infra.PreKubeadmCommands(os); len(cmds) > 0 {
		spec["preKubeadmCommands"] = cmds
	}
	if cfg := d.infra.IgnitionConfig(os); os.Ignition && cfg != "" {
		spec["ignition"] = map[string]any{"containerLinuxConfig": map[string]any{"additionalConfig": cfg}}
	}
	return spec
}

func (d *Driver) classVariables() []any {
	vars := []Variable{
		{Name: varClusterConfiguration, Description: "kubeadm ClusterConfiguration of the control plane.", Schema: ObjectVariable()},
		{Name: varFiles, Description: "Files written on worker nodes (the extra_files label).", Schema: filesSchema()},
		{Name: varControlPlaneFiles, Description: "Files written on control plane nodes.", Schema: filesSchema()},
		{Name: varNodeRegistration, Description: "kubeadm nodeRegistration of a machine group: node labels, taints, kubelet arguments.", Schema: ObjectVariable()},
		{Name: varControlPlaneRollout, Description: "Rollout strategy of the control plane.", Schema: ObjectVariable()},
	}
	vars = append(vars, d.infra.Variables()...)
	out := make([]any, 0, len(vars))
	for _, v := range vars {
		schema := map[string]any{}
		for k, x := range v.Schema {
			schema[k] = x
		}
		schema["description"] = v.Description
		out = append(out, map[string]any{"name": v.Name, "required": true,
			"schema": map[string]any{"openAPIV3Schema": schema}})
	}
	return out
}

// enabledIfSet is an enabledIf template true when the variable is a
// non-empty object or list.
func enabledIfSet(variable string) string { return "{{ if ." + variable + " }}true{{ end }}" }

func filesSchema() map[string]any {
	return map[string]any{"type": "array", "items": ObjectVariable()}
}

func (d *Driver) classPatches(refs ClassRefs) []any {
	v := refs.Versions
	cp := map[string]any{"apiVersion": v.controlPlane(), "kind": "KubeadmControlPlaneTemplate",
		"matchResources": map[string]any{"controlPlane": true}}
	workers := map[string]any{"apiVersion": v.bootstrap(), "kind": "KubeadmConfigTemplate",
		"matchResources": map[string]any{"machineDeploymentClass": map[string]any{"names": refs.WorkerClasses}}}
	const kcs = "/spec/template/spec/kubeadmConfigSpec"
	patches := []Patch{
		// The kubeadm CRDs refuse an empty configuration or file list, so
		// these patches apply only when there is something to write.
		{Name: "cluster-configuration", Description: "kubeadm ClusterConfiguration from the cluster's labels.",
			EnabledIf:   enabledIfSet(varClusterConfiguration),
			Definitions: []map[string]any{{"selector": cp, "jsonPatches": []any{addFrom(kcs+"/clusterConfiguration", varClusterConfiguration)}}}},
		{Name: "control-plane-files", Description: "Files written on control plane nodes.",
			EnabledIf:   enabledIfSet(varControlPlaneFiles),
			Definitions: []map[string]any{{"selector": cp, "jsonPatches": []any{addFrom(kcs+"/files", varControlPlaneFiles)}}}},
		{Name: "files", Description: "Files written on worker nodes.",
			EnabledIf:   enabledIfSet(varFiles),
			Definitions: []map[string]any{{"selector": workers, "jsonPatches": []any{addFrom("/spec/template/spec/files", varFiles)}}}},
		{Name: "node-registration", Description: "Node name, labels, taints and kubelet arguments of each machine group.",
			Definitions: []map[string]any{
				{"selector": cp, "jsonPatches": []any{
					addFrom(kcs+"/initConfiguration/nodeRegistration", varNodeRegistration),
					addFrom(kcs+"/joinConfiguration/nodeRegistration", varNodeRegistration),
				}},
				{"selector": workers, "jsonPatches": []any{addFrom("/spec/template/spec/joinConfiguration/nodeRegistration", varNodeRegistration)}},
			}},
		{Name: "control-plane-rollout", Description: "Surge or replace-in-place control plane rollouts.",
			Definitions: []map[string]any{{"selector": cp, "jsonPatches": []any{addFrom("/spec/template/spec/rollout", varControlPlaneRollout)}}}},
	}
	patches = append(patches, d.infra.Patches(refs)...)
	out := make([]any, 0, len(patches))
	for _, p := range patches {
		defs := make([]any, len(p.Definitions))
		for i, x := range p.Definitions {
			defs[i] = x
		}
		patch := map[string]any{"name": p.Name, "description": p.Description, "definitions": defs}
		if p.EnabledIf != "" {
			patch["enabledIf"] = p.EnabledIf
		}
		out = append(out, patch)
	}
	return out
}
