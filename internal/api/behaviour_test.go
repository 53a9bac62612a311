package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// client sends requests to a test server as one caller.
type client struct {
	t       testing.TB
	srv     *testapi.Server
	headers map[string]string
}

// newClient is the default caller: project "default", admin, latest version.
func newClient(t testing.TB, srv *testapi.Server) *client {
	return &client{t: t, srv: srv, headers: map[string]string{"OpenStack-API-Version": "container-infra latest"}}
}

func (c *client) with(k, v string) *client {
	h := maps.Clone(c.headers)
	if v == "" {
		delete(h, k)
	} else {
		h[k] = v
	}
	return &client{t: c.t, srv: c.srv, headers: h}
}

// as is a caller of another project with the given roles (comma-separated).
func (c *client) as(project, roles string) *client {
	return c.with("X-Project-Id", project).with("X-Roles", roles)
}

// at pins the microversion ("1.9"); "" sends no version header.
func (c *client) at(version string) *client {
	if version == "" {
		return c.with("OpenStack-API-Version", "")
	}
	return c.with("OpenStack-API-Version", "container-infra "+version)
}

type response testapi.Response

// do sends body verbatim when it is a string or []byte and as JSON otherwise.
func (c *client) do(method, path string, body any) *response {
	c.t.Helper()
	res := c.srv.Do(c.t, method, path, body, c.headers)
	return (*response)(&res)
}

// must sends a request and fails the test unless the status matches.
func (c *client) must(status int, method, path string, body any) *response {
	c.t.Helper()
	r := c.do(method, path, body)
	if r.Status != status {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Body)
	}
	return r
}

func (r *response) object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

func (r *response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode response: %v: %s", err, r.Body)
	}
}

func merged(base map[string]any, extra map[string]any) map[string]any {
	out := maps.Clone(base)
	maps.Copy(out, extra)
	return out
}

// createTemplate creates a template from a minimal valid body plus extra.
func (c *client) createTemplate(extra map[string]any) string {
	c.t.Helper()
	body := merged(map[string]any{"coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.30.4"}, extra)
	var out struct{ UUID string }
	c.must(http.StatusCreated, "POST", "/v1/clustertemplates", body).decode(c.t, &out)
	return out.UUID
}

// createCluster creates a cluster on a template plus extra fields.
func (c *client) createCluster(template string, extra map[string]any) string {
	c.t.Helper()
	body := merged(map[string]any{"cluster_template_id": template}, extra)
	var out struct{ UUID string }
	c.must(http.StatusAccepted, "POST", "/v1/clusters", body).decode(c.t, &out)
	return out.UUID
}

func (c *client) getObject(path string) map[string]any {
	c.t.Helper()
	return c.must(http.StatusOK, "GET", path, nil).object(c.t)
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	return slices.Sorted(maps.Keys(m))
}

func TestTemplateVisibility(t *testing.T) {
	srv := testapi.Start(t)
	admin := newClient(t, srv)
	alice := admin.as("alice", "member")
	bob := admin.as("bob", "member")

	own := alice.createTemplate(map[string]any{"name": "alice-own"})
	public := admin.createTemplate(map[string]any{"name": "shared-public", "public": true})
	hidden := admin.createTemplate(map[string]any{"name": "shared-hidden", "public": true, "hidden": true})
	adminPrivate := admin.createTemplate(map[string]any{"name": "admin-private"})
	bobOwn := bob.createTemplate(map[string]any{"name": "bob-own"})

	listed := func(c *client) []string {
		var out struct {
			ClusterTemplates []struct{ Name string } `json:"clustertemplates"`
		}
		c.must(http.StatusOK, "GET", "/v1/clustertemplates", nil).decode(t, &out)
		var names []string
		for _, ct := range out.ClusterTemplates {
			names = append(names, ct.Name)
		}
		slices.Sort(names)
		return names
	}
	tests := []struct {
		name     string
		caller   *client
		listed   []string
		visible  []string
		invisble []string
	}{
		{"project sees its own and public templates, not hidden or others' private ones", alice,
			[]string{"alice-own", "shared-public"}, []string{own, public}, []string{hidden, adminPrivate, bobOwn}},
		{"another project sees its own and public templates", bob,
			[]string{"bob-own", "shared-public"}, []string{bobOwn, public}, []string{own, hidden, adminPrivate}},
		{"admin sees every template of every project", admin,
			[]string{"admin-private", "alice-own", "bob-own", "shared-hidden", "shared-public"},
			[]string{own, public, hidden, adminPrivate, bobOwn}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := listed(tc.caller); !slices.Equal(got, tc.listed) {
				t.Errorf("listed %v, want %v", got, tc.listed)
			}
			for _, id := range tc.visible {
				tc.caller.must(http.StatusOK, "GET", "/v1/clustertemplates/"+id, nil)
			}
			for _, id := range tc.invisble {
				tc.caller.must(http.StatusNotFound, "GET", "/v1/clustertemplates/"+id, nil)
			}
		})
	}
}

