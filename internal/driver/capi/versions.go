package capi

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/kinds"
)

// Versioned is implemented by an infrastructure whose provider serves its
// kinds at more than one API version of different shapes: CAPO (v1beta1 in
// v0.12-v0.14, v1beta1 and v1beta2 from v0.15) and CAPM3 (v1beta1 up to
// v1.12, both from v1.13). The infrastructure renders every spec in the
// shape of its preferred version, and the driver converts what it renders
// at one boundary (Convert), so the differences between versions live in
// one function per infrastructure rather than in every template.
//
// An infrastructure that does not implement it writes its kinds at
// CoreAPIVersion only.
type Versioned interface {
	// APIVersions are the versions of infrastructure.cluster.x-k8s.io the
	// infrastructure's kinds are written at, preferred first; specs are
	// rendered in the first one's shape.
	APIVersions() []string
	// Releases names the provider releases that serve those versions
	// ("CAPO v0.12-v0.14 (v1beta1), v0.15 (v1beta2)"), for doctor and
	// refusals.
	Releases() string
	// Convert rewrites obj, an object of one of the infrastructure's kinds
	// in the preferred version's shape, into its shape at version (one of
	// APIVersions). The ClusterClass's templates and the values of
	// SpecVariables reach it as template objects holding only
	// spec.template.spec. It fails on a field version cannot express.
	Convert(version string, obj map[string]any) error
	// SpecVariables maps each ClusterClass variable that holds a whole
	// spec to the kind of the template its value is patched into.
	SpecVariables() map[string]string
}

// infraVersions are the versions the driver writes its infrastructure's
// kinds at, preferred first, and the releases serving them.
func infraVersions(infra Infrastructure) ([]string, string) {
	if v, ok := infra.(Versioned); ok {
		return v.APIVersions(), v.Releases()
	}
	return []string{CoreAPIVersion}, ""
}

// InfrastructureVersions are the versions of the infrastructure group the
// driver writes its infrastructure's kinds at, preferred first.
func (d *Driver) InfrastructureVersions() []string { return slices.Clone(d.infraVersions) }

// InfrastructureKind is the kind whose served version decides the version
// of every infrastructure object the driver renders: its cluster template.
func (d *Driver) InfrastructureKind() string { return d.infraKind }

// Kinds are the infrastructure's kinds. Those whose objects follow the
// version of the infrastructure's cluster template (its contract kinds,
// which the ClusterClass's templates stamp out, and the per-cluster kinds
// it renders, marked Cleanup) are marked with the versions the driver
// writes them at, so that discovery prefers those, and with the releases
// serving them; a kind the infrastructure only reads (CAPO's
// OpenStackServer, v1alpha1 in every release) keeps its own. The Cluster
// API kinds the driver renders besides are the management client's own
// (mgmt.BaseKinds).
func (d *Driver) Kinds() []kinds.Kind {
	out := d.infra.Kinds()
	contract := map[string]bool{}
	for _, k := range ContractKinds(strings.TrimSuffix(d.infraKind, "ClusterTemplate")) {
		contract[k.Kind] = true
	}
	for i, k := range out {
		if k.Group == kinds.GroupInfrastructure && len(k.Versions) == 0 && (contract[k.Kind] || k.Cleanup) {
			out[i].Versions = slices.Clone(d.infraVersions)
			out[i].Releases = d.releases
		}
	}
	return out
}

// convertTemplates turns the base templates of a ClusterClass, rendered in
// the preferred version's shape, into their shape at version.
func (d *Driver) convertTemplates(tmpl ClassTemplates, version string) (ClassTemplates, error) {
	conv, ok := d.infra.(Versioned)
	if !ok || version == d.infraVersions[0] {
		return tmpl, nil
	}
	var err error
	if tmpl.ClusterSpec, err = convertSpec(conv, version, tmpl.ClusterKind, tmpl.ClusterSpec); err != nil {
		return tmpl, err
	}
	if tmpl.ControlPlaneMachineSpec, err = convertSpec(conv, version, tmpl.MachineKind, tmpl.ControlPlaneMachineSpec); err != nil {
		return tmpl, err
	}
	for st, spec := range tmpl.WorkerMachineSpecs {
		if tmpl.WorkerMachineSpecs[st], err = convertSpec(conv, version, tmpl.MachineKind, spec); err != nil {
			return tmpl, err
		}
	}
	return tmpl, nil
}

// convertSpec converts spec, the spec.template.spec of a templateKind
// object.
func convertSpec(conv Versioned, version, templateKind string, spec map[string]any) (map[string]any, error) {
	if spec == nil {
		return nil, nil
	}
	obj := map[string]any{"kind": templateKind, "spec": map[string]any{"template": map[string]any{"spec": spec}}}
	if err := conv.Convert(version, obj); err != nil {
		return nil, fmt.Errorf("capi: %s at infrastructure.cluster.x-k8s.io/%s: %w", templateKind, version, err)
	}
	out, _ := NestedValue(obj, "spec", "template", "spec").(map[string]any)
	return out, nil
}

// convertObjects turns what Render built in the preferred version's shape
// into the shape of the served version: the infrastructure's own objects,
// and the Cluster's topology variables that hold a whole infrastructure
// spec (the cluster's and each machine deployment's overrides).
func (d *Driver) convertObjects(objs []map[string]any, v APIVersions) error {
	conv, ok := d.infra.(Versioned)
	if !ok || v.Infrastructure == d.infraVersions[0] {
		return nil
	}
	specVars := conv.SpecVariables()
	convertVars := func(vars []any) error {
		for _, x := range vars {
			nv, _ := x.(map[string]any)
			name, _ := nv["name"].(string)
			kind, ok := specVars[name]
			if !ok {
				continue
			}
			spec, _ := nv["value"].(map[string]any)
			out, err := convertSpec(conv, v.Infrastructure, kind, spec)
			if err != nil {
				return fmt.Errorf("variable %s: %w", name, err)
			}
			nv["value"] = out
		}
		return nil
	}
	for _, o := range objs {
		switch {
		case o["apiVersion"] == v.Infra():
			if err := conv.Convert(v.Infrastructure, o); err != nil {
				return fmt.Errorf("capi: %v at %s: %w", o["kind"], v.Infra(), err)
			}
		case o["kind"] == "Cluster" && o["apiVersion"] == v.cluster():
			vars, _ := NestedValue(o, "spec", "topology", "variables").([]any)
			if err := convertVars(vars); err != nil {
				return err
			}
			mds, _ := NestedValue(o, "spec", "topology", "workers", "machineDeployments").([]any)
			for _, md := range mds {
				overrides, _ := NestedValue(md.(map[string]any), "variables", "overrides").([]any)
				if err := convertVars(overrides); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ObjectSpec is the spec an infrastructure object holds, for Convert: the
// spec.template.spec of a template kind, else its spec; and the kind that
// spec is of (OpenStackMachine for an OpenStackMachineTemplate,
// Metal3DataTemplate for itself).
func ObjectSpec(obj map[string]any) (kind string, spec map[string]any) {
	kind, _ = obj["kind"].(string)
	if base, ok := strings.CutSuffix(kind, "Template"); ok {
		// Metal3DataTemplate is named like a template but holds its own
		// spec.
		if spec, ok = NestedValue(obj, "spec", "template", "spec").(map[string]any); ok {
			return base, spec
		}
	}
	spec, _ = obj["spec"].(map[string]any)
	return kind, spec
}

// NestedValue is the value at path in obj, nil when absent.
func NestedValue(obj map[string]any, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, path...)
	return v
}
