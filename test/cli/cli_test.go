// Package cli drives Debian's real `openstack coe` CLI (python3-openstackclient
// with python3-magnumclient) against a `magnetite serve` process and checks
// what the CLI prints, so the examples in the README keep working.
package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/client"
	"github.com/magnetite-io/magnetite/internal/testing/testclient"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

// openstackBin is Debian's CLI; another python may be first on PATH, so the
// test never looks it up there. It runs as a client machine has it
// (testclient.OpenStack).
const openstackBin = testclient.Script

// TestOpenStackCLI runs the `openstack coe` commands a user runs, in order,
// against one server: templates, clusters, node groups, quotas, stats,
// services, and the errors users meet most.
func TestOpenStackCLI(t *testing.T) {
	requireCLI(t) // skips under -short
	t.Parallel()
	endpoint := startMagnetite(t)
	c := newCLI(t, endpoint)

	t.Run("services", func(t *testing.T) {
		t.Parallel()
		testServices(t, c)
	})
	t.Run("quotas", func(t *testing.T) {
		t.Parallel()
		testQuotas(t, c)
	})
	t.Run("lifecycle", func(t *testing.T) {
		t.Parallel()
		testLifecycle(t, c)
	})
}

func testServices(t *testing.T, c *cli) {
	// The plugin takes only the major version and always asks for
	// "container-infra latest"; 1 is the one explicit value it accepts.
	// Only a conductor reports itself (as magnum-conductor), and this server
	// runs none: the API process registers no service, as Magnum's does not.
	var svcs []map[string]any
	c.json(t, &svcs, "--os-container-infra-api-version", "1", "coe", "service", "list", "-f", "json")
	if svcs == nil || len(svcs) != 0 {
		t.Fatalf("want no services from a server without a conductor, got %v", svcs)
	}
}

func testQuotas(t *testing.T, c *cli) {
	const project = "proj-cli"
	q := propertyTable(t, c.ok(t, "coe", "quotas", "create", "--project-id", project, "--resource", "Cluster", "--hard-limit", "5"))
	wantFields(t, "quota create", q, map[string]string{"project_id": project, "resource": "Cluster", "hard_limit": "5", "updated_at": "-"})

	q = propertyTable(t, c.ok(t, "coe", "quotas", "show", "--project-id", project, "--resource", "Cluster"))
	wantFields(t, "quota show", q, map[string]string{"project_id": project, "hard_limit": "5"})

	q = propertyTable(t, c.ok(t, "coe", "quotas", "update", "--project-id", project, "--resource", "Cluster", "--hard-limit", "7"))
	wantFields(t, "quota update", q, map[string]string{"project_id": project, "hard_limit": "7"})
	if q["updated_at"] == "-" {
		t.Errorf("quota update left updated_at unset: %v", q)
	}

	// Without --all-tenants the list is the caller's project ("default").
	rows := listTable(t, c.ok(t, "coe", "quotas", "list"))
	if len(rows) != 0 {
		t.Errorf("quotas list of project default = %v, want none", rows)
	}
	rows = listTable(t, c.ok(t, "coe", "quotas", "list", "--all-tenants"))
	want := []map[string]string{{"project_id": project, "resource": "Cluster", "hard_limit": "7"}}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("quotas list --all-tenants = %v, want %v", rows, want)
	}

	out := c.ok(t, "coe", "quotas", "delete", "--project-id", project, "--resource", "Cluster")
	wantLine(t, out, "Request to delete quota for project id proj-cli and resource Cluster has been accepted.")
	// A project without a quota row shows the configured default, as Magnum does.
	q = propertyTable(t, c.ok(t, "coe", "quotas", "show", "--project-id", project, "--resource", "Cluster"))
	wantFields(t, "quota show after delete", q, map[string]string{"project_id": project, "hard_limit": "20", "created_at": "-"})
}

