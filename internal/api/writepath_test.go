package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/capacity"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"
)

// betweenReadAndWrite is a capacity planner that runs a step of the test
// while a request is between reading the cluster and writing its change:
// the planner is asked exactly there, so the interleaving of two requests
// that a loaded server produces now and then is made every time.
type betweenReadAndWrite struct{ step func() }

func (b *betweenReadAndWrite) Plan(context.Context, capacity.Request, func(context.Context) ([]capacity.Building, error)) (*capacity.Plan, error) {
	if step := b.step; step != nil {
		b.step = nil
		step()
	}
	return nil, nil
}

// TestNoChangeCommitsAfterAnAcknowledgedDelete: a node-group update, a
// resize or a PATCH of the cluster that read the cluster before a DELETE
// was answered 204 is refused with a 409 and leaves the delete in force,
// instead of moving the cluster or node group back out of it.
func TestNoChangeCommitsAfterAnAcknowledgedDelete(t *testing.T) {
	planner := &betweenReadAndWrite{}
	srv := testapi.Start(t, func(o *api.Options) { o.Capacity = planner })
	c := newClient(t, srv)
	tmpl := c.createTemplate(map[string]any{"master_lb_enabled": true})

	for _, change := range []struct {
		name, method, path string
		body               any
	}{
		{"node group update", "PATCH", "/v1/clusters/%s/nodegroups/extra", []map[string]any{{"op": "replace", "path": "/max_node_count", "value": 6}}},
		{"resize", "POST", "/v1/clusters/%s/actions/resize", map[string]any{"node_count": 4}},
		{"cluster update", "PATCH", "/v1/clusters/%s", []map[string]any{{"op": "replace", "path": "/node_count", "value": 5}}},
	} {
		t.Run(change.name, func(t *testing.T) {
			id := c.createCluster(tmpl, map[string]any{"name": "undo-" + strings.ReplaceAll(change.name, " ", "-"), "node_count": 1})
			c.must(http.StatusAccepted, "POST", "/v1/clusters/"+id+"/nodegroups", map[string]any{"name": "extra", "node_count": 1})
			planner.step = func() { c.must(http.StatusNoContent, "DELETE", "/v1/clusters/"+id, nil) }
			res := c.do(change.method, strings.Replace(change.path, "%s", id, 1), change.body)
			if planner.step != nil {
				t.Fatalf("the request never reached its capacity plan (answered %d %s); the test did not interleave the delete", res.Status, res.Body)
			}
			if res.Status != http.StatusConflict || !strings.Contains(string(res.Body), "is being deleted (DELETE_IN_PROGRESS)") {
				t.Fatalf("%s after the delete: %d %s, want a 409 saying the cluster is being deleted", change.name, res.Status, res.Body)
			}
			if got := c.getObject("/v1/clusters/" + id)["status"]; got != string(model.DeleteInProgress) {
				t.Errorf("cluster status %v after the refused %s, want DELETE_IN_PROGRESS", got, change.name)
			}
			for _, ng := range []string{"default-worker", "extra"} {
				obj := c.getObject("/v1/clusters/" + id + "/nodegroups/" + ng)
				if obj["node_count"] != float64(1) {
					t.Errorf("node group %s has node_count %v after the refused %s, want 1", ng, obj["node_count"], change.name)
				}
			}
			if got := ops(t, srv, id); got[len(got)-1] != model.OpClusterDelete {
				t.Errorf("operations %v: the delete is not the last", got)
			}
		})
	}
}

// rawServer serves the API as `magnetite serve` does: behind
// api.MagnumErrors, with headers limited to maxHeader bytes.
func rawServer(t *testing.T, maxHeader int) string {
	t.Helper()
	srv := testapi.Start(t)
	hs := httptest.NewUnstartedServer(srv.API)
	hs.Listener = api.MagnumErrors(hs.Listener)
	hs.Config.MaxHeaderBytes = maxHeader
	hs.Start()
	t.Cleanup(hs.Close)
	return hs.Listener.Addr().String()
}

