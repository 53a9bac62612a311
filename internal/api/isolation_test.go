package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/magnetite-io/magnetite/internal/certs"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// persona is who calls in the tenant-isolation matrix.
type persona string

const (
	owner     persona = "owner"         // member of project A, which owns the objects
	outsider  persona = "other-project" // member of project B
	readerP   persona = "reader"        // reader of project A
	adminP    persona = "admin"         // admin of the operators' project
	anonymous persona = "no-token"      // no X-Auth-Token at all
	revoked   persona = "revoked-token" // the owner's token, revoked after use
)

// caller sends requests as one persona and keeps every exchange, so a test
// can search all of them for secrets afterwards.
type caller struct {
	w       *isolationWorld
	headers map[string]string
}

type exchange testapi.Response

func (c *caller) send(t testing.TB, method, path string, body any) exchange {
	t.Helper()
	ex := exchange(c.w.srv.Do(t, method, path, body, testapi.Latest(), c.headers))
	c.w.mu.Lock()
	c.w.seen = append(c.w.seen, ex)
	c.w.mu.Unlock()
	return ex
}

// must sends and requires the status, returning the decoded object.
func (c *caller) must(t testing.TB, status int, method, path string, body any) map[string]any {
	t.Helper()
	ex := c.send(t, method, path, body)
	if ex.Status != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, ex.Status, status, ex.Body)
	}
	var m map[string]any
	if len(ex.Body) > 0 {
		if err := json.Unmarshal(ex.Body, &m); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, ex.Body)
		}
	}
	return m
}

// isolationWorld is a running API with objects owned by project A and a
// caller for every persona.
type isolationWorld struct {
	srv       *testapi.Server
	callers   map[persona]*caller
	projectA  string
	projectB  string
	challenge string // expected WWW-Authenticate on 401; "" under noauth
	ids       map[string]string
	fresh     atomic.Int64
	csr       string // a client CSR as magnumclient sends for cluster config

	mu   sync.Mutex
	seen []exchange
}

func (w *isolationWorld) as(p persona) *caller { return w.callers[p] }

func (w *isolationWorld) uniq(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, w.fresh.Add(1))
}

// populate creates the objects the matrix acts on: a private template T and
// a cluster C with an extra node group NG in project A, a public template P
// and a quota of project A.
func (w *isolationWorld) populate(t *testing.T) {
	t.Helper()
	w.ids = map[string]string{"{A}": w.projectA, "{B}": w.projectB}
	w.ids["{T}"] = w.newTemplate(t, owner, false)
	w.ids["{P}"] = w.newTemplate(t, adminP, true)
	w.ids["{C}"] = w.newCluster(t)
	w.ids["{NG}"] = w.newNodeGroup(t)
	w.csr = clientCSR(t)
	w.as(adminP).must(t, http.StatusCreated, "POST", "/v1/quotas", map[string]any{"project_id": w.projectA, "resource": "Cluster", "hard_limit": 500})
}

func (w *isolationWorld) newTemplate(t *testing.T, by persona, public bool) string {
	t.Helper()
	body := map[string]any{"name": w.uniq("tmpl"), "coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.30.4", "public": public}
	return w.as(by).must(t, http.StatusCreated, "POST", "/v1/clustertemplates", body)["uuid"].(string)
}

func (w *isolationWorld) newCluster(t *testing.T) string {
	t.Helper()
	body := map[string]any{"name": w.uniq("cluster"), "cluster_template_id": w.ids["{T}"], "node_count": 1}
	return w.as(owner).must(t, http.StatusAccepted, "POST", "/v1/clusters", body)["uuid"].(string)
}

func (w *isolationWorld) newNodeGroup(t *testing.T) string {
	t.Helper()
	body := map[string]any{"name": w.uniq("ng"), "node_count": 1}
	return w.as(owner).must(t, http.StatusAccepted, "POST", "/v1/clusters/"+w.ids["{C}"]+"/nodegroups", body)["uuid"].(string)
}

func (w *isolationWorld) newQuotaProject(t *testing.T) string {
	t.Helper()
	p := w.uniq("quota-project")
	w.as(adminP).must(t, http.StatusCreated, "POST", "/v1/quotas", map[string]any{"project_id": p, "resource": "Cluster", "hard_limit": 3})
	return p
}

