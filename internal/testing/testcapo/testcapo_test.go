package testcapo_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/testing/testcapo"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

var (
	serversGVR = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Resource: "openstackservers"}
	eventsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// TestMain stops the API servers the tests share after the last one.
func TestMain(m *testing.M) { testenv.RunMain(m) }

// plane is a real kube-apiserver with Cluster API's CRDs and one CAPO
// release's, shared by the tests of that release, and the test's own
// Keystone, OpenStack stand-ins and CAPO stand-in, kept to the test's
// namespace.
type plane struct {
	ns      string // the test's namespace, which its stand-in keeps to
	dc      dynamic.Interface
	cloud   *testcloud.Cloud
	capo    *testcapo.Controller
	version string // infrastructure API version the release serves
}

func startPlane(t *testing.T, release string, opts ...testcapo.Option) *plane {
	t.Helper()
	ks := testkeystone.Start(t)
	project := ks.CreateProject("demo")
	user := ks.CreateUser("capo", "capo-password")
	ks.Grant(user, project, "member")
	cloud := testcloud.Start(t, ks)
	api := testenv.SharedProviders(t, "capo-"+release)
	p := &plane{ns: api.ProjectNamespace(t), dc: api.Dynamic(t), cloud: cloud, version: "v1beta2"}

	// The cluster's application credential, in the clouds.yaml Secret
	// identityRef names, as Magnetite makes it.
	credID, credSecret := ks.ApplicationCredential(user, "capo", "capo-password", "demo", "capo")
	clouds := fmt.Sprintf("clouds:\n  openstack:\n    auth:\n      auth_url: %s\n      application_credential_id: %s\n      application_credential_secret: %s\n    auth_type: v3applicationcredential\n",
		ks.AuthURL(), credID, credSecret)
	p.create(t, secretsGVR, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "cloud"},
		"stringData": map[string]any{"clouds.yaml": clouds}})
	p.create(t, secretsGVR, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "bootstrap"},
		"stringData": map[string]any{"value": "#cloud-config\n"}})
	p.capo = testcapo.Start(t, p.dc, cloud, ks.AuthURL(), append([]testcapo.Option{testcapo.InNamespaces(p.ns)}, opts...)...)
	if release == "v0.14.7" {
		p.version = "v1beta1"
	}
	testenv.WaitFor(t, "the stand-in to find the CRDs", time.Minute, func() (bool, string) {
		return p.capo.Release() == release, p.capo.Release()
	})
	return p
}

func (p *plane) create(t *testing.T, gvr schema.GroupVersionResource, obj map[string]any) *unstructured.Unstructured {
	t.Helper()
	o, err := p.dc.Resource(gvr).Namespace(p.ns).Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", gvr.Resource, err)
	}
	return o
}

func (p *plane) gvr(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: p.version, Resource: resource}
}

func (p *plane) get(t *testing.T, gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := p.dc.Resource(gvr).Namespace(p.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return o
}

// cluster makes a Cluster API Cluster and its OpenStackCluster, as Cluster
// API would once it adopted it: API load balancer, the fixed private
// network, no external network named (CAPO finds the only one).
func (p *plane) cluster(t *testing.T, name string, extra map[string]any) {
	t.Helper()
	infra := "infrastructure.cluster.x-k8s.io"
	p.create(t, testcapo.Clusters, map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"infrastructureRef": map[string]any{"apiGroup": infra, "kind": "OpenStackCluster", "name": name}}})
	spec := map[string]any{"identityRef": map[string]any{"name": "cloud", "cloudName": "openstack"},
		"network": map[string]any{"id": testcloud.PrivateNetID}, "managedSecurityGroups": map[string]any{"allowAllInClusterTraffic": true}}
	if p.version == "v1beta1" {
		spec["apiServerLoadBalancer"] = map[string]any{"enabled": true}
	} else {
		spec["apiServer"] = map[string]any{"managedLoadBalancer": map[string]any{"enabled": true}}
	}
	for k, v := range extra {
		spec[k] = v
	}
	p.create(t, p.gvr("openstackclusters"), map[string]any{"apiVersion": infra + "/" + p.version, "kind": "OpenStackCluster",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"cluster.x-k8s.io/cluster-name": name}}, "spec": spec})
}