func TestClusterLabelsMergeOrReplaceTemplateLabels(t *testing.T) {
	type labelCase struct {
		name                               string
		body                               map[string]any
		labels, overridden, added, skipped map[string]string
	}
	templateLabels := map[string]any{"kube_tag": "v1.30.4", "auto_healing_enabled": "true", "boot_volume_size": "20"}
	explicit := []labelCase{
		{"no labels inherits the template's",
			map[string]any{},
			map[string]string{"kube_tag": "v1.30.4", "auto_healing_enabled": "true", "boot_volume_size": "20"},
			map[string]string{}, map[string]string{}, map[string]string{}},
		{"merge_labels true merges as a string labels value",
			map[string]any{"merge_labels": true, "labels": "{'boot_volume_size': 40, 'flag': True}"},
			map[string]string{"kube_tag": "v1.30.4", "auto_healing_enabled": "true", "boot_volume_size": "40", "flag": "true"},
			map[string]string{"boot_volume_size": "20"}, map[string]string{"flag": "true"}, map[string]string{}},
		{"merge_labels false replaces the template's labels",
			map[string]any{"merge_labels": false, "labels": map[string]any{"kube_tag": "v1.29.0", "extra": "x"}},
			map[string]string{"kube_tag": "v1.29.0", "extra": "x"},
			map[string]string{"kube_tag": "v1.30.4"}, map[string]string{"extra": "x"},
			map[string]string{"auto_healing_enabled": "true", "boot_volume_size": "20"}},
	}
	withoutMergeLabels := map[string]any{"labels": map[string]any{"kube_tag": "v1.31.1", "extra": 5}}
	deployments := []struct {
		name  string
		opts  []testapi.Option
		cases []labelCase
	}{
		{"Magnum's default", nil, append(explicit, labelCase{"labels replace the template's when merge_labels is not sent",
			withoutMergeLabels,
			map[string]string{"kube_tag": "v1.31.1", "extra": "5"},
			map[string]string{"kube_tag": "v1.30.4"}, map[string]string{"extra": "5"},
			map[string]string{"auto_healing_enabled": "true", "boot_volume_size": "20"}})},
		{"merge_labels_by_default", []testapi.Option{func(o *api.Options) { o.MergeLabelsByDefault = true }}, append(explicit, labelCase{
			"labels merge over the template's when merge_labels is not sent",
			withoutMergeLabels,
			map[string]string{"kube_tag": "v1.31.1", "auto_healing_enabled": "true", "boot_volume_size": "20", "extra": "5"},
			map[string]string{"kube_tag": "v1.30.4"}, map[string]string{"extra": "5"}, map[string]string{}})},
	}
	for _, d := range deployments {
		t.Run(d.name, func(t *testing.T) {
			srv := testapi.Start(t, d.opts...)
			c := newClient(t, srv)
			tpl := c.createTemplate(map[string]any{"labels": templateLabels})
			for _, tc := range d.cases {
				t.Run(tc.name, func(t *testing.T) {
					id := c.createCluster(tpl, tc.body)
					var got struct {
						Labels           map[string]string `json:"labels"`
						LabelsOverridden map[string]string `json:"labels_overridden"`
						LabelsAdded      map[string]string `json:"labels_added"`
						LabelsSkipped    map[string]string `json:"labels_skipped"`
					}
					c.must(http.StatusOK, "GET", "/v1/clusters/"+id, nil).decode(t, &got)
					for _, cmp := range []struct {
						field     string
						got, want map[string]string
					}{
						{"labels", got.Labels, tc.labels}, {"labels_overridden", got.LabelsOverridden, tc.overridden},
						{"labels_added", got.LabelsAdded, tc.added}, {"labels_skipped", got.LabelsSkipped, tc.skipped},
					} {
						if cmp.got == nil || !maps.Equal(cmp.got, cmp.want) {
							t.Errorf("%s = %v, want %v", cmp.field, cmp.got, cmp.want)
						}
					}
				})
			}
		})
	}
}

