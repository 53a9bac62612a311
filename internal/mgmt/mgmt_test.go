package mgmt_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/kinds"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdVersion is one version of a test CRD: served or not, storage or not.
type crdVersion struct {
	name            string
	served, storage bool
}

// applyCRD installs (or changes) a schemaless namespaced CRD for kind in
// group, served at the given versions, and waits until the API server
// serves exactly the versions marked served.
func applyCRD(t *testing.T, env *testenv.APIServer, group, kind string, versions ...crdVersion) {
	t.Helper()
	plural := strings.ToLower(kind) + "s"
	var vs []any
	for _, v := range versions {
		vs = append(vs, map[string]any{
			"name": v.name, "served": v.served, "storage": v.storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			"subresources": map[string]any{"status": map[string]any{}},
		})
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced", "versions": vs,
			"names": map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)},
		},
	}}
	ctx := context.Background()
	dc := env.Dynamic(t)
	if _, err := dc.Resource(crdGVR).Apply(ctx, crd.GetName(), crd, metav1.ApplyOptions{FieldManager: "test", Force: true}); err != nil {
		t.Fatalf("apply CRD %s: %v", crd.GetName(), err)
	}
	// Serving lags a CRD change a little, and discovery, which the client
	// under test reads, may lag serving: wait until both show the change.
	disc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, fmt.Sprintf("%s served and discovered at exactly the versions asked for", kind), 60*time.Second, func() (bool, string) {
		_, lists, derr := disc.ServerGroupsAndResources()
		if derr != nil && !discovery.IsGroupDiscoveryFailedError(derr) {
			return false, fmt.Sprintf("discovery: %v", derr)
		}
		for _, v := range versions {
			_, err := dc.Resource(schema.GroupVersionResource{Group: group, Version: v.name, Resource: plural}).
				Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
			switch {
			case v.served && err != nil:
				return false, fmt.Sprintf("%s not served: %v", v.name, err)
			case !v.served && !apierrors.IsNotFound(err):
				return false, fmt.Sprintf("%s still served: %v", v.name, err)
			case discovered(lists, group+"/"+v.name, plural) != v.served:
				return false, fmt.Sprintf("%s served %v but discovery does not show it yet", v.name, v.served)
			}
		}
		return true, ""
	})
}

// discovered reports whether discovery lists resource in groupVersion.
func discovered(lists []*metav1.APIResourceList, groupVersion, resource string) bool {
	for _, l := range lists {
		if l.GroupVersion != groupVersion {
			continue
		}
		for _, r := range l.APIResources {
			if r.Name == resource {
				return true
			}
		}
	}
	return false
}

// projectPlane starts an API server serving Cluster API's Cluster at
// v1beta2 and each of also at v1beta1, and returns it with a client that
// discovered them and the project's namespace, ensured.
func projectPlane(t *testing.T, project string, also ...string) (*testenv.APIServer, *mgmt.Client, string) {
	t.Helper()
	env := testenv.Start(t)
	applyCRD(t, env, kinds.GroupCluster, "Cluster", crdVersion{"v1beta2", true, true})
	for _, kind := range also {
		applyCRD(t, env, kinds.GroupCluster, kind, crdVersion{"v1beta1", true, true})
	}
	c := newClient(t, env.Config, "")
	ns, err := c.EnsureNamespace(context.Background(), project)
	if err != nil {
		t.Fatal(err)
	}
	return env, c, ns
}

func newClient(t testing.TB, cfg *rest.Config, overrides string) *mgmt.Client {
	t.Helper()
	c, err := mgmt.NewForConfig(cfg, mgmt.Options{APIResources: overrides})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

func clusterObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"kind":     "Cluster",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"paused": true, "note": "applied by magnetite"},
	}}
}