// rawExchange sends req as it is on a new connection and reads the answer.
func rawExchange(t *testing.T, addr, req string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestErrorsOfTheHTTPStackAreInMagnumFormat: requests Go's HTTP server
// refuses before any handler runs (a NUL byte in a header, headers too
// large, a malformed request line) are answered in Magnum's error format,
// as are writes without a JSON body type and unclean paths.
func TestErrorsOfTheHTTPStackAreInMagnumFormat(t *testing.T) {
	addr := rawServer(t, 4096)
	for _, tc := range []struct {
		name, req string
		status    int
		says      string
	}{
		{"NUL in a header", "GET /v1/clusters HTTP/1.1\r\nHost: x\r\nX-Bad: a\x00b\r\n\r\n", 400, "Bad Request"},
		{"headers too large", "GET /v1/clusters HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n", 431, "Request Header Fields Too Large"},
		{"malformed request line", "GET\r\n\r\n", 400, "Bad Request"},
		{"write without Content-Type", "POST /v1/clustertemplates HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 415, "got none"},
		{"empty path segments", "GET //v1//clusters HTTP/1.1\r\nHost: x\r\n\r\n", 404, "could not be found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := rawExchange(t, addr, tc.req)
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			assertMagnumError(t, &response{Status: res.StatusCode, Header: res.Header, Body: b}, tc.says)
			if res.StatusCode != tc.status {
				t.Errorf("status %d, want %d: %s", res.StatusCode, tc.status, b)
			}
			if res.Header.Get("X-Openstack-Request-Id") == "" {
				t.Error("no X-Openstack-Request-Id")
			}
		})
	}
}

// FuzzDuplicateKey: the duplicate-key scan never panics on any body, and
// finds a key exactly when one object of a valid body holds it twice.
func FuzzDuplicateKey(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `[{"a":1},{"a":1}]`, `{"a":[{"b":1}],"b":2}`, `{"a":`, `"x"`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		key, got := api.DuplicateKeyForTest([]byte(body))
		var v any
		if json.Unmarshal([]byte(body), &v) != nil {
			return
		}
		if want := referenceDuplicate(json.NewDecoder(strings.NewReader(body))); got != want {
			t.Fatalf("duplicateKey(%q) = %q, %v; reference says duplicate: %v", body, key, got, want)
		}
	})
}

// referenceDuplicate decodes one value recursively, keeping each object's
// keys, and reports whether any object repeats one.
func referenceDuplicate(dec *json.Decoder) bool {
	tok, err := dec.Token()
	if err != nil {
		return false
	}
	switch tok {
	case json.Delim('{'):
		seen, dup := map[string]bool{}, false
		for dec.More() {
			k, _ := dec.Token()
			if seen[k.(string)] {
				dup = true
			}
			seen[k.(string)] = true
			dup = referenceDuplicate(dec) || dup
		}
		dec.Token()
		return dup
	case json.Delim('['):
		dup := false
		for dec.More() {
			dup = referenceDuplicate(dec) || dup
		}
		dec.Token()
		return dup
	}
	return false
}

// TestUpgradeLeavesANodeGroupBeingDeletedAlone: upgrading a cluster moves
// its node groups to the new template, except one being deleted, whose
// delete stands (the upgrade used to set it back to UPDATE_IN_PROGRESS).
func TestUpgradeLeavesANodeGroupBeingDeletedAlone(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	from := c.createTemplate(map[string]any{"name": "k8s-131", "labels": map[string]any{"kube_tag": "v1.31.2"}})
	to := c.createTemplate(map[string]any{"name": "k8s-132", "labels": map[string]any{"kube_tag": "v1.32.0"}})
	id := c.createCluster(from, map[string]any{"name": "up"})
	c.must(http.StatusAccepted, "POST", "/v1/clusters/"+id+"/nodegroups", map[string]any{"name": "infra"})
	c.must(http.StatusNoContent, "DELETE", "/v1/clusters/"+id+"/nodegroups/infra", nil)
	c.must(http.StatusAccepted, "POST", "/v1/clusters/"+id+"/actions/upgrade", map[string]any{"cluster_template": to})
	if got := c.getObject("/v1/clusters/" + id + "/nodegroups/infra")["status"]; got != string(model.DeleteInProgress) {
		t.Errorf("node group being deleted is %v after the upgrade, want DELETE_IN_PROGRESS", got)
	}
	if got := c.getObject("/v1/clusters/" + id)["cluster_template_id"]; got != to {
		t.Errorf("cluster template %v after the upgrade, want %s", got, to)
	}
}

