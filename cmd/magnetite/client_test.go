package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

var formats = []string{"table", "json", "yaml"}

// syncBuffer is a writer the command and the test read concurrently.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// clientRun is one finished client command.
type clientRun struct {
	stdout, stderr string
	err            error
}

// runClient runs a client subcommand against the test server with a static
// token, so no OS_* setting of the machine running the test is used.
func runClient(ctx context.Context, srv *testapi.Server, stdout, stderr *lockedBuffer, args ...string) error {
	root := rootCommand()
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(append(args, "--os-endpoint", srv.URL, "--os-token", "test-token"))
	return root.ExecuteContext(ctx)
}

func cli(t *testing.T, srv *testapi.Server, args ...string) clientRun {
	t.Helper()
	var out, errb lockedBuffer
	err := runClient(context.Background(), srv, &out, &errb, args...)
	return clientRun{out.String(), errb.String(), err}
}

// mustCLI runs a command that must succeed and returns its standard output.
func mustCLI(t *testing.T, srv *testapi.Server, args ...string) string {
	t.Helper()
	r := cli(t, srv, args...)
	if r.err != nil {
		t.Fatalf("magnetite %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r.stdout
}

// decoded reads JSON or YAML output into a generic value.
func decoded(t *testing.T, format, out string) any {
	t.Helper()
	raw := []byte(out)
	if format == "yaml" {
		var err error
		if raw, err = yaml.YAMLToJSON(raw); err != nil {
			t.Fatalf("output is not YAML: %v\n%s", err, out)
		}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("output is not %s: %v\n%s", format, err, out)
	}
	return v
}

// shown reads what a show command printed, in any format, as field →
// rendered value.
func shown(t *testing.T, format, out string) map[string]string {
	t.Helper()
	fields := map[string]string{}
	if format == "table" {
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) == 0 || strings.Fields(lines[0])[0] != "FIELD" {
			t.Fatalf("not a FIELD/VALUE table:\n%s", out)
		}
		for _, l := range lines[1:] {
			k := strings.Fields(l)[0]
			fields[k] = strings.TrimSpace(l[len(k):])
		}
		return fields
	}
	m, ok := decoded(t, format, out).(map[string]any)
	if !ok {
		t.Fatalf("%s output is not an object:\n%s", format, out)
	}
	for k, v := range m {
		fields[k] = cell(v)
	}
	return fields
}

// listed reads what a list command printed as rows of the given fields.
func listed(t *testing.T, format, out string, fields ...string) []map[string]string {
	t.Helper()
	var rows []map[string]string
	if format == "table" {
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		// Columns start where the header's words do.
		header := lines[0]
		var starts []int
		names := map[string]int{}
		for i := 0; i < len(header); i++ {
			if header[i] != ' ' && (i == 0 || header[i-1] == ' ') {
				names[strings.Fields(header[i:])[0]] = len(starts)
				starts = append(starts, i)
			}
		}
		for _, l := range lines[1:] {
			row := map[string]string{}
			for _, f := range fields {
				col, ok := names[strings.ToUpper(f)]
				if !ok {
					t.Fatalf("column %s missing from:\n%s", f, out)
				}
				end := len(l)
				if col+1 < len(starts) {
					end = min(starts[col+1], len(l))
				}
				row[f] = strings.TrimSpace(l[min(starts[col], len(l)):end])
			}
			rows = append(rows, row)
		}
		return rows
	}
	items, ok := decoded(t, format, out).([]any)
	if !ok {
		t.Fatalf("%s output is not a list:\n%s", format, out)
	}
	for _, it := range items {
		m := it.(map[string]any)
		row := map[string]string{}
		for _, f := range fields {
			row[f] = cell(m[f])
		}
		rows = append(rows, row)
	}
	return rows
}

func column(rows []map[string]string, f string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r[f])
	}
	return out
}

func wantFields(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
		}
	}
}

func createTemplate(t *testing.T, srv *testapi.Server, name string, extra ...string) {
	t.Helper()
	mustCLI(t, srv, append([]string{"template", "create", name, "--coe", "kubernetes", "--image", "ubuntu-2204",
		"--external-network", "public", "--flavor", "m1.large", "--master-flavor", "m1.large"}, extra...)...)
}

