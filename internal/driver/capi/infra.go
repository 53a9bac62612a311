package capi

import (
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/kinds"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Infrastructure is what an infrastructure provider adds to the shared
// rendering: its kinds, its ClusterClass variables and patches, and the
// values of those variables for a cluster and each of its machine groups.
type Infrastructure interface {
	// Name is short and DNS-safe ("openstack", "inmemory").
	Name() string
	// Kinds are the infrastructure's own kinds (its cluster and machine
	// kinds and templates, and whatever else it renders or needs served),
	// for the management client's table (see package kinds).
	Kinds() []kinds.Kind
	// NeedsCloud says flavors, images and networks must be found in the
	// cloud facts.
	NeedsCloud() bool
	// Validate returns problems specific to the infrastructure.
	Validate(p *Plan) []string
	// ClassTemplates returns the base infrastructure templates of the
	// ClusterClass; they must not depend on any one cluster.
	ClassTemplates(os OSProfile, v APIVersions) ClassTemplates
	// Variables and Patches are added to the ClusterClass.
	Variables() []Variable
	Patches(refs ClassRefs) []Patch
	// ClusterVariables are the values of the infrastructure's cluster-wide
	// variables; MachineVariables those of a machine group (the control
	// plane's also serve as the cluster-wide defaults).
	ClusterVariables(p *Plan) map[string]any
	MachineVariables(p *Plan, g *Group) map[string]any
	// NodeRegistration returns the infrastructure's part of a group's
	// kubeadm nodeRegistration (node name, kubelet arguments).
	NodeRegistration(p *Plan, g *Group) NodeRegistration
	// PreKubeadmCommands run on every node before kubeadm.
	PreKubeadmCommands(os OSProfile) []string
	// IgnitionConfig is extra Ignition (Container Linux Config YAML) for
	// Ignition-based operating systems.
	IgnitionConfig(os OSProfile) string
	// Addons says whether CNI, cloud provider and CSI addons are installed.
	Addons() bool
	// CloudControllerManager says whether the cluster gets the OpenStack
	// cloud controller manager.
	CloudControllerManager() bool
	// Secrets lists the Secrets the conductor must create for the cluster.
	Secrets(p *Plan) []driver.SecretRef
}

// ContractKinds are the kinds Cluster API's infrastructure provider
// contract asks of a provider whose kinds start with prefix: <prefix>Cluster,
// <prefix>ClusterTemplate, <prefix>Machine and <prefix>MachineTemplate, in
// the infrastructure group; more follow them.
func ContractKinds(prefix string, more ...kinds.Kind) []kinds.Kind {
	var out []kinds.Kind
	for _, suffix := range []string{"Cluster", "ClusterTemplate", "Machine", "MachineTemplate"} {
		out = append(out, kinds.Kind{Kind: prefix + suffix, Group: kinds.GroupInfrastructure})
	}
	return append(out, more...)
}

// ClassTemplates are an infrastructure's base templates.
type ClassTemplates struct {
	ClusterKind string
	// ClusterSpec is spec.template.spec of the cluster template.
	ClusterSpec map[string]any
	MachineKind string
	// MachineSpecs is spec.template.spec of the machine templates: the
	// control plane's, and the workers' per server type.
	ControlPlaneMachineSpec map[string]any
	WorkerMachineSpecs      map[model.ServerType]map[string]any
	// MachineTemplateFields are set in the spec of every machine template
	// beside spec.template (CAPM3's nodeReuse); Cluster API patches only
	// spec.template.spec, so they vary by class variant (ClassVariants).
	MachineTemplateFields map[string]any
}

// ClassRefs name the templates of a ClusterClass, for patch selectors.
type ClassRefs struct {
	Versions APIVersions
	// InfraCluster and InfraMachine are the infrastructure kinds.
	InfraClusterKind string
	InfraMachineKind string
	// WorkerClasses are the machine deployment class names.
	WorkerClasses []string
}

// Variable is a ClusterClass variable.
type Variable struct {
	Name        string
	Description string
	// Schema is the openAPIV3Schema of the variable.
	Schema map[string]any
}

// Patch is an inline ClusterClass patch: a name and its definitions, in
// the ClusterClass's own shape.
type Patch struct {
	Name        string
	Description string
	// EnabledIf is a Go template; the patch applies when it renders "true".
	EnabledIf   string
	Definitions []map[string]any
}

// NodeRegistration is the infrastructure's part of kubeadm's
// nodeRegistration.
type NodeRegistration struct {
	Name            string
	CRISocket       string
	KubeletExtraArg [][2]string
}

// ObjectVariable is the schema of a variable holding a whole object.
func ObjectVariable() map[string]any {
	return map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
}

// Specs describes an infrastructure whose cluster and machine specs are
// each rendered whole into one ClusterClass variable: ClusterVariable
// holds the <KindPrefix>Cluster spec (ClusterHolds says what it sets) and
// MachineVariable a machine group's <KindPrefix>Machine spec.
type Specs struct {
	// Name prefixes the patches' names (<Name>-cluster, <Name>-machine).
	Name, KindPrefix              string
	ClusterVariable, ClusterHolds string
	MachineVariable, MachineHolds string
}

// Variables are the two object variables.
func (s Specs) Variables() []Variable {
	return []Variable{
		{Name: s.ClusterVariable, Description: s.KindPrefix + "Cluster spec: " + s.ClusterHolds + ".", Schema: ObjectVariable()},
		{Name: s.MachineVariable, Description: s.KindPrefix + "Machine spec of a machine group: " + s.MachineHolds + ".", Schema: ObjectVariable()},
	}
}

// SpecVariables map the two variables to the templates they are patched
// into (Versioned.SpecVariables).
func (s Specs) SpecVariables() map[string]string {
	return map[string]string{s.ClusterVariable: s.KindPrefix + "ClusterTemplate", s.MachineVariable: s.KindPrefix + "MachineTemplate"}
}

// Patches write the variables as the spec of the infrastructure cluster
// template and of the control plane's and workers' machine templates.
func (s Specs) Patches(refs ClassRefs) []Patch {
	return []Patch{
		{Name: s.Name + "-cluster", Description: "The cluster's " + s.KindPrefix + "Cluster spec.",
			Definitions: selectInfraCluster(refs, "/spec/template/spec", s.ClusterVariable)},
		{Name: s.Name + "-machine", Description: "Each machine group's " + s.KindPrefix + "Machine spec.",
			Definitions: selectMachines(refs, refs.InfraMachineKind, "/spec/template/spec", s.MachineVariable)},
	}
}

// selectMachines selects the control plane's and the workers' machine
// templates of kind.
func selectMachines(refs ClassRefs, kind, path, variable string) []map[string]any {
	return []map[string]any{
		{
			"selector": map[string]any{"apiVersion": refs.Versions.Infra(), "kind": kind,
				"matchResources": map[string]any{"controlPlane": true}},
			"jsonPatches": []any{addFrom(path, variable)},
		},
		{
			"selector": map[string]any{"apiVersion": refs.Versions.Infra(), "kind": kind,
				"matchResources": map[string]any{"machineDeploymentClass": map[string]any{"names": refs.WorkerClasses}}},
			"jsonPatches": []any{addFrom(path, variable)},
		},
	}
}

// selectInfraCluster selects the infrastructure cluster template.
func selectInfraCluster(refs ClassRefs, path, variable string) []map[string]any {
	return []map[string]any{{
		"selector": map[string]any{"apiVersion": refs.Versions.Infra(), "kind": refs.InfraClusterKind,
			"matchResources": map[string]any{"infrastructureCluster": true}},
		"jsonPatches": []any{addFrom(path, variable)},
	}}
}

func addFrom(path, variable string) map[string]any {
	return map[string]any{"op": "add", "path": path, "valueFrom": map[string]any{"variable": variable}}
}
