package capi

import (
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/driver"
)

// Driver is Magnetite's Cluster API driver for one infrastructure.
type Driver struct {
	infra   Infrastructure
	opts    Options
	planner planner
	// classes caches the ClusterClass per operating system: it depends
	// only on the driver's configuration.
	classes sync.Map // os name/class variant -> *class
}

// New returns the driver rendering onto infra.
func New(infra Infrastructure, opts Options) *Driver {
	opts = opts.withDefaults()
	return &Driver{infra: infra, opts: opts, planner: planner{opts: opts, infra: infra}}
}

// WithAPIVersions returns a driver that renders the given API versions,
// as discovered on the management cluster.
func (d *Driver) WithAPIVersions(v APIVersions) *Driver {
	o := d.opts
	o.APIVersions = v
	return New(d.infra, o)
}

// Name is "capi-" and the infrastructure's name.
func (d *Driver) Name() string { return "capi-" + d.infra.Name() }

// InfrastructureKind is the kind of the cluster template the driver's
// infrastructure provides (OpenStackClusterTemplate, ...): the kind whose
// served version the infrastructure's objects are rendered at.
func (d *Driver) InfrastructureKind() string {
	return d.infra.ClassTemplates(osProfiles[SupportedOS()[0]], d.opts.APIVersions).ClusterKind
}

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
// cluster autoscaler when autoscaling is on.
func (d *Driver) Render(req driver.Request) (*driver.Result, error) {
	if err := d.opts.APIVersions.check(); err != nil {
		return nil, err
	}
	p, err := d.planner.plan(req)
	if err != nil {
		return nil, err
	}
	cl, err := d.class(p.OS, d.classVariant(p))
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
	res := &driver.Result{Warnings: append(p.Warnings, addonWarnings...), Secrets: d.secrets(p), Addons: rels}
	for _, o := range cl.encoded {
		o = o.DeepCopy()
		o.SetNamespace(p.Namespace)
		res.Objects = append(res.Objects, o)
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
		res.Objects = append(res.Objects, u)
	}
	return res, nil
}

func (d *Driver) class(os OSProfile, variant string) (*class, error) {
	key := os.Name + "/" + variant
	if c, ok := d.classes.Load(key); ok {
		return c.(*class), nil
	}
	c, err := d.buildClass(os, variant)
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
	out := d.infra.Secrets(p)
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
	p, err := d.planner.plan(req)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, g := range p.Groups() {
		out[g.NodeGroup.Name] = string(g.ServerType) + " (" + g.ServerTypeReason + ")"
	}
	return out, nil
}

var _ driver.Driver = (*Driver)(nil)
