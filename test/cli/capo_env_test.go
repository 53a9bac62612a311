package cli

import (
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testcapo"
	"github.com/magnetite-io/magnetite/internal/testing/testcharts"
	"github.com/magnetite-io/magnetite/internal/testing/testclient"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
)

// capoCloud is what the OpenStack CLI tests run against: a real Keystone,
// the OpenStack stand-ins, a real kube-apiserver with Cluster API's core
// and kubeadm managers and one CAPO release's CRDs (shared by the tests of
// that release, capoPlane), the CAPO stand-in imitating that release in
// the test's namespaces, and `magnetite serve` (Keystone auth, the
// OpenStack infrastructure, the real addon charts) driven by Debian's
// openstack CLI as alice of project demo.
type capoCloud struct {
	ks    *testkeystone.Keystone
	cloud *testcloud.Cloud
	dc    dynamic.Interface
	capo  *testcapo.Controller
	c     *cli
}

func startCAPOCloud(t *testing.T, release string, opts ...testcapo.Option) *capoCloud {
	t.Helper()
	return startCAPOCloudWithout(t, release, nil, opts...)
}

// startCAPOCloudWithout is the cloud of startCAPOCloud lacking what missing
// names (Neutron's L3 extension, Octavia, Cinder).
func startCAPOCloudWithout(t *testing.T, release string, missing []testcloud.Missing, opts ...testcapo.Option) *capoCloud {
	t.Helper()
	// How long each start-up step took, for reading a slow run's clock.
	start := time.Now()
	elapsed := func() time.Duration { return time.Since(start).Round(10 * time.Millisecond) }
	ks := testkeystone.Start(t)
	t.Logf("Keystone answers after %s", elapsed())
	const servicePassword = "magnetite-capo-test-password"
	svc := ks.ServiceUser("magnetite", servicePassword)
	ks.Grant(svc, ks.ProjectID("service"), "admin")
	project := ks.CreateProject("demo")
	ks.Grant(ks.CreateUser("alice", "alice-password"), project, "member")
	cloud := testcloud.Start(t, ks, missing...)

	plane := capoPlane(t, release)
	t.Logf("the management plane answers after %s", elapsed())
	dc := plane.Dynamic(t)
	// Each test's Magnetite and stand-in keep to the test's namespaces.
	prefix := testenv.NamespacePrefix(t)
	// Released semantics unless opts say otherwise: a refused server
	// create is never tried again.
	capo := testcapo.Start(t, dc, cloud, ks.AuthURL(), append([]testcapo.Option{testcapo.InNamespaces(prefix)}, opts...)...)
	// The clusters' API servers, which the stand-in's kubeadm init brings
	// up behind each control plane endpoint: one kube-apiserver for every
	// test's clusters, each cluster behind a front door of its own.
	capo.ServeWorkloads(t, testenv.SharedPlane(t, "workload clusters", testenv.Start))

	addr := testmagnetite.FreeAddr(t)
	ks.RegisterService("container-infra", "magnum", "http://"+addr+"/v1")
	testmagnetite.Serve(t, addr, `[auth]
strategy = keystone
[keystone_authtoken]
auth_url = `+ks.AuthURL()+`
username = magnetite
password = `+servicePassword+`
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = `+testkeystone.Region+`
[management]
kubeconfig = `+plane.KubeconfigFile(t)+`
namespace_prefix = `+prefix+`
[conductor]
infrastructure = openstack
[addons]
source = `+testcharts.Serve(t).URL+`
`)
	t.Logf("Magnetite answers after %s", elapsed())
	c := &cli{env: []string{"HOME=" + t.TempDir(), "SHELL=/bin/bash", "PATH=/usr/bin:/bin",
		"OS_AUTH_URL=" + ks.AuthURL(), "OS_IDENTITY_API_VERSION=3", "OS_INTERFACE=public",
		"OS_USERNAME=alice", "OS_PASSWORD=alice-password", "OS_PROJECT_NAME=demo",
		"OS_USER_DOMAIN_NAME=Default", "OS_PROJECT_DOMAIN_NAME=Default", "OS_REGION_NAME=" + testkeystone.Region},
		client: testclient.OpenStack(t)}
	if v := os.Getenv("TMPDIR"); v != "" {
		c.env = append(c.env, "TMPDIR="+v)
	}
	return &capoCloud{ks: ks, cloud: cloud, dc: dc, capo: capo, c: c}
}