func TestNamesAreGeneratedWhenOmitted(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	tpl := c.createTemplate(nil)
	tests := []struct {
		name, path, suffix string
		create             func() string
	}{
		{"template", "/v1/clustertemplates/", "-template", func() string { return tpl }},
		{"cluster", "/v1/clusters/", "-cluster", func() string { return c.createCluster(tpl, nil) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.create()
			name, _ := c.getObject(tc.path + id)["name"].(string)
			if !strings.HasSuffix(name, tc.suffix) || name == tc.suffix {
				t.Fatalf("generated name %q does not end in %q", name, tc.suffix)
			}
			// A generated cluster name must itself be a valid cluster name,
			// so it can be sent back to the API.
			if name[0] < 'a' || name[0] > 'z' || strings.ContainsAny(name, " /") {
				t.Errorf("generated name %q is not a valid name", name)
			}
		})
	}
}

func TestCreateTimeoutDefaultsByServerType(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	vm := c.createTemplate(map[string]any{"server_type": "vm"})
	bm := c.createTemplate(map[string]any{"server_type": "bm"})
	tests := []struct {
		name     string
		template string
		body     map[string]any
		want     float64
	}{
		{"virtual machine clusters default to 60 minutes", vm, nil, 60},
		{"bare-metal clusters default to 180 minutes", bm, nil, 180},
		{"an explicit timeout wins on bare metal", bm, map[string]any{"create_timeout": 45}, 45},
		{"zero means no timeout and is kept", vm, map[string]any{"create_timeout": 0}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := c.createCluster(tc.template, tc.body)
			if got := c.getObject("/v1/clusters/" + id)["create_timeout"]; got != tc.want {
				t.Errorf("create_timeout = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStackIDBecomesClusterIDAtMicroversion113(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	id := c.createCluster(c.createTemplate(nil), nil)
	tests := []struct {
		version       string
		present, gone string
	}{
		{"", "stack_id", "cluster_id"},
		{"1.12", "stack_id", "cluster_id"},
		{"1.13", "cluster_id", "stack_id"},
		{"1.14", "cluster_id", "stack_id"},
	}
	for _, tc := range tests {
		t.Run("version "+tc.version, func(t *testing.T) {
			cv := c.at(tc.version)
			one := cv.getObject("/v1/clusters/" + id)
			var list struct{ Clusters []map[string]any }
			cv.must(http.StatusOK, "GET", "/v1/clusters", nil).decode(t, &list)
			if len(list.Clusters) != 1 {
				t.Fatalf("listed %d clusters, want 1", len(list.Clusters))
			}
			for where, obj := range map[string]map[string]any{"get": one, "list": list.Clusters[0]} {
				v, ok := obj[tc.present].(string)
				if !ok || v == "" {
					t.Errorf("%s: %s = %v, want the stack name", where, tc.present, obj[tc.present])
				}
				if _, ok := obj[tc.gone]; ok {
					t.Errorf("%s: %s present at this version", where, tc.gone)
				}
			}
		})
	}
}

func TestNodeLabelsAndTaintsShownOnlyFrom114(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	id := c.createCluster(c.createTemplate(nil), nil)
	c.must(http.StatusAccepted, "POST", "/v1/clusters/"+id+"/nodegroups", map[string]any{
		"name": "gpu", "node_labels": map[string]any{"gpu": "a100"},
		"node_taints": []any{map[string]any{"key": "gpu", "value": "true", "effect": "NoSchedule"}},
	})
	tests := []struct {
		version string
		shown   bool
	}{{"1.9", false}, {"1.13", false}, {"1.14", true}}
	for _, tc := range tests {
		t.Run("version "+tc.version, func(t *testing.T) {
			ng := c.at(tc.version).getObject("/v1/clusters/" + id + "/nodegroups/gpu")
			_, hasLabels := ng["node_labels"]
			_, hasTaints := ng["node_taints"]
			if hasLabels != tc.shown || hasTaints != tc.shown {
				t.Fatalf("node_labels shown %v, node_taints shown %v; want %v", hasLabels, hasTaints, tc.shown)
			}
			if !tc.shown {
				return
			}
			if got := ng["node_labels"].(map[string]any); got["gpu"] != "a100" || len(got) != 1 {
				t.Errorf("node_labels = %v", got)
			}
			taints := ng["node_taints"].([]any)
			if len(taints) != 1 || taints[0].(map[string]any)["effect"] != "NoSchedule" {
				t.Errorf("node_taints = %v", taints)
			}
		})
	}
}

// walk follows "next" links from the first page and returns the names seen.
func walk(t *testing.T, c *client, first, collection string) []string {
	t.Helper()
	var names []string
	path := first
	for pages := 0; path != ""; pages++ {
		if pages > 50 {
			t.Fatalf("more than 50 pages from %s", first)
		}
		obj := c.getObject(path)
		items, _ := obj[collection].([]any)
		for _, it := range items {
			names = append(names, it.(map[string]any)["name"].(string))
		}
		path = ""
		if next, ok := obj["next"].(string); ok && next != "" {
			u, err := url.Parse(next)
			if err != nil {
				t.Fatalf("next %q: %v", next, err)
			}
			path = u.RequestURI()
		}
	}
	return names
}

func TestPaginationWalksEveryPageWithoutDuplicatesOrGaps(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	// Names are created out of order and two clusters share a template so
	// ties on cluster_template_id exercise the id tie-breaker.
	names := []string{"kilo", "alpha", "juliet", "charlie", "echo", "bravo", "india", "delta", "golf", "foxtrot", "hotel"}
	tplA := c.createTemplate(map[string]any{"name": "tpl-a"})
	tplB := c.createTemplate(map[string]any{"name": "tpl-b"})
	for i, n := range names {
		tpl := tplA
		if i%3 == 0 {
			tpl = tplB
		}
		c.createCluster(tpl, map[string]any{"name": n})
	}
	byName := slices.Sorted(slices.Values(names))
	byNameDesc := reversed(byName)

	tests := []struct {
		name  string
		query string
		want  []string // nil: only the set is checked
	}{
		{"by name ascending", "sort_key=name&sort_dir=asc", byName},
		{"by name descending", "sort_key=name&sort_dir=desc", byNameDesc},
		{"by creation order", "sort_key=id&sort_dir=asc", names},
		{"by creation order descending", "sort_key=created_at&sort_dir=desc", reversed(names)},
		{"by a key with ties ascending", "sort_key=cluster_template_id&sort_dir=asc", nil},
		{"by a key with ties descending", "sort_key=cluster_template_id&sort_dir=desc", nil},
		{"default order", "", names},
	}
	for _, tc := range tests {
		for _, limit := range []int{1, 2, 3, 4, 11, 20} {
			for _, coll := range []string{"/v1/clusters", "/v1/clusters/detail"} {
				t.Run(fmt.Sprintf("%s limit %d %s", tc.name, limit, coll), func(t *testing.T) {
					q := fmt.Sprintf("?limit=%d", limit)
					if tc.query != "" {
						q += "&" + tc.query
					}
					got := walk(t, c, coll+q, "clusters")
					if tc.want != nil && !slices.Equal(got, tc.want) {
						t.Fatalf("walked %v, want %v", got, tc.want)
					}
					if !slices.Equal(slices.Sorted(slices.Values(got)), byName) {
						t.Fatalf("walked %v: duplicates or gaps (want each of %v once)", got, byName)
					}
				})
			}
		}
	}
	t.Run("templates by name descending", func(t *testing.T) {
		got := walk(t, c, "/v1/clustertemplates?limit=1&sort_key=name&sort_dir=desc", "clustertemplates")
		if !slices.Equal(got, []string{"tpl-b", "tpl-a"}) {
			t.Fatalf("walked %v", got)
		}
	})
	for _, ng := range []string{"ng-c", "ng-a", "ng-b"} {
		c.must(http.StatusAccepted, "POST", "/v1/clusters/kilo/nodegroups", map[string]any{"name": ng})
	}
	ngNames := []string{"default-master", "default-worker", "ng-a", "ng-b", "ng-c"}
	for _, tc := range []struct {
		dir  string
		want []string
	}{{"asc", ngNames}, {"desc", reversed(ngNames)}} {
		t.Run("node groups by name "+tc.dir, func(t *testing.T) {
			got := walk(t, c, "/v1/clusters/kilo/nodegroups?limit=2&sort_key=name&sort_dir="+tc.dir, "nodegroups")
			if !slices.Equal(got, tc.want) {
				t.Fatalf("walked %v, want %v", got, tc.want)
			}
		})
	}
}

// ops lists the operation types recorded for a cluster.
func ops(t *testing.T, srv *testapi.Server, cluster string) []model.OperationType {
	t.Helper()
	list, err := srv.Store.OperationsForCluster(context.Background(), cluster)
	if err != nil {
		t.Fatalf("operations: %v", err)
	}
	out := make([]model.OperationType, 0, len(list))
	for _, op := range list {
		if op.State != model.OpPending || op.ClusterID != cluster {
			t.Errorf("operation %s: state %s cluster %s", op.Type, op.State, op.ClusterID)
		}
		out = append(out, op.Type)
	}
	return out
}

func TestEveryProvisioningChangeWritesOneOperation(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	tpl := c.createTemplate(map[string]any{"name": "base"})
	next := c.createTemplate(map[string]any{"name": "next", "image_id": "ubuntu-2404-kube-v1.31.1"})
	id := c.createCluster(tpl, map[string]any{"name": "ops"})
	cl := "/v1/clusters/" + id

	tests := []struct {
		name         string
		method, path string
		body         any
		status       int
		op           model.OperationType // "" when the request must record nothing
	}{
		{"resize through PATCH node_count", "PATCH", cl, `[{"op":"replace","path":"/node_count","value":3}]`, 202, model.OpClusterUpdate},
		{"resize action", "POST", cl + "/actions/resize", map[string]any{"node_count": 2}, 202, model.OpClusterResize},
		{"patch to the same node count", "PATCH", cl, `[{"op":"replace","path":"/node_count","value":2}]`, 202, ""},
		{"upgrade action", "POST", cl + "/actions/upgrade", map[string]any{"cluster_template": next}, 202, model.OpClusterUpgrade},
		{"node group create", "POST", cl + "/nodegroups", map[string]any{"name": "extra"}, 202, model.OpNodeGroupCreate},
		{"node group update", "PATCH", cl + "/nodegroups/extra", `[{"op":"replace","path":"/max_node_count","value":5}]`, 202, model.OpNodeGroupUpdate},
		{"node group delete", "DELETE", cl + "/nodegroups/extra", nil, 204, model.OpNodeGroupDelete},
		{"health report changes no nodes", "PATCH", cl, `[{"op":"replace","path":"/health_status","value":"HEALTHY"}]`, 202, ""},
		{"rejected resize below zero", "POST", cl + "/actions/resize", map[string]any{"node_count": -1}, 400, ""},
		{"rejected resize of an unknown node group", "POST", cl + "/actions/resize", map[string]any{"node_count": 1, "nodegroup": "nope"}, 404, ""},
		{"rejected patch of a read-only field", "PATCH", cl, `[{"op":"replace","path":"/master_count","value":3}]`, 400, ""},
		{"rejected node group with a duplicate name", "POST", cl + "/nodegroups", map[string]any{"name": "default-worker"}, 409, ""},
		{"rejected deletion of the default node group", "DELETE", cl + "/nodegroups/default-worker", nil, 400, ""},
		{"rejected upgrade to an unknown template", "POST", cl + "/actions/upgrade", map[string]any{"cluster_template": "nope"}, 404, ""},
		{"delete", "DELETE", cl, nil, 204, model.OpClusterDelete},
		{"repeated delete", "DELETE", cl, nil, 204, ""},
		{"rejected resize while deleting", "POST", cl + "/actions/resize", map[string]any{"node_count": 4}, 409, ""},
	}
	want := []model.OperationType{model.OpClusterCreate}
	if got := ops(t, srv, id); !slices.Equal(got, want) {
		t.Fatalf("after create: operations %v, want %v", got, want)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.must(tc.status, tc.method, tc.path, tc.body)
			if tc.op != "" {
				want = append(want, tc.op)
			}
			if got := ops(t, srv, id); !slices.Equal(got, want) {
				t.Fatalf("operations %v, want %v", got, want)
			}
		})
	}
}

func TestQuotaEnforcementAndDefaults(t *testing.T) {
	srv := testapi.Start(t)
	admin := newClient(t, srv)
	member := admin.as("capped", "member")
	tpl := admin.createTemplate(map[string]any{"public": true})

	t.Run("a project without a quota row reads the default limit", func(t *testing.T) {
		q := member.getObject("/v1/quotas/capped/Cluster")
		if q["hard_limit"] != float64(20) || q["project_id"] != "capped" || q["resource"] != "Cluster" {
			t.Fatalf("default quota = %v", q)
		}
	})
	admin.must(http.StatusCreated, "POST", "/v1/quotas", map[string]any{"project_id": "capped", "resource": "Cluster", "hard_limit": 2})
	tests := []struct {
		name   string
		status int
	}{
		{"first cluster within the quota", http.StatusAccepted},
		{"second cluster reaches the quota", http.StatusAccepted},
		{"third cluster is refused", http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := member.do("POST", "/v1/clusters", map[string]any{"cluster_template_id": tpl})
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
		})
	}
	t.Run("the set quota is read back", func(t *testing.T) {
		if q := member.getObject("/v1/quotas/capped/Cluster"); q["hard_limit"] != float64(2) {
			t.Fatalf("quota = %v", q)
		}
	})
	t.Run("raising the quota admits another cluster", func(t *testing.T) {
		admin.must(http.StatusAccepted, "PATCH", "/v1/quotas/capped/Cluster", map[string]any{"hard_limit": 3})
		member.createCluster(tpl, nil)
	})
	t.Run("other projects keep the default", func(t *testing.T) {
		other := admin.as("roomy", "member")
		for range 3 {
			other.createCluster(tpl, nil)
		}
	})
}

func TestStatsCountClustersAndNodes(t *testing.T) {
	srv := testapi.Start(t)
	admin := newClient(t, srv)
	tpl := admin.createTemplate(map[string]any{"public": true, "master_lb_enabled": true})
	a, b := admin.as("pa", "member"), admin.as("pb", "member")
	a.createCluster(tpl, map[string]any{"node_count": 2, "master_count": 3}) // 5 nodes
	a.createCluster(tpl, map[string]any{"node_count": 1})                    // 2 nodes
	b.createCluster(tpl, map[string]any{"node_count": 4})                    // 5 nodes

	tests := []struct {
		name            string
		caller          *client
		query           string
		clusters, nodes float64
	}{
		{"a project counts its own clusters and nodes, masters included", a, "", 2, 7},
		{"another project counts only its own", b, "", 1, 5},
		{"a project naming itself", a, "?project_id=pa", 2, 7},
		{"admin counts every project", admin, "", 3, 12},
		{"admin filters by project", admin, "?project_id=pb", 1, 5},
		{"type=cluster is the default type", admin, "?type=cluster", 3, 12},
		{"a project with nothing", admin.as("empty", "member"), "", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.caller.getObject("/v1/stats" + tc.query)
			if st["clusters"] != tc.clusters || st["nodes"] != tc.nodes {
				t.Fatalf("stats = %v, want clusters %v nodes %v", st, tc.clusters, tc.nodes)
			}
		})
	}
}