func TestClientTemplateCommandsInEveryFormat(t *testing.T) {
	srv := testapi.Start(t)
	for _, f := range formats {
		out := mustCLI(t, srv, "template", "create", "k8s-"+f, "--coe", "kubernetes", "--image", "ubuntu-2204",
			"--external-network", "public", "--flavor", "m1.large", "--master-flavor", "m1.small",
			"--labels", "kube_tag=v1.31.1,boot_volume_size=20", "--server-type", "bm", "--network-driver", "calico",
			"--floating-ip-disabled", "--tags", "a,b", "-o", f)
		wantFields(t, "create -o "+f, shown(t, f, out), map[string]string{
			"name": "k8s-" + f, "coe": "kubernetes", "image_id": "ubuntu-2204", "flavor_id": "m1.large",
			"master_flavor_id": "m1.small", "server_type": "bm", "network_driver": "calico",
			"floating_ip_enabled": "false", "labels": `{"boot_volume_size":"20","kube_tag":"v1.31.1"}`, "tags": "a,b",
		})
	}
	for _, f := range formats {
		rows := listed(t, f, mustCLI(t, srv, "template", "list", "-o", f), "uuid", "name", "server_type", "coe")
		if got := column(rows, "name"); !slices.Equal(got, []string{"k8s-table", "k8s-json", "k8s-yaml"}) {
			t.Errorf("list -o %s: names %v", f, got)
		}
		if rows[0]["server_type"] != "bm" || len(rows[0]["uuid"]) != 36 {
			t.Errorf("list -o %s: first row %v", f, rows[0])
		}
		wantFields(t, "show -o "+f, shown(t, f, mustCLI(t, srv, "template", "show", "k8s-json", "-o", f)),
			map[string]string{"name": "k8s-json", "master_flavor_id": "m1.small", "public": "false", "hidden": "false"})
	}
	for _, f := range formats {
		out := mustCLI(t, srv, "template", "update", "k8s-"+f, "replace", "labels=kube_tag=v1.32.0", "docker_volume_size=50", "-o", f)
		wantFields(t, "update -o "+f, shown(t, f, out), map[string]string{"labels": `{"kube_tag":"v1.32.0"}`, "docker_volume_size": "50"})
		out = mustCLI(t, srv, "template", "update", "k8s-"+f, "remove", "docker_volume_size", "-o", f)
		wantFields(t, "update remove -o "+f, shown(t, f, out), map[string]string{"docker_volume_size": "-"})
	}
	out := mustCLI(t, srv, "template", "delete", "k8s-table", "k8s-yaml")
	if out != "Cluster template k8s-table deleted.\nCluster template k8s-yaml deleted.\n" {
		t.Errorf("delete printed %q", out)
	}
	if rows := listed(t, "json", mustCLI(t, srv, "template", "list", "-o", "json"), "name"); len(rows) != 1 || rows[0]["name"] != "k8s-json" {
		t.Errorf("after delete: %v", rows)
	}
	// A setting's two flags given together are refused before anything is asked.
	r := cli(t, srv, "template", "create", "both", "--coe", "kubernetes", "--image", "u", "--external-network", "public", "--hidden", "--visible")
	if r.err == nil || r.err.Error() != "--hidden and --visible exclude each other" {
		t.Errorf("--hidden --visible: %v", r.err)
	}
	r = cli(t, srv, "cluster", "create", "both", "--cluster-template", "k8s-json", "--master-lb-enabled", "--master-lb-disabled")
	if r.err == nil || r.err.Error() != "--master-lb-enabled and --master-lb-disabled exclude each other" {
		t.Errorf("--master-lb-enabled --master-lb-disabled: %v", r.err)
	}
	if rows := listed(t, "json", mustCLI(t, srv, "cluster", "list", "-o", "json"), "name"); len(rows) != 0 {
		t.Errorf("a refused create made a cluster: %v", rows)
	}
}