// capoPlane is the management plane the tests of one CAPO release share:
// kube-apiserver with Cluster API's CRDs and the release's, and Cluster
// API's core and kubeadm managers (the CAPO stand-in each test starts is
// the infrastructure provider). Nothing a test does changes what the
// others see: each works in its own namespaces.
func capoPlane(t *testing.T, release string) *testenv.APIServer {
	t.Helper()
	return testenv.SharedPlane(t, "management plane with "+release, func(tb testenv.TB) *testenv.APIServer {
		plane := testenv.Start(tb)
		plane.InstallClusterAPI(tb)
		plane.InstallProviders(tb, release)
		plane.StartManagers(tb, testenv.CoreManager, testenv.KubeadmBootstrapManager, testenv.KubeadmControlPlaneManager)
		return plane
	})
}

// field is one field of a cluster as `openstack coe cluster show` prints it.
func (e *capoCloud) field(t *testing.T, cluster, name string) string {
	t.Helper()
	return strings.TrimSpace(e.c.ok(t, "coe", "cluster", "show", cluster, "-f", "value", "-c", name))
}

// uuid is a cluster's UUID, read through the Go client.
func (e *capoCloud) uuid(t *testing.T, cluster string) string {
	t.Helper()
	cl, problem := e.c.clusterNow(t, cluster)
	if cl == nil {
		t.Fatalf("read cluster %s: %s", cluster, problem)
	}
	return cl.UUID
}

// state is a cluster's status and status_reason as the Go client reads
// them, for what a wait reports.
func (e *capoCloud) state(t *testing.T, cluster string) string {
	t.Helper()
	cl, problem := e.c.clusterNow(t, cluster)
	if cl == nil {
		return problem
	}
	return clusterState(cl)
}

// createTemplates makes the four templates the tests' clusters use: vm
// (VMs on the private network), managed (VMs on a network CAPO makes), bm
// (all bare metal on the provisioning network) and mixed (a VM control
// plane and bare-metal workers on the provisioning network).
func (e *capoCloud) createTemplates(t *testing.T) {
	t.Helper()
	c := e.c
	common := []string{"--coe", "kubernetes", "--image", testcloud.ImageName, "--external-network", testcloud.ExternalNet, "--master-lb-enabled"}
	c.ok(t, append([]string{"coe", "cluster", "template", "create", "vm", "--fixed-network", testcloud.PrivateNet,
		"--flavor", testcloud.FlavorName, "--master-flavor", testcloud.MasterFlavor, "--labels", "kube_tag=" + testcloud.KubeTag + ",boot_volume_size=10"}, common...)...)
	// Without a fixed network CAPO makes the cluster's network, subnet and
	// router (gateway on the external network).
	c.ok(t, append([]string{"coe", "cluster", "template", "create", "managed",
		"--flavor", testcloud.FlavorName, "--master-flavor", testcloud.MasterFlavor, "--labels", "kube_tag=" + testcloud.KubeTag + ",boot_volume_size=10"}, common...)...)
	c.ok(t, append([]string{"coe", "cluster", "template", "create", "bm", "--server-type", "bm", "--fixed-network", testcloud.ProvisioningNet,
		"--flavor", testcloud.BareMetalFlavor, "--master-flavor", testcloud.BareMetalFlavor, "--labels", "kube_tag=" + testcloud.KubeTag}, common...)...)
	c.ok(t, append([]string{"coe", "cluster", "template", "create", "mixed", "--fixed-network", testcloud.ProvisioningNet,
		"--flavor", testcloud.BareMetalFlavor, "--master-flavor", testcloud.MasterFlavor, "--labels", "kube_tag=" + testcloud.KubeTag + ",boot_volume_size=10"}, common...)...)
}

