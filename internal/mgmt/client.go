package mgmt

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/config"
	"github.com/magnetite-io/magnetite/internal/kinds"
)

// FieldManager owns every field Magnetite applies.
const FieldManager = "magnetite"

// Options configure a Client.
type Options struct {
	// Kubeconfig is the path of the management cluster's kubeconfig; empty
	// means the in-cluster service account.
	Kubeconfig string
	// APIResources overrides discovery per kind (see ParseAPIResources).
	APIResources string
	// NamespacePrefix starts the name of every project namespace.
	NamespacePrefix string
	// Kinds are the kinds the infrastructures use beside BaseKinds, as the
	// registered drivers declare them (driver.Registry.Kinds); the client
	// knows no other kind.
	Kinds []kinds.Kind
	Log   *slog.Logger
}

// OptionsFromConfig reads the [management] section.
func OptionsFromConfig(c *config.Config) Options {
	return Options{
		Kubeconfig:      c.String("management", "kubeconfig"),
		APIResources:    c.String("management", "api_resources"),
		NamespacePrefix: c.String("management", "namespace_prefix"),
	}
}

// Client talks to the management cluster.
type Client struct {
	cfg       *rest.Config
	dyn       dynamic.Interface
	meta      metadata.Interface
	disc      discovery.DiscoveryInterface
	kinds     kinds.Table
	overrides map[string]schema.GroupVersion
	prefix    string
	log       *slog.Logger
	setup     []Finding

	mu                sync.RWMutex
	resources         map[string]Resource
	discoveredAt      time.Time
	discoveryFindings []Finding
	discovering       singleflight.Group

	requests *requestCounts

	// ensured holds when each namespace was last ensured.
	nsMu    sync.Mutex
	ensured map[string]time.Time
}

// New loads the kubeconfig named in opts and returns a client. A kubeconfig
// others can read is logged as a warning and kept in Findings.
func New(opts Options) (*Client, error) {
	cfg, findings, err := loadKubeconfig(opts.Kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := NewForConfig(cfg, opts)
	if err != nil {
		return nil, err
	}
	for _, f := range findings {
		c.log.Warn("SECURITY: "+f.Message, "check", f.Check)
	}
	c.setup = findings
	return c, nil
}

// NewForConfig returns a client for an already loaded configuration.
func NewForConfig(cfg *rest.Config, opts Options) (*Client, error) {
	table, err := kinds.NewTable(BaseKinds, opts.Kinds)
	if err != nil {
		return nil, fmt.Errorf("mgmt: %w", err)
	}
	overrides, err := ParseAPIResources(opts.APIResources, table)
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	// Status sync of hundreds of clusters lists and applies in bursts.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "magnetite"
	}
	requests := &requestCounts{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, counts: requests} })
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("mgmt: %w", err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("mgmt: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("mgmt: %w", err)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	prefix := opts.NamespacePrefix
	if prefix == "" {
		prefix = DefaultNamespacePrefix
	}
	if err := validPrefix(prefix); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, dyn: dyn, meta: meta, disc: disc, kinds: table, overrides: overrides, prefix: prefix, log: log, requests: requests}, nil
}

// Kinds is the client's table of the kinds Magnetite uses: BaseKinds and
// the infrastructures' (Options.Kinds).
func (c *Client) Kinds() kinds.Table { return c.kinds }

// Findings lists what an operator should fix about the setup: kubeconfig
// permissions, and overrides that name versions the cluster does not serve.
func (c *Client) Findings() []Finding {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append(append([]Finding(nil), c.setup...), c.discoveryFindings...)
}

// RESTConfig is the configuration the client uses.
func (c *Client) RESTConfig() *rest.Config { return rest.CopyConfig(c.cfg) }

// Owner says whose object Magnetite is writing; it becomes labels.
type Owner struct {
	ClusterUUID string
	ProjectID   string
}

// Ownership labels on everything Magnetite creates.
const (
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	ManagedByValue   = "magnetite"
	LabelClusterUUID = "magnetite.io/cluster-uuid"
	LabelProjectID   = "magnetite.io/project-id"
	// AnnotationProjectID keeps the project id verbatim when it is not a
	// valid label value and the label carries a derived one.
	AnnotationProjectID = "magnetite.io/project-id"
)

// LabelInventory marks the objects of the bare-metal host inventory
// (BareMetalHosts and their BMC credentials): Magnetite made them, but they
// outlive clusters, and a namespace holding them is never released.
const LabelInventory = "magnetite.io/inventory"