// template is the part of `coe cluster template show -f json` the test reads.
type template struct {
	UUID             string            `json:"uuid"`
	Name             string            `json:"name"`
	COE              string            `json:"coe"`
	ServerType       string            `json:"server_type"`
	ImageID          string            `json:"image_id"`
	FlavorID         string            `json:"flavor_id"`
	MasterFlavorID   string            `json:"master_flavor_id"`
	Labels           map[string]string `json:"labels"`
	DockerVolumeSize any               `json:"docker_volume_size"`
	MasterLBEnabled  bool              `json:"master_lb_enabled"`
	Public           bool              `json:"public"`
	UpdatedAt        string            `json:"updated_at"`
}

// cluster is the part of `coe cluster show -f json` the test reads.
type cluster struct {
	UUID              string            `json:"uuid"`
	Name              string            `json:"name"`
	Status            string            `json:"status"`
	ClusterTemplateID string            `json:"cluster_template_id"`
	Keypair           string            `json:"keypair"`
	MasterCount       int               `json:"master_count"`
	NodeCount         int               `json:"node_count"`
	Labels            map[string]string `json:"labels"`
	LabelsOverridden  map[string]string `json:"labels_overridden"`
	LabelsAdded       map[string]string `json:"labels_added"`
	LabelsSkipped     map[string]string `json:"labels_skipped"`
	MasterLBEnabled   bool              `json:"master_lb_enabled"`
	ProjectID         string            `json:"project_id"`
}

// nodeGroup is the part of `coe nodegroup show -f json` the test reads.
type nodeGroup struct {
	UUID         string            `json:"uuid"`
	Name         string            `json:"name"`
	ClusterID    string            `json:"cluster_id"`
	Role         string            `json:"role"`
	NodeCount    int               `json:"node_count"`
	MinNodeCount int               `json:"min_node_count"`
	MaxNodeCount any               `json:"max_node_count"`
	IsDefault    bool              `json:"is_default"`
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	LabelsAdded  map[string]string `json:"labels_added"`
}

var (
	createdCluster   = regexp.MustCompile(`(?m)^Request to create cluster ([0-9a-f-]{36}) accepted$`)
	createdNodeGroup = regexp.MustCompile(`(?m)^Request to create nodegroup ([0-9a-f-]{36}) accepted$`)
)