func TestClientClusterCommandsInEveryFormat(t *testing.T) {
	srv := testapi.Start(t)
	createTemplate(t, srv, "k8s")
	createTemplate(t, srv, "k8s-next", "--labels", "kube_tag=v1.32.0")
	uuids := map[string]string{}
	for _, f := range formats {
		out := mustCLI(t, srv, "cluster", "create", "c-"+f, "--cluster-template", "k8s", "--node-count", "2",
			"--master-count", "1", "--labels", "auto_healing_enabled=true", "--merge-labels", "--timeout", "90", "-o", f)
		if f == "table" {
			var uuid string
			if _, err := fmt.Sscanf(out, "Request to create cluster %36s has been accepted.", &uuid); err != nil {
				t.Fatalf("create printed %q", out)
			}
			uuids[f] = uuid
		} else {
			uuids[f] = shown(t, f, out)["uuid"]
		}
	}
	for _, f := range formats {
		rows := listed(t, f, mustCLI(t, srv, "cluster", "list", "-o", f), "uuid", "name", "node_count", "master_count", "status")
		if got := column(rows, "name"); !slices.Equal(got, []string{"c-table", "c-json", "c-yaml"}) {
			t.Errorf("list -o %s: %v", f, got)
		}
		if rows[1]["uuid"] != uuids["json"] || rows[1]["node_count"] != "2" || rows[1]["status"] != "CREATE_IN_PROGRESS" {
			t.Errorf("list -o %s: row %v", f, rows[1])
		}
		got := shown(t, f, mustCLI(t, srv, "cluster", "show", "c-yaml", "-o", f))
		wantFields(t, "show -o "+f, got, map[string]string{"uuid": uuids["yaml"], "name": "c-yaml", "create_timeout": "90",
			"status": "CREATE_IN_PROGRESS", "master_count": "1", "node_count": "2"})
		if !strings.Contains(got["labels"], `"auto_healing_enabled":"true"`) {
			t.Errorf("show -o %s: labels %s", f, got["labels"])
		}
	}

	// update, resize and upgrade answer with the cluster's UUID.
	accepted := func(f, what, uuid, out string) {
		t.Helper()
		if f == "table" {
			if want := fmt.Sprintf("Request to %s cluster %s has been accepted.\n", what, uuid); out != want {
				t.Errorf("%s printed %q, want %q", what, out, want)
			}
			return
		}
		if got := shown(t, f, out)["uuid"]; got != uuid {
			t.Errorf("%s -o %s: uuid %q", what, f, got)
		}
	}
	for _, f := range formats {
		name := "c-" + f
		accepted(f, "update", uuids[f], mustCLI(t, srv, "cluster", "update", name, "replace", "node_count=3", "-o", f))
		accepted(f, "resize", uuids[f], mustCLI(t, srv, "cluster", "resize", name, "4", "--nodegroup", "default-worker", "-o", f))
		accepted(f, "upgrade", uuids[f], mustCLI(t, srv, "cluster", "upgrade", name, "k8s-next", "-o", f))
		if got := shown(t, "json", mustCLI(t, srv, "cluster", "show", name, "-o", "json"))["node_count"]; got != "4" {
			t.Errorf("after resize %s: node_count %s", name, got)
		}
	}
	if got := shown(t, "json", mustCLI(t, srv, "stats", "-o", "json")); got["clusters"] != "3" || got["nodes"] != "15" {
		t.Errorf("stats after resizes: %v", got)
	}

	out := mustCLI(t, srv, "cluster", "delete", "c-table", "c-json")
	if out != "Request to delete cluster c-table has been accepted.\nRequest to delete cluster c-json has been accepted.\n" {
		t.Errorf("delete printed %q", out)
	}
	rows := listed(t, "json", mustCLI(t, srv, "cluster", "list", "-o", "json"), "name", "status")
	if rows[0]["status"] != "DELETE_IN_PROGRESS" || rows[2]["status"] != "CREATE_IN_PROGRESS" {
		t.Errorf("after delete: %v", rows)
	}
}