// ManagedSelector selects every object Magnetite manages.
const ManagedSelector = LabelManagedBy + "=" + ManagedByValue

// ClusterSelector selects the objects of one Magnetite cluster.
func ClusterSelector(clusterUUID string) string {
	return ManagedSelector + "," + LabelClusterUUID + "=" + clusterUUID
}

// Labels are the ownership labels of o's objects.
func (o Owner) Labels() map[string]string {
	l := map[string]string{LabelManagedBy: ManagedByValue}
	if o.ClusterUUID != "" {
		l[LabelClusterUUID] = o.ClusterUUID
	}
	if o.ProjectID != "" {
		l[LabelProjectID] = labelValue(o.ProjectID)
	}
	return l
}

func (o Owner) stamp(obj *unstructured.Unstructured) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range o.Labels() {
		labels[k] = v
	}
	obj.SetLabels(labels)
	if o.ProjectID != "" && labelValue(o.ProjectID) != o.ProjectID {
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationProjectID] = o.ProjectID
		obj.SetAnnotations(ann)
	}
}

// resourceFor resolves obj's kind. An object that names its apiVersion is
// sent to that version (the renderer chose its shape for it); one that does
// not gets the discovered version stamped on.
func (c *Client) resourceFor(ctx context.Context, obj *unstructured.Unstructured) (Resource, error) {
	r, err := c.Resource(ctx, obj.GetKind())
	if err != nil {
		return r, err
	}
	if obj.GetAPIVersion() == "" {
		obj.SetAPIVersion(r.APIVersion())
		return r, nil
	}
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return r, fmt.Errorf("mgmt: %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	if gv.Group != r.GroupVersion.Group {
		return r, fmt.Errorf("mgmt: %s %s has apiVersion %s, but %s belongs to API group %q",
			obj.GetKind(), obj.GetName(), obj.GetAPIVersion(), obj.GetKind(), r.GroupVersion.Group)
	}
	r.GroupVersion = gv
	return r, nil
}

func (c *Client) resourceClient(r Resource, namespace string) dynamic.ResourceInterface {
	if r.Namespaced {
		return c.dyn.Resource(r.GVR()).Namespace(namespace)
	}
	return c.dyn.Resource(r.GVR())
}