func resolved(t *testing.T, c *mgmt.Client, kind string) mgmt.Resource {
	t.Helper()
	r, err := c.Resource(context.Background(), kind)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDiscoveryFollowsTheServedVersion(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	owner := mgmt.Owner{ClusterUUID: "0b4b766f-1500-44b3-9804-5a6e12fe6df4", ProjectID: "p1"}

	// A management cluster whose Cluster API serves Cluster at v1beta1 only.
	applyCRD(t, env, kinds.GroupCluster, "Cluster", crdVersion{"v1beta1", true, true})
	c := newClient(t, env.Config, "")
	if _, err := c.EnsureNamespace(ctx, owner.ProjectID); err != nil {
		t.Fatal(err)
	}
	if got := resolved(t, c, "Cluster").APIVersion(); got != "cluster.x-k8s.io/v1beta1" {
		t.Fatalf("Cluster resolved to %s, want cluster.x-k8s.io/v1beta1", got)
	}
	out, err := c.Apply(ctx, owner, clusterObject("old"))
	if err != nil {
		t.Fatal(err)
	}
	if out.GetAPIVersion() != "cluster.x-k8s.io/v1beta1" {
		t.Errorf("applied at %s", out.GetAPIVersion())
	}

	// An upgrade of Cluster API stops serving v1beta1.
	applyCRD(t, env, kinds.GroupCluster, "Cluster", crdVersion{"v1beta1", false, false}, crdVersion{"v1beta2", true, true})
	if err := c.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	if got := resolved(t, c, "Cluster").APIVersion(); got != "cluster.x-k8s.io/v1beta2" {
		t.Fatalf("after the upgrade Cluster resolved to %s, want cluster.x-k8s.io/v1beta2", got)
	}
	read, err := c.Get(ctx, "Cluster", c.NamespaceName(owner.ProjectID), "old")
	if err != nil {
		t.Fatalf("reading the existing Cluster at the new version: %v", err)
	}
	if read.GetAPIVersion() != "cluster.x-k8s.io/v1beta2" {
		t.Errorf("read at %s", read.GetAPIVersion())
	}
	if _, err := c.Apply(ctx, owner, clusterObject("new")); err != nil {
		t.Fatalf("applying at the new version: %v", err)
	}
	versions, err := c.APIVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if versions["Cluster"] != "cluster.x-k8s.io/v1beta2" || versions["Secret"] != "v1" || versions["Namespace"] != "v1" {
		t.Errorf("APIVersions = %v", versions)
	}
	if _, ok := versions["KubeadmControlPlane"]; ok {
		t.Error("a kind without CRDs has a version")
	}
	if _, err := c.Resource(ctx, "KubeadmControlPlane"); !errors.Is(err, mgmt.ErrKindNotServed) {
		t.Errorf("unserved kind: %v, want ErrKindNotServed", err)
	}

	// The override names a version that is no longer served: it still wins,
	// and the operator is told.
	pinned := newClient(t, env.Config, "Cluster=cluster.x-k8s.io/v1beta1")
	r := resolved(t, pinned, "Cluster")
	if r.APIVersion() != "cluster.x-k8s.io/v1beta1" || r.Source != "override" {
		t.Errorf("override resolved to %+v", r)
	}
	findings := pinned.Findings()
	if len(findings) != 1 || findings[0].Check != "api-resources" || !strings.Contains(findings[0].Message, "does not serve") {
		t.Errorf("findings = %v", findings)
	}
}

// TestAProviderUpgradedWhileMagnetiteRunsIsWrittenAtItsNewVersion: with
// CAPO v0.14.7's CRDs (v1beta1 only) the versions a render is given say
// v1beta1 for the OpenStack kinds; once the operator installs
// v0.15.0-beta.0's over them (v1beta1 still served beside v1beta2), they say
// v1beta2 within seconds, without a restart. Overrides still win.
func TestAProviderUpgradedWhileMagnetiteRunsIsWrittenAtItsNewVersion(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	env.InstallProviders(t, testenv.CAPOv014)
	openstack := []kinds.Kind{{Kind: "OpenStackClusterTemplate", Group: kinds.GroupInfrastructure, Versions: []string{"v1beta2", "v1beta1"}}}
	client := func(overrides string) *mgmt.Client {
		c, err := mgmt.NewForConfig(env.Config, mgmt.Options{Kinds: openstack, APIResources: overrides})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	discovered, pinned := client(""), client("OpenStackClusterTemplate=infrastructure.cluster.x-k8s.io/v1beta1")
	writtenAt := func(c *mgmt.Client) string {
		v, err := c.APIVersions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v["OpenStackClusterTemplate"]
	}
	if got := writtenAt(discovered); got != "infrastructure.cluster.x-k8s.io/v1beta1" {
		t.Fatalf("with CAPO v0.14.7: %s, want v1beta1", got)
	}
	writtenAt(pinned)

	env.InstallProviders(t, testenv.CAPOv015)
	start := time.Now()
	testenv.WaitFor(t, "the upgraded provider's v1beta2 to be what a render is given", time.Minute, func() (bool, string) {
		got := writtenAt(discovered)
		return got == "infrastructure.cluster.x-k8s.io/v1beta2", got
	})
	t.Logf("v1beta2 was found %s after the upgrade", time.Since(start).Round(time.Second))
	if got := writtenAt(pinned); got != "infrastructure.cluster.x-k8s.io/v1beta1" {
		t.Errorf("with api_resources naming v1beta1: %s after the upgrade", got)
	}
}

func TestOverrideWinsOverThePreferredVersion(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	// Both served; discovery prefers v1beta2.
	applyCRD(t, env, kinds.GroupCluster, "Cluster", crdVersion{"v1beta1", true, false}, crdVersion{"v1beta2", true, true})
	discovered := newClient(t, env.Config, "")
	if got := resolved(t, discovered, "Cluster").APIVersion(); got != "cluster.x-k8s.io/v1beta2" {
		t.Fatalf("preferred version %s, want v1beta2", got)
	}
	pinned := newClient(t, env.Config, "Cluster=cluster.x-k8s.io/v1beta1")
	if len(pinned.Findings()) != 0 {
		t.Errorf("findings for a served override: %v", pinned.Findings())
	}
	owner := mgmt.Owner{ClusterUUID: "c-1", ProjectID: "p1"}
	if _, err := pinned.EnsureNamespace(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	out, err := pinned.Apply(ctx, owner, clusterObject("pinned"))
	if err != nil {
		t.Fatal(err)
	}
	if out.GetAPIVersion() != "cluster.x-k8s.io/v1beta1" {
		t.Errorf("applied at %s, want the override's v1beta1", out.GetAPIVersion())
	}
	var managers []string
	for _, mf := range out.GetManagedFields() {
		managers = append(managers, mf.Manager+"@"+mf.APIVersion)
	}
	if len(managers) != 1 || managers[0] != "magnetite@cluster.x-k8s.io/v1beta1" {
		t.Errorf("managed fields %v, want magnetite@cluster.x-k8s.io/v1beta1 only", managers)
	}
}

func TestServerSideApplyIsIdempotentAndLabelsOwnership(t *testing.T) {
	ctx := context.Background()
	// A project id that is no DNS label and no label value.
	owner := mgmt.Owner{ClusterUUID: "7ae81bb3-dec3-4289-8d6c-da80bd8001ae", ProjectID: "Demo Project"}
	env, c, ns := projectPlane(t, owner.ProjectID)
	nsObj, err := c.Get(ctx, "Namespace", "", ns)
	if err != nil {
		t.Fatal(err)
	}
	if l := nsObj.GetLabels(); l[mgmt.LabelManagedBy] != "magnetite" || l[mgmt.LabelProjectID] == "" ||
		nsObj.GetAnnotations()[mgmt.AnnotationProjectID] != "Demo Project" {
		t.Errorf("namespace %s labels %v annotations %v", ns, l, nsObj.GetAnnotations())
	}

	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "k1-cloud-config", "labels": map[string]any{"extra": "kept"}},
		"stringData": map[string]any{"clouds.yaml": "clouds: {}"},
	}}
	for _, obj := range []*unstructured.Unstructured{secret, clusterObject("k1")} {
		first, err := c.Apply(ctx, owner, obj)
		if err != nil {
			t.Fatal(err)
		}
		if first.GetNamespace() != ns {
			t.Errorf("%s went to namespace %q, want the project's %q", obj.GetKind(), first.GetNamespace(), ns)
		}
		l := first.GetLabels()
		for k, want := range map[string]string{mgmt.LabelManagedBy: "magnetite", mgmt.LabelClusterUUID: owner.ClusterUUID} {
			if l[k] != want {
				t.Errorf("%s label %s = %q, want %q", obj.GetKind(), k, l[k], want)
			}
		}
		if obj.GetKind() == "Secret" && l["extra"] != "kept" {
			t.Errorf("the object's own labels were dropped: %v", l)
		}
		second, err := c.Apply(ctx, owner, obj)
		if err != nil {
			t.Fatal(err)
		}
		if second.GetResourceVersion() != first.GetResourceVersion() {
			t.Errorf("%s: applying the same object again changed it (resourceVersion %s -> %s)",
				obj.GetKind(), first.GetResourceVersion(), second.GetResourceVersion())
		}
	}
	if obj := clusterObject("k1"); obj.GetAPIVersion() != "" {
		t.Fatal("test object should leave apiVersion to discovery")
	}

	// Prune and cleanup look at metadata only: a core kind and a custom
	// resource, each with its kind, served version, labels and managed
	// fields, and none of its contents.
	for kind, want := range map[string]string{"Secret": "k1-cloud-config", "Cluster": "k1"} {
		objs, err := c.ListMetadata(ctx, kind, ns, mgmt.ClusterSelector(owner.ClusterUUID))
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 1 || objs[0].GetName() != want {
			t.Fatalf("ListMetadata %s = %v, want %s alone", kind, objs, want)
		}
		o := objs[0]
		if o.GetKind() != kind || o.GetAPIVersion() != resolved(t, c, kind).APIVersion() || o.GetNamespace() != ns ||
			o.GetLabels()[mgmt.LabelClusterUUID] != owner.ClusterUUID {
			t.Errorf("ListMetadata %s: %s %s %s/%s labels %v", kind, o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName(), o.GetLabels())
		}
		if mf := o.GetManagedFields(); len(mf) == 0 || mf[0].Manager != mgmt.FieldManager {
			t.Errorf("ListMetadata %s: managed fields %v, want Magnetite's", kind, mf)
		}
		for field := range o.Object {
			if field != "apiVersion" && field != "kind" && field != "metadata" {
				t.Errorf("ListMetadata %s returned its %s", kind, field)
			}
		}
	}

	// The lists are as consistent as a consistent list, and served from
	// the watch cache: one object of the kind read consistently without a
	// selector gives the resourceVersion, and the selected objects are
	// read at least as new as it. No list reads a kind's every object in
	// the namespace from etcd.
	var lists []url.Values
	var mu sync.Mutex
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && req.URL.Query().Get("watch") == "" {
				mu.Lock()
				lists = append(lists, req.URL.Query())
				mu.Unlock()
			}
			return next.RoundTrip(req)
		})
	})
	recorded := newClient(t, cfg, "")
	more := secret.DeepCopy()
	more.SetName("k1-more")
	if _, err := c.Apply(ctx, owner, more); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	lists = nil
	mu.Unlock()
	objs, err := recorded.ListMetadata(ctx, "Secret", ns, mgmt.ClusterSelector(owner.ClusterUUID))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Errorf("ListMetadata Secret right after an apply = %v, want k1-cloud-config and k1-more", objs)
	}
	mu.Lock()
	for _, q := range lists {
		consistent := q.Get("resourceVersion") == ""
		if consistent && (q.Get("limit") != "1" || q.Get("labelSelector") != "") {
			t.Errorf("a consistent list of every object (%v): the API server reads it from etcd when its cache lags", q)
		}
		if !consistent && q.Get("resourceVersionMatch") != "NotOlderThan" {
			t.Errorf("a list from the cache that may be older than the request (%v)", q)
		}
	}
	if len(lists) != 2 {
		t.Errorf("ListMetadata sent %d lists (%v), want 2", len(lists), lists)
	}
	mu.Unlock()
	if _, err := c.Delete(ctx, "Secret", ns, "k1-more"); err != nil {
		t.Fatal(err)
	}

	// Force: a field another manager set is taken over, not a conflict.
	dc := env.Dynamic(t)
	gvr := resolved(t, c, "Cluster").GVR()
	other := clusterObject("k1")
	other.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	other.SetNamespace(ns)
	_ = unstructured.SetNestedField(other.Object, "someone else", "spec", "note")
	if _, err := dc.Resource(gvr).Namespace(ns).Apply(ctx, "k1", other, metav1.ApplyOptions{FieldManager: "other", Force: true}); err != nil {
		t.Fatal(err)
	}
	back, err := c.Apply(ctx, owner, clusterObject("k1"))
	if err != nil {
		t.Fatalf("re-apply over another manager's field: %v", err)
	}
	if note, _, _ := unstructured.NestedString(back.Object, "spec", "note"); note != "applied by magnetite" {
		t.Errorf("spec.note = %q after re-apply", note)
	}

	deleted, err := c.Delete(ctx, "Cluster", ns, "k1")
	if err != nil || !deleted {
		t.Fatalf("delete: %v %v", deleted, err)
	}
	if deleted, err := c.Delete(ctx, "Cluster", ns, "k1"); err != nil || deleted {
		t.Errorf("deleting again: deleted=%v err=%v, want false, nil", deleted, err)
	}
	released, kept, err := c.ReleaseNamespace(ctx, owner.ProjectID)
	if err != nil || !released {
		t.Fatalf("release the empty namespace: %v %v (kept by %v)", released, err, kept)
	}
	gone, err := c.Get(ctx, "Namespace", "", ns)
	if err == nil && gone.GetDeletionTimestamp() == nil {
		t.Error("namespace neither gone nor terminating")
	}
	// This kube-apiserver runs no namespace controller, so the namespace
	// stays Terminating: the project's next cluster is told to wait, not
	// failed.
	if err == nil {
		if _, err := c.EnsureNamespace(ctx, owner.ProjectID); !errors.Is(err, mgmt.ErrNamespaceTerminating) {
			t.Errorf("ensuring a terminating namespace: %v, want ErrNamespaceTerminating", err)
		}
	}
}