// matrixRow is one endpoint and method with the outcome for each persona.
type matrixRow struct {
	route string // the route pattern as registered
	path  string // with {A} {B} {T} {P} {C} {NG} and {new}
	body  func(w *isolationWorld, p persona) any
	// fresh makes the object {new} stands for, anew for every request, so
	// destructive calls of one persona do not change what the next sees.
	fresh func(t *testing.T, w *isolationWorld) string
	want  map[persona]int // owner, other project, reader, admin
	// wantKeystone replaces want where Keystone changes the outcome.
	wantKeystone map[persona]int
	// public routes answer without a token.
	public bool
	// lists names a placeholder whose id must appear in a 200 answer for
	// exactly the personas of listedFor.
	lists     string
	listedFor []persona
}

func outcome(ownerCode, otherCode, readerCode, adminCode int) map[persona]int {
	return map[persona]int{owner: ownerCode, outsider: otherCode, readerP: readerCode, adminP: adminCode}
}

const (
	ok        = http.StatusOK
	created   = http.StatusCreated
	accepted  = http.StatusAccepted
	noContent = http.StatusNoContent
	forbid    = http.StatusForbidden
	missing   = http.StatusNotFound
	notImpl   = http.StatusNotImplemented
)

func replaceOp(path string, value any) func(*isolationWorld, persona) any {
	return func(*isolationWorld, persona) any {
		return []map[string]any{{"op": "replace", "path": path, "value": value}}
	}
}

func fixed(body any) func(*isolationWorld, persona) any {
	return func(*isolationWorld, persona) any { return body }
}

var (
	freshTemplate = func(t *testing.T, w *isolationWorld) string { return w.newTemplate(t, owner, false) }
	freshPublic   = func(t *testing.T, w *isolationWorld) string { return w.newTemplate(t, adminP, true) }
	freshCluster  = func(t *testing.T, w *isolationWorld) string { return w.newCluster(t) }
	freshNG       = func(t *testing.T, w *isolationWorld) string { return w.newNodeGroup(t) }
	freshQuota    = func(t *testing.T, w *isolationWorld) string { return w.newQuotaProject(t) }
	namedBody     = func(extra map[string]any) func(*isolationWorld, persona) any {
		return func(w *isolationWorld, _ persona) any {
			b := map[string]any{"name": w.uniq("new")}
			for k, v := range extra {
				b[k] = v
			}
			return b
		}
	}
	clusterBody = func(template string) func(*isolationWorld, persona) any {
		return func(w *isolationWorld, _ persona) any {
			return map[string]any{"name": w.uniq("new"), "cluster_template_id": w.ids[template], "node_count": 1}
		}
	}
	bayBody = func(template string) func(*isolationWorld, persona) any {
		return func(w *isolationWorld, _ persona) any {
			return map[string]any{"name": w.uniq("new"), "baymodel_id": w.ids[template], "node_count": 1}
		}
	}
)

var ownProject = []persona{owner, readerP, adminP}

