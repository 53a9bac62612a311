package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// unretriedTimeout is the create_timeout, in minutes, of the clusters
// nobody retries: long enough for the chain from their creation to Nova's
// refusal (Magnetite's render, Cluster API's managers, the stand-in,
// Magnetite's status) whatever else the machine runs. Alone that chain
// takes under 40 s; under the whole suite on the 2-core machine, with
// test/cli's parallel tests and three other packages starting at once,
// it took up to 4m38s. The test fails, saying so, when a cluster times out
// before its refusal showed, and logs the margin each run leaves. The wait
// costs the suite little CPU: three clusters that never come up.
const unretriedTimeout = 8

// TestClustersNobodyRetriesFailAtTheirCreateTimeoutThroughTheCLI creates,
// through Debian's openstack CLI against `magnetite serve` on the CAPO
// v0.14.7 stand-in (as TestOpenStackClustersThroughTheCLIOnTheCAPOStandIn),
// three clusters that meet what the cloud lost behind Magnetite's back
// after it accepted them, and that nobody retries: nokey's keypair is
// deleted for good, flavorlost (auto-healing off) loses its control
// plane's flavor and gets it back once Nova's refusal showed, and
// grouplost loses its server groups (auto-healing cannot make server
// groups again). Released CAPO gives a refused server up for good: each
// shows Nova's message in status_reason, then fails at its create_timeout
// with "Timed out after N minutes; last reported problem: " and that
// message, its refused control-plane machine never replaced and without a
// server. Deleting them leaves nothing in the cloud.
func TestClustersNobodyRetriesFailAtTheirCreateTimeoutThroughTheCLI(t *testing.T) {
	requireCLI(t) // skips under -short
	t.Parallel()
	e := startCAPOCloud(t, testenv.CAPOv014)
	cloud, dc, capo, c := e.cloud, e.dc, e.capo, e.c
	// CAPO acts only once the cloud has changed behind Magnetite's back,
	// so that every cluster meets the same cloud.
	capo.Pause(true)
	e.createTemplates(t, "managed", "mixed")
	c.ok(t, "keypair", "create", "bob-key")
	timeout := strconv.Itoa(unretriedTimeout)
	created := time.Now()
	clusters := []struct {
		name    string
		args    []string
		refusal string // filled in once the cloud is broken
	}{
		// Its keypair goes for good.
		{name: "nokey", args: []string{"--cluster-template", "managed", "--master-flavor", testcloud.FlavorName, "--keypair", "bob-key"}},
		// Loses its control plane's flavor and gets it back once the
		// refusal showed; auto-healing, which would then retry it, is off.
		{name: "flavorlost", args: []string{"--cluster-template", "mixed", "--merge-labels", "--labels", "auto_healing_enabled=false"}},
		// Loses its server groups.
		{name: "grouplost", args: []string{"--cluster-template", "mixed", "--master-flavor", testcloud.FlavorName}},
	}
	for _, cl := range clusters {
		c.ok(t, append([]string{"coe", "cluster", "create", cl.name, "--master-count", "1", "--node-count", "1", "--timeout", timeout}, cl.args...)...)
	}
	ctx := t.Context()
	uuids := map[string]string{}
	for _, cl := range clusters {
		uuids[cl.name] = e.uuid(t, cl.name)
		// Magnetite has read the cloud and rendered the cluster once its
		// Cluster object exists: the changes below come after.
		clusterObjectName(ctx, t, dc, uuids[cl.name])
	}

	c.ok(t, "keypair", "delete", "bob-key")
	clusters[0].refusal = "Invalid key_name provided."
	// m1.medium, the mixed template's control-plane flavor: only
	// flavorlost asks for it here.
	cloud.RemoveFlavor("3", true)
	clusters[1].refusal = "Flavor 3 could not be found."
	groups := e.serverGroups(t, uuids["grouplost"])
	for _, id := range groups {
		cloud.DeleteServerGroup(id)
	}
	clusters[2].refusal = "Instance group " + groups[0] + " could not be found."
	capo.Pause(false)

	machines := func(t *testing.T, cluster string) []unstructured.Unstructured {
		return clusterMachines(ctx, t, dc, capo, uuids[cluster])
	}
	// The subtests run in turn, not in parallel: a parallel subtest waits
	// for a free slot among the package's parallel tests, which under the
	// whole suite can take minutes of the create_timeout.
	deadline := created.Add(unretriedTimeout * time.Minute)
	refused := map[string][]string{} // the control-plane machines Nova refused
	t.Run("each shows Nova's refusal before its create_timeout", func(t *testing.T) {
		for _, cl := range clusters {
			t.Run(cl.name, func(t *testing.T) {
				// Magnetite checks the create_timeout once a pass, so the
				// cluster may fail a little after the deadline.
				c.waitCluster(t, cl.name, "status_reason to show Nova's refusal", time.Until(deadline)+time.Minute, true, func(s *apitypes.Cluster) bool {
					if s.Status == "CREATE_FAILED" {
						t.Fatalf("%s failed (%s) before Nova's refusal showed: the chain from its creation to the refusal took over %d minutes",
							cl.name, str(s.StatusReason), unretriedTimeout)
					}
					return strings.Contains(str(s.StatusReason), cl.refusal)
				})
				if r := e.field(t, cl.name, "status_reason"); !strings.Contains(r, cl.refusal) {
					t.Errorf("openstack coe cluster show %s: status_reason %q once the API showed Nova's refusal (%q)", cl.name, r, cl.refusal)
				}
				// How much of the create_timeout is left once the refusal
				// shows is the margin unretriedTimeout leaves.
				t.Logf("the refusal showed %s after the clusters were created, %s before their create_timeout",
					time.Since(created).Round(time.Second), time.Until(deadline).Round(time.Second))
				for _, m := range machines(t, cl.name) {
					if _, cp := m.GetLabels()["cluster.x-k8s.io/control-plane"]; cp {
						refused[cl.name] = append(refused[cl.name], m.GetName())
					}
				}
				if len(refused[cl.name]) == 0 {
					t.Errorf("%s has no control-plane machine", cl.name)
				}
				if cl.name == "flavorlost" {
					// An operator puts the flavor back; nobody retries.
					cloud.RemoveFlavor("3", false)
				}
			})
		}
	})
	t.Run("each fails at its create_timeout", func(t *testing.T) {
		for _, cl := range clusters {
			t.Run(cl.name, func(t *testing.T) {
				// Deleted all the same: the last subtest checks that
				// deleting them leaves nothing behind.
				defer c.ok(t, "coe", "cluster", "delete", cl.name)
				if _, ok := refused[cl.name]; !ok {
					t.Fatalf("%s's refusal never showed", cl.name)
				}
				c.waitStatus(t, cl.name, "CREATE_FAILED", time.Until(deadline)+2*time.Minute)
				want := fmt.Sprintf("Timed out after %d minutes; last reported problem: ", unretriedTimeout)
				if r := e.field(t, cl.name, "status_reason"); !strings.HasPrefix(r, want) || !strings.Contains(r, cl.refusal) {
					t.Errorf("%s's status_reason %q, want %q and Nova's message %q", cl.name, r, want, cl.refusal)
				}
				for _, m := range machines(t, cl.name) {
					if _, cp := m.GetLabels()["cluster.x-k8s.io/control-plane"]; !cp {
						continue
					}
					if !slices.Contains(refused[cl.name], m.GetName()) {
						t.Errorf("%s: control-plane machine %s was made after the refusal; none was retried", cl.name, m.GetName())
					}
					if id, _, _ := unstructured.NestedString(m.Object, "status", "instanceID"); id != "" {
						t.Errorf("%s: machine %s has server %s after Nova refused it", cl.name, m.GetName(), id)
					}
				}
			})
		}
	})
	t.Run("deleting them leaves nothing in the cloud", func(t *testing.T) {
		c.waitNoClusters(t, 5*time.Minute)
		cloud.CheckNothingLeft(t)
	})
}