// machine makes a worker Machine with its bootstrap data and its
// OpenStackMachine on the flavor of that ID, and returns the latter's
// name.
func (p *plane) machine(t *testing.T, cluster, name, flavorID string, rootVolume int64, extraLabels ...string) string {
	t.Helper()
	labels := map[string]any{"cluster.x-k8s.io/cluster-name": cluster}
	for _, l := range extraLabels {
		labels[l] = ""
	}
	m := p.create(t, testcapo.Machines, map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
		"metadata": map[string]any{"name": name, "labels": labels},
		"spec": map[string]any{"clusterName": cluster, "bootstrap": map[string]any{"dataSecretName": "bootstrap"},
			"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackMachine", "name": name}}})
	spec := map[string]any{"image": map[string]any{"filter": map[string]any{"name": testcloud.ImageName}}}
	if p.version == "v1beta1" {
		spec["flavorID"] = flavorID
	} else {
		spec["flavor"] = map[string]any{"id": flavorID}
	}
	if rootVolume > 0 {
		spec["rootVolume"] = map[string]any{"sizeGiB": rootVolume}
	}
	p.create(t, p.gvr("openstackmachines"), map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/" + p.version, "kind": "OpenStackMachine",
		"metadata": map[string]any{"name": name, "labels": labels, "ownerReferences": []any{map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": name, "uid": string(m.GetUID())}}},
		"spec": spec})
	return name
}