func TestMServicesReportsProcessesUpOrDown(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	t.Run("no process reported yet", func(t *testing.T) {
		var out struct{ MServices []map[string]any }
		c.must(http.StatusOK, "GET", "/v1/mservices", nil).decode(t, &out)
		if out.MServices == nil || len(out.MServices) != 0 {
			t.Fatalf("mservices = %s, want an empty list", c.do("GET", "/v1/mservices", nil).Body)
		}
	})
	ctx := context.Background()
	for range 3 {
		if err := srv.Store.ReportService(ctx, "node-1", "magnum-conductor"); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Store.ReportService(ctx, "node-2", "magnum-conductor"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host, binary string
		reports      float64
	}{
		{"node-1", "magnum-conductor", 3},
		{"node-2", "magnum-conductor", 1},
	}
	var out struct{ MServices []map[string]any }
	c.must(http.StatusOK, "GET", "/v1/mservices", nil).decode(t, &out)
	if len(out.MServices) != len(tests) {
		t.Fatalf("mservices = %v", out.MServices)
	}
	for i, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			s := out.MServices[i]
			if s["host"] != tc.host || s["binary"] != tc.binary || s["report_count"] != tc.reports || s["state"] != "up" {
				t.Errorf("service = %v", s)
			}
		})
	}
	t.Run("non-admins may not list services", func(t *testing.T) {
		c.as("p", "member").must(http.StatusForbidden, "GET", "/v1/mservices", nil)
	})
}