func TestClientNodeGroupCommandsInEveryFormat(t *testing.T) {
	srv := testapi.Start(t)
	createTemplate(t, srv, "k8s")
	mustCLI(t, srv, "cluster", "create", "c1", "--cluster-template", "k8s")
	for _, f := range formats {
		out := mustCLI(t, srv, "nodegroup", "create", "c1", "ng-"+f, "--node-count", "2", "--min-nodes", "1", "--max-nodes", "5",
			"--flavor", "bm.gpu", "--node-labels", "gpu=true", "--node-taints", "gpu=true:NoSchedule", "-o", f)
		wantFields(t, "create -o "+f, shown(t, f, out), map[string]string{"name": "ng-" + f, "node_count": "2",
			"min_node_count": "1", "max_node_count": "5", "flavor_id": "bm.gpu", "role": "worker",
			"node_labels": `{"gpu":"true"}`, "node_taints": `[{"effect":"NoSchedule","key":"gpu","value":"true"}]`})
	}
	for _, f := range formats {
		rows := listed(t, f, mustCLI(t, srv, "nodegroup", "list", "c1", "-o", f), "name", "node_count", "role")
		if got := column(rows, "name"); !slices.Equal(got, []string{"default-master", "default-worker", "ng-table", "ng-json", "ng-yaml"}) {
			t.Errorf("list -o %s: %v", f, got)
		}
		rows = listed(t, f, mustCLI(t, srv, "nodegroup", "list", "c1", "--role", "master", "-o", f), "name", "role")
		if len(rows) != 1 || rows[0]["name"] != "default-master" {
			t.Errorf("list --role master -o %s: %v", f, rows)
		}
		wantFields(t, "show -o "+f, shown(t, f, mustCLI(t, srv, "nodegroup", "show", "c1", "ng-yaml", "-o", f)),
			map[string]string{"name": "ng-yaml", "status": "CREATE_IN_PROGRESS", "is_default": "false"})
		out := mustCLI(t, srv, "nodegroup", "update", "c1", "ng-"+f, "replace", "max_node_count=7", "-o", f)
		wantFields(t, "update -o "+f, shown(t, f, out), map[string]string{"max_node_count": "7"})
	}
	out := mustCLI(t, srv, "nodegroup", "delete", "c1", "ng-table", "ng-json")
	if out != "Request to delete node group ng-table has been accepted.\nRequest to delete node group ng-json has been accepted.\n" {
		t.Errorf("delete printed %q", out)
	}
	got := shown(t, "json", mustCLI(t, srv, "nodegroup", "show", "c1", "ng-json", "-o", "json"))
	if got["status"] != "DELETE_IN_PROGRESS" {
		t.Errorf("after delete: %v", got)
	}
}

func TestClientQuotaStatsAndServiceCommandsInEveryFormat(t *testing.T) {
	srv := testapi.Start(t)
	for i, f := range formats {
		project := "project-" + f
		out := mustCLI(t, srv, "quota", "create", "--project-id", project, "--resource", "Cluster", "--hard-limit", fmt.Sprint(i+1), "-o", f)
		wantFields(t, "create -o "+f, shown(t, f, out), map[string]string{"project_id": project, "resource": "Cluster", "hard_limit": fmt.Sprint(i + 1)})
		out = mustCLI(t, srv, "quota", "update", "--project-id", project, "--hard-limit", fmt.Sprint(i+10), "-o", f)
		wantFields(t, "update -o "+f, shown(t, f, out), map[string]string{"hard_limit": fmt.Sprint(i + 10)})
		wantFields(t, "show -o "+f, shown(t, f, mustCLI(t, srv, "quota", "show", "--project-id", project, "-o", f)),
			map[string]string{"project_id": project, "hard_limit": fmt.Sprint(i + 10)})
	}
	for _, f := range formats {
		rows := listed(t, f, mustCLI(t, srv, "quota", "list", "--all-tenants", "-o", f), "project_id", "resource", "hard_limit")
		if got := column(rows, "project_id"); !slices.Equal(got, []string{"project-table", "project-json", "project-yaml"}) {
			t.Errorf("quota list -o %s: %v", f, rows)
		}
	}
	if out := mustCLI(t, srv, "quota", "delete", "--project-id", "project-json"); out != "Quota project-json/Cluster deleted.\n" {
		t.Errorf("delete printed %q", out)
	}
	// Without its own quota a project has the default (20).
	wantFields(t, "show after delete", shown(t, "table", mustCLI(t, srv, "quota", "show", "--project-id", "project-json")),
		map[string]string{"hard_limit": "20", "created_at": "-"})

	createTemplate(t, srv, "k8s")
	mustCLI(t, srv, "cluster", "create", "c1", "--cluster-template", "k8s", "--node-count", "3", "--master-count", "3", "--master-lb-enabled")
	for _, f := range formats {
		wantFields(t, "stats -o "+f, shown(t, f, mustCLI(t, srv, "stats", "-o", f)), map[string]string{"clusters": "1", "nodes": "6"})
		wantFields(t, "stats --project-id -o "+f, shown(t, f, mustCLI(t, srv, "stats", "--project-id", "elsewhere", "-o", f)),
			map[string]string{"clusters": "0", "nodes": "0"})
	}

	if err := srv.Store.ReportService(context.Background(), "cli-host", "magnum-conductor"); err != nil {
		t.Fatal(err)
	}
	for _, f := range formats {
		rows := listed(t, f, mustCLI(t, srv, "service", "list", "-o", f), "host", "binary", "state", "disabled")
		if len(rows) != 1 || rows[0]["host"] != "cli-host" || rows[0]["binary"] != "magnum-conductor" || rows[0]["state"] != "up" || rows[0]["disabled"] != "false" {
			t.Errorf("service list -o %s: %v", f, rows)
		}
	}
}