// TestAClientThatGoesAwayIsNotAServerError: a request whose client closed
// the connection before the answer is recorded as 499 (as nginx does),
// apart from server errors, and logged below ERROR.
func TestAClientThatGoesAwayIsNotAServerError(t *testing.T) {
	logs := &testironic.LogBuffer{}
	srv := testapi.Start(t, func(o *api.Options) { o.Log = slog.New(slog.NewTextHandler(logs, nil)) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client is gone before the server reads the database
	req := httptest.NewRequestWithContext(ctx, "GET", "/v1/clusters/detail", nil)
	req.Header.Set("OpenStack-API-Version", "container-infra latest")
	rec := httptest.NewRecorder()
	srv.API.ServeHTTP(rec, req)
	if rec.Code != 499 {
		t.Fatalf("status %d, want 499", rec.Code)
	}
	scrape := newClient(t, srv).must(http.StatusOK, "GET", "/metrics", nil).Body
	if !strings.Contains(string(scrape), `code="499"`) || strings.Contains(string(scrape), `code="500"`) {
		t.Errorf("metrics do not count the closed request apart from server errors:\n%s", grepLines(string(scrape), "magnetite_http_request_duration_seconds_count"))
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a client going away is logged as an error:\n%s", logs.String())
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestAWriteOvertakenByAStatusWriteIsMadeAgain: when the conductor writes
// a cluster's status between a request's read and its write, the store
// refuses the request's write (it was made from an older version) and the
// API makes the request again, body and all, from a new read: the request
// takes effect once, and the conductor's status stays.
func TestAWriteOvertakenByAStatusWriteIsMadeAgain(t *testing.T) {
	planner := &betweenReadAndWrite{}
	srv := testapi.Start(t, func(o *api.Options) { o.Capacity = planner })
	c := newClient(t, srv)
	tmpl := c.createTemplate(map[string]any{"master_lb_enabled": true})

	for _, change := range []struct {
		name, method, path string
		body               any
		group              string
		field              string
		want               float64
		op                 model.OperationType
	}{
		{"node group update", "PATCH", "/v1/clusters/%s/nodegroups/extra", []map[string]any{{"op": "replace", "path": "/max_node_count", "value": 6}}, "extra", "max_node_count", 6, model.OpNodeGroupUpdate},
		{"resize", "POST", "/v1/clusters/%s/actions/resize", map[string]any{"node_count": 4}, "default-worker", "node_count", 4, model.OpClusterResize},
		{"cluster update", "PATCH", "/v1/clusters/%s", []map[string]any{{"op": "replace", "path": "/node_count", "value": 5}}, "default-worker", "node_count", 5, model.OpClusterUpdate},
	} {
		t.Run(change.name, func(t *testing.T) {
			id := c.createCluster(tmpl, map[string]any{"name": "overtaken-" + strings.ReplaceAll(change.name, " ", "-"), "node_count": 1})
			c.must(http.StatusAccepted, "POST", "/v1/clusters/"+id+"/nodegroups", map[string]any{"name": "extra", "node_count": 1})
			before := len(ops(t, srv, id))
			unhealthy := model.Unhealthy
			planner.step = func() {
				_, err := srv.Store.UpdateClusterStatus(context.Background(), id, func(cl *model.Cluster, ngs []*model.NodeGroup) ([]*model.NodeGroup, bool) {
					cl.HealthStatus, cl.HealthStatusReason = &unhealthy, map[string]string{"default-worker": "0/1 nodes ready"}
					for _, g := range ngs {
						g.NodeAddresses = []string{"192.0.2.7"}
					}
					return ngs, true
				})
				if err != nil {
					t.Error(err)
				}
			}
			res := c.do(change.method, strings.Replace(change.path, "%s", id, 1), change.body)
			if planner.step != nil {
				t.Fatalf("the request never reached its capacity plan (answered %d %s); the test did not interleave the status write", res.Status, res.Body)
			}
			if res.Status != http.StatusAccepted {
				t.Fatalf("%s overtaken by a status write: %d %s, want 202", change.name, res.Status, res.Body)
			}
			cl := c.getObject("/v1/clusters/" + id)
			// Changed while being created, the cluster is still being created.
			if cl["health_status"] != string(unhealthy) || cl["status"] != string(model.CreateInProgress) {
				t.Errorf("cluster after both writes: health %v, status %v; want UNHEALTHY, CREATE_IN_PROGRESS", cl["health_status"], cl["status"])
			}
			ng := c.getObject("/v1/clusters/" + id + "/nodegroups/" + change.group)
			if ng[change.field] != change.want {
				t.Errorf("node group %s has %s %v, want %v", change.group, change.field, ng[change.field], change.want)
			}
			if addrs, _ := ng["node_addresses"].([]any); len(addrs) != 1 {
				t.Errorf("node group %s lost the conductor's addresses: %v", change.group, ng["node_addresses"])
			}
			if got := ops(t, srv, id); len(got) != before+1 || got[len(got)-1] != change.op {
				t.Errorf("operations %v: want one %s more than before the request", got, change.op)
			}
		})
	}
}
