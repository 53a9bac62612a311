package mgmt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"

	"github.com/magnetite-io/magnetite/internal/fault"
)

// DefaultNamespacePrefix starts project namespace names.
const DefaultNamespacePrefix = "magnetite-"

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

func validPrefix(p string) error {
	if len(p) > 30 || notDNS.MatchString(p) || strings.HasPrefix(p, "-") {
		return fmt.Errorf("mgmt: [management] namespace_prefix %q must be at most 30 lowercase letters, digits and dashes, not starting with a dash", p)
	}
	return nil
}

// NamespaceName is the namespace of a project's clusters: the prefix and the
// project id when that is already a DNS label (Keystone ids are 32 hex
// digits), otherwise a readable DNS-safe form of the id plus a hash of it, so
// two ids never share a namespace.
func (c *Client) NamespaceName(projectID string) string {
	return namespaceName(c.prefix, projectID)
}

func namespaceName(prefix, projectID string) string {
	name := prefix + projectID
	if len(validation.IsDNS1123Label(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(projectID))
	suffix := hex.EncodeToString(sum[:])[:10]
	readable := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(projectID), "-"), "-")
	room := validation.DNS1123LabelMaxLength - len(prefix) - len(suffix) - 1
	if len(readable) > room {
		readable = strings.TrimRight(readable[:room], "-")
	}
	if readable == "" {
		return strings.TrimRight(prefix, "-") + "-" + suffix
	}
	return prefix + readable + "-" + suffix
}

var notLabel = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// labelValue is s when it is a valid label value, else a valid value derived
// from it with a hash (the verbatim id then goes in an annotation).
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	suffix := hex.EncodeToString(sum[:])[:10]
	readable := strings.Trim(notLabel.ReplaceAllString(s, "-"), "-._")
	if room := validation.LabelValueMaxLength - len(suffix) - 1; len(readable) > room {
		readable = strings.TrimRight(readable[:room], "-._")
	}
	if readable == "" {
		return suffix
	}
	return readable + "-" + suffix
}

// ErrNamespaceTerminating means the project's namespace is still being
// deleted (its last cluster went moments ago): nothing can be created in it
// until it is gone, so the caller waits and tries again.
var ErrNamespaceTerminating = errors.New("mgmt: namespace is being deleted")

// EnsureNamespace creates (or re-labels) the project's namespace and returns
// its name; ErrNamespaceTerminating while an earlier one is being deleted.
//
// A namespace this client ensured less than namespaceTrusted ago is taken to
// be there without asking the API server again (every reconcile of every
// cluster ensures its namespace): this client's own ReleaseNamespace, and any
// apply into the namespace that fails, make it ask again.
func (c *Client) EnsureNamespace(ctx context.Context, projectID string) (string, error) {
	name := c.NamespaceName(projectID)
	if c.namespaceEnsured(name) {
		return name, nil
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	applied, err := c.Apply(ctx, Owner{ProjectID: projectID}, ns)
	if err != nil {
		return "", err
	}
	if applied.GetDeletionTimestamp() != nil {
		return "", fault.New(ErrNamespaceTerminating, "namespace %s of project %s is still being deleted; waiting until it is gone", name, projectID)
	}
	c.rememberNamespace(name, true)
	return name, nil
}

// namespaceTrusted is how long an ensured namespace is taken to be there.
const namespaceTrusted = 10 * time.Minute

func (c *Client) namespaceEnsured(name string) bool {
	c.nsMu.Lock()
	defer c.nsMu.Unlock()
	at, ok := c.ensured[name]
	return ok && time.Since(at) < namespaceTrusted
}

// rememberNamespace records that the namespace was ensured now, or forgets
// that it was.
func (c *Client) rememberNamespace(name string, ensured bool) {
	c.nsMu.Lock()
	defer c.nsMu.Unlock()
	if !ensured {
		delete(c.ensured, name)
		return
	}
	if c.ensured == nil {
		c.ensured = map[string]time.Time{}
	}
	c.ensured[name] = time.Now()
}

// ReleaseNamespace deletes the project's namespace when no Cluster is left
// in it and it holds nothing Magnetite did not put there, and reports
// whether it did; kept names the objects that kept it (at most a few).
// Secrets Magnetite left there go with it. An operator's BareMetalHosts,
// BMC Secrets or ConfigMaps in a project's namespace are never deleted
// with it.
func (c *Client) ReleaseNamespace(ctx context.Context, projectID string) (deleted bool, kept []string, err error) {
	name := c.NamespaceName(projectID)
	clusters, err := c.List(ctx, "Cluster", name, "")
	if err != nil {
		return false, nil, err
	}
	if len(clusters) > 0 {
		return false, nil, nil
	}
	if kept, err = c.foreignObjects(ctx, name); err != nil || len(kept) > 0 {
		return false, kept, err
	}
	c.rememberNamespace(name, false)
	deleted, err = c.Delete(ctx, "Namespace", "", name)
	return deleted, nil, err
}

// foreignObjects lists (up to a few of) the objects in namespace that keep
// it: those Magnetite did not create (without its managed-by label and
// without an owner: owned objects go with their owners), other than those
// Kubernetes puts into every namespace, and the host inventory's.
func (c *Client) foreignObjects(ctx context.Context, namespace string) ([]string, error) {
	lists, err := c.disc.ServerPreferredNamespacedResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("mgmt: discover namespaced kinds: %w", err)
	}
	var out []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || everyNamespaceHas(gv.Group, r.Kind, "") {
				continue
			}
			items, err := c.dyn.Resource(gv.WithResource(r.Name)).Namespace(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) {
					continue
				}
				return nil, fmt.Errorf("mgmt: list %s in %s: %w", r.Name, namespace, err)
			}
			for _, it := range items.Items {
				l := it.GetLabels()
				if l[LabelInventory] == "" && (l[LabelManagedBy] == ManagedByValue || len(it.GetOwnerReferences()) > 0 ||
					everyNamespaceHas(gv.Group, r.Kind, it.GetName())) {
					continue
				}
				if out = append(out, r.Kind+" "+it.GetName()); len(out) == 5 {
					return out, nil
				}
			}
		}
	}
	return out, nil
}

// everyNamespaceHas reports what Kubernetes itself keeps in every
// namespace: events, the default ServiceAccount and the cluster CA's
// ConfigMap. With an empty name it answers for the whole kind.
func everyNamespaceHas(group, kind, name string) bool {
	switch {
	case kind == "Event" && (group == "" || group == "events.k8s.io"):
		return true
	case name == "":
		return false
	case group == "" && kind == "ServiceAccount" && name == "default":
		return true
	case group == "" && kind == "ConfigMap" && name == "kube-root-ca.crt":
		return true
	}
	return false
}