func TestClientErrorsCarryTheAPIDetailAndRequestID(t *testing.T) {
	srv := testapi.Start(t)
	r := cli(t, srv, "cluster", "show", "nope")
	if r.err == nil || !strings.Contains(r.err.Error(), "Cluster nope could not be found. (HTTP 404, request req-") {
		t.Errorf("show of a missing cluster: %v", r.err)
	}
	r = cli(t, srv, "cluster", "create", "c1", "--cluster-template", "missing")
	if r.err == nil || !strings.Contains(r.err.Error(), "ClusterTemplate missing could not be found.") || !strings.Contains(r.err.Error(), "HTTP 404") {
		t.Errorf("create with a missing template: %v", r.err)
	}
	r = cli(t, srv, "cluster", "update", "c1", "frobnicate", "node_count=1")
	if r.err == nil || !strings.Contains(r.err.Error(), `operation "frobnicate": choose add, replace or remove`) {
		t.Errorf("bad patch operation: %v", r.err)
	}
	r = cli(t, srv, "cluster", "list", "-o", "xml")
	if r.err == nil || !strings.Contains(r.err.Error(), `--output "xml": choose table, json or yaml`) {
		t.Errorf("bad output format: %v", r.err)
	}
	r = cli(t, srv, "template", "delete", "nope1", "nope2")
	if r.err == nil || !strings.Contains(r.stderr, "Delete of nope1 failed: ClusterTemplate nope1 could not be found.") {
		t.Errorf("delete of missing templates: %v; stderr %s", r.err, r.stderr)
	}
	var out, errb lockedBuffer
	root := rootCommand()
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"stats", "--os-endpoint", "http://127.0.0.1:1/v1", "--os-token", "x"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "GET http://127.0.0.1:1/v1/stats") {
		t.Errorf("unreachable endpoint: %v", err)
	}
}

// conductorStep writes a cluster status as the conductor does (status,
// status_reason, health reasons, node group statuses).
type conductorStep struct {
	status  model.Status
	reason  string
	health  map[string]string
	workers model.Status
}