func TestTemplateInUseAllowsOnlyRenameAndPublishing(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	tpl := c.createTemplate(map[string]any{"name": "in-use"})
	c.createCluster(tpl, nil)
	path := "/v1/clustertemplates/" + tpl
	tests := []struct {
		name   string
		patch  string
		status int
	}{
		{"rename", `[{"op":"replace","path":"/name","value":"renamed"}]`, 200},
		{"publish", `[{"op":"replace","path":"/public","value":true}]`, 200},
		{"tags", `[{"op":"replace","path":"/tags","value":"gold"}]`, 200},
		{"image", `[{"op":"replace","path":"/image_id","value":"other"}]`, 400},
		{"labels", `[{"op":"add","path":"/labels/kube_tag","value":"v1.31.0"}]`, 400},
		{"rename and image together", `[{"op":"replace","path":"/name","value":"x"},{"op":"replace","path":"/image_id","value":"other"}]`, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.must(tc.status, "PATCH", path, tc.patch)
		})
	}
	got := c.getObject(path)
	if got["name"] != "renamed" || got["image_id"] != "ubuntu-2204-kube-v1.30.4" || got["public"] != true {
		t.Errorf("template after patches = %v", got)
	}
	c.must(http.StatusBadRequest, "DELETE", path, nil)
	c.must(http.StatusOK, "GET", path, nil)
}