// isolationMatrix is every endpoint and method of the API with the outcome
// Magnum's semantics give each persona. Anonymous and revoked-token callers
// get 401 everywhere except the public version documents.
var isolationMatrix = []matrixRow{
	{route: "GET /{$}", path: "/", public: true, want: outcome(ok, ok, ok, ok)},
	{route: "GET /v1", path: "/v1", public: true, want: outcome(ok, ok, ok, ok)},
	{route: "GET /v1/{$}", path: "/v1/", public: true, want: outcome(ok, ok, ok, ok)},

	{route: "GET /v1/clustertemplates", path: "/v1/clustertemplates", want: outcome(ok, ok, ok, ok), lists: "{T}", listedFor: ownProject},
	{route: "GET /v1/clustertemplates", path: "/v1/clustertemplates", want: outcome(ok, ok, ok, ok), lists: "{P}", listedFor: []persona{owner, outsider, readerP, adminP}},
	{route: "GET /v1/clustertemplates/detail", path: "/v1/clustertemplates/detail", want: outcome(ok, ok, ok, ok), lists: "{T}", listedFor: ownProject},
	{route: "GET /v1/clustertemplates/{ident}", path: "/v1/clustertemplates/{T}", want: outcome(ok, missing, ok, ok)},
	{route: "GET /v1/clustertemplates/{ident}", path: "/v1/clustertemplates/{P}", want: outcome(ok, ok, ok, ok)},
	{route: "POST /v1/clustertemplates", path: "/v1/clustertemplates", body: namedBody(map[string]any{"coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.30.4"}), want: outcome(created, created, forbid, created)},
	{route: "POST /v1/clustertemplates", path: "/v1/clustertemplates", body: namedBody(map[string]any{"coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.30.4", "public": true}), want: outcome(forbid, forbid, forbid, created)},
	{route: "PATCH /v1/clustertemplates/{ident}", path: "/v1/clustertemplates/{T}", body: func(w *isolationWorld, p persona) any {
		return []map[string]any{{"op": "replace", "path": "/name", "value": w.uniq("renamed")}}
	}, want: outcome(ok, missing, forbid, ok)},
	{route: "PATCH /v1/clustertemplates/{ident}", path: "/v1/clustertemplates/{new}", fresh: freshTemplate, body: replaceOp("/public", true), want: outcome(forbid, missing, forbid, ok)},
	{route: "PATCH /v1/clustertemplates/{ident}", path: "/v1/clustertemplates/{P}", body: replaceOp("/tags", "gpu"), want: outcome(forbid, forbid, forbid, ok)},
	{route: "DELETE /v1/clustertemplates/{ident}", path: "/v1/clustertemplates/{new}", fresh: freshTemplate, want: outcome(noContent, missing, forbid, noContent)},
	{route: "DELETE /v1/clustertemplates/{ident}", path: "/v1/clustertemplates/{new}", fresh: freshPublic, want: outcome(forbid, forbid, forbid, noContent)},

	{route: "GET /v1/clusters", path: "/v1/clusters", want: outcome(ok, ok, ok, ok), lists: "{C}", listedFor: ownProject},
	{route: "GET /v1/clusters/detail", path: "/v1/clusters/detail", want: outcome(ok, ok, ok, ok), lists: "{C}", listedFor: ownProject},
	{route: "GET /v1/clusters/{ident}", path: "/v1/clusters/{C}", want: outcome(ok, missing, ok, ok)},
	{route: "POST /v1/clusters", path: "/v1/clusters", body: clusterBody("{T}"), want: outcome(accepted, missing, forbid, accepted)},
	{route: "POST /v1/clusters", path: "/v1/clusters", body: clusterBody("{P}"), want: outcome(accepted, accepted, forbid, accepted)},
	{route: "PATCH /v1/clusters/{ident}", path: "/v1/clusters/{C}", body: replaceOp("/node_count", 2), want: outcome(accepted, missing, forbid, accepted)},
	{route: "DELETE /v1/clusters/{ident}", path: "/v1/clusters/{new}", fresh: freshCluster, want: outcome(noContent, missing, forbid, noContent)},
	{route: "POST /v1/clusters/{ident}/actions/resize", path: "/v1/clusters/{C}/actions/resize", body: fixed(map[string]any{"node_count": 3}), want: outcome(accepted, missing, forbid, accepted)},
	{route: "POST /v1/clusters/{ident}/actions/upgrade", path: "/v1/clusters/{C}/actions/upgrade", body: func(w *isolationWorld, _ persona) any {
		return map[string]any{"cluster_template": w.ids["{T}"]}
	}, want: outcome(accepted, missing, forbid, accepted)},
	// Magnetite's own cluster has nothing to rebase: those allowed to ask
	// are answered 409.
	{route: "POST /v1/clusters/{ident}/actions/rebase", path: "/v1/clusters/{C}/actions/rebase", want: outcome(http.StatusConflict, missing, forbid, http.StatusConflict)},
	{route: "GET /v1/clusters/{ident}/events", path: "/v1/clusters/{C}/events", want: outcome(ok, missing, ok, ok)},

	{route: "GET /v1/clusters/{ident}/nodegroups", path: "/v1/clusters/{C}/nodegroups", want: outcome(ok, missing, ok, ok), lists: "{NG}", listedFor: ownProject},
	{route: "GET /v1/clusters/{ident}/nodegroups/{ng}", path: "/v1/clusters/{C}/nodegroups/{NG}", want: outcome(ok, missing, ok, ok)},
	{route: "POST /v1/clusters/{ident}/nodegroups", path: "/v1/clusters/{C}/nodegroups", body: namedBody(map[string]any{"node_count": 1}), want: outcome(accepted, missing, forbid, accepted)},
	{route: "PATCH /v1/clusters/{ident}/nodegroups/{ng}", path: "/v1/clusters/{C}/nodegroups/{NG}", body: replaceOp("/max_node_count", 5), want: outcome(accepted, missing, forbid, accepted)},
	{route: "DELETE /v1/clusters/{ident}/nodegroups/{ng}", path: "/v1/clusters/{C}/nodegroups/{new}", fresh: freshNG, want: outcome(noContent, missing, forbid, noContent)},

	{route: "GET /v1/quotas", path: "/v1/quotas", want: outcome(ok, ok, ok, ok), lists: "{A}", listedFor: []persona{owner, readerP}},
	{route: "GET /v1/quotas", path: "/v1/quotas?all_tenants=true", want: outcome(ok, ok, ok, ok), lists: "{A}", listedFor: ownProject},
	{route: "GET /v1/quotas/detail", path: "/v1/quotas/detail", want: outcome(ok, ok, ok, ok), lists: "{A}", listedFor: []persona{owner, readerP}},
	{route: "GET /v1/quotas/{project}/{resource}", path: "/v1/quotas/{A}/Cluster", want: outcome(ok, forbid, ok, ok)},
	{route: "POST /v1/quotas", path: "/v1/quotas", body: func(w *isolationWorld, _ persona) any {
		return map[string]any{"project_id": w.uniq("quota-project"), "resource": "Cluster", "hard_limit": 4}
	}, want: outcome(forbid, forbid, forbid, created)},
	{route: "PATCH /v1/quotas/{project}/{resource}", path: "/v1/quotas/{A}/Cluster", body: fixed(map[string]any{"hard_limit": 400}), want: outcome(forbid, forbid, forbid, accepted)},
	{route: "DELETE /v1/quotas/{project}/{resource}", path: "/v1/quotas/{new}/Cluster", fresh: freshQuota, want: outcome(forbid, forbid, forbid, noContent)},

	{route: "GET /v1/certificates/{ident}", path: "/v1/certificates/{C}", want: outcome(ok, missing, ok, ok)},
	// Magnum answers 400 for a CSR naming a cluster the caller cannot see.
	{route: "POST /v1/certificates", path: "/v1/certificates", body: func(w *isolationWorld, _ persona) any {
		return map[string]any{"cluster_uuid": w.ids["{C}"], "csr": w.csr}
	}, want: outcome(created, http.StatusBadRequest, forbid, created)},
	// Rotation is refused for everyone allowed to ask (400, unsupported);
	// another project cannot see the cluster at all.
	{route: "PATCH /v1/certificates/{ident}", path: "/v1/certificates/{C}", want: outcome(http.StatusBadRequest, missing, forbid, http.StatusBadRequest)},
	// Credentials are made with the caller's token in the cluster's project:
	// without Keystone there are none to rotate (400); with Keystone the
	// owner gets a new one and an administrator of another project is told
	// to use a token scoped to the cluster's project.
	{route: "PATCH /v1/credentials/{ident}", path: "/v1/credentials/{C}", want: outcome(http.StatusBadRequest, missing, forbid, http.StatusBadRequest),
		wantKeystone: outcome(accepted, missing, forbid, forbid)},

	// The host inventory is for administrators; no backend is configured
	// here, so an administrator gets 501 where the others get 403.
	{route: "GET /v1/hosts", path: "/v1/hosts", want: outcome(forbid, forbid, forbid, notImpl)},
	{route: "POST /v1/hosts", path: "/v1/hosts", body: fixed(map[string]any{"name": "bm-0", "bmc": map[string]any{"address": "ipmi://192.0.2.10", "username": "admin", "password": "bmc-secret"}}), want: outcome(forbid, forbid, forbid, notImpl)},
	{route: "GET /v1/hosts/{ident}", path: "/v1/hosts/bm-0", want: outcome(forbid, forbid, forbid, notImpl)},
	{route: "DELETE /v1/hosts/{ident}", path: "/v1/hosts/bm-0", want: outcome(forbid, forbid, forbid, notImpl)},
	{route: "POST /v1/hosts/{ident}/actions/{action}", path: "/v1/hosts/bm-0/actions/inspect", body: fixed(map[string]any{}), want: outcome(forbid, forbid, forbid, notImpl)},
	{route: "GET /v1/hosts/operations/{uuid}", path: "/v1/hosts/operations/6f1c2b1e-0000-4000-8000-000000000001", want: outcome(forbid, forbid, forbid, notImpl)},

	// Magnum's bay-era names for templates and clusters: the same objects
	// under the same rules. A bay naming a baymodel the caller cannot see
	// is a 400, as in Magnum's bay controller.
	{route: "GET /v1/baymodels", path: "/v1/baymodels", want: outcome(ok, ok, ok, ok), lists: "{T}", listedFor: ownProject},
	{route: "GET /v1/baymodels", path: "/v1/baymodels", want: outcome(ok, ok, ok, ok), lists: "{P}", listedFor: []persona{owner, outsider, readerP, adminP}},
	{route: "GET /v1/baymodels/detail", path: "/v1/baymodels/detail", want: outcome(ok, ok, ok, ok), lists: "{T}", listedFor: ownProject},
	{route: "GET /v1/baymodels/{ident}", path: "/v1/baymodels/{T}", want: outcome(ok, missing, ok, ok)},
	{route: "GET /v1/baymodels/{ident}", path: "/v1/baymodels/{P}", want: outcome(ok, ok, ok, ok)},
	{route: "POST /v1/baymodels", path: "/v1/baymodels", body: namedBody(map[string]any{"coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.30.4", "keypair_id": "kp"}), want: outcome(created, created, forbid, created)},
	{route: "POST /v1/baymodels", path: "/v1/baymodels", body: namedBody(map[string]any{"coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.30.4", "keypair_id": "kp", "public": true}), want: outcome(forbid, forbid, forbid, created)},
	{route: "PATCH /v1/baymodels/{ident}", path: "/v1/baymodels/{T}", body: func(w *isolationWorld, p persona) any {
		return []map[string]any{{"op": "replace", "path": "/name", "value": w.uniq("renamed")}}
	}, want: outcome(ok, missing, forbid, ok)},
	{route: "PATCH /v1/baymodels/{ident}", path: "/v1/baymodels/{new}", fresh: freshTemplate, body: replaceOp("/public", true), want: outcome(forbid, missing, forbid, ok)},
	{route: "DELETE /v1/baymodels/{ident}", path: "/v1/baymodels/{new}", fresh: freshTemplate, want: outcome(noContent, missing, forbid, noContent)},
	{route: "DELETE /v1/baymodels/{ident}", path: "/v1/baymodels/{new}", fresh: freshPublic, want: outcome(forbid, forbid, forbid, noContent)},

	{route: "GET /v1/bays", path: "/v1/bays", want: outcome(ok, ok, ok, ok), lists: "{C}", listedFor: ownProject},
	{route: "GET /v1/bays/detail", path: "/v1/bays/detail", want: outcome(ok, ok, ok, ok), lists: "{C}", listedFor: ownProject},
	{route: "GET /v1/bays/{ident}", path: "/v1/bays/{C}", want: outcome(ok, missing, ok, ok)},
	{route: "POST /v1/bays", path: "/v1/bays", body: bayBody("{T}"), want: outcome(accepted, http.StatusBadRequest, forbid, accepted)},
	{route: "POST /v1/bays", path: "/v1/bays", body: bayBody("{P}"), want: outcome(accepted, accepted, forbid, accepted)},
	{route: "PATCH /v1/bays/{ident}", path: "/v1/bays/{C}", body: replaceOp("/node_count", 3), want: outcome(accepted, missing, forbid, accepted)},
	{route: "DELETE /v1/bays/{ident}", path: "/v1/bays/{new}", fresh: freshCluster, want: outcome(noContent, missing, forbid, noContent)},

	{route: "GET /v1/stats", path: "/v1/stats", want: outcome(ok, ok, ok, ok)},
	{route: "GET /v1/stats", path: "/v1/stats?project_id={A}", want: outcome(ok, forbid, ok, ok)},
	{route: "GET /v1/mservices", path: "/v1/mservices", want: outcome(forbid, forbid, forbid, ok)},
}