func TestReleaseNamespaceKeepsANamespaceWithClusters(t *testing.T) {
	ctx := context.Background()
	_, c, _ := projectPlane(t, "p1")
	owner := mgmt.Owner{ClusterUUID: "c-1", ProjectID: "p1"}
	if _, err := c.Apply(ctx, owner, clusterObject("k1")); err != nil {
		t.Fatal(err)
	}
	released, _, err := c.ReleaseNamespace(ctx, "p1")
	if err != nil || released {
		t.Fatalf("released a namespace that holds a Cluster: %v %v", released, err)
	}
	ns, err := c.Get(ctx, "Namespace", "", c.NamespaceName("p1"))
	if err != nil || ns.GetDeletionTimestamp() != nil {
		t.Errorf("namespace: %v, deleting=%v", err, ns != nil && ns.GetDeletionTimestamp() != nil)
	}
}

// TestReleaseNamespaceNeverTakesAnOperatorsObjects: a project namespace
// holding objects Magnetite did not create (an operator's BMC Secret and
// ConfigMap, say) is kept when the project's last cluster goes, and the
// objects are named; once they are gone it is released.
func TestReleaseNamespaceNeverTakesAnOperatorsObjects(t *testing.T) {
	ctx := context.Background()
	env, c, ns := projectPlane(t, "p1")
	// Magnetite's own Secret goes with the namespace; the operator's do not.
	mine := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "k1-ca", "namespace": ns}}}
	if _, err := c.Apply(ctx, mgmt.Owner{ClusterUUID: "c-1", ProjectID: "p1"}, mine); err != nil {
		t.Fatal(err)
	}
	dc := env.Dynamic(t)
	secrets := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(ns)
	configMaps := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	for _, obj := range []struct {
		ri interface {
			Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
		}
		kind, name string
	}{{secrets, "Secret", "host-0-bmc-secret"}, {configMaps, "ConfigMap", "site-settings"}} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": obj.kind, "metadata": map[string]any{"name": obj.name}}}
		if _, err := obj.ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	released, kept, err := c.ReleaseNamespace(ctx, "p1")
	if err != nil || released {
		t.Fatalf("released a namespace holding an operator's objects: %v %v", released, err)
	}
	if got := strings.Join(kept, ", "); !strings.Contains(got, "Secret host-0-bmc-secret") || !strings.Contains(got, "ConfigMap site-settings") || strings.Contains(got, "k1-ca") || strings.Contains(got, "kube-root-ca.crt") {
		t.Errorf("kept by %q, want the operator's Secret and ConfigMap only", got)
	}
	if err := secrets.Delete(ctx, "host-0-bmc-secret", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := configMaps.Delete(ctx, "site-settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if released, kept, err := c.ReleaseNamespace(ctx, "p1"); err != nil || !released {
		t.Fatalf("release once the operator's objects are gone: %v %v (kept by %v)", released, err, kept)
	}
}