// keysOf collects the nested member names of a JSON document as paths
// ("links[].href"), keys only.
func keysOf(prefix string, v any, into map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			into[p] = true
			keysOf(p, t[k], into)
		}
	case []any:
		for _, x := range t {
			keysOf(prefix+"[]", x, into)
		}
	}
}

// TestEmptyOptionalTextMeansUnset: where Magnum's field is free text
// (wtypes.text, or a string without a minimum length), "" is taken as
// not given. Horizon's forms (magnum-ui) send "" for every field left
// blank: its cluster wizard sends discovery_url "".
func TestEmptyOptionalTextMeansUnset(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	tmpl := c.createTemplate(map[string]any{"tags": ""})
	if got := c.getObject("/v1/clustertemplates/" + tmpl)["tags"]; got != "" && got != nil {
		t.Errorf("template tags = %#v, want empty", got)
	}
	id := c.createCluster(tmpl, map[string]any{"name": "from-horizon", "master_count": 1, "node_count": 1,
		"discovery_url": "", "create_timeout": 60, "labels": map[string]any{}})
	if got, ok := c.getObject("/v1/clusters/" + id)["discovery_url"]; !ok || got != nil {
		t.Errorf("discovery_url = %#v, want null", got)
	}
	url := "https://discovery.etcd.io/abc"
	withURL := c.createCluster(tmpl, map[string]any{"name": "with-url", "discovery_url": url})
	if got := c.getObject("/v1/clusters/" + withURL)["discovery_url"]; got != url {
		t.Errorf("discovery_url = %#v, want %s", got, url)
	}
	// A certificate signed with ca_cert_type "" is signed by the
	// Kubernetes CA, as when the field is left out.
	ca := parsePEMCert(t, c.getObject("/v1/certificates/" + id)["pem"].(string))
	doc := c.must(http.StatusCreated, "POST", "/v1/certificates",
		map[string]any{"cluster_uuid": id, "csr": magnumclientCSR(t), "ca_cert_type": ""}).object(t)
	if err := parsePEMCert(t, doc["pem"].(string)).CheckSignatureFrom(ca); err != nil {
		t.Errorf("ca_cert_type \"\": not signed by the cluster CA: %v", err)
	}
	// Where Magnum wants at least one character, "" stays an error that
	// names the field.
	r := c.must(http.StatusBadRequest, "POST", "/v1/clusters", map[string]any{"name": "empty-keypair",
		"cluster_template_id": tmpl, "keypair": ""})
	assertMagnumError(t, r, `Invalid input for field/attribute keypair. Value: "". expected a string of 1 to 255 characters`)
}