func applyStep(t *testing.T, st *store.DB, uuid string, s conductorStep) {
	t.Helper()
	ctx := context.Background()
	c, err := st.GetCluster(ctx, store.Scope{AllProjects: true}, uuid)
	if err != nil {
		t.Fatal(err)
	}
	c.Status, c.StatusReason, c.HealthStatusReason = s.status, &s.reason, s.health
	ch := store.ClusterChange{Cluster: c}
	if s.workers != "" {
		ngs, err := st.NodeGroupsOf(ctx, []string{uuid})
		if err != nil {
			t.Fatal(err)
		}
		for _, ng := range ngs[uuid] {
			ng.Status = s.workers
			ch.NodeGroups = append(ch.NodeGroups, ng)
		}
	}
	if err := st.ApplyClusterChange(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordEvent(ctx, model.ClusterEvent{ClusterID: uuid, ProjectID: c.ProjectID, Kind: model.EventCondition,
		Status: s.status, Message: s.reason}); err != nil {
		t.Fatal(err)
	}
}

// buildSteps is a cluster of 1 control plane node and 2 workers coming up.
var buildSteps = []conductorStep{
	{status: model.CreateInProgress, reason: "Waiting for Cluster API to create the cluster"},
	{status: model.CreateInProgress, reason: "control plane 0/1 ready, default-worker 0/2 ready", health: map[string]string{
		"cluster": "Available=False WaitingForControlPlane", "control_plane": "unknown (0/1 ready)",
		"nodegroup default-worker": "0/2 ready"}},
	{status: model.CreateInProgress, reason: "node group default-worker: machine w-1: InfrastructureReady=False WaitingForServer", health: map[string]string{
		"cluster": "Available=False", "control_plane": "ok (1/1 ready)",
		"nodegroup default-worker": "1/2 ready: machine w-1: InfrastructureReady=False WaitingForServer"}},
}

// waitForOutput polls a command's output until it holds want.
func waitForOutput(t *testing.T, what string, read func() string, want string) {
	t.Helper()
	testenv.WaitEvery(t, fmt.Sprintf("%s to show %q", what, want), 20*time.Second, 20*time.Millisecond, func() (bool, string) {
		out := read()
		return strings.Contains(out, want), out
	})
}

// clusterUUIDByName finds a cluster the command under test created.
func clusterUUIDByName(t *testing.T, st *store.DB, name string) string {
	t.Helper()
	var uuid string
	testenv.WaitEvery(t, "cluster "+name+" to be created", 20*time.Second, 20*time.Millisecond, func() (bool, string) {
		c, err := st.GetCluster(context.Background(), store.Scope{AllProjects: true}, name)
		if err != nil {
			return false, err.Error()
		}
		uuid = c.UUID
		return true, ""
	})
	return uuid
}

func TestClusterCreateWaitPrintsALinePerChangeWithoutATerminal(t *testing.T) {
	for _, tc := range []struct {
		final      conductorStep
		wantErr    string
		wantOutput string
	}{
		{
			final:      conductorStep{status: model.CreateComplete, reason: "Cluster API reports the cluster available with every node ready", workers: model.CreateComplete, health: map[string]string{"cluster": "ok", "control_plane": "ok (1/1 ready)", "nodegroup default-worker": "2/2 ready"}},
			wantOutput: "CREATE_COMPLETE, control plane 1/1 ready, default-worker 2/2 ready | Cluster API reports the cluster available with every node ready\nCluster c1 is CREATE_COMPLETE after",
		},
		{
			final:   conductorStep{status: model.CreateFailed, reason: "Timed out after 60 minutes; last reported problem: node group default-worker: machine w-1: InfrastructureReady=False InstanceCreateFailed", workers: model.CreateFailed, health: map[string]string{"control_plane": "ok (1/1 ready)", "nodegroup default-worker": "1/2 ready: machine w-1: InfrastructureReady=False InstanceCreateFailed"}},
			wantErr: "cluster c1 is CREATE_FAILED: Timed out after 60 minutes; last reported problem: node group default-worker: machine w-1: InfrastructureReady=False InstanceCreateFailed",
		},
	} {
		t.Run(string(tc.final.status), func(t *testing.T) {
			srv := testapi.Start(t)
			createTemplate(t, srv, "k8s")
			var out, errb lockedBuffer
			done := make(chan error, 1)
			go func() {
				done <- runClient(context.Background(), srv, &out, &errb, "cluster", "create", "c1", "--cluster-template", "k8s",
					"--node-count", "2", "--wait", "--poll-interval", "50ms")
			}()
			uuid := clusterUUIDByName(t, srv.Store, "c1")
			waitForOutput(t, "create --wait", out.String, "CREATE_IN_PROGRESS, control plane ?/1, default-worker ?/2 | Waiting for a conductor")
			wantLines := []string{
				"CREATE_IN_PROGRESS, control plane ?/1, default-worker ?/2 | Waiting for Cluster API to create the cluster",
				"CREATE_IN_PROGRESS, control plane 0/1 ready, default-worker 0/2 ready | control plane 0/1 ready, default-worker 0/2 ready",
				"CREATE_IN_PROGRESS, control plane 1/1 ready, default-worker 1/2 ready | node group default-worker: machine w-1: InfrastructureReady=False WaitingForServer",
			}
			for i, s := range buildSteps {
				applyStep(t, srv.Store, uuid, s)
				waitForOutput(t, "create --wait", out.String, wantLines[i])
			}
			applyStep(t, srv.Store, uuid, tc.final)
			err := <-done
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("create --wait ended with %v, want %q\n%s", err, tc.wantErr, out.String())
				}
			} else if err != nil {
				t.Fatalf("create --wait: %v\n%s", err, out.String())
			}
			if tc.wantOutput != "" && !strings.Contains(out.String(), tc.wantOutput) {
				t.Fatalf("output lacks %q:\n%s", tc.wantOutput, out.String())
			}
			// One line per change: the clock alone does not print.
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			for i := 1; i < len(lines) && strings.HasPrefix(lines[i], "["); i++ {
				if strings.SplitN(lines[i], "] ", 2)[1] == strings.SplitN(lines[i-1], "] ", 2)[1] {
					t.Errorf("line %d repeats the previous state: %q", i, lines[i])
				}
			}
			if strings.Contains(out.String(), "\x1b[") {
				t.Errorf("escape sequences written to a non-terminal:\n%q", out.String())
			}
		})
	}
}

