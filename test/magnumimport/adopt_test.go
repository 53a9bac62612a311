package magnumimport

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testcapo"
	"github.com/magnetite-io/magnetite/internal/testing/testclient"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
	"github.com/magnetite-io/magnetite/internal/testing/testmariadb"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

// TestAdoptTheClustersMagnumClusterAPIDriversBuilt moves two running
// clusters to Magnetite without rebuilding them: one magnum-cluster-api
// built (a ClusterClass topology in magnum-system) and one magnum-capi-helm
// built (a Helm release of the openstack-cluster chart), each with its
// machines built by Cluster API's managers and the CAPO stand-in on the
// OpenStack stand-ins. After `magnetite import magnum`, Magnetite reports
// their status from their objects within seconds, a resize through the
// openstack CLI adds a worker and replaces no machine, a node group is
// added to and removed from each in its driver's shape, an upgrade takes
// each cluster's control plane (and the magnum-capi-helm one's workers) to
// the new version and image in its driver's way, what Magnetite does not
// do to adopted clusters is refused with the reason, `magnetite cluster
// rebase` moves the magnum-cluster-api cluster onto Magnetite's
// ClusterClass (and refuses the other), and a delete removes everything
// the drivers made, in the management cluster and in the cloud. Magnetite
// authenticates with Keystone, and the clusters' user runs the CLIs.
func TestAdoptTheClustersMagnumClusterAPIDriversBuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs Debian's Magnum, MariaDB, Keystone and openstack CLI and a Cluster API plane; runs in the full suite (hack/test.sh)")
	}
	// Nothing it starts is shared with the package's other tests.
	t.Parallel()
	testproc.Require(t, "magnum-db-manage", "/usr/bin/python3", openstackBin)
	ctx := t.Context()

	ks := testkeystone.Start(t)
	const servicePassword = "magnetite-adopt-test-password"
	ks.Grant(ks.ServiceUser("magnetite", servicePassword), ks.ProjectID("service"), "admin")
	project := ks.CreateProject("demo")
	user := ks.CreateUser("carol", "carol-password")
	ks.Grant(user, project, "member")
	cloud := testcloud.Start(t, ks)
	plane := testenv.Start(t)
	plane.InstallClusterAPI(t)
	plane.InstallProviders(t, testenv.CAPOv014)
	plane.StartManagers(t, testenv.CoreManager, testenv.KubeadmBootstrapManager, testenv.KubeadmControlPlaneManager)
	dc, mapper := plane.Dynamic(t), plane.Mapper(t)
	capo := testcapo.Start(t, dc, cloud, ks.AuthURL())
	capo.ServeWorkloads(t, testenv.Start(t))

	db := testmariadb.Start(t)
	magnum := filledMagnum(t, db, "adopt", project)
	uuids := map[string]string{}
	for _, c := range magnum.objects.Clusters {
		uuids[str(c.Fields["name"])] = str(c.Fields["uuid"])
	}
	credID, credSecret := ks.ApplicationCredential(user, "carol", "carol-password", "demo", "magnum-clusters")
	mca := driverCluster{uuid: uuids["mca"], stackID: "kube-ab12c", namespace: mcaNamespace,
		credID: credID, credSecret: credSecret, authURL: ks.AuthURL(), workers: 2}
	mch := driverCluster{uuid: uuids["mch"], stackID: "mch-a1b2c3d4e5f6",
		namespace: "magnum-" + regexp.MustCompile("[^a-z0-9]").ReplaceAllString(project, ""),
		credID:    credID, credSecret: credSecret, authURL: ks.AuthURL(), workers: 2}
	plane.CreateNamespace(t, mca.namespace)
	plane.CreateNamespace(t, mch.namespace)
	createAsDriver(ctx, t, dc, mapper, "magnum-cluster-api", mcaObjects(mca))
	manifest := mchObjects(mch)
	mchMade := createAsDriver(ctx, t, dc, mapper, "helm", manifest)
	recordHelmRelease(t, plane.Config, mch.namespace, mch.stackID, manifest)

	// The drivers' clusters run: every machine has its server and node.
	built := map[string]map[string]string{}
	for _, c := range []driverCluster{mca, mch} {
		waitMachines(ctx, t, dc, c, 1+c.workers, 6*time.Minute)
		built[c.stackID] = machineUIDs(ctx, t, dc, c)
	}

	// Magnetite authenticates with Keystone, as a cloud moving from Magnum
	// does: a rebased cluster acts in the cloud with its credential.
	addr := testmagnetite.FreeAddr(t)
	ks.RegisterService("container-infra", "magnum", "http://"+addr+"/v1")
	m := newMagnetiteWith(t, "adopt-test", testmagnetite.KeystoneConf(ks.AuthURL(), servicePassword, testkeystone.Region)+
		fmt.Sprintf("\n[management]\nkubeconfig = %s\n\n[conductor]\ninfrastructure = openstack\n", plane.KubeconfigFile(t)))
	for _, dry := range []bool{true, false} {
		var rows []importRow
		want := "import"
		if dry {
			rows, want = m.importMagnum(t, magnum.conf, "--dry-run"), "would import"
		} else {
			rows = m.importMagnum(t, magnum.conf)
		}
		for _, c := range []struct{ uuid, driver string }{{mca.uuid, "magnum-cluster-api"}, {mch.uuid, "magnum-capi-helm"}} {
			i := slices.IndexFunc(rows, func(r importRow) bool { return r.Kind == "cluster" && r.ID == c.uuid })
			if i < 0 || rows[i].Outcome != want || !strings.Contains(rows[i].Reason, "Adopted from "+c.driver) {
				t.Fatalf("import (dry run %v): cluster %s's row, want %q and adoption from %s, in %+v", dry, c.uuid, want, c.driver, rows)
			}
		}
	}

	// Until `magnetite serve` runs, doctor says they wait to be taken over.
	if status, detail := m.doctor(t, "adopted clusters"); status != "WARN" || !strings.Contains(detail, "2 of 2 adopted clusters are not taken over yet") {
		t.Errorf("doctor before the take-over: %s %s", status, detail)
	}
	p := m.serveAt(t, addr)
	adminTokens.Store(p.Base, ks.AdminToken)
	// The clusters' user runs the openstack CLI.
	cli := &cli{env: []string{"HOME=" + t.TempDir(), "SHELL=/bin/bash", "PATH=" + os.Getenv("PATH"),
		"OS_AUTH_URL=" + ks.AuthURL(), "OS_IDENTITY_API_VERSION=3", "OS_INTERFACE=public",
		"OS_USERNAME=carol", "OS_PASSWORD=carol-password", "OS_PROJECT_NAME=demo",
		"OS_USER_DOMAIN_NAME=Default", "OS_PROJECT_DOMAIN_NAME=Default", "OS_REGION_NAME=" + testkeystone.Region},
		client: testclient.OpenStack(t)}

	t.Run("status", func(t *testing.T) {
		started := time.Now()
		for _, c := range []driverCluster{mca, mch} {
			cl := objectOf(ctx, t, dc, testcapo.Clusters, c.namespace, c.stackID)
			host, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneEndpoint", "host")
			testenv.WaitFor(t, "Magnetite to report "+c.stackID+" from its objects", time.Minute, func() (bool, string) {
				got := apiGet(t, p.Base, "/v1/clusters/"+c.uuid, "1.10")
				nodes, _ := got["node_addresses"].([]any)
				masters, _ := got["master_addresses"].([]any)
				if str(got["api_address"]) == "" || !strings.Contains(str(got["api_address"]), host) || len(nodes) != c.workers || len(masters) != 1 {
					return false, fmt.Sprintf("api_address %v, node_addresses %v, master_addresses %v", got["api_address"], got["node_addresses"], got["master_addresses"])
				}
				if h := str(got["health_status"]); h == "" || h == "UNKNOWN" {
					return false, "health_status " + h
				}
				return true, ""
			})
		}
		t.Logf("both clusters reported from their objects %s after Magnetite answered", time.Since(started).Round(100*time.Millisecond))
		if status, detail := m.doctor(t, "adopted clusters"); status != "PASS" || !strings.Contains(detail, "2 adopted clusters taken over") {
			t.Errorf("doctor after the take-over: %s %s", status, detail)
		}
		for _, c := range []driverCluster{mca, mch} {
			// Taking over labelled every machine as the cluster's, in place.
			for _, m := range machinesOf(ctx, t, dc, c) {
				if m.GetLabels()[mgmt.LabelClusterUUID] != c.uuid {
					t.Errorf("machine %s has labels %v, want Magnetite's for cluster %s", m.GetName(), m.GetLabels(), c.uuid)
				}
			}
			checkNoneReplaced(ctx, t, dc, c, built[c.stackID])
		}
	})

	t.Run("resize", func(t *testing.T) {
		for _, c := range []driverCluster{mca, mch} {
			cli.ok(t, "coe", "cluster", "resize", c.uuid, "3")
		}
		for _, c := range []driverCluster{mca, mch} {
			waitMachines(ctx, t, dc, c, 1+3, 5*time.Minute)
			checkNoneReplaced(ctx, t, dc, c, built[c.stackID])
			if n := apiGet(t, p.Base, "/v1/clusters/"+c.uuid, "1.10")["node_count"]; fmt.Sprint(n) != "3" {
				t.Errorf("cluster %s: node_count %v after the resize, want 3", c.stackID, n)
			}
		}
	})

	t.Run("node group", func(t *testing.T) {
		// A node group is added to and removed from each cluster in its
		// driver's shape (a machine deployment of magnum-cluster-api's
		// topology; a MachineDeployment with its templates as the
		// openstack-cluster chart makes one), and no other machine moves.
		for _, c := range []driverCluster{mca, mch} {
			cli.ok(t, "coe", "nodegroup", "create", "--node-count", "1", "--flavor", testcloud.FlavorName, c.uuid, "extra")
		}
		for _, c := range []driverCluster{mca, mch} {
			waitMachines(ctx, t, dc, c, 1+3+1, 5*time.Minute)
			checkNoneReplaced(ctx, t, dc, c, built[c.stackID])
			if ng := apiGet(t, p.Base, "/v1/clusters/"+c.uuid+"/nodegroups/extra", "1.10"); strings.HasSuffix(str(ng["status"]), "_FAILED") {
				t.Errorf("node group extra of %s: %v: %v", c.stackID, ng["status"], ng["status_reason"])
			}
		}
		md := objectOf(ctx, t, dc, schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments"},
			mch.namespace, mch.stackID+"-extra")
		if md.GetLabels()["capi.stackhpc.com/node-group"] != "extra" {
			t.Errorf("the new MachineDeployment %s has labels %v, want the chart's node group label", md.GetName(), md.GetLabels())
		}
		for _, c := range []driverCluster{mca, mch} {
			cli.ok(t, "coe", "nodegroup", "delete", c.uuid, "extra")
		}
		for _, c := range []driverCluster{mca, mch} {
			testenv.WaitFor(t, "node group extra of "+c.stackID+" to be deleted", 5*time.Minute, func() (bool, string) {
				code, body := apiStatus(t, p.Base, "/v1/clusters/"+c.uuid+"/nodegroups/extra")
				return code == http.StatusNotFound, body
			})
			waitMachines(ctx, t, dc, c, 1+3, time.Minute)
			checkNoneReplaced(ctx, t, dc, c, built[c.stackID])
		}
		for _, kind := range []string{"OpenStackMachineTemplate", "KubeadmConfigTemplate"} {
			for _, o := range listOf(ctx, t, dc, mapper, kind, mch.namespace, "capi.stackhpc.com/node-group=extra") {
				t.Errorf("%s %s of the removed node group is left", kind, o.GetName())
			}
		}
	})

	t.Run("upgrade", func(t *testing.T) {
		// magnum-cluster-api upgrades the whole cluster to the template's
		// kube_tag and image: Cluster API's topology controller takes the
		// new version and image to the control plane first.
		cli.ok(t, "coe", "cluster", "template", "create", "mca-next", "--coe", "kubernetes",
			"--image", testcloud.NextImageName, "--external-network", testcloud.ExternalNet, "--labels", "kube_tag="+testcloud.NextKubeTag)
		cli.ok(t, "coe", "cluster", "upgrade", mca.uuid, "mca-next")
		testenv.WaitFor(t, "the control plane of "+mca.stackID+" to take "+testcloud.NextKubeTag+" and its image", 3*time.Minute, func() (bool, string) {
			cl := objectOf(ctx, t, dc, testcapo.Clusters, mca.namespace, mca.stackID)
			version, _, _ := unstructured.NestedString(cl.Object, "spec", "topology", "version")
			images := variableValues(cl, "imageUUID")
			if version != testcloud.NextKubeTag || len(images) != 2 || images[0] != testcloud.NextImageID || images[1] != testcloud.NextImageID {
				got := apiGet(t, p.Base, "/v1/clusters/"+mca.uuid, "1.10")
				return false, fmt.Sprintf("topology version %s, imageUUID (cluster, default-worker) %v; Magnetite says %v: %v",
					version, images, got["status"], got["status_reason"])
			}
			kcp := referenced(ctx, t, dc, mapper, cl, "spec", "controlPlaneRef")
			kcpVersion, _, _ := unstructured.NestedString(kcp.Object, "spec", "version")
			osmt := referenced(ctx, t, dc, mapper, kcp, "spec", "machineTemplate", "spec", "infrastructureRef")
			image, _, _ := unstructured.NestedString(osmt.Object, "spec", "template", "spec", "image", "id")
			return kcpVersion == testcloud.NextKubeTag && image == testcloud.NextImageID,
				fmt.Sprintf("KubeadmControlPlane at %s, its machine template %s with image %s", kcpVersion, osmt.GetName(), image)
		})
		got := apiGet(t, p.Base, "/v1/clusters/"+mca.uuid, "1.10")
		if tag := str(got["labels"].(map[string]any)["kube_tag"]); tag != testcloud.NextKubeTag {
			t.Errorf("the upgraded cluster's kube_tag label is %s", tag)
		}
		// magnum-capi-helm's upgrade is its chart's with the new version
		// and image: new machine templates, and the control plane and
		// machine deployment pointed at them.
		cli.ok(t, "coe", "cluster", "upgrade", mch.uuid, "mca-next")
		for _, kind := range []string{"KubeadmControlPlane", "MachineDeployment"} {
			name, versionPath, refPath := mch.stackID+"-control-plane", []string{"spec", "version"}, []string{"spec", "machineTemplate", "spec", "infrastructureRef"}
			if kind == "MachineDeployment" {
				name, versionPath, refPath = mch.stackID+"-default-worker", []string{"spec", "template", "spec", "version"}, []string{"spec", "template", "spec", "infrastructureRef"}
			}
			m, err := mapper.RESTMapping(schema.GroupKind{Group: map[string]string{"KubeadmControlPlane": "controlplane.cluster.x-k8s.io", "MachineDeployment": "cluster.x-k8s.io"}[kind], Kind: kind})
			if err != nil {
				t.Fatal(err)
			}
			testenv.WaitFor(t, kind+" "+name+" to take "+testcloud.NextKubeTag+" and its image", 3*time.Minute, func() (bool, string) {
				o := objectOf(ctx, t, dc, m.Resource, mch.namespace, name)
				version, _, _ := unstructured.NestedString(o.Object, versionPath...)
				osmt := referenced(ctx, t, dc, mapper, o, refPath...)
				image, _, _ := unstructured.NestedString(osmt.Object, "spec", "template", "spec", "image", "id")
				if version != testcloud.NextKubeTag || image != testcloud.NextImageID {
					got := apiGet(t, p.Base, "/v1/clusters/"+mch.uuid, "1.10")
					return false, fmt.Sprintf("at %s, machine template %s with image %s; Magnetite says %v: %v", version, osmt.GetName(), image, got["status"], got["status_reason"])
				}
				if osmt.GetLabels()[mgmt.LabelClusterUUID] != mch.uuid || osmt.GetLabels()["app.kubernetes.io/managed-by"] == "Helm" {
					t.Errorf("the new machine template %s has labels %v, want Magnetite's and not Helm's", osmt.GetName(), osmt.GetLabels())
				}
				return true, ""
			})
		}
	})

	t.Run("rebase", func(t *testing.T) {
		// `magnetite cluster rebase`, as the clusters' user: magnum-capi-helm's
		// Cluster has no ClusterClass to move, so its rebase is refused
		// and nothing changes.
		rebase := func(uuid string) (string, error) {
			cmd := exec.CommandContext(ctx, m.bin, "cluster", "rebase", uuid)
			cmd.Env = cli.env
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		mchBefore := machineUIDs(ctx, t, dc, mch)
		if out, err := rebase(mch.uuid); err == nil || !strings.Contains(out, "has no ClusterClass") {
			t.Errorf("magnetite cluster rebase %s: %v, want it refused because the Cluster has no ClusterClass: %s", mch.stackID, err, out)
		}
		checkNoneReplaced(ctx, t, dc, mch, mchBefore)

		// magnum-cluster-api's moves onto Magnetite's ClusterClass: the
		// control plane and the workers are to be made from Magnetite's
		// templates and bootstrap (Cluster API rolls them), the
		// OpenStackCluster (network, load balancer, credentials Secret)
		// stays as it was, and the cluster is Magnetite's from then on.
		before := machineUIDs(ctx, t, dc, mca)
		cl := objectOf(ctx, t, dc, testcapo.Clusters, mca.namespace, mca.stackID)
		oscBefore := referenced(ctx, t, dc, mapper, cl, "spec", "infrastructureRef")
		if out, err := rebase(mca.uuid); err != nil || !strings.Contains(out, "accepted") {
			t.Fatalf("magnetite cluster rebase %s: %v\n%s", mca.stackID, err, out)
		}
		ours := func(tmpl *unstructured.Unstructured) bool {
			meta, _, _ := unstructured.NestedSlice(tmpl.Object, "spec", "template", "spec", "serverMetadata")
			for _, x := range meta {
				if m, _ := x.(map[string]any); m["key"] == "magnetite_cluster" && m["value"] == mca.uuid {
					return true
				}
			}
			return false
		}
		// Cluster API takes the control plane onto Magnetite's machine
		// template first; the workers follow once the control plane's
		// upgrade to v1.32.0 is done, which no machine here completes (the
		// stand-in runs no etcd: testcapo/workload.go).
		testenv.WaitFor(t, mca.stackID+" to move onto Magnetite's ClusterClass", 3*time.Minute, func() (bool, string) {
			cl = objectOf(ctx, t, dc, testcapo.Clusters, mca.namespace, mca.stackID)
			if class := classRefName(cl); !strings.HasPrefix(class, "magnetite-openstack-") {
				got := apiGet(t, p.Base, "/v1/clusters/"+mca.uuid, "1.10")
				return false, fmt.Sprintf("class %s; Magnetite says %v: %v", class, got["status"], got["status_reason"])
			}
			kcp := referenced(ctx, t, dc, mapper, cl, "spec", "controlPlaneRef")
			if tmpl := referenced(ctx, t, dc, mapper, kcp, "spec", "machineTemplate", "spec", "infrastructureRef"); !ours(tmpl) {
				return false, "the control plane's machine template " + tmpl.GetName() + " is not Magnetite's yet"
			}
			return true, ""
		})
		if left := variableValues(cl, "clusterIdentityRefName"); len(left) > 0 {
			t.Errorf("magnum-cluster-api's variables are left on the rebased Cluster: clusterIdentityRefName %v", left)
		}
		checkNoneReplaced(ctx, t, dc, mca, before)
		// CAPO's OpenStackCluster is as the driver made it, and CAPO still
		// finds its credentials.
		oscAfter := referenced(ctx, t, dc, mapper, cl, "spec", "infrastructureRef")
		specBefore, _, _ := unstructured.NestedMap(oscBefore.Object, "spec")
		specAfter, _, _ := unstructured.NestedMap(oscAfter.Object, "spec")
		if oscAfter.GetUID() != oscBefore.GetUID() || !reflect.DeepEqual(specBefore, specAfter) {
			t.Errorf("the OpenStackCluster changed:\nbefore %v\nafter  %v", specBefore, specAfter)
		}
		testenv.WaitFor(t, "CAPO to read "+mca.stackID+"'s credentials", time.Minute, func() (bool, string) {
			o := referenced(ctx, t, dc, mapper, cl, "spec", "infrastructureRef")
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			for _, x := range conds {
				if c, _ := x.(map[string]any); c["type"] == "Ready" {
					return c["status"] == "True", fmt.Sprintf("Ready %v: %v %v", c["status"], c["reason"], c["message"])
				}
			}
			return false, fmt.Sprintf("no Ready condition in %v", conds)
		})
		// A rebased cluster's changes are Magnetite's own renders.
		cli.ok(t, "coe", "cluster", "resize", mca.uuid, "2")
		testenv.WaitFor(t, "the rebased "+mca.stackID+" to be resized to 2 workers", 2*time.Minute, func() (bool, string) {
			cl := objectOf(ctx, t, dc, testcapo.Clusters, mca.namespace, mca.stackID)
			mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
			if len(mds) != 1 {
				return false, fmt.Sprintf("machine deployments %v", mds)
			}
			md := mds[0].(map[string]any)
			return md["name"] == "default-worker" && md["class"] == "vm" && fmt.Sprint(md["replicas"]) == "2", fmt.Sprintf("machine deployment %v", md)
		})
		if code, body := apiPost(t, p.Base, "/v1/clusters/"+mca.uuid+"/actions/rebase"); code != http.StatusConflict || !strings.Contains(body, "already") {
			t.Errorf("a second rebase: %d %s, want 409 saying it was moved already", code, body)
		}
	})

	t.Run("delete", func(t *testing.T) {
		cli.ok(t, "coe", "cluster", "delete", mca.uuid, mch.uuid)
		for _, c := range []driverCluster{mca, mch} {
			testenv.WaitFor(t, "cluster "+c.stackID+" to be deleted", 5*time.Minute, func() (bool, string) {
				code, body := apiStatus(t, p.Base, "/v1/clusters/"+c.uuid)
				return code == http.StatusNotFound, body
			})
		}
		if left := machinesOf(ctx, t, dc, mca); len(left) > 0 {
			t.Errorf("machines of %s left: %d", mca.stackID, len(left))
		}
		if !gone(ctx, t, dc, testcapo.Clusters, mca.namespace, mca.stackID) {
			t.Errorf("Cluster %s/%s is left", mca.namespace, mca.stackID)
		}
		secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
		if list, err := dc.Resource(secrets).Namespace(mca.namespace).List(ctx, metav1.ListOptions{LabelSelector: "cluster-uuid=" + mca.uuid}); err != nil || len(list.Items) > 0 {
			t.Errorf("magnum-cluster-api's Secrets of the cluster left: %v %v", list, err)
		}
		for _, o := range mchMade {
			gvk := o.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatal(err)
			}
			if !gone(ctx, t, dc, m.Resource, o.GetNamespace(), o.GetName()) {
				t.Errorf("%s %s/%s of the Helm release is left", o.GetKind(), o.GetNamespace(), o.GetName())
			}
		}
		if list, err := dc.Resource(secrets).Namespace(mch.namespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"}); err != nil || len(list.Items) > 0 {
			t.Errorf("Helm's records of the release left: %v %v", list, err)
		}
		for _, kind := range []string{"OpenStackMachineTemplate", "KubeadmConfigTemplate"} {
			for _, o := range listOf(ctx, t, dc, mapper, kind, mch.namespace, "") {
				t.Errorf("%s %s/%s is left (labels %v)", kind, o.GetNamespace(), o.GetName(), o.GetLabels())
			}
		}
		cloud.CheckNothingLeft(t)
	})
}

