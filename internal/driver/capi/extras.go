package capi

// ClusterExtras is implemented by infrastructures that need more than
// ClusterClass templates and variables: objects of their own for each
// cluster (IP pools, data templates, remediation templates), a remediation
// template for a group's MachineHealthCheck, and files on control plane
// nodes (a static pod that serves the API address).
type ClusterExtras interface {
	// ClusterObjects are applied before the Cluster, in order.
	ClusterObjects(p *Plan, v APIVersions) []map[string]any
	// Remediation is the templateRef a group's health check remediates
	// with; nil leaves Cluster API's default (replace the machine).
	Remediation(p *Plan, g *Group, v APIVersions) map[string]any
	// ControlPlaneFiles are written on control plane nodes after the
	// extra_files.
	ControlPlaneFiles(p *Plan) []map[string]any
}

func (d *Driver) clusterObjects(p *Plan) []map[string]any {
	if e, ok := d.infra.(ClusterExtras); ok {
		return e.ClusterObjects(p, p.Versions)
	}
	return nil
}

// withRemediation adds the infrastructure's remediation template to an
// enabled health check.
func (d *Driver) withRemediation(p *Plan, g *Group, hc map[string]any) map[string]any {
	e, ok := d.infra.(ClusterExtras)
	if !ok || hc["enabled"] != true {
		return hc
	}
	if ref := e.Remediation(p, g, p.Versions); ref != nil {
		hc["remediation"] = map[string]any{"templateRef": ref}
	}
	return hc
}

func (d *Driver) controlPlaneFiles(p *Plan) []any {
	out := files(p, true)
	if e, ok := d.infra.(ClusterExtras); ok {
		for _, f := range e.ControlPlaneFiles(p) {
			out = append(out, f)
		}
	}
	return out
}

// ClassVariants is implemented by infrastructures whose base templates
// depend on a choice of the cluster that ClusterClass patches cannot carry
// (Cluster API patches only spec.template.spec of templates): each variant
// is a ClusterClass of its own, named by its content hash like any other.
type ClassVariants interface {
	// ClassVariant names the cluster's variant; "" is the plain class.
	ClassVariant(p *Plan) string
	// VariantTemplates are the base templates of a variant.
	VariantTemplates(os OSProfile, v APIVersions, variant string) ClassTemplates
}

func (d *Driver) classVariant(p *Plan) string {
	if cv, ok := d.infra.(ClassVariants); ok {
		return cv.ClassVariant(p)
	}
	return ""
}

func (d *Driver) classTemplates(os OSProfile, v APIVersions, variant string) ClassTemplates {
	if cv, ok := d.infra.(ClassVariants); ok && variant != "" {
		return cv.VariantTemplates(os, v, variant)
	}
	return d.infra.ClassTemplates(os, v)
}

// withMachineTemplateFields sets the infrastructure's fields beside
// spec.template in its machine templates.
func withMachineTemplateFields(objs []map[string]any, tmpl ClassTemplates) []map[string]any {
	for _, o := range objs {
		if o["kind"] != tmpl.MachineKind {
			continue
		}
		spec := o["spec"].(map[string]any)
		for k, v := range tmpl.MachineTemplateFields {
			spec[k] = v
		}
	}
	return objs
}