// checkWrittenAt fails unless Magnetite applied the cluster's OpenStack
// objects (its OpenStackCluster template and its machine templates) at
// infrastructure version: the version a management cluster's CAPO release
// serves, read from the managed fields Magnetite's applies own.
func (e *capoCloud) checkWrittenAt(t *testing.T, uuid, version string) {
	t.Helper()
	ctx := t.Context()
	list, err := e.dc.Resource(testcapo.Clusters).List(ctx, metav1.ListOptions{LabelSelector: mgmt.ClusterSelector(uuid)})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("the Cluster object of %s: %v (%d found)", uuid, err, len(list.Items))
	}
	ns := list.Items[0].GetNamespace()
	want := "infrastructure.cluster.x-k8s.io/" + version
	seen := 0
	for _, resource := range []string{"openstackclustertemplates", "openstackmachinetemplates"} {
		gvr := schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: version, Resource: resource}
		list, err := e.dc.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s at %s: %v", resource, version, err)
		}
		for _, o := range list.Items {
			for _, mf := range o.GetManagedFields() {
				if mf.Manager != mgmt.FieldManager {
					continue
				}
				seen++
				if mf.APIVersion != want {
					t.Errorf("%s %s/%s was applied at %s, want %s", o.GetKind(), ns, o.GetName(), mf.APIVersion, want)
				}
			}
		}
	}
	if seen == 0 {
		t.Errorf("no OpenStack template in namespace %s was applied by Magnetite", ns)
	}
}

// TestOpenStackClustersOnCAPOv015ThroughTheCLI is the released-provider
// check for CAPO's first v1beta2 release: with CAPO v0.15.0-beta.0's CRDs
// (v1beta1 and v1beta2 served) and the stand-in imitating it, a VM
// cluster on a network CAPO makes, an all-bare-metal cluster and a mixed
// one are created through Debian's openstack CLI, Magnetite writes their
// OpenStack objects at v1beta2, every node group's machine gets its server
// and node, and deleting them leaves nothing in the cloud. The refusals
// and recoveries run on v0.14.7 in
// TestOpenStackClustersThroughTheCLIOnTheCAPOStandIn.
func TestOpenStackClustersOnCAPOv015ThroughTheCLI(t *testing.T) {
	requireCLI(t) // skips under -short
	t.Parallel()
	e := startCAPOCloud(t, testenv.CAPOv015)
	e.createTemplates(t)
	e.buildAndDelete(t, [][2]string{{"vm2", "managed"}, {"bm2", "bm"}, {"mixed2", "mixed"}}, func(uuid string) {
		e.checkWrittenAt(t, uuid, "v1beta2")
	})
	if r := e.capo.Release(); r != "v0.15.0-beta.0" {
		t.Errorf("the CAPO stand-in imitated %q, want v0.15.0-beta.0", r)
	}
}

// TestOpenStackClustersOnACloudWithoutL3ThroughTheCLI: on a cloud whose
// Neutron has no L3 extension (no routers, no floating IPs), as clouds
// that run bare metal on provider networks often are, an all-bare-metal
// cluster on the provisioning network and a VM cluster on the private
// network, each behind its API load balancer, whose address on the
// cluster network is the API's, are created through Debian's openstack
// CLI; every machine gets its server and node, no floating IP is asked
// for, and deleting them leaves nothing in the cloud (the leftovers sweep
// asks Neutron for no router or floating IP).
func TestOpenStackClustersOnACloudWithoutL3ThroughTheCLI(t *testing.T) {
	requireCLI(t) // skips under -short
	t.Parallel()
	e := startCAPOCloudWithout(t, testenv.CAPOv014, []testcloud.Missing{testcloud.WithoutL3})
	e.createTemplates(t)
	e.buildAndDelete(t, [][2]string{{"vm3", "vm"}, {"bm3", "bm"}}, func(string) {
		if fips := e.cloud.FloatingIPs(); len(fips) > 0 {
			t.Errorf("floating IPs on a cloud without L3: %+v", fips)
		}
		for _, lb := range e.cloud.LoadBalancers() {
			if lb.VIPAddress == "" || lb.VIPSubnetID == "" {
				t.Errorf("load balancer %s has no address on the cluster network: %+v", lb.Name, lb)
			}
		}
	})
}