// condition is a condition of o: status, reason, message and severity.
func condition(o *unstructured.Unstructured, typ string) map[string]any {
	list, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range list {
		if m := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

// waitActive waits for a machine to be provisioned, checking on the way
// that it never had an instance ID while its server was building.
func (p *plane) waitActive(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	var m *unstructured.Unstructured
	testenv.WaitFor(t, name+" to be provisioned", time.Minute, func() (bool, string) {
		m = p.get(t, p.gvr("openstackmachines"), name)
		s := p.get(t, serversGVR, name)
		if m == nil || s == nil {
			return false, "no OpenStackServer yet"
		}
		id, _, _ := unstructured.NestedString(m.Object, "status", "instanceID")
		state, _, _ := unstructured.NestedString(s.Object, "status", "instanceState")
		if id != "" && state != "ACTIVE" {
			t.Fatalf("%s has instance ID %s while its server is %q", name, id, state)
		}
		prov, _, _ := unstructured.NestedBool(m.Object, "status", "initialization", "provisioned")
		return prov && id != "", fmt.Sprintf("server %v, machine %v", s.Object["status"], m.Object["status"])
	})
	return m
}

// TestReleasedCAPOGivesUpOnARefusedCreate runs a cluster's machines
// through each released CAPO: a machine on a flavor Nova has comes up
// (instance ID only once ACTIVE, references resolved once into its
// OpenStackServer), one on a removed flavor is refused, its
// OpenStackServer goes to ERROR for good (the flavor restored and another
// machine made, it still has no server), with Nova's refusal on the
// OpenStackServer only (v0.14.7) or copied onto the machine (v0.15), and
// a bare-metal server Nova puts in ERROR leaves no word of Nova's fault on
// any object.
func TestReleasedCAPOGivesUpOnARefusedCreate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Keystone and a kube-apiserver; runs in the full suite (without -short)")
	}
	for _, release := range []string{strings.TrimPrefix(testenv.CAPOv014, "capo-"), strings.TrimPrefix(testenv.CAPOv015, "capo-")} {
		t.Run(release, func(t *testing.T) {
			p := startPlane(t, release)
			p.cloud.SetComputeZones("az1", "az2")
			p.cluster(t, "c1", map[string]any{"controlPlaneAvailabilityZones": []any{"az2"}})
			testenv.WaitFor(t, "the cluster's infrastructure", 2*time.Minute, func() (bool, string) {
				o := p.get(t, p.gvr("openstackclusters"), "c1")
				prov, _, _ := unstructured.NestedBool(o.Object, "status", "initialization", "provisioned")
				return prov, fmt.Sprint(o.Object["status"])
			})
			osc := p.get(t, p.gvr("openstackclusters"), "c1")
			ext, _, _ := unstructured.NestedString(osc.Object, "status", "externalNetwork", "id")
			if ext != testcloud.ExternalNetID {
				t.Errorf("external network %q, want the only one, %s", ext, testcloud.ExternalNetID)
			}
			ready := condition(osc, "Ready")
			fd := osc.Object["status"].(map[string]any)["failureDomains"]
			if p.version == "v1beta1" {
				if ready["status"] != "True" || ready["reason"] != nil || ready["severity"] != nil {
					t.Errorf("Ready %v, want a v1beta1 true condition", ready)
				}
				if r, _, _ := unstructured.NestedBool(osc.Object, "status", "ready"); !r {
					t.Error("status.ready is not set")
				}
				want := map[string]any{"az1": map[string]any{"controlPlane": false}, "az2": map[string]any{"controlPlane": true}}
				if fmt.Sprint(fd) != fmt.Sprint(want) {
					t.Errorf("failure domains %v, want %v", fd, want)
				}
			} else {
				if ready["status"] != "True" || ready["reason"] != "Ready" {
					t.Errorf("Ready %v, want a metav1 true condition", ready)
				}
				want := []any{map[string]any{"name": "az1", "controlPlane": false}, map[string]any{"name": "az2", "controlPlane": true}}
				if fmt.Sprint(fd) != fmt.Sprint(want) {
					t.Errorf("failure domains %v, want %v", fd, want)
				}
			}

			// A zone an operator adds later becomes a failure domain too,
			// not for control planes (controlPlaneAvailabilityZones).
			p.cloud.SetComputeZones("az1", "az2", "az3")
			testenv.WaitFor(t, "az3 among the failure domains", time.Minute, func() (bool, string) {
				fd := p.get(t, p.gvr("openstackclusters"), "c1").Object["status"].(map[string]any)["failureDomains"]
				return strings.Contains(fmt.Sprint(fd), "az3") && strings.Count(fmt.Sprint(fd), "controlPlane:true") == 1, fmt.Sprint(fd)
			})

			p.machine(t, "c1", "good", "2", 10)
			p.cloud.RemoveFlavor("3", true)
			p.machine(t, "c1", "refused", "3", 0)
			p.machine(t, "c1", "ironic", "4", 10)

			m := p.waitActive(t, "good")
			s := p.get(t, serversGVR, "good")
			res, _, _ := unstructured.NestedMap(s.Object, "status", "resolved")
			if res["flavorID"] != "2" || res["imageID"] != "0b3a6c1e-6f0e-4c2a-9d55-3f1f8c2d7a01" || len(res["ports"].([]any)) != 1 {
				t.Errorf("resolved %v", res)
			}
			port := res["ports"].([]any)[0].(map[string]any)
			if port["networkID"] != testcloud.PrivateNetID || port["name"] != "good-0" || len(port["securityGroups"].([]any)) != 1 {
				t.Errorf("resolved port %v, want good-0 on the private network with the worker group", port)
			}
			if pid, _, _ := unstructured.NestedString(m.Object, "spec", "providerID"); !strings.HasPrefix(pid, "openstack:///") {
				t.Errorf("provider ID %q", pid)
			}

			testenv.WaitFor(t, "the refused server to give up", time.Minute, func() (bool, string) {
				s := p.get(t, serversGVR, "refused")
				if s == nil {
					return false, "no OpenStackServer"
				}
				state, _, _ := unstructured.NestedString(s.Object, "status", "instanceState")
				return state == "ERROR", fmt.Sprint(s.Object["status"])
			})
			s = p.get(t, serversGVR, "refused")
			c := condition(s, "InstanceReady")
			if c["reason"] != "InstanceCreateFailed" || !strings.Contains(fmt.Sprint(c["message"]), "error creating Openstack instance: ") ||
				!strings.Contains(fmt.Sprint(c["message"]), "Flavor 3 could not be found.") {
				t.Errorf("refused server's InstanceReady %v", c)
			}
			refused := p.get(t, p.gvr("openstackmachines"), "refused")
			mc := condition(refused, "Ready")
			if p.version == "v1beta1" {
				// v0.14.7's machine waits for a server that will never be
				// ready, and says nothing of it.
				if strings.Contains(fmt.Sprint(refused.Object["status"]), "Flavor 3") {
					t.Errorf("v0.14.7 machine status %v carries Nova's refusal", refused.Object["status"])
				}
				if sc := condition(s, "Ready"); sc["reason"] != "InstanceCreateFailed" || sc["severity"] != "Error" {
					t.Errorf("v0.14.7 server's summarised Ready %v", sc)
				}
			} else if mc["reason"] != "InstanceStateError" || !strings.Contains(fmt.Sprint(mc["message"]), "Flavor 3 could not be found.") {
				// The server's instanceState is ERROR: v0.15 copies its
				// message under InstanceStateError.
				t.Errorf("v0.15 machine's Ready %v, want the server's refusal", mc)
			}
			testenv.WaitFor(t, "CAPO's event of the refusal", time.Minute, func() (bool, string) {
				list, err := p.dc.Resource(eventsGVR).Namespace(p.ns).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					return false, err.Error()
				}
				for _, e := range list.Items {
					if e.Object["reason"] == "Failedcreateserver" && strings.Contains(fmt.Sprint(e.Object["message"]), "Failed to create server refused: ") {
						return true, ""
					}
				}
				return false, fmt.Sprintf("%d events", len(list.Items))
			})

			// The bare-metal server's volume cannot boot: Nova puts it in
			// ERROR with a fault nobody copies.
			testenv.WaitFor(t, "the Ironic server in ERROR", time.Minute, func() (bool, string) {
				s := p.get(t, serversGVR, "ironic")
				state, _, _ := unstructured.NestedString(s.Object, "status", "instanceState")
				return state == "ERROR", state
			})
			for _, o := range []*unstructured.Unstructured{p.get(t, serversGVR, "ironic"), p.get(t, p.gvr("openstackmachines"), "ironic")} {
				if strings.Contains(fmt.Sprint(o.Object["status"]), "failed to validate") {
					t.Errorf("%s %s carries Nova's fault: %v", o.GetKind(), o.GetName(), o.Object["status"])
				}
			}
			if c := condition(p.get(t, serversGVR, "ironic"), "InstanceReady"); c["reason"] != "InstanceStateError" {
				t.Errorf("ironic server's InstanceReady %v", c)
			}

			// Fixed behind CAPO's back, the flavor is there again; a new
			// machine on it comes up, the refused one stays without server.
			p.cloud.RemoveFlavor("3", false)
			p.machine(t, "c1", "after", "3", 0)
			p.waitActive(t, "after")
			for _, srv := range p.cloud.Servers() {
				if srv.Name == "refused" {
					t.Errorf("released CAPO made the refused server after all: %+v", srv)
				}
			}
			if state, _, _ := unstructured.NestedString(p.get(t, serversGVR, "refused").Object, "status", "instanceState"); state != "ERROR" {
				t.Errorf("refused server's state %q, want ERROR for good", state)
			}

			// What replacing the machine does: deleting it deletes its
			// OpenStackServer, which takes the port it made.
			if err := p.dc.Resource(p.gvr("openstackmachines")).Namespace(p.ns).Delete(context.Background(), "refused", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			testenv.WaitFor(t, "the refused machine, its OpenStackServer and its port to go", time.Minute, func() (bool, string) {
				for _, port := range p.cloud.Ports() {
					if port.Name == "refused-0" {
						return false, "port refused-0 is left"
					}
				}
				return p.get(t, p.gvr("openstackmachines"), "refused") == nil && p.get(t, serversGVR, "refused") == nil, "objects left"
			})

			// With two external networks and none named, CAPO cannot
			// choose.
			p.cloud.AddExternalNetwork("public2")
			p.cluster(t, "c2", nil)
			testenv.WaitFor(t, "c2 to refuse to choose an external network", time.Minute, func() (bool, string) {
				c := condition(p.get(t, p.gvr("openstackclusters"), "c2"), "Ready")
				return c["reason"] == "OpenStackError" &&
					c["message"] == "failed to reconcile external network: failed to get external network: filter matched more than one resource", fmt.Sprint(c)
			})
		})
	}
}