func classRefName(cl *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(cl.Object, "spec", "topology", "classRef", "name")
	return name
}

// apiPost posts an empty body as an administrator and returns the status
// code and body.
func apiPost(t *testing.T, base, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader("{}"))
	asAdministrator(req, base)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "container-infra latest")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// machinesOf lists the Machines of a driver's cluster.
func machinesOf(ctx context.Context, t *testing.T, dc dynamic.Interface, c driverCluster) []unstructured.Unstructured {
	t.Helper()
	list, err := dc.Resource(testcapo.Machines).Namespace(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/cluster-name=" + c.stackID})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitMachines waits until the cluster has n machines, each with its
// server and its node.
func waitMachines(ctx context.Context, t *testing.T, dc dynamic.Interface, c driverCluster, n int, limit time.Duration) {
	t.Helper()
	testenv.WaitFor(t, fmt.Sprintf("%s's %d machines to have servers and nodes", c.stackID, n), limit, func() (bool, string) {
		ms := machinesOf(ctx, t, dc, c)
		if len(ms) != n {
			return false, fmt.Sprintf("%d machines", len(ms))
		}
		for _, m := range ms {
			provider, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
			node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
			if provider == "" || node == "" {
				return false, fmt.Sprintf("machine %s: provider ID %q, node %q", m.GetName(), provider, node)
			}
		}
		return true, ""
	})
}

func machineUIDs(ctx context.Context, t *testing.T, dc dynamic.Interface, c driverCluster) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range machinesOf(ctx, t, dc, c) {
		out[m.GetName()] = string(m.GetUID())
	}
	return out
}

// checkNoneReplaced fails for a machine of before that is gone or was
// made again.
func checkNoneReplaced(ctx context.Context, t *testing.T, dc dynamic.Interface, c driverCluster, before map[string]string) {
	t.Helper()
	now := machineUIDs(ctx, t, dc, c)
	for name, uid := range before {
		if now[name] != uid {
			t.Errorf("%s's machine %s was replaced or removed (uid %s, now %q)", c.stackID, name, uid, now[name])
		}
	}
}

func objectOf(ctx context.Context, t *testing.T, dc dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := dc.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func gone(ctx context.Context, t *testing.T, dc dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) bool {
	t.Helper()
	_, err := dc.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return apierrors.IsNotFound(err)
}

// apiStatus reads an object's status code and body as an administrator.
func apiStatus(t *testing.T, base, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
	asAdministrator(req, base)
	req.Header.Set("OpenStack-API-Version", "container-infra latest")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, res.Status)
	return res.StatusCode, b.String()
}

// variableValues is the value of a topology variable: the Cluster's, then
// each machine deployment's override of it.
func variableValues(cl *unstructured.Unstructured, name string) []string {
	var out []string
	pick := func(list []any) {
		for _, v := range list {
			if m, ok := v.(map[string]any); ok && m["name"] == name {
				out = append(out, fmt.Sprint(m["value"]))
			}
		}
	}
	vars, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "variables")
	pick(vars)
	mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
	for _, md := range mds {
		if m, ok := md.(map[string]any); ok {
			overrides, _, _ := unstructured.NestedSlice(m, "variables", "overrides")
			pick(overrides)
		}
	}
	return out
}