// testLifecycle is one user's session: steps depend on the ones before.
func testLifecycle(t *testing.T, c *cli) {
	var vm, bm, vm131 template
	step := func(name string, f func(t *testing.T)) {
		t.Helper()
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("template create", func(t *testing.T) {
		out := c.json(t, &vm, "coe", "cluster", "template", "create", "k8s-vm", "--coe", "kubernetes",
			"--image", "ubuntu-jammy", "--external-network", "public", "--flavor", "m1.large", "--master-flavor", "m1.medium",
			"--labels", "kube_tag=v1.30.2,monitoring_enabled=true", "-f", "json")
		wantLine(t, out, "Request to create cluster template k8s-vm accepted")
		want := template{UUID: vm.UUID, Name: "k8s-vm", COE: "kubernetes", ServerType: "vm", ImageID: "ubuntu-jammy",
			FlavorID: "m1.large", MasterFlavorID: "m1.medium", Labels: map[string]string{"kube_tag": "v1.30.2", "monitoring_enabled": "true"},
			DockerVolumeSize: "-", UpdatedAt: "-"}
		if vm.UUID == "" || fmt.Sprint(vm) != fmt.Sprint(want) {
			t.Errorf("created template\n got %+v\nwant %+v", vm, want)
		}

		c.json(t, &bm, "coe", "cluster", "template", "create", "k8s-bm", "--coe", "kubernetes", "--server-type", "bm",
			"--image", "ubuntu-jammy", "--external-network", "public", "--flavor", "bm.large",
			"--labels", "kube_tag=v1.30.2,ironic_boot=local", "-f", "json")
		if bm.ServerType != "bm" || bm.FlavorID != "bm.large" || fmt.Sprint(bm.Labels) != "map[ironic_boot:local kube_tag:v1.30.2]" {
			t.Errorf("bare-metal template = %+v", bm)
		}

		c.json(t, &vm131, "coe", "cluster", "template", "create", "k8s-vm-131", "--coe", "kubernetes",
			"--image", "ubuntu-noble", "--external-network", "public", "--master-lb-enabled",
			"--labels", "kube_tag=v1.31.1", "-f", "json")
		if !vm131.MasterLBEnabled || vm131.ImageID != "ubuntu-noble" {
			t.Errorf("template k8s-vm-131 = %+v", vm131)
		}
	})

	step("template list", func(t *testing.T) {
		// The default table output.
		rows := listTable(t, c.ok(t, "coe", "cluster", "template", "list"))
		want := fmt.Sprint([]map[string]string{
			{"uuid": vm.UUID, "name": "k8s-vm", "tags": "None"},
			{"uuid": bm.UUID, "name": "k8s-bm", "tags": "None"},
			{"uuid": vm131.UUID, "name": "k8s-vm-131", "tags": "None"},
		})
		if fmt.Sprint(rows) != want {
			t.Errorf("template list table = %v, want %v", rows, want)
		}
		var list []map[string]any
		c.json(t, &list, "coe", "cluster", "template", "list", "--fields", "server_type,coe", "--sort-key", "name", "--sort-dir", "desc", "-f", "json")
		var got []string
		for _, ct := range list {
			got = append(got, fmt.Sprintf("%v/%v/%v", ct["name"], ct["server_type"], ct["coe"]))
		}
		if w := "k8s-vm-131/vm/kubernetes k8s-vm/vm/kubernetes k8s-bm/bm/kubernetes"; strings.Join(got, " ") != w {
			t.Errorf("template list sorted by name desc = %v, want %s", got, w)
		}
		if out := c.ok(t, "coe", "cluster", "template", "list", "--limit", "1", "-f", "value", "-c", "name"); out != "k8s-vm\n" {
			t.Errorf("template list --limit 1 printed %q, want the first template only", out)
		}
	})

	step("template show", func(t *testing.T) {
		var got template
		c.json(t, &got, "coe", "cluster", "template", "show", "k8s-bm", "-f", "json")
		if fmt.Sprint(got) != fmt.Sprint(bm) {
			t.Errorf("show k8s-bm\n got %+v\nwant %+v", got, bm)
		}
		if out := c.ok(t, "coe", "cluster", "template", "show", vm.UUID, "-f", "value", "-c", "name"); out != "k8s-vm\n" {
			t.Errorf("show by uuid printed %q", out)
		}
	})

	step("template update", func(t *testing.T) {
		var got, added template
		c.json(t, &got, "coe", "cluster", "template", "update", "k8s-vm", "replace", "docker_volume_size=20", "master_lb_enabled=true", "-f", "json")
		if got.DockerVolumeSize != float64(20) || !got.MasterLBEnabled || got.UpdatedAt == "-" {
			t.Errorf("after replace: docker_volume_size %v, master_lb_enabled %v, updated_at %q", got.DockerVolumeSize, got.MasterLBEnabled, got.UpdatedAt)
		}
		// One key through its path, then the whole map the way the client
		// sends `labels=k=v,...` (a Python dict literal).
		c.json(t, &added, "coe", "cluster", "template", "update", "k8s-vm", "add", "labels/cloud_provider_tag=v1.30.0", "-f", "json")
		if w := "map[cloud_provider_tag:v1.30.0 kube_tag:v1.30.2 monitoring_enabled:true]"; fmt.Sprint(added.Labels) != w {
			t.Errorf("after add labels/cloud_provider_tag: labels %v, want %s", added.Labels, w)
		}
		var bmGot template
		c.json(t, &bmGot, "coe", "cluster", "template", "update", "k8s-bm", "replace", "labels=kube_tag=v1.31.1,ironic_boot=local", "-f", "json")
		if w := "map[ironic_boot:local kube_tag:v1.31.1]"; fmt.Sprint(bmGot.Labels) != w {
			t.Errorf("after replace labels=...: labels %v, want %s", bmGot.Labels, w)
		}
	})

	var c1 cluster
	step("cluster create", func(t *testing.T) {
		out := c.ok(t, "coe", "cluster", "create", "c1", "--cluster-template", "k8s-vm", "--keypair", "mykey",
			"--labels", "kube_tag=v1.31.1,extra=yes", "--merge-labels", "--master-count", "3", "--node-count", "2")
		m := createdCluster.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("cluster create printed %q", out)
		}
		c.json(t, &c1, "coe", "cluster", "show", "c1", "-f", "json")
		want := cluster{UUID: m[1], Name: "c1", Status: "CREATE_IN_PROGRESS", ClusterTemplateID: vm.UUID, Keypair: "mykey",
			MasterCount: 3, NodeCount: 2, MasterLBEnabled: true, ProjectID: "default",
			Labels:           map[string]string{"kube_tag": "v1.31.1", "monitoring_enabled": "true", "cloud_provider_tag": "v1.30.0", "extra": "yes"},
			LabelsOverridden: map[string]string{"kube_tag": "v1.30.2"},
			LabelsAdded:      map[string]string{"extra": "yes"},
			LabelsSkipped:    map[string]string{},
		}
		if fmt.Sprint(c1) != fmt.Sprint(want) {
			t.Errorf("cluster show\n got %+v\nwant %+v", c1, want)
		}
		var list []map[string]any
		c.json(t, &list, "coe", "cluster", "list", "-f", "json")
		wantRow := map[string]any{"uuid": c1.UUID, "name": "c1", "keypair": "mykey", "node_count": float64(2),
			"master_count": float64(3), "status": "CREATE_IN_PROGRESS", "health_status": nil}
		if len(list) != 1 || fmt.Sprint(list[0]) != fmt.Sprint(wantRow) {
			t.Errorf("cluster list = %v, want [%v]", list, wantRow)
		}
	})

	step("errors", func(t *testing.T) {
		cases := []struct {
			name string
			args []string
			want string
		}{
			{"bad master_count", []string{"coe", "cluster", "create", "bad", "--cluster-template", "k8s-vm", "--master-count", "0"},
				"Invalid input for field/attribute master_count. Value: 0. Value should be greater or equal to 1 (HTTP 400)"},
			{"unknown template", []string{"coe", "cluster", "create", "bad", "--cluster-template", "no-such-template"},
				"ClusterTemplate no-such-template could not be found. (HTTP 404)"},
			{"unknown cluster", []string{"coe", "cluster", "show", "no-such-cluster"},
				"Cluster no-such-cluster could not be found. (HTTP 404)"},
			{"read-only cluster field", []string{"coe", "cluster", "update", "c1", "replace", "master_count=5"},
				"cannot change cluster property(ies) master_count."},
			{"default node group", []string{"coe", "nodegroup", "delete", "c1", "default-worker"},
				"Deleting a default nodegroup is not supported. (HTTP 400)"},
		}
		for _, tc := range cases {
			if stderr := c.fails(t, tc.args...); !strings.Contains(stderr, tc.want) {
				t.Errorf("%s: the CLI printed %q, want it to contain %q", tc.name, stderr, tc.want)
			}
		}
		// The template delete command reports failures on stdout and exits 0.
		out := c.ok(t, "coe", "cluster", "template", "delete", "k8s-vm")
		if want := "Delete for cluster template k8s-vm failed: cluster template " + vm.UUID + " is used by 1 cluster(s)."; !strings.Contains(out, want) || !strings.Contains(out, "(HTTP 400)") {
			t.Errorf("deleting a template in use printed %q, want %q", out, want)
		}
		var list []map[string]any
		c.json(t, &list, "coe", "cluster", "list", "-f", "json")
		if len(list) != 1 {
			t.Errorf("failed creates left clusters behind: %v", list)
		}
	})

	step("cluster update and resize", func(t *testing.T) {
		wantLine(t, c.ok(t, "coe", "cluster", "update", "c1", "replace", "node_count=3"), "Request to update cluster c1 has been accepted.")
		if out := c.ok(t, "coe", "cluster", "show", "c1", "-f", "value", "-c", "node_count"); out != "3\n" {
			t.Errorf("node_count after update = %q, want 3", out)
		}
		wantLine(t, c.ok(t, "coe", "cluster", "resize", "c1", "2"), "Request to resize cluster c1 has been accepted.")
		if out := c.ok(t, "coe", "cluster", "show", "c1", "-f", "value", "-c", "node_count", "-c", "master_count"); out != "2\n3\n" {
			t.Errorf("node_count, master_count after resize = %q, want 2 and 3", out)
		}
	})

	step("stats", func(t *testing.T) {
		// Three control plane nodes and two workers.
		st := propertyTable(t, c.ok(t, "coe", "stats", "list", "default"))
		wantFields(t, "stats", st, map[string]string{"clusters": "1", "nodes": "5"})
	})

	var ng nodeGroup
	step("nodegroup create", func(t *testing.T) {
		out := c.ok(t, "coe", "nodegroup", "create", "c1", "infra", "--labels", "zone=az1,disk=ssd",
			"--node-count", "2", "--min-nodes", "1", "--max-nodes", "4", "--role", "infra")
		m := createdNodeGroup.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("nodegroup create printed %q", out)
		}
		c.json(t, &ng, "coe", "nodegroup", "show", "c1", "infra", "-f", "json")
		want := nodeGroup{UUID: m[1], Name: "infra", ClusterID: c1.UUID, Role: "infra", NodeCount: 2, MinNodeCount: 1,
			MaxNodeCount: float64(4), Status: "CREATE_IN_PROGRESS", LabelsAdded: map[string]string{"zone": "az1", "disk": "ssd"}}
		labels := ng.Labels
		ng.Labels = nil
		if fmt.Sprint(ng) != fmt.Sprint(want) {
			t.Errorf("nodegroup show\n got %+v\nwant %+v", ng, want)
		}
		// Node group labels replace the cluster's unless --merge-labels is
		// sent, as on Magnum.
		wantLabels := map[string]string{"zone": "az1", "disk": "ssd"}
		if fmt.Sprint(labels) != fmt.Sprint(wantLabels) {
			t.Errorf("nodegroup labels = %v, want %v", labels, wantLabels)
		}
	})

	step("nodegroup list", func(t *testing.T) {
		var list []map[string]any
		c.json(t, &list, "coe", "nodegroup", "list", "c1", "-f", "json")
		var got []string
		for _, g := range list {
			got = append(got, fmt.Sprintf("%v/%v/%v/%v", g["name"], g["role"], g["node_count"], g["status"]))
		}
		want := "default-master/master/3/CREATE_IN_PROGRESS default-worker/worker/2/CREATE_IN_PROGRESS infra/infra/2/CREATE_IN_PROGRESS"
		if strings.Join(got, " ") != want {
			t.Errorf("nodegroup list = %v, want %s", got, want)
		}
		if out := c.ok(t, "coe", "nodegroup", "list", "c1", "--role", "infra", "-f", "value", "-c", "uuid", "-c", "name"); out != ng.UUID+" infra\n" {
			t.Errorf("nodegroup list --role infra printed %q", out)
		}
	})

	step("nodegroup update", func(t *testing.T) {
		wantLine(t, c.ok(t, "coe", "nodegroup", "update", "c1", "infra", "replace", "min_node_count=2", "max_node_count=6"),
			"Request to update nodegroup infra has been accepted.")
		if out := c.ok(t, "coe", "nodegroup", "show", "c1", "infra", "-f", "value", "-c", "min_node_count", "-c", "max_node_count"); out != "6\n2\n" {
			t.Errorf("max_node_count, min_node_count after update = %q, want 6 and 2", out)
		}
	})

	step("nodegroup delete", func(t *testing.T) {
		wantLine(t, c.ok(t, "coe", "nodegroup", "delete", "c1", "infra"), "Request to delete nodegroup infra has been accepted.")
		if out := c.ok(t, "coe", "nodegroup", "show", "c1", "infra", "-f", "value", "-c", "status"); out != "DELETE_IN_PROGRESS\n" {
			t.Errorf("nodegroup status after delete = %q", out)
		}
	})

	step("cluster upgrade", func(t *testing.T) {
		wantLine(t, c.ok(t, "coe", "cluster", "upgrade", "c1", "k8s-vm-131"), "Request to upgrade cluster c1 has been accepted.")
		if out := c.ok(t, "coe", "cluster", "show", "c1", "-f", "value", "-c", "cluster_template_id"); out != vm131.UUID+"\n" {
			t.Errorf("cluster_template_id after upgrade = %q, want %s", out, vm131.UUID)
		}
		// No cluster uses k8s-vm any more, so it can go.
		wantLine(t, c.ok(t, "coe", "cluster", "template", "delete", "k8s-vm"), "Request to delete cluster template k8s-vm has been accepted.")
		if out := c.ok(t, "coe", "cluster", "template", "list", "-f", "value", "-c", "name"); out != "k8s-bm\nk8s-vm-131\n" {
			t.Errorf("templates after delete: %q", out)
		}
	})

	step("cluster delete", func(t *testing.T) {
		wantLine(t, c.ok(t, "coe", "cluster", "delete", "c1"), "Request to delete cluster c1 has been accepted.")
		// Nothing completes without a conductor: the cluster stays, deleting.
		if out := c.ok(t, "coe", "cluster", "show", "c1", "-f", "value", "-c", "status"); out != "DELETE_IN_PROGRESS\n" {
			t.Errorf("status after delete = %q", out)
		}
		stderr := c.fails(t, "coe", "cluster", "resize", "c1", "3")
		if want := "Cluster c1 is being deleted (DELETE_IN_PROGRESS); it can no longer be changed. (HTTP 409)"; !strings.Contains(stderr, want) {
			t.Errorf("resizing a deleting cluster printed %q, want %q", stderr, want)
		}
	})
}