// TestOpenStackClustersOnACloudWithoutOctaviaThroughTheCLI: on a cloud
// without Octavia a cluster whose template asks for the API load balancer
// is refused at create with a 400 that says so; a VM cluster on the
// private network whose template has none gets the API's floating IP,
// which CAPO makes and gives its control-plane server, every machine gets
// its server and node, and deleting it leaves nothing in the cloud (the
// leftovers sweep asks Octavia nothing).
func TestOpenStackClustersOnACloudWithoutOctaviaThroughTheCLI(t *testing.T) {
	requireCLI(t) // skips under -short
	t.Parallel()
	e := startCAPOCloudWithout(t, testenv.CAPOv014, []testcloud.Missing{testcloud.WithoutOctavia})
	e.createTemplates(t)
	refused := e.c.fails(t, "coe", "cluster", "create", "balanced", "--cluster-template", "vm", "--master-count", "1", "--node-count", "1")
	if !strings.Contains(refused, "(HTTP 400)") || !strings.Contains(refused, "master_lb_enabled is set but the cloud has no Octavia") {
		t.Errorf("a cluster with the API load balancer on a cloud without Octavia: %q, want a 400 saying so", refused)
	}
	e.c.ok(t, "coe", "cluster", "template", "create", "plain", "--coe", "kubernetes", "--image", testcloud.ImageName,
		"--external-network", testcloud.ExternalNet, "--fixed-network", testcloud.PrivateNet, "--flavor", testcloud.FlavorName,
		"--master-flavor", testcloud.MasterFlavor, "--labels", "kube_tag="+testcloud.KubeTag+",boot_volume_size=10")
	e.buildAndDelete(t, [][2]string{{"vm4", "plain"}}, func(string) {
		fips, ports := e.cloud.FloatingIPs(), map[string]testcloud.Port{}
		for _, p := range e.cloud.Ports() {
			ports[p.ID] = p
		}
		if len(fips) != 1 || ports[fips[0].PortID].DeviceOwner != "compute:nova" {
			t.Errorf("floating IPs %+v, want the API's on a server's port", fips)
		}
	})
}

// buildAndDelete creates each cluster (name, template) with one control
// plane node and one worker through the CLI, waits until every machine of
// each has its server and node, runs check on each cluster's UUID,
// deletes them and checks nothing is left in the cloud.
func (e *capoCloud) buildAndDelete(t *testing.T, clusters [][2]string, check func(uuid string)) {
	t.Helper()
	for _, cl := range clusters {
		e.c.ok(t, "coe", "cluster", "create", cl[0], "--cluster-template", cl[1], "--master-count", "1", "--node-count", "1")
	}
	ctx := t.Context()
	for _, cl := range clusters {
		uuid := e.uuid(t, cl[0])
		testenv.WaitFor(t, cl[0]+"'s machines to have servers and nodes", 6*time.Minute, func() (bool, string) {
			ms := clusterMachines(ctx, t, e.dc, e.capo, uuid)
			if len(ms) < 2 {
				return false, e.state(t, cl[0])
			}
			for _, m := range ms {
				if id, _, _ := unstructured.NestedString(m.Object, "status", "instanceID"); id == "" || !hasNode(ctx, t, e.dc, m) {
					return false, m.GetName() + " has no server and node yet; " + e.state(t, cl[0])
				}
			}
			return true, ""
		})
		check(uuid)
	}
	for _, cl := range clusters {
		e.c.ok(t, "coe", "cluster", "delete", cl[0])
	}
	e.c.waitNoClusters(t, 5*time.Minute)
	e.cloud.CheckNothingLeft(t)
}