// referenced reads the object that the reference at path of o names
// (apiGroup, kind and name, in o's namespace).
func referenced(ctx context.Context, t *testing.T, dc dynamic.Interface, mapper meta.RESTMapper, o *unstructured.Unstructured, path ...string) *unstructured.Unstructured {
	t.Helper()
	ref, _, _ := unstructured.NestedStringMap(o.Object, path...)
	m, err := mapper.RESTMapping(schema.GroupKind{Group: ref["apiGroup"], Kind: ref["kind"]})
	if err != nil {
		t.Fatalf("%s %s's %v: %v", o.GetKind(), o.GetName(), path, err)
	}
	return objectOf(ctx, t, dc, m.Resource, o.GetNamespace(), ref["name"])
}

// listOf lists the objects of kind in namespace ns with selector.
func listOf(ctx context.Context, t *testing.T, dc dynamic.Interface, mapper meta.RESTMapper, kind, ns, selector string) []unstructured.Unstructured {
	t.Helper()
	groups := map[string]string{"OpenStackMachineTemplate": "infrastructure.cluster.x-k8s.io", "KubeadmConfigTemplate": "bootstrap.cluster.x-k8s.io"}
	m, err := mapper.RESTMapping(schema.GroupKind{Group: groups[kind], Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.Resource(m.Resource).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}