// cli runs Debian's openstack CLI against one endpoint.
type cli struct {
	base []string
	env  []string
	// client runs Debian's CLI as a client machine has it.
	client testclient.CLI

	goClientMu sync.Mutex
	goClient   *client.Client // made by api on first use
}

func newCLI(t *testing.T, endpoint string) *cli {
	// Only this test's settings: no OS_* variables, clouds.yaml or Python
	// overrides from the caller's environment.
	// magnumclient's `cluster config` reads $SHELL to choose the export
	// line it prints; CI runners start tests without one, users never do.
	env := []string{"HOME=" + t.TempDir(), "SHELL=/bin/bash"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OS_") || strings.HasPrefix(k, "PYTHON") || k == "HOME" || k == "SHELL" || k == "VIRTUAL_ENV" {
			continue
		}
		env = append(env, kv)
	}
	return &cli{
		base:   []string{"--os-auth-type", "admin_token", "--os-endpoint", endpoint, "--os-token", "x"},
		env:    env,
		client: testclient.OpenStack(t),
	}
}

// run returns the CLI's stdout, stderr and exit code.
func (c *cli) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	r := c.exec(t, args)
	if r.err != nil {
		t.Fatalf("openstack %s: %v", strings.Join(args, " "), r.err)
	}
	return r.stdout, r.stderr, r.code
}