// TestMainCAPORetriesARefusedCreate: on CAPO main's semantics the refused
// server is made once the flavor is back, and the machine comes up.
func TestMainCAPORetriesARefusedCreate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Keystone and a kube-apiserver; runs in the full suite (without -short)")
	}
	p := startPlane(t, "v0.15.0-beta.0", testcapo.MainBackoff(testcapo.Backoff{Base: 100 * time.Millisecond, Max: time.Second}))
	p.cluster(t, "c1", nil)
	p.cloud.RemoveFlavor("3", true)
	p.machine(t, "c1", "refused", "3", 0)
	testenv.WaitFor(t, "the refusal on the machine", 2*time.Minute, func() (bool, string) {
		m := p.get(t, p.gvr("openstackmachines"), "refused")
		if m == nil {
			return false, ""
		}
		c := condition(m, "Ready")
		return strings.Contains(fmt.Sprint(c["message"]), "Flavor 3 could not be found."), fmt.Sprint(c)
	})
	p.cloud.RemoveFlavor("3", false)
	p.waitActive(t, "refused")
}

// TestCAPOPutsControlPlaneMachinesBehindTheAPILoadBalancer: as CAPO
// v0.14.7 does, the API load balancer's pool gets a TCP health monitor
// with CAPO's defaults, and a control-plane machine becomes a member of it
// under CAPO's name, at its address, until it is deleted; a worker never
// does. Each server boots with the bootstrap data as user data. The
// stand-in, kept to the test's namespaces (InNamespaces), leaves alone the
// same cluster in another namespace.
func TestCAPOPutsControlPlaneMachinesBehindTheAPILoadBalancer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Keystone and a kube-apiserver; runs in the full suite (without -short)")
	}
	p := startPlane(t, strings.TrimPrefix(testenv.CAPOv014, "capo-"))
	p.cluster(t, "c1", nil)
	elsewhere := "elsewhere-" + p.ns
	p.copyTo(t, elsewhere, secretsGVR, "cloud")
	p.copyTo(t, elsewhere, testcapo.Clusters, "c1")
	p.copyTo(t, elsewhere, p.gvr("openstackclusters"), "c1")
	p.machine(t, "c1", "cp-0", "3", 0, "cluster.x-k8s.io/control-plane")
	p.machine(t, "c1", "worker-0", "2", 0)
	m := p.waitActive(t, "cp-0")
	p.waitActive(t, "worker-0")
	addrs, _, _ := unstructured.NestedSlice(m.Object, "status", "addresses")
	ip := addrs[0].(map[string]any)["address"]
	pool := "k8s-clusterapi-cluster-" + p.ns + "-c1-kubeapi-6443"
	testenv.WaitFor(t, "cp-0 in the API pool", time.Minute, func() (bool, string) {
		members := p.cloud.Members()
		return len(members) == 1 && members[0].Name == pool+"-cp-0" && members[0].Address == ip && members[0].Port == 6443, fmt.Sprint(members)
	})
	// Nova gets the bootstrap data as user data.
	for _, srv := range p.cloud.Servers() {
		if srv.UserData != base64.StdEncoding.EncodeToString([]byte("#cloud-config\n")) {
			t.Errorf("server %s's user data %q, want the bootstrap Secret's value", srv.Name, srv.UserData)
		}
	}
	monitors := p.cloud.HealthMonitors()
	if len(monitors) != 1 || monitors[0].Name != pool || monitors[0].Type != "TCP" || monitors[0].Delay != 10 ||
		monitors[0].Timeout != 5 || monitors[0].MaxRetries != 5 || monitors[0].MaxRetriesDown != 3 {
		t.Errorf("health monitors %+v, want CAPO's default TCP monitor on %s", monitors, pool)
	}
	if err := p.dc.Resource(p.gvr("openstackmachines")).Namespace(p.ns).Delete(context.Background(), "cp-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "cp-0 out of the pool and gone", time.Minute, func() (bool, string) {
		return len(p.cloud.Members()) == 0 && p.get(t, p.gvr("openstackmachines"), "cp-0") == nil, fmt.Sprint(p.cloud.Members())
	})
	o, err := p.dc.Resource(p.gvr("openstackclusters")).Namespace(elsewhere).Get(context.Background(), "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o.GetFinalizers() != nil || o.Object["status"] != nil {
		t.Errorf("the stand-in kept to namespace %s reconciled the OpenStackCluster in %s: finalizers %v, status %v", p.ns, elsewhere, o.GetFinalizers(), o.Object["status"])
	}
}

// copyTo makes the object name of the test's namespace again in namespace to (made if
// missing), as it was created: no status, finalizers or owners.
func (p *plane) copyTo(t *testing.T, to string, gvr schema.GroupVersionResource, name string) {
	t.Helper()
	ctx := context.Background()
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	if _, err := p.dc.Resource(nsGVR).Get(ctx, to, metav1.GetOptions{}); err != nil {
		if _, err := p.dc.Resource(nsGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": to}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	o := p.get(t, gvr, name)
	if o == nil {
		t.Fatalf("%s %s/%s is missing", gvr.Resource, p.ns, name)
	}
	c := &unstructured.Unstructured{Object: map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(),
		"metadata": map[string]any{"name": name}}}
	c.SetLabels(o.GetLabels())
	for _, k := range []string{"spec", "data", "type"} {
		if v, ok := o.Object[k]; ok {
			c.Object[k] = v
		}
	}
	if _, err := p.dc.Resource(gvr).Namespace(to).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("copy %s %s to %s: %v", gvr.Resource, name, to, err)
	}
}
