// Package testcapo stands in, for tests, for Cluster API Provider OpenStack
// (CAPO), whose Go module cannot be fetched here: controllers on the real
// kube-apiserver that reconcile OpenStackCluster, OpenStackMachine and
// OpenStackServer the way a named CAPO release does for every field
// Magnetite renders, against internal/testing/testcloud's Nova, Neutron, Glance,
// Cinder and Octavia, as the cluster's application credential. Resolution
// rules, the order of operations, the conditions and their messages follow
// CAPO's source at the release's tag (controllers/openstackcluster_controller.go,
// openstackmachine_controller.go, openstackserver_controller.go,
// pkg/cloud/services/{compute,networking,loadbalancer}); each behaviour
// names the file and tag it imitates.
//
// The release is chosen from what the management cluster serves
// (release.go): infrastructure v1beta1 only is CAPO v0.14.7, the newest
// stable release; v1beta2 is v0.15.0-beta.0. Objects are read and written
// at that version, with its field names and its status shapes (v1beta1:
// status.ready, failureReason/failureMessage, Cluster API v1beta1
// conditions with a severity and a summarised Ready, failure domains as a
// map; v1beta2: metav1 conditions, failure domains as a list).
//
// Released CAPO gives up: a server create Nova or Cinder refuses puts the
// OpenStackServer in ERROR and it is never reconciled again, nor is a
// server Nova put in ERROR; no Nova fault text reaches any object. On
// v0.14.7 the OpenStackMachine of a server that never became ACTIVE keeps
// waiting with no word of it (only its OpenStackServer says why); on
// v0.15.0-beta.0 it copies the server's condition. MainBackoff imitates
// CAPO's main branch after 2026-08-05 instead: a refused create is tried
// again with controller-runtime's growing per-object backoff, and a server
// in ERROR is watched until it recovers.
//
// With ServeWorkloads it also plays the machines' kubeadm and kubelets
// (workload.go), so that Cluster API initialises control planes and makes
// the workers' machines, and every machine gets its node. No etcd member,
// static pod or kubelet answers behind the API servers, so the control
// planes never pass Cluster API's etcd and component health checks and
// clusters stay short of Available.
//
// Without a fixed network (managedSubnets) it makes the cluster's network,
// subnet and router (network.go), and with managedSecurityGroups the
// control-plane and worker groups with their rules, whose IDs go on the
// machines' ports; the cluster's delete removes them in CAPO's order (load
// balancer, router, network, security groups). Nova's availability zones
// become the cluster's failure domains. What it does not do: bastions
// (Magnetite renders none), managedRouter external IPs, trunks, floating
// IP pools, ORC image references or additional block devices.
package testcapo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
)

var (
	// Clusters and Machines are Cluster API's, which tests read too.
	Clusters      = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	Machines      = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	clusterFinal  = "openstackcluster.infrastructure.cluster.x-k8s.io"
	machineFinal  = "openstackmachine.infrastructure.cluster.x-k8s.io"
	serverFinal   = "openstackserver.infrastructure.cluster.x-k8s.io"
	labelCluster  = "cluster.x-k8s.io/cluster-name"
	labelCPMember = "cluster.x-k8s.io/control-plane"
)

// Controller is the CAPO stand-in.
type Controller struct {
	t       testing.TB
	dc      dynamic.Interface
	cloud   *testcloud.Cloud
	authURL string
	// backoff is CAPO main's retry of refused creates; nil is a release's
	// giving up.
	backoff *Backoff
	// namespacePrefix, when set, keeps the stand-in to the namespaces
	// whose names start with it (InNamespaces).
	namespacePrefix string

	mu     sync.Mutex
	tokens map[string]string // by application credential id
	paused bool
	// only, when set, keeps reconciling to the objects of these Cluster
	// API clusters (First).
	only      map[string]bool
	workloads *workloads
	rel       release
	retries   map[types.UID]retry // main's backoff, by OpenStackServer
	// kick makes the next pass come at once.
	kick chan struct{}
}

// Option changes what the stand-in imitates.
type Option func(*Controller)

// Backoff is controller-runtime's per-object rate limiter, which CAPO's
// main branch leaves a refused server create to (it returns the error and
// is requeued after Base·2^failures, at most Max: 5 ms and 1000 s, about
// 16 minutes, in controller-runtime's default).
type Backoff struct{ Base, Max time.Duration }

