package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/client"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/testing/testbootstrap"
	"github.com/magnetite-io/magnetite/internal/testing/testcapo"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// nokeyTimeout is the create_timeout, in minutes, of the three clusters
// nobody retries: long enough for CAPO to meet what the cloud lacks first.
// The test counts on the chain from their creation to Nova's refusal
// (Magnetite rendering and applying them, Cluster API's managers, the
// stand-in, Magnetite's status) taking less than that, whatever else the
// machine runs. They are created after the others are applied, all three
// at once, the cloud is broken under them as soon as Magnetite applied
// them, and the stand-in gets to them before the other clusters
// (capo.First): their refusals showed 42 to 54 seconds after their
// creation with the whole suite's gate running beside the test, and 2m26s
// to 2m40s after under the whole suite on two cores. Created before the
// other clusters were rendered, with CLI commands that broke the cloud
// between their creation and the stand-in's start, they had shown 2m27s
// to 3m29s after in three three-run gates (the stand-in's part about 30
// seconds of it), and once, under a load average of 22, after 5 minutes;
// the timeout was 10 minutes then. Waiting costs the suite little CPU but
// holds test/cli, the package that runs longest, to at least this long.
const nokeyTimeout = 7

// TestOpenStackClustersThroughTheCLIOnTheCAPOStandIn drives Debian's
// `openstack coe` CLI, logged in to a real Keystone, against `magnetite
// serve` whose conductor builds clusters on a real kube-apiserver with
// Cluster API's core and kubeadm managers, CAPO played by
// internal/testing/testcapo and Nova, Neutron, Glance, Cinder and Octavia by
// internal/testing/testcloud. A VM cluster, an all-bare-metal cluster and a mixed
// one (VM control plane, a bare-metal node group on the Ironic flavor, a VM
// node group) are created at once.
//
// When a cluster's first control-plane server is up the stand-in plays
// kubeadm init (a real kube-apiserver behind the control plane endpoint,
// serving with the cluster's CA, and the kubeadm-config ConfigMap), and
// every server's kubelet registers its Node: Cluster API initialises the
// control plane, bootstraps the workers, CAPO makes their servers and every
// machine gets its node. Every server, control plane's and workers', is
// checked in Nova (flavor, server group, root volume, config drive, port).
// It stops there: no etcd member or kubelet answers behind the API server,
// so the control plane's etcd and static-pod health checks cannot pass and
// no cluster reaches CREATE_COMPLETE.
//
// vm1's template has no fixed network: CAPO makes its network, subnet and
// router (gateway on the external network), and its managed security
// groups, whose IDs its ports carry.
//
// The stand-in is released CAPO v0.14.7, which gives a server up for good
// once Nova or Cinder refused to make it. A flavor and a keypair removed,
// a network's port security turned off and the operator's router taken
// off a subnet behind Magnetite's back, and a volume type and zone Cinder
// lacks, show Nova's, Neutron's and Cinder's own messages in status_reason
// (Magnetite reads them from what CAPO recorded; CAPO retries only the
// port and the API load balancer's floating IP). Once an operator restores each,
// the user's retry (a resize to the same size, as Magnum users re-run a
// failed stack) replaces the failed control-plane machine, and the next
// refusal shows, until the cluster comes up; vm1 and mixed1, whose control
// planes met the removed flavor too, are healed by auto-healing once it is
// back. Server groups removed behind its back show Nova's refusal, and the
// retry makes them again: the control-plane machine refused for its group
// is replaced from the template naming the new one, and the workers'
// MachineDeployment rolls its machine to the new group. nokey, whose
// keypair is never restored, fails at its create_timeout with Nova's
// message. flavorlost (auto-healing off) meets the removed flavor and
// grouplost its removed server groups, and neither is retried: each fails at
// its create_timeout with Nova's message, its refused machine never
// replaced. Deleting every cluster leaves no server, port, server
// group, load balancer, volume, floating IP, security group, network,
// subnet or router, including those the test made the way the cloud
// controller manager and the Cinder CSI driver would.
func TestOpenStackClustersThroughTheCLIOnTheCAPOStandIn(t *testing.T) {
	requireCLI(t) // skips under -short
	t.Parallel()
	e := startCAPOCloud(t, testenv.CAPOv014)
	ks, cloud, dc, capo, c := e.ks, e.cloud, e.dc, e.capo, e.c
	// CAPO acts only once the cloud has been changed behind Magnetite's
	// back (below), so that every cluster meets the same cloud.
	capo.Pause(true)
	field := e.field
	e.createTemplates(t)
	c.ok(t, "keypair", "create", "alice-key")
	c.ok(t, "keypair", "create", "bob-key")
	// The clusters the user retries first, and mixed1's vms node group.
	// nokey, flavorlost and grouplost, which wait for their create_timeout,
	// are created last, once Magnetite applied the others, just before the
	// cloud is broken under them and the stand-in let go, and time out
	// counting from there: what their timeout must cover is then the chain
	// from the stand-in to Magnetite's status, not also the other
	// clusters' creates.
	createArgs := func(cl [2]string) []string {
		args := []string{"coe", "cluster", "create", cl[0], "--cluster-template", cl[1], "--master-count", "1", "--node-count", "1"}
		switch cl[0] {
		case "vm1":
			// A file whose text jinja would read as a template, which the
			// node must get as written.
			args = append(args, "--merge-labels", "--labels", "kube_tag="+testbootstrap.KubeadmVersions[0], "--labels", "extra_files="+jinjaFileLabel)
		case "bm1":
			args = append(args, "--merge-labels", "--labels", "kube_tag="+testbootstrap.KubeadmVersions[0])
		case "mixed1":
			args = append(args, "--merge-labels", "--labels", "kube_tag="+testbootstrap.KubeadmVersions[1])
		case "noflavor":
			args = append(args, "--keypair", "alice-key")
		case "noportsec":
			// A volume type and zone the cloud does not have yet, and
			// the flavor noflavor loses left alone.
			args = append(args, "--master-flavor", testcloud.FlavorName,
				"--merge-labels", "--labels", "boot_volume_type=fast,boot_volume_availability_zone=az2")
		case "nogroup":
			args = append(args, "--master-flavor", testcloud.FlavorName)
		case "nokey":
			// Its keypair goes for good: it fails at create_timeout.
			args = append(args, "--master-flavor", testcloud.FlavorName, "--keypair", "bob-key", "--timeout", strconv.Itoa(nokeyTimeout))
		case "flavorlost":
			// Loses noflavor's flavor, gets it back with noflavor and is
			// never retried; auto-healing, which would retry it once the
			// flavor is back, is off.
			args = append(args, "--timeout", strconv.Itoa(nokeyTimeout), "--merge-labels", "--labels", "auto_healing_enabled=false")
		case "grouplost":
			// Loses its server groups and is never retried (auto-healing
			// cannot make server groups again).
			args = append(args, "--master-flavor", testcloud.FlavorName, "--timeout", strconv.Itoa(nokeyTimeout))
		}
		return args
	}
	for _, cl := range [][2]string{{"vm1", "managed"}, {"bm1", "bm"}, {"mixed1", "mixed"}, {"noflavor", "mixed"}, {"nogroup", "mixed"}, {"noportsec", "vm"}} {
		c.ok(t, createArgs(cl)...)
	}
	c.ok(t, "coe", "nodegroup", "create", "mixed1", "vms", "--flavor", testcloud.FlavorName, "--node-count", "1")

	ctx := t.Context()
	uuids := map[string]string{}
	// rendered records a cluster's UUID once Magnetite has read the cloud,
	// rendered the cluster and applied it: the changes below come after.
	rendered := func(t *testing.T, clusters ...string) {
		for _, cl := range clusters {
			uuids[cl] = e.uuid(t, cl)
			e.applied(t, cl, model.OpClusterCreate)
		}
	}
	rendered(t, "vm1", "bm1", "mixed1", "noflavor", "nogroup", "noportsec")
	e.applied(t, "mixed1", model.OpNodeGroupCreate)
	// mixed1's vms node group is in its Cluster's topology too before the
	// cloud changes: rendered once the control plane's flavor is gone,
	// the cluster would be refused for it by Magnetite (the flavor was
	// not found in the cloud), not by Nova through CAPO.
	mixed1Name, mixed1NS := clusterObject(ctx, t, dc, uuids["mixed1"])
	testenv.WaitFor(t, "mixed1's vms node group in its Cluster's topology", 2*time.Minute, func() (bool, string) {
		o, err := dc.Resource(testcapo.Clusters).Namespace(mixed1NS).Get(ctx, mixed1Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		mds, _, _ := unstructured.NestedSlice(o.Object, "spec", "topology", "workers", "machineDeployments")
		for _, md := range mds {
			if m, ok := md.(map[string]any); ok && m["name"] == "vms" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d MachineDeployments in its topology, none named vms", len(mds))
	})
	machines := func(t *testing.T, cluster string) []unstructured.Unstructured {
		return clusterMachines(ctx, t, dc, capo, uuids[cluster])
	}
	groupName := func(id string) string {
		for _, g := range cloud.ServerGroups() {
			if g.ID == id {
				return g.Name
			}
		}
		return ""
	}
	// serverGroups are the IDs of a cluster's default node groups' server
	// groups, the control plane's first.
	serverGroups := func(t *testing.T, cluster string) []string {
		name := clusterObjectName(ctx, t, dc, uuids[cluster])
		var cp, workers string
		for _, g := range cloud.ServerGroups() {
			switch {
			case strings.HasPrefix(g.Name, name) && strings.HasSuffix(g.Name, "-default-master"):
				cp = g.ID
			case strings.HasPrefix(g.Name, name) && strings.HasSuffix(g.Name, "-default-worker"):
				workers = g.ID
			}
		}
		if cp == "" || workers == "" {
			t.Fatalf("%s (%s): server groups %+v, want its control plane's and its workers'", cluster, name, cloud.ServerGroups())
		}
		return []string{cp, workers}
	}

	// The refusals: each change is made once Magnetite has rendered the
	// clusters and before CAPO makes their servers. noflavor and nogroup
	// are on the provisioning network, which the port-security change
	// does not touch; nogroup, noportsec and nokey ask for another
	// control-plane flavor than the one noflavor loses.
	retry := func(t *testing.T, cluster string) {
		c.ok(t, "coe", "cluster", "resize", cluster, "1")
	}
	// showsNextWithin waits up to limit for the cluster's status_reason to
	// show message; showsNext, up to 3 minutes.
	showsNextWithin := func(t *testing.T, cluster, what, message string, limit time.Duration) {
		c.waitCluster(t, cluster, "status_reason to show "+what, limit, true, func(cl *apitypes.Cluster) bool {
			return strings.Contains(str(cl.StatusReason), message)
		})
		if r := field(t, cluster, "status_reason"); !strings.Contains(r, message) {
			t.Errorf("openstack coe cluster show %s: status_reason %q once the API showed %s (%q)", cluster, r, what, message)
		}
	}
	showsNext := func(t *testing.T, cluster, what, message string) {
		showsNextWithin(t, cluster, what, message, 3*time.Minute)
	}
	var deletedGroups, noflavorFailed []string
	// created is when the clusters nobody retries were created.
	var created time.Time
	// failsAtTimeout waits for a cluster nobody retries to fail at its
	// create_timeout with message, the control-plane machines refused
	// before (refused) still there without a server: nothing replaced
	// them.
	failsAtTimeout := func(t *testing.T, cluster, message string, refused []string) {
		c.waitStatus(t, cluster, "CREATE_FAILED", time.Duration(nokeyTimeout+2)*time.Minute)
		want := fmt.Sprintf("Timed out after %d minutes; last reported problem: ", nokeyTimeout)
		if r := field(t, cluster, "status_reason"); !strings.HasPrefix(r, want) || !strings.Contains(r, message) {
			t.Errorf("%s's status_reason %q, want %q and Nova's message %q", cluster, r, want, message)
		}
		for _, m := range machines(t, cluster) {
			if _, cp := m.GetLabels()["cluster.x-k8s.io/control-plane"]; !cp {
				continue
			}
			if !slices.Contains(refused, m.GetName()) {
				t.Errorf("%s: control-plane machine %s was made after the refusal; none was retried", cluster, m.GetName())
			}
			if id, _, _ := unstructured.NestedString(m.Object, "status", "instanceID"); id != "" {
				t.Errorf("%s: machine %s has server %s after Nova refused it", cluster, m.GetName(), id)
			}
		}
	}
	// unretried are the clusters nobody retries, once their refusal
	// showed: the message and the control-plane machines refused.
	type refused struct {
		message  string
		machines []string
	}
	var unretriedMu sync.Mutex
	unretried := map[string]refused{}
	controlPlaneMachines := func(t *testing.T, cluster string) []string {
		var out []string
		for _, m := range machines(t, cluster) {
			if _, cp := m.GetLabels()["cluster.x-k8s.io/control-plane"]; cp {
				out = append(out, m.GetName())
			}
		}
		if len(out) == 0 {
			t.Fatalf("%s has no control-plane machine", cluster)
		}
		return out
	}
	// noRetry records a cluster nobody retries once its refusal showed.
	noRetry := func(t *testing.T, cluster, message string) {
		machines := controlPlaneMachines(t, cluster)
		unretriedMu.Lock()
		defer unretriedMu.Unlock()
		unretried[cluster] = refused{message, machines}
	}
	t.Run("refusals", func(t *testing.T) {
		// Every change is made first, so that every cluster meets the same
		// cloud. The stand-in then gets to the clusters nobody retries
		// before the others, as a CAPO whose workers reached them first:
		// their create_timeout counts from their creation, and so covers
		// their own chain to Nova's refusal and not the others' work too.
		// Their subtests run in turn, in the parent, so that what they
		// wait for does not also wait for a free slot among the package's
		// parallel tests; the other clusters' run in parallel once the
		// stand-in acts on every cluster.
		type refusal struct {
			cluster, message string
			fixIt            func(t *testing.T)
		}
		var retried []refusal

		// noflavor loses its control plane's flavor with flavorlost, below.
		// Its keypair goes too: Nova checks the flavor first, so its
		// refusal shows once the flavor is back and the user retried,
		// until the user makes the keypair again and retries.
		c.ok(t, "keypair", "delete", "alice-key")
		retried = append(retried, refusal{"noflavor", "Flavor 3 could not be found.", func(t *testing.T) {
			for _, m := range machines(t, "noflavor") {
				if _, cp := m.GetLabels()["cluster.x-k8s.io/control-plane"]; cp {
					noflavorFailed = append(noflavorFailed, m.GetName())
				}
			}
			cloud.RemoveFlavor("3", false)
			retry(t, "noflavor")
			showsNext(t, "noflavor", "Nova's keypair refusal", "Invalid key_name provided.")
			c.ok(t, "keypair", "create", "alice-key")
			retry(t, "noflavor")
		}})
		// noportsec's API load balancer comes first (CAPO makes it before
		// any machine): the operator's router1 has lost its interface on
		// the private subnet, so Neutron refuses its floating IP (Magnetite
		// accepted the cluster: it cannot see the routers of the cloud's
		// shared networks) until the interface is back. Then its port is
		// refused until port security is back. It also asks for a volume
		// type and zone Cinder does not have: CAPO makes the port before
		// the root volume (and retries a refused port), so Cinder's
		// refusals show next, one after the other (Cinder checks the type
		// first), each until an operator makes what it lacks and the user
		// retries.
		cloud.SetPortSecurity(testcloud.PrivateNetID, false)
		cloud.SetCloudRoute(testcloud.PrivateSubnetID, false)
		retried = append(retried, refusal{"noportsec", "ExternalGatewayForFloatingIPNotFound: External network " + testcloud.ExternalNetID +
			" is not reachable from subnet " + testcloud.PrivateSubnetID + ". Therefore, cannot associate Port ", func(t *testing.T) {
			cloud.SetCloudRoute(testcloud.PrivateSubnetID, true)
			showsNext(t, "noportsec", "Neutron's port security refusal", "Port security must be enabled and port must have an IP address in order to use security groups.")
			cloud.SetPortSecurity(testcloud.PrivateNetID, true)
			showsNext(t, "noportsec", "Cinder's volume type refusal", "Volume type with name fast could not be found.")
			cloud.AddVolumeType("fast")
			retry(t, "noportsec")
			showsNext(t, "noportsec", "Cinder's availability zone refusal", "Invalid input received: Availability zone 'az2' is invalid.")
			cloud.AddVolumeAvailabilityZone("az2")
			retry(t, "noportsec")
		}})
		// The server groups go: Nova refuses the control plane's server
		// for its group; the user's retry makes the groups again and
		// replaces the control plane's machine from the template naming
		// the new group; the workers' MachineDeployment rolls to the
		// template naming the new worker group.
		nogroupGroups := serverGroups(t, "nogroup")
		for _, id := range nogroupGroups {
			deletedGroups = append(deletedGroups, id)
			cloud.DeleteServerGroup(id)
		}
		retried = append(retried, refusal{"nogroup", "Instance group " + nogroupGroups[0] + " could not be found.", func(t *testing.T) {
			// The worker's machine was made before its group went: it names
			// the deleted group until its MachineDeployment rolls it.
			testenv.WaitFor(t, "a nogroup worker machine naming its deleted server group", time.Minute, func() (bool, string) {
				for _, m := range machines(t, "nogroup") {
					id, _, _ := unstructured.NestedString(m.Object, "spec", "serverGroup", "id")
					if _, cp := m.GetLabels()["cluster.x-k8s.io/control-plane"]; !cp && slices.Contains(deletedGroups, id) {
						return true, ""
					}
				}
				return false, "no worker machine names a deleted group"
			})
			c.ok(t, "coe", "cluster", "resize", "nogroup", "1")
		}})

		// The clusters nobody retries, each failing at its create_timeout
		// with Nova's message: flavorlost loses noflavor's flavor and gets
		// it back with noflavor, whose fix comes once these refusals
		// showed; nokey's keypair never comes back; grouplost loses its
		// server groups (auto-healing cannot make server groups again).
		// They are created at once, as three users would, and broken as
		// soon as Magnetite rendered them: nokey's keypair is deleted
		// through Nova's API, without another CLI command's start-up.
		created = time.Now()
		c.okAtOnce(t, createArgs([2]string{"nokey", "managed"}), createArgs([2]string{"flavorlost", "mixed"}),
			createArgs([2]string{"grouplost", "mixed"}))
		rendered(t, "nokey", "flavorlost", "grouplost")
		cloud.RemoveFlavor("3", true)
		if err := cloud.Do(ks.Token("alice", "alice-password", "demo"), "DELETE", "/compute/v2.1/os-keypairs/bob-key", nil, nil); err != nil {
			t.Fatalf("delete keypair bob-key: %v", err)
		}
		grouplostGroups := serverGroups(t, "grouplost")
		for _, id := range grouplostGroups {
			cloud.DeleteServerGroup(id)
		}
		first := [][2]string{{"flavorlost", "Flavor 3 could not be found."}, {"nokey", "Invalid key_name provided."},
			{"grouplost", "Instance group " + grouplostGroups[0] + " could not be found."}}
		var names []string
		for _, u := range first {
			names = append(names, clusterObjectName(ctx, t, dc, uuids[u[0]]))
		}
		capo.First(names...)
		for _, u := range first {
			t.Run(u[0], func(t *testing.T) {
				// A refusal that shows after the create_timeout is too
				// late: the status the timeout left stays.
				showsNextWithin(t, u[0], "the refusal", u[1], time.Until(created.Add(nokeyTimeout*time.Minute+time.Minute)))
				// How much of the create_timeout is left once the refusal
				// shows is the margin nokeyTimeout leaves.
				t.Logf("the refusal showed %s after the clusters nobody retries were created", time.Since(created).Round(time.Second))
				noRetry(t, u[0], u[1])
			})
		}

		capo.Pause(false)
		for _, r := range retried {
			t.Run(r.cluster, func(t *testing.T) {
				t.Parallel()
				showsNext(t, r.cluster, "the refusal", r.message)
				r.fixIt(t)
			})
		}
	})

	// While the clusters nobody retries wait for their create_timeout, the
	// fixed ones come up.
	t.Run("then", func(t *testing.T) {
		for _, cluster := range []string{"flavorlost", "nokey", "grouplost"} {
			t.Run(cluster+" fails at its create_timeout", func(t *testing.T) {
				t.Parallel()
				unretriedMu.Lock()
				r, ok := unretried[cluster]
				unretriedMu.Unlock()
				if !ok {
					// Deleted all the same: the last subtest checks that
					// deleting every cluster leaves nothing behind.
					t.Errorf("%s's refusal never showed", cluster)
				} else {
					failsAtTimeout(t, cluster, r.message, r.machines)
				}
				c.ok(t, "coe", "cluster", "delete", cluster)
			})
		}
		t.Run("the fixed clusters come up", func(t *testing.T) {
			t.Parallel()
			// Each node group's server as the template and node group ask: the
			// control planes' (the fixed clusters came up after all), then, once
			// the stand-in's kubeadm init has brought up each API server, the
			// workers', whose machines become nodes.
			const managedNet = "managed"
			cases := []struct {
				cluster, group, flavor, network string
				rootVolume, configDrive         bool
			}{
				{"vm1", "default-master", "3", managedNet, true, false},
				{"bm1", "default-master", "4", testcloud.ProvisioningNetID, false, true},
				{"mixed1", "default-master", "3", testcloud.ProvisioningNetID, true, false},
				{"noflavor", "default-master", "3", testcloud.ProvisioningNetID, true, false},
				{"noportsec", "default-master", "2", testcloud.PrivateNetID, true, false},
				{"nogroup", "default-master", "2", testcloud.ProvisioningNetID, true, false},
				{"vm1", "default-worker", "2", managedNet, true, false},
				{"bm1", "default-worker", "4", testcloud.ProvisioningNetID, false, true},
				{"mixed1", "default-worker", "4", testcloud.ProvisioningNetID, false, true},
				{"mixed1", "vms", "2", testcloud.ProvisioningNetID, true, false},
				{"nogroup", "default-worker", "4", testcloud.ProvisioningNetID, false, true},
			}
			for _, tc := range cases {
				var s testcloud.Server
				testenv.WaitFor(t, tc.cluster+"'s "+tc.group+" server and node", 4*time.Minute, func() (bool, string) {
					for _, m := range machines(t, tc.cluster) {
						id, _, _ := unstructured.NestedString(m.Object, "status", "instanceID")
						for _, srv := range cloud.Servers() {
							if srv.ID == id && id != "" && strings.HasSuffix(groupName(srv.ServerGroupID), "-"+tc.group) {
								s = srv
								if !hasNode(ctx, t, dc, m) {
									return false, "the machine of server " + srv.Name + " has no node yet"
								}
								return true, ""
							}
						}
					}
					return false, e.state(t, tc.cluster)
				})
				if s.FlavorID != tc.flavor || s.ConfigDrive != tc.configDrive || (s.RootVolumeID != "") != tc.rootVolume ||
					slices.Contains(deletedGroups, s.ServerGroupID) || len(s.Ports) != 1 {
					t.Errorf("%s: %s server %+v (group %s), want flavor %s, config drive %v, root volume %v",
						tc.cluster, tc.group, s, groupName(s.ServerGroupID), tc.flavor, tc.configDrive, tc.rootVolume)
				}
				network := tc.network
				if network == managedNet {
					network = managedNetwork(t, cloud, clusterObjectName(ctx, t, dc, uuids[tc.cluster]))
				}
				for _, p := range cloud.Ports() {
					if p.ID == s.Ports[0] && (p.NetworkID != network || (tc.network == testcloud.ProvisioningNetID && len(p.SecurityGroups) > 0) ||
						(tc.network != testcloud.ProvisioningNetID && !managedGroup(cloud, p, tc.group))) {
						t.Errorf("%s: %s port %+v, want network %s and the cluster's managed security group", tc.cluster, tc.group, p, network)
					}
				}
			}

			testenv.WaitFor(t, "nogroup's machines that named a deleted server group to be gone", 2*time.Minute, func() (bool, string) {
				for _, m := range machines(t, "nogroup") {
					if id, _, _ := unstructured.NestedString(m.Object, "spec", "serverGroup", "id"); slices.Contains(deletedGroups, id) {
						return false, m.GetName() + " names server group " + id
					}
				}
				return true, ""
			})

			// CAPO v0.14.7 serves its kinds at v1beta1 only: Magnetite wrote them so.
			for _, cl := range []string{"vm1", "bm1", "mixed1"} {
				e.checkWrittenAt(t, uuids[cl], "v1beta1")
			}
			if r := capo.Release(); r != "v0.14.7" {
				t.Errorf("the CAPO stand-in imitated %q, want v0.14.7", r)
			}

			t.Run("nodes boot what the bootstrap provider wrote", func(t *testing.T) {
				checkBootstrapOfClusters(ctx, t, dc, capo, cloud, uuids, "vm1", "bm1", "mixed1")
			})

			// noflavor's control plane runs on a machine made after the retries:
			// the one refused was replaced.
			for _, m := range machines(t, "noflavor") {
				if id, _, _ := unstructured.NestedString(m.Object, "status", "instanceID"); id != "" && slices.Contains(noflavorFailed, m.GetName()) {
					t.Errorf("noflavor's server %s is on machine %s, which Nova refused a server before the retry", id, m.GetName())
				}
			}

			t.Run("Neutron refuses to take vm1's network from under it", func(t *testing.T) {
				tok := ks.Token("alice", "alice-password", "demo")
				name := clusterObjectName(ctx, t, dc, uuids["vm1"])
				network := managedNetwork(t, cloud, name)
				var router testcloud.Router
				var iface string
				for _, r := range cloud.Routers() {
					if strings.HasSuffix(r.Name, "-"+name) {
						router = r
					}
				}
				for _, p := range cloud.Ports() {
					if p.DeviceID == router.ID && router.ID != "" {
						iface = p.ID
					}
				}
				refused := func(what, method, path string, body any, status int, message string) {
					err := cloud.Do(tok, method, path, body, nil)
					var he *testcloud.HTTPError
					if !errors.As(err, &he) || he.Status != status || !strings.Contains(he.Body, message) {
						t.Errorf("%s: %v, want %d %q", what, err, status, message)
					}
				}
				refused("network in use", "DELETE", "/networking/v2.0/networks/"+network, nil, 409,
					"Unable to complete operation on network "+network+". There are one or more ports still in use on the network.")
				refused("router with an interface", "DELETE", "/networking/v2.0/routers/"+router.ID, nil, 409, "Router "+router.ID+" still has ports")
				refused("router interface through the port API", "DELETE", "/networking/v2.0/ports/"+iface, nil, 409,
					"Port "+iface+" cannot be deleted directly via the port API: has device owner network:router_interface.")
				refused("gateway on a network that is not external", "POST", "/networking/v2.0/routers",
					map[string]any{"router": map[string]any{"name": "r", "external_gateway_info": map[string]any{"network_id": testcloud.PrivateNetID}}},
					400, "Bad router request: Network "+testcloud.PrivateNetID+" is not an external network.")
			})

			// What a workload's cloud controller manager and Cinder CSI
			// driver would have made, as the cluster, which its deletion
			// (below) must clean up.
			name := clusterObjectName(ctx, t, dc, uuids["vm1"])
			if _, err := cloud.MakeWorkload(ks.Token("alice", "alice-password", "demo"), name, "default", "web"); err != nil {
				t.Fatal(err)
			}
			// Each cluster is deleted once checked: these now, the
			// unretried ones once they failed.
			for _, cl := range []string{"vm1", "bm1", "mixed1", "noflavor", "nogroup", "noportsec"} {
				c.ok(t, "coe", "cluster", "delete", cl)
			}
		})
	})

	t.Run("deleting every cluster leaves nothing in the cloud", func(t *testing.T) {
		c.waitNoClusters(t, 5*time.Minute)
		cloud.CheckNothingLeft(t)
	})
}

// managedNetwork returns the ID of the network CAPO made for a cluster,
// checking its subnet (the fixed_subnet_cidr default) and its router:
// gateway on the external network, interface on the subnet.
func managedNetwork(t *testing.T, cloud *testcloud.Cloud, cluster string) string {
	t.Helper()
	var id, subnet string
	for _, n := range cloud.Networks() {
		if strings.HasSuffix(n.Name, "-"+cluster) && strings.HasPrefix(n.Name, "k8s-clusterapi-cluster-") {
			id = n.ID
		}
	}
	for _, s := range cloud.Subnets() {
		if s.NetworkID == id && s.CIDR == "10.0.0.0/24" {
			subnet = s.ID
		}
	}
	var router testcloud.Router
	for _, r := range cloud.Routers() {
		if strings.HasSuffix(r.Name, "-"+cluster) {
			router = r
		}
	}
	iface := false
	for _, p := range cloud.Ports() {
		iface = iface || (p.DeviceID == router.ID && p.DeviceOwner == "network:router_interface" && p.FixedIPs[0].SubnetID == subnet)
	}
	if id == "" || subnet == "" || router.GatewayNetworkID != testcloud.ExternalNetID || !iface {
		t.Errorf("%s: network %q, subnet %q, router %+v (interface on the subnet: %v); want all made by CAPO", cluster, id, subnet, router, iface)
	}
	return id
}

// managedGroup reports whether a port carries the cluster's managed
// security group of its role, which CAPO made with the in-cluster rules.
func managedGroup(cloud *testcloud.Cloud, p testcloud.Port, group string) bool {
	role := "-secgroup-worker"
	if strings.HasSuffix(group, "-master") {
		role = "-secgroup-controlplane"
	}
	for _, g := range cloud.SecurityGroups() {
		if slices.Contains(p.SecurityGroups, g.ID) && strings.HasSuffix(g.Name, role) && len(g.Rules) > 0 {
			return true
		}
	}
	return false
}

// clusterMachines waits for the cluster's Cluster object and returns its
// OpenStackMachines.
func clusterMachines(ctx context.Context, t *testing.T, dc dynamic.Interface, capo *testcapo.Controller, uuid string) []unstructured.Unstructured {
	t.Helper()
	name, ns := clusterObject(ctx, t, dc, uuid)
	list, err := dc.Resource(capo.OpenStackMachines()).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/cluster-name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// applied waits until Magnetite's conductor has ended an operation of a
// cluster's (its create, say) having applied what it rendered: the
// operation's last event says how many objects it applied. Until then an
// attempt that failed (under load, a call that timed out) is tried again,
// rendering the cluster again from what the cloud has then: it would meet
// a change a test made to the cloud meanwhile, or undo it (the conductor
// makes the cluster's server groups again if they are gone).
func (e *capoCloud) applied(t *testing.T, cluster string, op model.OperationType) {
	t.Helper()
	testenv.WaitFor(t, cluster+"'s "+string(op)+" applied", 3*time.Minute, func() (bool, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		events, err := e.c.api(t).ListEvents(ctx, cluster, client.EventQuery{})
		if err != nil {
			return false, err.Error()
		}
		last := "no event"
		for _, ev := range events {
			if ev.Kind == string(model.EventOperation) && ev.Reason == string(op) && strings.HasPrefix(ev.Message, "applied ") {
				return true, ""
			}
			last = fmt.Sprintf("last event %s %s: %s", ev.Kind, ev.Reason, ev.Message)
		}
		return false, last
	})
}

// clusterObjectName waits for the cluster's Cluster object and returns its
// name (the name the workload's components run with).
func clusterObjectName(ctx context.Context, t *testing.T, dc dynamic.Interface, uuid string) string {
	t.Helper()
	name, _ := clusterObject(ctx, t, dc, uuid)
	return name
}

// clusterObject waits for the cluster's Cluster object and returns its
// name and namespace.
func clusterObject(ctx context.Context, t *testing.T, dc dynamic.Interface, uuid string) (name, namespace string) {
	t.Helper()
	testenv.WaitFor(t, "the Cluster object of "+uuid, 2*time.Minute, func() (bool, string) {
		list, err := dc.Resource(testcapo.Clusters).List(ctx, metav1.ListOptions{LabelSelector: mgmt.ClusterSelector(uuid)})
		if err != nil || len(list.Items) == 0 {
			return false, "no Cluster yet"
		}
		name, namespace = list.Items[0].GetName(), list.Items[0].GetNamespace()
		return true, ""
	})
	return name, namespace
}

// hasNode reports whether the Cluster API Machine of an OpenStackMachine
// has found its Node in the workload cluster.
func hasNode(ctx context.Context, t *testing.T, dc dynamic.Interface, m unstructured.Unstructured) bool {
	t.Helper()
	for _, ref := range m.GetOwnerReferences() {
		if ref.Kind != "Machine" {
			continue
		}
		machine, err := dc.Resource(testcapo.Machines).Namespace(m.GetNamespace()).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		node, _, _ := unstructured.NestedString(machine.Object, "status", "nodeRef", "name")
		return node != ""
	}
	return false
}