type recorder struct {
	mu     sync.Mutex
	events []mgmt.Event
}

func (r *recorder) handle(e mgmt.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) seen(typ mgmt.EventType, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Type == typ && e.Object.GetName() == name {
			return true
		}
	}
	return false
}

func (r *recorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, string(e.Type)+" "+e.Kind+" "+e.Object.GetName())
	}
	return out
}

func TestWatchDeliversMagnetiteObjectsOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, c, ns := projectPlane(t, "p1", "Machine")
	owner := mgmt.Owner{ClusterUUID: "uuid-1", ProjectID: "p1"}
	if _, err := c.Apply(ctx, owner, clusterObject("before")); err != nil {
		t.Fatal(err)
	}

	if _, err := c.Watch(ctx, []string{"Cluster", "KubeadmControlPlane"}, func(mgmt.Event) {}); !errors.Is(err, mgmt.ErrKindNotServed) {
		t.Errorf("watching an unserved kind: %v, want ErrKindNotServed", err)
	}
	rec := &recorder{}
	w, err := c.Watch(ctx, []string{"Cluster", "Machine"}, rec.handle)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.seen(mgmt.Added, "before") {
		t.Errorf("the initial listing was not delivered: %v", rec.names())
	}

	dc := env.Dynamic(t)
	clusters := dc.Resource(resolved(t, c, "Cluster").GVR()).Namespace(ns)
	foreign := clusterObject("foreign")
	foreign.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	if _, err := clusters.Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	machine := &unstructured.Unstructured{Object: map[string]any{"kind": "Machine", "metadata": map[string]any{"name": "m1",
		"annotations": map[string]any{"keep": "yes", "kubectl.kubernetes.io/last-applied-configuration": `{"kind":"Machine"}`}}}}
	if _, err := c.Apply(ctx, owner, machine); err != nil {
		t.Fatal(err)
	}
	changed := clusterObject("before")
	_ = unstructured.SetNestedField(changed.Object, "changed", "spec", "note")
	if _, err := c.Apply(ctx, owner, changed); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, "Cluster", ns, "before"); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "update, machine and delete events", 30*time.Second, func() (bool, string) {
		return rec.seen(mgmt.Updated, "before") && rec.seen(mgmt.Added, "m1") && rec.seen(mgmt.Deleted, "before"), ""
	})
	// The unlabelled object has long been stored; no event may name it.
	if _, err := c.Apply(ctx, owner, clusterObject("marker")); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the marker", 30*time.Second, func() (bool, string) { return rec.seen(mgmt.Added, "marker"), "" })
	for _, n := range rec.names() {
		if strings.HasSuffix(n, " foreign") {
			t.Errorf("an object without Magnetite's label was delivered: %s", n)
		}
	}
	for _, e := range rec.events {
		if e.ClusterUUID() != "uuid-1" {
			t.Errorf("event %s %s has cluster %q", e.Type, e.Object.GetName(), e.ClusterUUID())
		}
	}
	machines, err := w.Objects("Machine", "uuid-1")
	if err != nil || len(machines) != 1 || machines[0].GetName() != "m1" {
		t.Fatalf("cached machines of uuid-1: %v %v", machines, err)
	}
	// The cache keeps what status is made of, not the bookkeeping.
	m := machines[0]
	if len(m.GetManagedFields()) != 0 || m.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"] != "" ||
		m.GetAnnotations()["keep"] != "yes" || m.GetLabels()[mgmt.LabelClusterUUID] != "uuid-1" {
		t.Errorf("cached machine keeps managed fields or last-applied, or lost its labels or annotations: %v", m.Object["metadata"])
	}
	if none, _ := w.Objects("Machine", "uuid-2"); len(none) != 0 {
		t.Errorf("machines of another cluster: %v", none)
	}
}

func TestClientFromKubeconfigFileReachesTheCluster(t *testing.T) {
	env := testenv.Start(t)
	for _, mode := range []os.FileMode{0o600, 0o644} {
		c, err := mgmt.New(mgmt.Options{Kubeconfig: testenv.WriteKubeconfig(t, "", env.Config, "", mode)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.EnsureNamespace(context.Background(), "p1"); err != nil {
			t.Fatalf("mode %04o: %v", mode, err)
		}
		warned := len(c.Findings()) == 1 && c.Findings()[0].Check == "kubeconfig-permissions"
		if warned != (mode == 0o644) {
			t.Errorf("mode %04o: findings %v", mode, c.Findings())
		}
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