// Apply server-side applies obj as Magnetite, forcing ownership of the
// fields it sets, after adding owner's labels. A namespaced object without a
// namespace goes to the owner's project namespace. Applying the same object
// twice changes nothing.
func (c *Client) Apply(ctx context.Context, owner Owner, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, err := c.resourceFor(ctx, obj)
	if err != nil {
		return nil, err
	}
	obj = obj.DeepCopy()
	if r.Namespaced && obj.GetNamespace() == "" {
		if owner.ProjectID == "" {
			return nil, fmt.Errorf("mgmt: %s %s has no namespace and no project", obj.GetKind(), obj.GetName())
		}
		obj.SetNamespace(c.NamespaceName(owner.ProjectID))
	}
	owner.stamp(obj)
	// Server-side apply refuses these; they belong to the server.
	obj.SetManagedFields(nil)
	obj.SetResourceVersion("")
	obj.SetUID("")
	obj.SetCreationTimestamp(metav1.Time{})
	out, err := c.resourceClient(r, obj.GetNamespace()).Apply(ctx, obj.GetName(), obj,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		if obj.GetNamespace() != "" {
			// The namespace may be gone or going: ensure it again.
			c.rememberNamespace(obj.GetNamespace(), false)
		}
		return nil, fmt.Errorf("mgmt: apply %s %s/%s (%s): %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), r.APIVersion(), err)
	}
	return out, nil
}

// Get reads one object at the kind's served version; a missing object is an
// error that apierrors.IsNotFound recognises.
func (c *Client) Get(ctx context.Context, kind, namespace, name string) (*unstructured.Unstructured, error) {
	r, err := c.Resource(ctx, kind)
	if err != nil {
		return nil, err
	}
	return c.resourceClient(r, namespace).Get(ctx, name, metav1.GetOptions{})
}

// List reads the objects of kind in namespace ("" for all) that match the
// label selector.
func (c *Client) List(ctx context.Context, kind, namespace, selector string) ([]unstructured.Unstructured, error) {
	r, err := c.Resource(ctx, kind)
	if err != nil {
		return nil, err
	}
	l, err := c.resourceClient(r, namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("mgmt: list %s: %w", kind, err)
	}
	return l.Items, nil
}

// ListMetadata reads only the metadata of the objects of kind in namespace
// ("" for all) that match the label selector: names, labels, annotations,
// owners, managed fields and deletion timestamps, as objects of the kind's
// served version with nothing but apiVersion, kind and metadata. What is
// pruned or cleaned up is decided on metadata alone, and a cluster's addon
// ConfigMaps hold megabytes (Calico's manifests) that the management
// cluster would otherwise encode, send and Magnetite decode at every look.
//
// The list holds every change the management cluster accepted before it
// was asked, as a consistent list does, and is served from the API
// server's watch cache. A consistent list itself is served from the cache
// only once the cache has caught up with etcd, and from etcd when it has
// not within three seconds (CacheDelegator.GetList, k8s.io/apiserver v0.36
// pkg/storage/cacher/delegator.go): etcd then reads, and the API server
// decodes, every object of the kind in the namespace whatever the
// selector, which for the ConfigMaps of a project's clusters is tens of
// megabytes. On a busy management cluster, whose cache lags, such lists
// ran past the API server's 60-second limit. So ListMetadata asks first
// for one object of the kind, consistently and without a selector (from
// etcd, one key), which answers with a resourceVersion as new as every
// change before the request, and then for the selected objects at least
// as new as that (resourceVersionMatch NotOlderThan), which only the cache
// serves: while it is behind, the API server answers 504 with Retry-After
// and the client waits and asks again (ten times).
func (c *Client) ListMetadata(ctx context.Context, kind, namespace, selector string) ([]unstructured.Unstructured, error) {
	r, err := c.Resource(ctx, kind)
	if err != nil {
		return nil, err
	}
	if !r.Namespaced {
		namespace = ""
	}
	client := c.meta.Resource(r.GVR()).Namespace(namespace)
	now, err := client.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("mgmt: list %s: %w", kind, err)
	}
	l, err := client.List(ctx, metav1.ListOptions{LabelSelector: selector,
		ResourceVersion: now.GetResourceVersion(), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		return nil, fmt.Errorf("mgmt: list %s: %w", kind, err)
	}
	out := make([]unstructured.Unstructured, 0, len(l.Items))
	for i := range l.Items {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&l.Items[i].ObjectMeta)
		if err != nil {
			return nil, fmt.Errorf("mgmt: list %s: %w", kind, err)
		}
		o := unstructured.Unstructured{Object: map[string]any{"metadata": m}}
		o.SetAPIVersion(r.APIVersion())
		o.SetKind(kind)
		out = append(out, o)
	}
	return out, nil
}

// ListFields reads the objects of kind in namespace that match a field
// selector (events by their involved object, which carry no labels).
func (c *Client) ListFields(ctx context.Context, kind, namespace, fieldSelector string) ([]unstructured.Unstructured, error) {
	r, err := c.Resource(ctx, kind)
	if err != nil {
		return nil, err
	}
	l, err := c.resourceClient(r, namespace).List(ctx, metav1.ListOptions{FieldSelector: fieldSelector})
	if err != nil {
		return nil, fmt.Errorf("mgmt: list %s: %w", kind, err)
	}
	return l.Items, nil
}

// Delete asks the management cluster to delete an object (its dependents are
// collected in the background). It reports whether the object still existed;
// deleting what is already gone is not an error.
func (c *Client) Delete(ctx context.Context, kind, namespace, name string) (bool, error) {
	r, err := c.Resource(ctx, kind)
	if err != nil {
		return false, err
	}
	return deleteObject(ctx, c.resourceClient(r, namespace), kind, namespace, name)
}

// deleteObject deletes one object through d, its dependents collected in
// the background, and reports whether it still existed.
func deleteObject(ctx context.Context, d interface {
	Delete(context.Context, string, metav1.DeleteOptions, ...string) error
}, kind, namespace, name string) (bool, error) {
	policy := metav1.DeletePropagationBackground
	err := d.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("mgmt: delete %s %s/%s: %w", kind, namespace, name, err)
	}
	return true, nil
}

// Ping asks the management cluster's API server for its version: the
// cheapest request every authenticated user may make, so an error means it
// cannot be reached or does not accept Magnetite's credentials.
func (c *Client) Ping(ctx context.Context) error {
	res := c.disc.RESTClient().Get().AbsPath("/version").Do(ctx)
	if err := res.Error(); err != nil {
		return fmt.Errorf("mgmt: %s does not answer: %w", c.cfg.Host, err)
	}
	return nil
}
