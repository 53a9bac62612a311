// Package testcapo stands in, for tests, for Cluster API Provider OpenStack
// (CAPO), whose Go module cannot be fetched here: a controller on the real
// kube-apiserver that reconciles OpenStackCluster and OpenStackMachine
// (v1beta2) the way CAPO does for every field Magnetite renders, against
// internal/testcloud's Nova, Neutron, Glance, Cinder and Octavia, as the
// cluster's application credential. Resolution rules, the order of
// operations, the conditions and their messages follow CAPO's source
// (controllers/openstackcluster_controller.go, openstackmachine_controller.go,
// openstackserver_controller.go, pkg/cloud/services/{compute,networking,
// loadbalancer}).
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
// balancer, router, network, security groups). What it does not do:
// bastions (Magnetite renders none), managedRouter external IPs, trunks or
// additional block devices.
package testcapo

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/testcloud"
)

var (
	clustersGVR = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Resource: "openstackclusters"}
	// OpenStackMachines and Clusters are the resources tests read too.
	OpenStackMachines = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Resource: "openstackmachines"}
	Clusters          = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	// Machines are Cluster API's.
	Machines      = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	clusterFinal  = "openstackcluster.infrastructure.cluster.x-k8s.io"
	machineFinal  = "openstackmachine.infrastructure.cluster.x-k8s.io"
	labelCluster  = "cluster.x-k8s.io/cluster-name"
	labelCPMember = "cluster.x-k8s.io/control-plane"
)

// Controller is the CAPO stand-in.
type Controller struct {
	t       testing.TB
	dc      dynamic.Interface
	cloud   *testcloud.Cloud
	authURL string

	mu        sync.Mutex
	tokens    map[string]string // by application credential id
	paused    bool
	workloads *workloads
}

// Pause stops (or resumes) reconciling, as a CAPO that has not got to the
// objects yet: a test can change the cloud between Magnetite's rendering
// and CAPO's acting on it.
func (c *Controller) Pause(paused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused = paused
}

// Start runs the controller until the test ends. It resyncs every object
// every interval, as controller-runtime requeues do.
func Start(t testing.TB, dc dynamic.Interface, cloud *testcloud.Cloud, keystoneURL string) *Controller {
	c := &Controller{t: t, dc: dc, cloud: cloud, authURL: keystoneURL, tokens: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for {
			c.pass(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

func (c *Controller) pass(ctx context.Context) {
	c.mu.Lock()
	paused := c.paused
	c.mu.Unlock()
	if paused {
		return
	}
	for _, gvr := range []schema.GroupVersionResource{clustersGVR, OpenStackMachines} {
		list, err := c.dc.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue // CRDs not installed yet, or shutting down
		}
		for i := range list.Items {
			o := &list.Items[i]
			if gvr == clustersGVR {
				c.reconcileCluster(ctx, o)
			} else {
				c.reconcileMachine(ctx, o)
			}
		}
	}
}

// condition is a metav1.Condition as unstructured.
func condition(typ string, ok bool, reason, msg string) map[string]any {
	status := "False"
	if ok {
		status = "True"
	}
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
}

// setConditions replaces conditions of the same types, keeping the
// transition time of those whose status did not change.
func setConditions(o *unstructured.Unstructured, conds ...map[string]any) {
	old, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	byType := map[string]map[string]any{}
	var order []string
	for _, x := range old {
		m := x.(map[string]any)
		byType[m["type"].(string)] = m
		order = append(order, m["type"].(string))
	}
	for _, n := range conds {
		typ := n["type"].(string)
		if prev, ok := byType[typ]; ok {
			if prev["status"] == n["status"] {
				n["lastTransitionTime"] = prev["lastTransitionTime"]
			}
		} else {
			order = append(order, typ)
		}
		byType[typ] = n
	}
	out := make([]any, 0, len(order))
	for _, typ := range order {
		out = append(out, byType[typ])
	}
	_ = unstructured.SetNestedSlice(o.Object, out, "status", "conditions")
}

// token logs in to Keystone with the application credential of the
// clouds.yaml Secret identityRef names, as CAPO's scope does.
func (c *Controller) token(ctx context.Context, ns string, o *unstructured.Unstructured) (string, error) {
	name, _, _ := unstructured.NestedString(o.Object, "spec", "identityRef", "name")
	cloudName, _, _ := unstructured.NestedString(o.Object, "spec", "identityRef", "cloudName")
	if name == "" {
		return "", fmt.Errorf("no identityRef")
	}
	s, err := c.dc.Resource(secretsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("failed to get secret %s/%s: %w", ns, name, err)
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

func (c *Controller) updateStatus(ctx context.Context, gvr schema.GroupVersionResource, o *unstructured.Unstructured) {
	_, _ = c.dc.Resource(gvr).Namespace(o.GetNamespace()).UpdateStatus(ctx, o, metav1.UpdateOptions{})
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

func (c *Controller) list(token, path, key string) ([]map[string]any, error) {
	var out map[string][]map[string]any
	if err := c.cloud.Do(token, "GET", path, nil, &out); err != nil {
		return nil, err
	}
	return out[key], nil
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
