package driver

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/model"
)

// Sentinel errors; the API maps them to HTTP codes.
var (
	// ErrNoDriver: no registered driver provides a template's
	// (server_type, os_distro, coe), or the named driver does not exist.
	ErrNoDriver = errors.New("driver: no valid driver")
	// ErrInvalid: the cluster cannot be rendered as asked (a bare-metal
	// node group with a virtual flavor, a missing kube version, ...).
	ErrInvalid = errors.New("driver: invalid cluster")
)

// Key is what a driver provides, as Magnum's drivers advertise it.
type Key struct {
	ServerType model.ServerType
	OSDistro   string
	COE        string
}

func (k Key) String() string {
	os := k.OSDistro
	if os == "" {
		os = "(unknown: set cluster_distro or the image's os_distro)"
	}
	return fmt.Sprintf("server_type=%s, os_distro=%s, coe=%s", k.ServerType, os, k.COE)
}

// Request is everything a driver renders from. Drivers never do I/O: the
// conductor loads the objects and the cloud facts once per operation.
type Request struct {
	Template   *model.ClusterTemplate
	Cluster    *model.Cluster
	NodeGroups []*model.NodeGroup
	Facts      *Facts
	// Namespace of the management cluster that holds the cluster's objects.
	Namespace string
}

// SecretRef names a Secret the conductor creates before applying the
// rendered objects; the objects refer to it by name.
type SecretRef struct {
	Name    string
	Purpose string
}

// Result is a rendered cluster.
type Result struct {
	// Objects in the order they should be applied.
	Objects []*unstructured.Unstructured
	// Secrets the objects refer to and the conductor must provide.
	Secrets []SecretRef
	// Warnings worth showing the user, such as labels the schema does not
	// know (they are kept, never dropped, but have no effect).
	Warnings []string
}

// Driver turns a cluster into the objects that build it.
type Driver interface {
	// Name is the value of a template's driver field that selects it.
	Name() string
	// Provides lists the (server_type, os_distro, coe) it serves.
	Provides() []Key
	// Render validates the request and returns the objects. It is a pure
	// function of the request; errors wrap ErrInvalid and say what to fix.
	Render(Request) (*Result, error)
}

// ValidationError lists every problem found in a request.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string { return strings.Join(e.Problems, "; ") }

func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Registry finds the driver of a template.
type Registry struct {
	byName map[string]Driver
	// byKey lists, per key, the drivers chosen by tuple, in registration
	// order; the first wins.
	byKey map[Key][]Driver
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]Driver{}, byKey: map[Key][]Driver{}}
}

// Register adds a driver chosen by its (server_type, os_distro, coe)
// tuples, and by name.
func (r *Registry) Register(d Driver) error {
	if err := r.RegisterExplicit(d); err != nil {
		return err
	}
	for _, k := range d.Provides() {
		r.byKey[k] = append(r.byKey[k], d)
	}
	return nil
}

// RegisterExplicit adds a driver chosen only when a template names it in
// its driver field (the in-memory backend, for instance, must never be
// picked for a real cloud by accident).
func (r *Registry) RegisterExplicit(d Driver) error {
	if _, dup := r.byName[d.Name()]; dup {
		return fmt.Errorf("driver: %s registered twice", d.Name())
	}
	r.byName[d.Name()] = d
	return nil
}

// Lookup returns the driver for key, or the named one when name is set;
// the named driver must provide key too.
func (r *Registry) Lookup(key Key, name string) (Driver, error) {
	if name != "" {
		d, ok := r.byName[name]
		if !ok {
			return nil, fmt.Errorf("%w: the driver %q is not available; available drivers: %s", ErrNoDriver, name, strings.Join(r.Names(), ", "))
		}
		for _, k := range d.Provides() {
			if k == key {
				return d, nil
			}
		}
		return nil, fmt.Errorf("%w: the driver %q does not provide %s; it provides %s", ErrNoDriver, name, key, describe(d.Provides()))
	}
	if ds := r.byKey[key]; len(ds) > 0 {
		return ds[0], nil
	}
	var all []Key
	for k := range r.byKey {
		all = append(all, k)
	}
	return nil, fmt.Errorf("%w: no driver provides %s; supported: %s", ErrNoDriver, key, describe(all))
}

// KeyOf is the tuple a template asks for. osDistro, when known from the
// image, wins over the template's cluster_distro.
func KeyOf(ct *model.ClusterTemplate, osDistro string) Key {
	if osDistro == "" && ct.ClusterDistro != nil {
		osDistro = *ct.ClusterDistro
	}
	st := ct.ServerType
	if st == "" {
		st = model.ServerTypeVM
	}
	return Key{ServerType: st, OSDistro: NormalizeOSDistro(osDistro), COE: ct.COE}
}

// ForTemplate returns the driver of a template.
func (r *Registry) ForTemplate(ct *model.ClusterTemplate, osDistro string) (Driver, error) {
	name := ""
	if ct.Driver != nil {
		name = *ct.Driver
	}
	return r.Lookup(KeyOf(ct, osDistro), name)
}

// Names lists the registered drivers.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NormalizeOSDistro maps Glance os_distro spellings to the names drivers
// advertise.
func NormalizeOSDistro(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "rocky":
		return "rockylinux"
	case "flatcar-container-linux":
		return "flatcar"
	}
	return s
}

// describe summarises keys compactly: "vm, bm × debian, flatcar × kubernetes".
func describe(keys []Key) string {
	if len(keys) == 0 {
		return "nothing"
	}
	sts, oss, coes := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		sts[string(k.ServerType)], oss[k.OSDistro], coes[k.COE] = true, true, true
	}
	if len(sts)*len(oss)*len(coes) != len(uniqueKeys(keys)) {
		parts := make([]string, 0, len(keys))
		for _, k := range uniqueKeys(keys) {
			parts = append(parts, "("+k.String()+")")
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprintf("server_type %s × os_distro %s × coe %s", setString(sts), setString(oss), setString(coes))
}

func uniqueKeys(keys []Key) []Key {
	seen := map[Key]bool{}
	var out []Key
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func setString(m map[string]bool) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, "|")
}
