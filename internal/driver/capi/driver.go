package capi

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/driver"
)

// Driver is Magnetite's Cluster API driver for one infrastructure.
type Driver struct {
	infra   Infrastructure
	opts    Options
	planner planner
	// infraKind is the kind of the infrastructure's cluster template
	// (OpenStackClusterTemplate, ...): the kind whose served version the
	// infrastructure's objects are rendered at.
	infraKind string
	// infraVersions are the versions the infrastructure's kinds are
	// written at, preferred first, and releases the provider releases
	// serving them (Versioned).
	infraVersions []string
	releases      string
	// classes caches the ClusterClass per operating system, variant and
	// API versions: it depends on nothing else.
	classes sync.Map // classKey -> *class
}

// classKey names a cached ClusterClass.
type classKey struct {
	os, variant string
	versions    APIVersions
}

// New returns the driver rendering onto infra.
func New(infra Infrastructure, opts Options) *Driver {
	opts = opts.withDefaults()
	versions, releases := infraVersions(infra)
	return &Driver{infra: infra, opts: opts, planner: planner{opts: opts, infra: infra},
		infraKind:     infra.ClassTemplates(osProfiles[SupportedOS()[0]], DefaultAPIVersions).ClusterKind,
		infraVersions: versions, releases: releases}
}

// Name is "capi-" and the infrastructure's name.
func (d *Driver) Name() string { return "capi-" + d.infra.Name() }

// Provides lists vm and bm for every supported operating system.
func (d *Driver) Provides() []driver.Key {
	var out []driver.Key
	for _, st := range workerClasses {
		for _, os := range SupportedOS() {
			out = append(out, driver.Key{ServerType: st, OSDistro: os, COE: "kubernetes"})
		}
	}
	return out
}

// Render validates the request and renders the cluster's objects, in apply
// order: the ClusterClass's templates and the ClusterClass, the addons,
// the infrastructure's own objects (ClusterExtras), the Cluster, then the
// cluster autoscaler when autoscaling is on. The objects are rendered at
// the request's served API versions and carry its labels: Cluster API's own
// kinds at v1beta2, the infrastructure's at the version the management
// cluster serves its cluster template kind at (Versioned).
func (d *Driver) Render(req driver.Request) (*driver.Result, error) {
	v := d.servedVersions(req)
	if err := v.check(d.infraVersions, d.releases); err != nil {
		return nil, err
	}
	p, err := d.planner.plan(req, v)
	if err != nil {
		return nil, err
	}
	if err := d.checkUserData(p); err != nil {
		return nil, err
	}
	cl, err := d.class(p.OS, d.classVariant(p), v)
	if err != nil {
		return nil, err
	}
	rels, err := d.addonReleases(p)
	if err != nil {
		return nil, err
	}
	addonObjs, addonWarnings, err := d.buildAddons(p, rels, req.Addons)
	if err != nil {
		return nil, err
	}
	raw := append(append(addonObjs, d.clusterObjects(p)...), d.buildCluster(p, cl))
	// The autoscaler mounts the kubeconfig Cluster API writes for the
	// Cluster, so it comes after it.
	raw = append(raw, d.autoscalerObjects(p)...)
	if err := d.convertObjects(raw, v); err != nil {
		return nil, err
	}
	if err := d.keepInfrastructureCluster(p, raw); err != nil {
		return nil, err
	}
	res := &driver.Result{Warnings: append(p.Warnings, addonWarnings...), Secrets: d.secrets(p), Addons: rels}
	for _, o := range cl.encoded {
		o = o.DeepCopy()
		o.SetNamespace(p.Namespace)
		res.Objects = append(res.Objects, withLabels(o, req.Labels))
	}
	if d.infra.NeedsCloud() {
		for _, g := range p.Groups() {
			res.ServerGroups = append(res.ServerGroups, driver.ServerGroup{Name: g.ServerGroup, Policy: g.ServerGroupRule, NodeGroupUUID: g.NodeGroup.UUID})
		}
	}
	for _, m := range raw {
		u, err := toUnstructured(m, p.Namespace)
		if err != nil {
			return nil, fmt.Errorf("capi: encode %v: %w", m["kind"], err)
		}
		res.Objects = append(res.Objects, withLabels(u, req.Labels))
	}
	return res, nil
}

// withLabels adds the request's ownership labels to an object.
func withLabels(u *unstructured.Unstructured, add map[string]string) *unstructured.Unstructured {
	if len(add) == 0 {
		return u
	}
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, add)
	u.SetLabels(l)
	return u
}