func TestClusterShowWatchGivesUpAfterTheTimeoutWithTheLastState(t *testing.T) {
	srv := testapi.Start(t)
	createTemplate(t, srv, "k8s")
	mustCLI(t, srv, "cluster", "create", "c1", "--cluster-template", "k8s")
	r := cli(t, srv, "cluster", "show", "c1", "--watch", "--timeout", "300ms", "--poll-interval", "50ms")
	if r.err == nil || !strings.Contains(r.err.Error(), "gave up waiting for cluster c1 after 300ms (still CREATE_IN_PROGRESS: Waiting for a conductor") {
		t.Fatalf("watch with timeout: %v\n%s", r.err, r.stdout)
	}
}

func TestClusterShowWatchOnASettledClusterPrintsOnceAndExits(t *testing.T) {
	srv := testapi.Start(t)
	createTemplate(t, srv, "k8s")
	mustCLI(t, srv, "cluster", "create", "c1", "--cluster-template", "k8s")
	uuid := clusterUUIDByName(t, srv.Store, "c1")
	applyStep(t, srv.Store, uuid, conductorStep{status: model.UpdateFailed, reason: "machine deployment md-0: MachinesReady=False"})
	r := cli(t, srv, "cluster", "show", "c1", "--watch", "-o", "json")
	if r.err == nil || r.err.Error() != "cluster c1 is UPDATE_FAILED: machine deployment md-0: MachinesReady=False" {
		t.Fatalf("watch of a failed cluster: %v", r.err)
	}
	if !strings.Contains(r.stderr, "UPDATE_FAILED") || r.stdout != "" {
		t.Errorf("progress goes to stderr with -o json; stdout %q stderr %q", r.stdout, r.stderr)
	}

	applyStep(t, srv.Store, uuid, conductorStep{status: model.UpdateComplete, reason: "Cluster API reports every change rolled out"})
	r = cli(t, srv, "cluster", "show", "c1", "--watch", "-o", "yaml")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantFields(t, "settled cluster", shown(t, "yaml", r.stdout), map[string]string{"status": "UPDATE_COMPLETE", "uuid": uuid})
}

func TestClusterDeleteWaitEndsWhenTheClusterIsGone(t *testing.T) {
	srv := testapi.Start(t)
	createTemplate(t, srv, "k8s")
	mustCLI(t, srv, "cluster", "create", "c1", "--cluster-template", "k8s")
	uuid := clusterUUIDByName(t, srv.Store, "c1")
	var out, errb lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- runClient(context.Background(), srv, &out, &errb, "cluster", "delete", "c1", "--wait", "--poll-interval", "50ms")
	}()
	waitForOutput(t, "delete --wait", out.String, "DELETE_IN_PROGRESS")
	if err := srv.Store.DeleteCluster(context.Background(), uuid); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("delete --wait: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "] deleted\nCluster c1 deleted after") {
		t.Errorf("delete --wait printed:\n%s", out.String())
	}

	// Watching a cluster being deleted ends, successfully, when it is gone.
	mustCLI(t, srv, "cluster", "create", "c2", "--cluster-template", "k8s")
	uuid = clusterUUIDByName(t, srv.Store, "c2")
	mustCLI(t, srv, "cluster", "delete", "c2")
	var watched, watchErr lockedBuffer
	go func() {
		done <- runClient(context.Background(), srv, &watched, &watchErr, "cluster", "show", "c2", "--watch", "--poll-interval", "50ms")
	}()
	waitForOutput(t, "show --watch", watched.String, "DELETE_IN_PROGRESS")
	if err := srv.Store.DeleteCluster(context.Background(), uuid); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !strings.Contains(watched.String(), "Cluster c2 deleted after") {
		t.Fatalf("show --watch of a deletion: %v\n%s", err, watched.String())
	}
}