// runMatrix sends every row as every persona the world has and checks the
// status, the error document, the challenge on 401 and what lists show.
func runMatrix(t *testing.T, w *isolationWorld) {
	for _, row := range isolationMatrix {
		name := strings.SplitN(row.route, " ", 2)[0] + " " + row.path
		t.Run(name, func(t *testing.T) {
			for _, p := range []persona{owner, outsider, readerP, adminP, anonymous, revoked} {
				c, present := w.callers[p]
				if !present {
					continue
				}
				want, listed := row.want[p], slices.Contains(row.listedFor, p)
				if row.wantKeystone != nil && w.challenge != "" {
					want = row.wantKeystone[p]
				}
				if p == anonymous || p == revoked {
					want, listed = http.StatusUnauthorized, false
					if row.public {
						want = ok
					}
				}
				path := row.path
				if row.fresh != nil {
					path = strings.ReplaceAll(path, "{new}", row.fresh(t, w))
				}
				for k, v := range w.ids {
					path = strings.ReplaceAll(path, k, v)
				}
				var body any
				if row.body != nil {
					body = row.body(w, p)
				}
				ex := c.send(t, strings.SplitN(row.route, " ", 2)[0], path, body)
				if ex.Status != want {
					t.Errorf("%s: status %d, want %d: %s", p, ex.Status, want, ex.Body)
					continue
				}
				checkAnswer(t, w, p, row, ex, listed)
			}
		})
	}
}