// MainBackoff imitates CAPO's main branch after 2026-08-05 (commit
// 7793bd1, "recover from Nova ERROR state",
// controllers/openstackserver_controller.go): a refused create is tried
// again after b's growing delay, and a server in ERROR is read again until
// Nova says otherwise. Tests pass a short Backoff.
func MainBackoff(b Backoff) Option {
	return func(c *Controller) { c.backoff = &b }
}

// InNamespaces keeps the stand-in to the OpenStack objects in namespaces
// whose names start with prefix: the project namespaces of the Magnetite
// whose [management] namespace_prefix it is, when several tests, each with
// its cloud and its stand-in, share one management plane
// (testenv.SharedPlane). CAPO's --namespace flag keeps a deployment to one
// namespace; a prefix stands for the several project namespaces one
// Magnetite makes.
func InNamespaces(prefix string) Option {
	return func(c *Controller) { c.namespacePrefix = prefix }
}

// retry is where main's backoff of one OpenStackServer stands.
type retry struct {
	failures int
	next     time.Time
}

// Pause stops (or resumes) reconciling, as a CAPO that has not got to the
// objects yet: a test can change the cloud between Magnetite's rendering
// and CAPO's acting on it.
func (c *Controller) Pause(paused bool) {
	c.mu.Lock()
	c.paused, c.only = paused, nil
	c.mu.Unlock()
	if !paused {
		c.kickNow()
	}
}

// First resumes reconciling for the objects of the named Cluster API
// clusters alone, as a CAPO whose workers got to them before the others:
// a test whose clusters time out counting from their creation lets them
// meet the cloud before the others add to the management cluster's work.
// Pause(false) resumes the rest.
func (c *Controller) First(clusters ...string) {
	c.mu.Lock()
	c.paused, c.only = false, map[string]bool{}
	for _, name := range clusters {
		c.only[name] = true
	}
	c.mu.Unlock()
	c.kickNow()
}

// kickNow makes the next pass come at once.
func (c *Controller) kickNow() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// How often the stand-in passes over its objects: at most once a passFast,
// at the next change after that, and at least once a passIdle.
const (
	passFast = 300 * time.Millisecond
	passIdle = 2 * time.Second
)

