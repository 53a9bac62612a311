package mgmt

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
)

// HelmKeep is the annotation by which a chart asks Helm to leave an
// object behind when the release is uninstalled.
const HelmKeep = "helm.sh/resource-policy"

// ReleaseObject is one object a Helm release made, as its manifest names it.
type ReleaseObject struct {
	APIVersion, Kind, Namespace, Name string
	// Keep is true for objects the chart marks helm.sh/resource-policy:
	// keep, which `helm uninstall` leaves.
	Keep bool
}

func (o ReleaseObject) String() string { return o.Kind + " " + o.Namespace + "/" + o.Name }

// HelmReleaseObjects reads the newest record Helm keeps of a release in
// namespace (Secrets labelled owner=helm, Helm's default storage) and
// lists the objects of its manifest. A release Helm holds no record of is
// an error apierrors.IsNotFound recognises.
func (c *Client) HelmReleaseObjects(ctx context.Context, namespace, name string) ([]ReleaseObject, error) {
	recs, err := c.helmReleases(namespace, name)
	if err != nil {
		return nil, err
	}
	newest := slices.MaxFunc(recs, func(a, b *release.Release) int { return a.Version - b.Version })
	var out []ReleaseObject
	for _, doc := range releaseutil.SplitManifests(newest.Manifest) {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return nil, fmt.Errorf("mgmt: Helm release %s/%s: read its manifest: %w", namespace, name, err)
		}
		if u.GetKind() == "" || u.GetName() == "" {
			continue
		}
		ns := u.GetNamespace()
		if ns == "" {
			ns = namespace
		}
		out = append(out, ReleaseObject{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: ns, Name: u.GetName(),
			Keep: u.GetAnnotations()[HelmKeep] == "keep"})
	}
	return out, nil
}

// DeleteHelmRelease removes Helm's records of a release, once what it made
// is gone, so that no later `helm` finds it. It reports how many it removed.
func (c *Client) DeleteHelmRelease(ctx context.Context, namespace, name string) (int, error) {
	recs, err := c.helmReleases(namespace, name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	d, err := c.helmSecrets(namespace)
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		if _, err := d.Delete(fmt.Sprintf("sh.helm.release.v1.%s.v%d", r.Name, r.Version)); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
			return 0, fmt.Errorf("mgmt: delete Helm release %s/%s v%d: %w", namespace, name, r.Version, err)
		}
	}
	return len(recs), nil
}

func (c *Client) helmSecrets(namespace string) (*driver.Secrets, error) {
	cs, err := kubernetes.NewForConfig(c.cfg)
	if err != nil {
		return nil, fmt.Errorf("mgmt: %w", err)
	}
	return driver.NewSecrets(cs.CoreV1().Secrets(namespace)), nil
}

func (c *Client) helmReleases(namespace, name string) ([]*release.Release, error) {
	d, err := c.helmSecrets(namespace)
	if err != nil {
		return nil, err
	}
	recs, err := d.Query(map[string]string{"name": name, "owner": "helm"})
	if errors.Is(err, driver.ErrReleaseNotFound) || err == nil && len(recs) == 0 {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "helm releases"}, namespace+"/"+name)
	}
	if err != nil {
		return nil, fmt.Errorf("mgmt: read Helm release %s/%s: %w", namespace, name, err)
	}
	return recs, nil
}

// DeleteObject deletes an object of any kind the management cluster serves,
// as Delete does for the kinds Magnetite writes. An object of a kind not
// served cannot exist, and a gone one is not an error: both report false.
func (c *Client) DeleteObject(ctx context.Context, apiVersion, kind, namespace, name string) (bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return false, fmt.Errorf("mgmt: delete %s %s: %w", kind, name, err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.disc))
	m, err := mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if meta.IsNoMatchError(err) {
		// Served at another version of the group, or not at all.
		if m, err = mapper.RESTMapping(gv.WithKind(kind).GroupKind()); meta.IsNoMatchError(err) {
			return false, nil
		}
	}
	if err != nil {
		return false, fmt.Errorf("mgmt: delete %s %s: %w", kind, name, err)
	}
	var ri dynamic.ResourceInterface = c.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = c.dyn.Resource(m.Resource).Namespace(namespace)
	}
	return deleteObject(ctx, ri, kind, namespace, name)
}