func checkAnswer(t *testing.T, w *isolationWorld, p persona, row matrixRow, ex exchange, listed bool) {
	t.Helper()
	if ex.Status >= 400 {
		var doc struct {
			Errors []struct {
				Status int    `json:"status"`
				Detail string `json:"detail"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(ex.Body, &doc); err != nil || len(doc.Errors) != 1 || doc.Errors[0].Status != ex.Status || doc.Errors[0].Detail == "" {
			t.Errorf("%s: %d answer is not a Magnum error document: %s", p, ex.Status, ex.Body)
		}
	}
	if ex.Status == http.StatusUnauthorized && w.challenge != "" {
		if got := ex.Header.Get("WWW-Authenticate"); got != w.challenge {
			t.Errorf("%s: WWW-Authenticate %q, want %q", p, got, w.challenge)
		}
	}
	if row.lists != "" && ex.Status == ok {
		if shown := bytes.Contains(ex.Body, []byte(w.ids[row.lists])); shown != listed {
			t.Errorf("%s: %s (%s) listed=%v, want %v: %s", p, row.lists, w.ids[row.lists], shown, listed, ex.Body)
		}
	}
}

// noAuthWorld identifies callers by noauth headers, as the embedded default.
func noAuthWorld(t *testing.T, opts ...testapi.Option) *isolationWorld {
	w := &isolationWorld{srv: testapi.Start(t, opts...), projectA: "alpha", projectB: "beta"}
	headers := func(project, roles string) *caller {
		return &caller{w: w, headers: map[string]string{"X-Project-Id": project, "X-User-Id": project + "-user", "X-Roles": roles}}
	}
	w.callers = map[persona]*caller{
		owner:    headers("alpha", "member"),
		outsider: headers("beta", "member"),
		readerP:  headers("alpha", "reader"),
		adminP:   headers("ops", "admin"),
	}
	w.populate(t)
	return w
}

// TestTenantIsolationMatrixNoAuth runs the matrix with noauth headers for
// the four personas that have an identity (noauth accepts any request, so
// there is no missing or revoked token).
func TestTenantIsolationMatrixNoAuth(t *testing.T) {
	runMatrix(t, noAuthWorld(t))
}

// TestIsolationMatrixCoversEveryRoute keeps the matrix complete: every route
// the API registers needs at least one row, and every row a live route.
func TestIsolationMatrixCoversEveryRoute(t *testing.T) {
	routes := map[string]bool{}
	for _, p := range testapi.Start(t).API.RoutesForTest() {
		if strings.Contains(p, " ") { // the catch-all "/" (a 404) has no method
			routes[p] = true
		}
	}
	rows := map[string]bool{}
	for _, r := range isolationMatrix {
		rows[r.route] = true
	}
	for r := range routes {
		if !rows[r] {
			t.Errorf("route %q has no row in isolationMatrix: add one with the outcome for each persona", r)
		}
	}
	for r := range rows {
		if !routes[r] {
			t.Errorf("isolationMatrix row for %q names no registered route", r)
		}
	}
}

// clientCSR is a certificate request for CN=admin, O=system:masters, the
// one `openstack coe cluster config` sends.
func clientCSR(t *testing.T) string {
	t.Helper()
	_, csr, err := certs.AdminKeyAndCSR()
	if err != nil {
		t.Fatal(err)
	}
	return string(csr)
}