// Start runs the controller until the test ends, as the CAPO release the
// management cluster's CRDs belong to (released semantics unless an Option
// says otherwise). Like CAPO's controllers it reads the objects from
// informers' caches, which watch the API server, and reconciles when
// they change: a pass over every object follows a change in its kinds
// (its own writes, or Magnetite's and Cluster API's), at most once a
// passFast, and comes at least once a passIdle, as CAPO's requeues do, so
// that a change in the cloud alone (a flavor an operator puts back) is
// seen within passIdle. Listing every kind from the API server at each
// pass instead cost the management cluster's kube-apiserver more than the
// stand-in's own work.
func Start(t testing.TB, dc dynamic.Interface, cloud *testcloud.Cloud, keystoneURL string, opts ...Option) *Controller {
	c := &Controller{t: t, dc: dc, cloud: cloud, authURL: keystoneURL, tokens: map[string]string{}, retries: map[types.UID]retry{},
		kick: make(chan struct{}, 1)}
	for _, o := range opts {
		o(c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		idle := passIdle
		if c.backoff != nil {
			// A retry main's backoff makes due is not left for longer.
			idle = min(idle, c.backoff.Max)
		}
		var w *watch
		for {
			if w == nil {
				w = c.startWatch(ctx)
			}
			if w != nil {
				c.pass(ctx, w)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(passFast):
			}
			select {
			case <-ctx.Done():
				return
			case <-c.kick:
			case <-time.After(idle):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// watch is what the stand-in's informers hold: the kinds CAPO's
// controllers read, at the version of the release the management cluster
// serves (found once, when its CRDs are there).
type watch struct {
	rel       release
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
}

// startWatch finds the release and starts the informers, or reports nil
// when the CRDs are not installed yet (or the test is ending).
func (c *Controller) startWatch(ctx context.Context) *watch {
	rel, ok := discoverRelease(ctx, c.dc)
	if !ok {
		return nil
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(c.dc, 0)
	w := &watch{rel: rel, informers: map[schema.GroupVersionResource]cache.SharedIndexInformer{}}
	changed := func(obj any) {
		if o, ok := obj.(*unstructured.Unstructured); ok && !strings.HasPrefix(o.GetNamespace(), c.namespacePrefix) {
			return
		}
		c.kickNow()
	}
	for _, gvr := range []schema.GroupVersionResource{rel.gvr("openstackclusters"), rel.gvr("openstackmachines"), serversGVR, Machines, Clusters} {
		inf := f.ForResource(gvr).Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: changed,
			UpdateFunc: func(_, o any) { changed(o) }, DeleteFunc: changed}); err != nil {
			return nil
		}
		w.informers[gvr] = inf
	}
	f.Start(ctx.Done())
	for _, synced := range f.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return nil
		}
	}
	c.mu.Lock()
	c.rel = rel
	c.mu.Unlock()
	return w
}

// fromCache is a copy of every cached object of gvr in the stand-in's
// namespaces, by namespace and name as the API server lists them.
func (c *Controller) fromCache(w *watch, gvr schema.GroupVersionResource) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, item := range w.informers[gvr].GetStore().List() {
		if o, ok := item.(*unstructured.Unstructured); ok && strings.HasPrefix(o.GetNamespace(), c.namespacePrefix) {
			out = append(out, o.DeepCopy())
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out
}

// Release names the CAPO release the stand-in imitates on this management
// cluster ("" before the CRDs are installed).
func (c *Controller) Release() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rel.name
}

// OpenStackMachines is the resource of OpenStackMachines at the version
// the stand-in reads and writes them.
func (c *Controller) OpenStackMachines() schema.GroupVersionResource {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rel.gvr("openstackmachines")
}

// pass reconciles every OpenStack object once, as the informers hold them.
func (c *Controller) pass(ctx context.Context, w *watch) {
	c.mu.Lock()
	paused, only := c.paused, c.only
	c.mu.Unlock()
	if paused || ctx.Err() != nil {
		return
	}
	r := &reconciler{Controller: c, rel: w.rel, read: map[types.UID][]byte{}, identities: map[string]*unstructured.Unstructured{}}
	for _, res := range []string{"openstackclusters", "openstackmachines", "openstackservers"} {
		gvr := w.rel.gvr(res)
		if res == "openstackservers" {
			gvr = serversGVR
		}
		if res == "openstackmachines" {
			r.cacheForMachines(w)
		}
		for _, o := range c.fromCache(w, gvr) {
			if only != nil && !only[o.GetLabels()[labelCluster]] {
				continue
			}
			r.read[o.GetUID()] = statusJSON(o)
			switch res {
			case "openstackclusters":
				r.reconcileCluster(ctx, o)
			case "openstackmachines":
				r.reconcileMachine(ctx, o)
			default:
				r.reconcileServer(ctx, o)
			}
		}
	}
}

// reconciler is one pass of the controllers, as the release it imitates.
type reconciler struct {
	*Controller
	rel release
	// read is each object's status as the pass read it, so that a status
	// the reconcile left as it was is not written again: CAPO's patch
	// helper sends only a difference, and nothing when there is none.
	read map[types.UID][]byte
	// The objects the machine controller reads, listed once before it
	// runs (cacheForMachines), by namespace/name: CAPO reads Machines,
	// Clusters, OpenStackClusters and OpenStackServers from its
	// informers' cache, not from the API server at each reconcile.
	machines, clusters, openStackClusters, servers map[string]*unstructured.Unstructured
	// identities are the identityRef Secrets the pass has read (token).
	identities map[string]*unstructured.Unstructured
}

// cacheForMachines takes what the machine controller reads (see
// reconciler) from the informers, after the cluster controller has run.
func (r *reconciler) cacheForMachines(w *watch) {
	byKey := func(gvr schema.GroupVersionResource) map[string]*unstructured.Unstructured {
		list := r.fromCache(w, gvr)
		m := make(map[string]*unstructured.Unstructured, len(list))
		for _, o := range list {
			m[o.GetNamespace()+"/"+o.GetName()] = o
		}
		return m
	}
	r.machines, r.clusters = byKey(Machines), byKey(Clusters)
	r.openStackClusters, r.servers = byKey(w.rel.gvr("openstackclusters")), byKey(serversGVR)
}

// cached is the object named ns/name in one of the pass's caches.
func cached(cache map[string]*unstructured.Unstructured, ns, name string) (*unstructured.Unstructured, bool) {
	o, ok := cache[ns+"/"+name]
	return o, ok
}

// statusJSON is o's status as JSON, to tell whether a reconcile changed it.
func statusJSON(o *unstructured.Unstructured) []byte {
	b, _ := json.Marshal(o.Object["status"])
	return b
}

// token logs in to Keystone with the application credential of the
// clouds.yaml Secret identityRef names, as CAPO's scope does. CAPO reads
// the Secret from the API server at every reconcile (v0.14.7's main.go
// keeps Secrets out of its cache); a pass, which reconciles every object
// of every cluster, reads each Secret once.
func (r *reconciler) token(ctx context.Context, ns string, o *unstructured.Unstructured) (string, error) {
	c := r.Controller
	name, _, _ := unstructured.NestedString(o.Object, "spec", "identityRef", "name")
	cloudName, _, _ := unstructured.NestedString(o.Object, "spec", "identityRef", "cloudName")
	if name == "" {
		return "", fmt.Errorf("no identityRef")
	}
	s, ok := cached(r.identities, ns, name)
	if !ok {
		var err error
		if s, err = c.dc.Resource(secretsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return "", fmt.Errorf("failed to get secret %s/%s: %w", ns, name, err)
		}
		r.identities[ns+"/"+name] = s
	}
	enc, _, _ := unstructured.NestedString(s.Object, "data", "clouds.yaml")
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return "", err
	}
	var doc struct {
		Clouds map[string]struct {
			Auth struct {
				ID     string `json:"application_credential_id"`
				Secret string `json:"application_credential_secret"`
			} `json:"auth"`
		} `json:"clouds"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return "", err
	}
	cl, ok := doc.Clouds[cloudName]
	if !ok {
		return "", fmt.Errorf("failed to find cloud %s in clouds.yaml", cloudName)
	}
	c.mu.Lock()
	tok, ok := c.tokens[cl.Auth.ID]
	c.mu.Unlock()
	if ok {
		return tok, nil
	}
	body, _ := json.Marshal(map[string]any{"auth": map[string]any{"identity": map[string]any{"methods": []string{"application_credential"},
		"application_credential": map[string]any{"id": cl.Auth.ID, "secret": cl.Auth.Secret}}}})
	res, err := http.Post(c.authURL+"/auth/tokens", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("authentication failed: %d", res.StatusCode)
	}
	tok = res.Header.Get("X-Subject-Token")
	c.mu.Lock()
	c.tokens[cl.Auth.ID] = tok
	c.mu.Unlock()
	return tok, nil
}

func (c *Controller) update(ctx context.Context, gvr schema.GroupVersionResource, o *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	u, err := c.dc.Resource(gvr).Namespace(o.GetNamespace()).Update(ctx, o, metav1.UpdateOptions{})
	if err != nil {
		return nil, false // a conflict: the next pass sees the new version
	}
	return u, true
}

// updateStatus writes o's status unless it is the status the pass read; a
// conflict is left to the next pass, anything else the API server refuses
// is the stand-in's bug.
func (r *reconciler) updateStatus(ctx context.Context, gvr schema.GroupVersionResource, o *unstructured.Unstructured) {
	if was, ok := r.read[o.GetUID()]; ok && bytes.Equal(was, statusJSON(o)) {
		return
	}
	_, err := r.dc.Resource(gvr).Namespace(o.GetNamespace()).UpdateStatus(ctx, o, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		r.t.Errorf("testcapo: status of %s %s refused: %v", o.GetKind(), o.GetName(), err)
	}
}

// addFinalizer adds f and writes the object, returning the written one.
func (c *Controller) addFinalizer(ctx context.Context, gvr schema.GroupVersionResource, o *unstructured.Unstructured, f string) (*unstructured.Unstructured, bool) {
	for _, x := range o.GetFinalizers() {
		if x == f {
			return o, true
		}
	}
	o.SetFinalizers(append(o.GetFinalizers(), f))
	return c.update(ctx, gvr, o)
}

func (c *Controller) removeFinalizer(ctx context.Context, gvr schema.GroupVersionResource, o *unstructured.Unstructured, f string) {
	var keep []string
	for _, x := range o.GetFinalizers() {
		if x != f {
			keep = append(keep, x)
		}
	}
	o.SetFinalizers(keep)
	c.update(ctx, gvr, o)
}

// names are CAPO's resource names: <namespace>-<cluster>.
func resourceName(o *unstructured.Unstructured) string {
	return o.GetNamespace() + "-" + o.GetLabels()[labelCluster]
}

// byFilter resolves a {id} or {filter: {name}} reference against a list,
// with CAPO's networking errors (pkg/utils/errors).
func byFilter(ref map[string]any, list []map[string]any) (map[string]any, error) {
	if id, _ := ref["id"].(string); id != "" {
		for _, x := range list {
			if x["id"] == id {
				return x, nil
			}
		}
		return nil, fmt.Errorf("filter matched no resources")
	}
	name := filterName(ref)
	var found []map[string]any
	for _, x := range list {
		if x["name"] == name {
			found = append(found, x)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("filter matched no resources")
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("filter matched more than one resource")
}

// list is the items a list request answers under key (beside which
// Glance puts links such as "first").
func (c *Controller) list(token, path, key string) ([]map[string]any, error) {
	var out map[string]json.RawMessage
	if err := c.cloud.Do(token, "GET", path, nil, &out); err != nil {
		return nil, err
	}
	var items []map[string]any
	if raw, ok := out[key]; ok {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
	}
	return items, nil
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// waitLB waits for a load balancer to be ACTIVE, as CAPO does before
// adding listeners and members.
func (c *Controller) waitLB(token, id string) error {
	for i := 0; i < 20; i++ {
		var got struct {
			LB struct {
				Status string `json:"provisioning_status"`
			} `json:"loadbalancer"`
		}
		if err := c.cloud.Do(token, "GET", "/load-balancer/v2.0/lbaas/loadbalancers/"+id, nil, &got); err != nil {
			return err
		}
		if got.LB.Status == "ACTIVE" {
			return nil
		}
	}
	return fmt.Errorf("load balancer %s is not active after timeout", id)
}

func notFound(err error) bool {
	var he *testcloud.HTTPError
	return errors.As(err, &he) && he.Status == http.StatusNotFound
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

var eventsGVR = schema.GroupVersionResource{Version: "v1", Resource: "events"}

// event records a Warning event on o as CAPO's pkg/record does, whose
// reasons pass through cases.Title (so "FailedCreateServer" is recorded
// as "Failedcreateserver"), from the component "openstack-controller"
// (main.go). A repeated event counts up, as client-go's recorder
// aggregates them.
func (c *Controller) event(ctx context.Context, o *unstructured.Unstructured, reason, message string) {
	c.recordEvent(ctx, o, "Warning", reason, message)
}

func (c *Controller) normalEvent(ctx context.Context, o *unstructured.Unstructured, reason, message string) {
	c.recordEvent(ctx, o, "Normal", reason, message)
}

func (c *Controller) recordEvent(ctx context.Context, o *unstructured.Unstructured, typ, reason, message string) {
	// cases.Title of one word: its first letter upper, the rest lower.
	reason = strings.ToUpper(reason[:1]) + strings.ToLower(reason[1:])
	sum := sha256.Sum256([]byte(string(o.GetUID()) + typ + reason + message))
	name := fmt.Sprintf("%s.%x", o.GetName(), sum[:8])
	events := c.dc.Resource(eventsGVR).Namespace(o.GetNamespace())
	now := time.Now().UTC().Format(time.RFC3339)
	if e, err := events.Get(ctx, name, metav1.GetOptions{}); err == nil {
		count, _, _ := unstructured.NestedInt64(e.Object, "count")
		_ = unstructured.SetNestedField(e.Object, count+1, "count")
		_ = unstructured.SetNestedField(e.Object, now, "lastTimestamp")
		_, _ = events.Update(ctx, e, metav1.UpdateOptions{})
		return
	}
	e := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Event",
		"metadata": map[string]any{"name": name, "namespace": o.GetNamespace()},
		"involvedObject": map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(), "name": o.GetName(),
			"namespace": o.GetNamespace(), "uid": string(o.GetUID()), "resourceVersion": o.GetResourceVersion()},
		"type": typ, "reason": reason, "message": message, "count": int64(1),
		"firstTimestamp": now, "lastTimestamp": now, "source": map[string]any{"component": "openstack-controller"}}}
	_, _ = events.Create(ctx, e, metav1.CreateOptions{})
}

// filterName is the name a reference's filter asks for.
func filterName(ref map[string]any) string {
	name, _, _ := unstructured.NestedString(ref, "filter", "name")
	return name
}

// byRef is a reference's ID as given, else the ID of the only item listed
// at path (under key) that its filter names, or CAPO's error for none or
// several.
func (c *Controller) byRef(tok string, ref map[string]any, path, key string, none, many error) (string, error) {
	if id := str(ref, "id"); id != "" {
		return id, nil
	}
	items, err := c.list(tok, path, key)
	if err != nil {
		return "", err
	}
	var ids []string
	for _, it := range items {
		if it["name"] == filterName(ref) {
			ids = append(ids, str(it, "id"))
		}
	}
	switch len(ids) {
	case 0:
		return "", none
	case 1:
		return ids[0], nil
	}
	return "", many
}