func (d *Driver) class(os OSProfile, variant string, v APIVersions) (*class, error) {
	key := classKey{os: os.Name, variant: variant, versions: v}
	if c, ok := d.classes.Load(key); ok {
		return c.(*class), nil
	}
	c, err := d.buildClass(os, variant, v)
	if err != nil {
		return nil, err
	}
	for _, m := range c.objects {
		u, err := toUnstructured(m, "")
		if err != nil {
			return nil, fmt.Errorf("capi: encode %v: %w", m["kind"], err)
		}
		c.encoded = append(c.encoded, u)
	}
	d.classes.Store(key, c)
	return c, nil
}

func (d *Driver) secrets(p *Plan) []driver.SecretRef {
	var out []driver.SecretRef
	for _, s := range d.infra.Secrets(p) {
		if p.KeepsAddons() && strings.HasSuffix(s.Name, "-addon") {
			continue // the addons' Secrets: the kept addons have their own
		}
		out = append(out, s)
	}
	for _, ca := range []struct{ suffix, purpose string }{
		{"ca", "cluster certificate authority"}, {"etcd", "etcd certificate authority"},
		{"proxy", "front-proxy certificate authority"}, {"sa", "service account signing key pair"},
	} {
		out = append(out, driver.SecretRef{Name: p.Name + "-" + ca.suffix, Purpose: ca.purpose, Optional: true})
	}
	return out
}

// toUnstructured turns a rendered object into its JSON form (numbers as
// int64, as client-go expects) in the given namespace. Every object is a
// fresh copy.
func toUnstructured(m map[string]any, namespace string) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	u.SetNamespace(namespace)
	return u, nil
}

// ServerTypes reports each node group's server type in a rendered request,
// keyed by node group name; `magnetite render` prints it.
func (d *Driver) ServerTypes(req driver.Request) (map[string]string, error) {
	p, err := d.planner.plan(req, d.servedVersions(req))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, g := range p.Groups() {
		out[g.NodeGroup.Name] = string(g.ServerType) + " (" + g.ServerTypeReason + ")"
	}
	return out, nil
}

// servedVersions are the versions the request's objects are rendered at.
func (d *Driver) servedVersions(req driver.Request) APIVersions {
	return servedVersions(req.APIVersions, d.infraKind, d.infraVersions[0])
}

var _ driver.Driver = (*Driver)(nil)

// CheckShape implements driver.ShapeChecker with the infrastructure's own
// checks, when it has any.
func (d *Driver) CheckShape(in driver.ShapeInput, s *driver.Shape) []string {
	if sc, ok := d.infra.(driver.ShapeChecker); ok {
		return sc.CheckShape(in, s)
	}
	return nil
}

// keepInfrastructureCluster sets a rebased cluster's infrastructure
// cluster variable to the spec its driver's ClusterClass made, at the
// version the management cluster serves, with only the credentials Secret
// (identityRef's name) Magnetite's: CAPO refuses changes to nearly every other
// field of an OpenStackCluster (v0.14.7 pkg/webhooks/openstackcluster_webhook.go
// ValidateUpdate allows identityRef, bastion, security group rules,
// allowed CIDRs and availability zones), and they describe the network and
// load balancer the workload runs on.
func (d *Driver) keepInfrastructureCluster(p *Plan, raw []map[string]any) error {
	if p.Kept == nil || p.Kept.InfrastructureCluster == nil {
		return nil
	}
	conv, ok := d.infra.(Versioned)
	if !ok {
		return fmt.Errorf("capi: the %s infrastructure cannot keep a cluster's infrastructure spec", d.infra.Name())
	}
	variable := ""
	for name, kind := range conv.SpecVariables() {
		if kind == d.infraKind {
			variable = name
		}
	}
	for _, o := range raw {
		if o["kind"] != "Cluster" {
			continue
		}
		vars, _ := NestedValue(o, "spec", "topology", "variables").([]any)
		for _, x := range vars {
			nv, _ := x.(map[string]any)
			if nv["name"] != variable {
				continue
			}
			rendered, _ := nv["value"].(map[string]any)
			kept, _ := deepCopyJSON(p.Kept.InfrastructureCluster).(map[string]any)
			// The credentials Secret becomes the one Magnetite writes;
			// the cloud in it keeps the name CAPO already reads.
			id, _ := deepCopyJSON(rendered["identityRef"]).(map[string]any)
			if keptID, _ := kept["identityRef"].(map[string]any); keptID != nil && id != nil && keptID["cloudName"] != nil {
				id["cloudName"] = keptID["cloudName"]
			}
			if id != nil {
				kept["identityRef"] = id
			}
			nv["value"] = kept
			return nil
		}
	}
	return fmt.Errorf("capi: the Cluster has no %s variable to keep the infrastructure spec in", variable)
}