// cliRun is what one command did: its output and exit code, or err when
// it could not run to its end.
type cliRun struct {
	stdout, stderr string
	code           int
	err            error
}

// exec runs one command; it may be called from any goroutine.
func (c *cli) exec(t *testing.T, args []string) cliRun {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	r, err := c.client.Run(ctx, c.env, append(append([]string{}, c.base...), args...)...)
	// When each call ran and how long it took, for reading a slow test's
	// clock from its log.
	t.Logf("openstack %s: %s", strings.Join(args, " "), time.Since(start).Round(10*time.Millisecond))
	if err != nil {
		return cliRun{err: err}
	}
	return cliRun{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

// ok runs a command that must succeed and returns its stdout.
func (c *cli) ok(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, code := c.run(t, args...)
	if code != 0 {
		t.Fatalf("openstack %s exited %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// okAtOnce runs commands that must succeed at the same time, as users
// of one cloud do, and returns once all have ended.
func (c *cli) okAtOnce(t *testing.T, cmds ...[]string) {
	t.Helper()
	runs := make([]cliRun, len(cmds))
	var wg sync.WaitGroup
	for i, args := range cmds {
		wg.Go(func() { runs[i] = c.exec(t, args) })
	}
	wg.Wait()
	failed := false
	for i, r := range runs {
		if r.err != nil || r.code != 0 {
			failed = true
			t.Errorf("openstack %s: exited %d (%v)\nstdout: %s\nstderr: %s", strings.Join(cmds[i], " "), r.code, r.err, r.stdout, r.stderr)
		}
	}
	if failed {
		t.FailNow()
	}
}

// fails runs a command that must fail and returns its stderr.
func (c *cli) fails(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, code := c.run(t, args...)
	if code == 0 {
		t.Fatalf("openstack %s succeeded, want an error\nstdout: %s", strings.Join(args, " "), stdout)
	}
	return stderr
}

// json runs a command with JSON output and decodes it into v; commands that
// print a "Request ... accepted" line first are fine. It returns stdout.
func (c *cli) json(t *testing.T, v any, args ...string) string {
	t.Helper()
	out := c.ok(t, args...)
	start := strings.IndexAny(out, "{[")
	if start < 0 {
		t.Fatalf("openstack %s printed no JSON: %q", strings.Join(args, " "), out)
	}
	if err := json.Unmarshal([]byte(out[start:]), v); err != nil {
		t.Fatalf("openstack %s: decode %q: %v", strings.Join(args, " "), out, err)
	}
	return out
}

// listTable parses the CLI's table output into one map per row, keyed by the
// header.
func listTable(t *testing.T, out string) []map[string]string {
	t.Helper()
	var header []string
	rows := []map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if header == nil {
			header = cells
			continue
		}
		if len(cells) != len(header) {
			t.Fatalf("table row %q does not match header %v", line, header)
		}
		row := map[string]string{}
		for i, h := range header {
			row[h] = cells[i]
		}
		rows = append(rows, row)
	}
	if header == nil {
		t.Fatalf("no table in output %q", out)
	}
	return rows
}

// propertyTable parses a two-column "Property | Value" table.
func propertyTable(t *testing.T, out string) map[string]string {
	t.Helper()
	props := map[string]string{}
	for _, row := range listTable(t, out) {
		props[row["Property"]] = row["Value"]
	}
	return props
}

func wantFields(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q (all: %v)", what, k, got[k], v, got)
		}
	}
}

func wantLine(t *testing.T, out, line string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			return
		}
	}
	t.Errorf("output %q lacks the line %q", out, line)
}

// requireCLI skips under -short, and fails the test when the Debian
// clients are missing: the full suite must not pass without exercising them.
func requireCLI(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: needs Debian's openstack CLI and the real parts behind it; runs in the full suite (hack/test.sh)")
	}
	testproc.Require(t, openstackBin)
	if out, err := exec.Command("/usr/bin/python3", "-c", "import magnumclient.osc.plugin").CombinedOutput(); err != nil {
		t.Fatalf("python3-magnumclient is missing (%v: %s); install the Debian clients with `sudo bash hack/ci-deps.sh`", err, out)
	}
}

// startMagnetite serves the API from a freshly built binary over a fresh
// state directory (as this test's host, with noauth callers holding admin
// and member) and returns the v1 endpoint. Each extraConf is a conf.d
// drop-in. The server stops when the test ends.
func startMagnetite(t *testing.T, extraConf ...string) string {
	t.Helper()
	addr := testmagnetite.FreeAddr(t)
	base := "[DEFAULT]\nhost = cli-test-host\n\n[auth]\nnoauth_roles = admin,member\n"
	testmagnetite.Serve(t, addr, append([]string{base}, extraConf...)...)
	return "http://" + addr + "/v1"
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string { return testmagnetite.FreeAddr(t) }