func TestClusterEventsPrintsAndFollowsTheHistory(t *testing.T) {
	srv := testapi.Start(t)
	createTemplate(t, srv, "k8s")
	mustCLI(t, srv, "cluster", "create", "c1", "--cluster-template", "k8s", "--node-count", "2")
	uuid := clusterUUIDByName(t, srv.Store, "c1")
	applyStep(t, srv.Store, uuid, buildSteps[1])
	for _, f := range formats {
		out := mustCLI(t, srv, "cluster", "events", "c1", "-o", f)
		rows := listed(t, f, out, "kind", "status", "reason", "message")
		if len(rows) != 2 {
			t.Fatalf("events -o %s: %v", f, rows)
		}
		wantFields(t, "first event -o "+f, rows[0], map[string]string{"kind": "status", "status": "CREATE_IN_PROGRESS", "reason": "cluster_create"})
		if !strings.HasPrefix(rows[0]["message"], "Create requested: 1 control plane and 2 worker nodes (request req-") {
			t.Errorf("events -o %s: message %q", f, rows[0]["message"])
		}
		noReason := "" // the table shows an empty reason as "-"
		if f == "table" {
			noReason = "-"
		}
		wantFields(t, "second event -o "+f, rows[1], map[string]string{"kind": "condition", "reason": noReason, "message": "control plane 0/1 ready, default-worker 0/2 ready"})
	}
	if out := mustCLI(t, srv, "cluster", "events", "c1", "--since", "2999-01-01T00:00:00Z"); strings.TrimSpace(out) != "TIME  KIND  STATUS  REASON  MESSAGE" {
		t.Errorf("events --since in the future: %q", out)
	}
	if r := cli(t, srv, "cluster", "events", "c1", "--since", "last tuesday"); r.err == nil || !strings.Contains(r.err.Error(), "RFC 3339") {
		t.Errorf("bad --since: %v", r.err)
	}

	// Following: new events appear as they are recorded, once each, and the
	// command ends when the cluster is gone.
	var out, errb lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- runClient(context.Background(), srv, &out, &errb, "cluster", "events", "c1", "--follow", "-o", "json", "--poll-interval", "50ms")
	}()
	waitForOutput(t, "events --follow", out.String, "control plane 0/1 ready, default-worker 0/2 ready")
	mustCLI(t, srv, "cluster", "resize", "c1", "3")
	waitForOutput(t, "events --follow", out.String, "Resize requested: node group default-worker to 3 nodes")
	applyStep(t, srv.Store, uuid, buildSteps[2])
	waitForOutput(t, "events --follow", out.String, "machine w-1: InfrastructureReady=False WaitingForServer")
	if err := srv.Store.DeleteCluster(context.Background(), uuid); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("events --follow: %v", err)
	}
	var ids []float64
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		ids = append(ids, decoded(t, "json", l).(map[string]any)["id"].(float64))
	}
	if len(ids) != 4 || !slices.IsSorted(ids) || slices.Compact(slices.Clone(ids))[3] != ids[3] {
		t.Errorf("followed events (one JSON object a line, each once, in order): %v\n%s", ids, out.String())
	}
	if !strings.Contains(errb.String(), "Cluster c1 is gone.") {
		t.Errorf("stderr: %q", errb.String())
	}
}

func TestClusterResizeWaitFollowsTheUpdateToItsEnd(t *testing.T) {
	srv := testapi.Start(t)
	createTemplate(t, srv, "k8s")
	mustCLI(t, srv, "cluster", "create", "c1", "--cluster-template", "k8s")
	uuid := clusterUUIDByName(t, srv.Store, "c1")
	applyStep(t, srv.Store, uuid, conductorStep{status: model.CreateComplete, reason: "built", workers: model.CreateComplete,
		health: map[string]string{"control_plane": "ok (1/1 ready)", "nodegroup default-worker": "1/1 ready"}})
	var out, errb lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- runClient(context.Background(), srv, &out, &errb, "cluster", "resize", "c1", "3", "--wait", "--poll-interval", "50ms")
	}()
	// The resize moves the cluster to UPDATE_IN_PROGRESS before answering;
	// the group still shows what Cluster API last reported.
	waitForOutput(t, "resize --wait", out.String, "UPDATE_IN_PROGRESS, control plane 1/1 ready, default-worker 1/1 ready | built")
	applyStep(t, srv.Store, uuid, conductorStep{status: model.UpdateInProgress, reason: "control plane 1/1 ready, default-worker 2/3 ready",
		health: map[string]string{"control_plane": "ok (1/1 ready)", "nodegroup default-worker": "2/3 ready"}})
	waitForOutput(t, "resize --wait", out.String, "default-worker 2/3 ready")
	applyStep(t, srv.Store, uuid, conductorStep{status: model.UpdateComplete, reason: "Cluster API reports every change rolled out",
		workers: model.UpdateComplete, health: map[string]string{"control_plane": "ok (1/1 ready)", "nodegroup default-worker": "3/3 ready"}})
	if err := <-done; err != nil {
		t.Fatalf("resize --wait: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "default-worker 3/3 ready | Cluster API reports every change rolled out\nCluster c1 is UPDATE_COMPLETE after") {
		t.Fatalf("resize --wait printed:\n%s", out.String())
	}
}
