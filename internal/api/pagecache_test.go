package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/metrics"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testmariadb"
)

// viewer is who sends a request, as noauth reads it from headers.
type viewer struct {
	project, roles string
}

var (
	admin    = viewer{"ops", "admin"}
	memberP1 = viewer{"p1", "member"}
	memberP2 = viewer{"p2", "member"}
)

// replicaAPI is one API replica over its own connection pool.
type replicaAPI struct {
	*httptest.Server
	st      *store.DB
	metrics *metrics.Registry
}

func startReplicaAPI(t *testing.T, st *store.DB, cacheBytes int) *replicaAPI {
	t.Helper()
	m := metrics.New(nil, nil, nil)
	h := api.New(api.Options{
		Store: st, Metrics: m, PageCacheBytes: cacheBytes,
		Auth: auth.NoAuth{DefaultProject: "default", DefaultUser: "u", DefaultRoles: []string{"member"}},
		Log:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &replicaAPI{Server: srv, st: st, metrics: m}
}

func (r *replicaAPI) call(t *testing.T, who viewer, method, path string, body any, want int) []byte {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, r.URL+path, rd)
	// Every replica is reached under one name, as behind a load balancer.
	req.Host = "magnum.example:9511"
	req.Header.Set("X-Project-Id", who.project)
	req.Header.Set("X-User-Id", "user-"+who.project)
	req.Header.Set("X-Roles", who.roles)
	req.Header.Set("OpenStack-API-Version", "container-infra latest")
	if strings.HasPrefix(path, "/v1/baymodels") || strings.HasPrefix(path, "/v1/bays") {
		req.Header.Set("OpenStack-API-Version", "container-infra 1.1")
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		if method == "PATCH" {
			req.Header.Set("Content-Type", "application/json-patch+json")
		}
	}
	res, err := r.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s as %v: %d, want %d: %s", method, path, who, res.StatusCode, want, out)
	}
	if method == "GET" && res.ContentLength != int64(len(out)) {
		t.Fatalf("GET %s: Content-Length %d for %d bytes", path, res.ContentLength, len(out))
	}
	return out
}

// hits is how many list requests the replica answered from its page cache.
func (r *replicaAPI) hits(t *testing.T) float64 {
	t.Helper()
	mfs, err := r.metrics.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "magnetite_api_page_cache_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "hit" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func names(t *testing.T, page []byte, collection string) []string {
	t.Helper()
	var m map[string][]struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(page, &m); err != nil {
		t.Fatalf("page: %v: %s", err, page)
	}
	var out []string
	for _, x := range m[collection] {
		s := x.Name
		if x.Status != "" {
			s += "=" + x.Status
		}
		out = append(out, s)
	}
	return out
}

// TestPageCacheNeverServesAStalePageAcrossReplicas runs two API replicas,
// each with its own page cache and connection pool, on one MariaDB
// database. Replica B serves every listing from its cache once it has it;
// after each write through replica A (or the conductor's status writes
// through A's store) B's next answer shows the write.
func TestPageCacheNeverServesAStalePageAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn := testmariadb.Start(t).NewDatabase() // skips under -short
	neverStaleAcrossReplicas(t, func(ctx context.Context) (*store.DB, error) { return store.OpenMySQL(ctx, dsn) })
}

// TestPageCacheNeverServesAStalePageAcrossSQLiteStores is the same on one
// SQLite file opened twice (two connection pools, as two processes on one
// state directory have): on SQLite a replica learns of other connections'
// commits from the file's data version rather than by reading the
// counters on every request.
func TestPageCacheNeverServesAStalePageAcrossSQLiteStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "magnetite.db")
	neverStaleAcrossReplicas(t, func(ctx context.Context) (*store.DB, error) { return store.OpenSQLite(ctx, path) })
}

func neverStaleAcrossReplicas(t *testing.T, open func(context.Context) (*store.DB, error)) {
	ctx := context.Background()
	var stores [2]*store.DB
	for i := range stores {
		st, err := open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[i] = st
	}
	a, b := startReplicaAPI(t, stores[0], 0), startReplicaAPI(t, stores[1], 0)

	// cachedOnB lists path on B twice: the second answer must come from
	// B's cache and be the first's bytes.
	cachedOnB := func(t *testing.T, path string) []byte {
		t.Helper()
		first := b.call(t, memberP1, "GET", path, nil, http.StatusOK)
		before := b.hits(t)
		second := b.call(t, memberP1, "GET", path, nil, http.StatusOK)
		if b.hits(t) != before+1 || !bytes.Equal(first, second) {
			t.Fatalf("GET %s twice on B: not answered from the page cache (hits %v -> %v)", path, before, b.hits(t))
		}
		return second
	}
	expect := func(t *testing.T, path, collection string, want ...string) {
		t.Helper()
		if got := names(t, b.call(t, memberP1, "GET", path, nil, http.StatusOK), collection); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("B serves %s = %v after A's write, want %v", path, got, want)
		}
	}

	tmpl := func(name string) map[string]any {
		return map[string]any{"name": name, "coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.31.2"}
	}
	var first struct{ UUID string }
	json.Unmarshal(a.call(t, memberP1, "POST", "/v1/clustertemplates", tmpl("k8s"), http.StatusCreated), &first)

	cachedOnB(t, "/v1/clustertemplates")
	var spare struct{ UUID string }
	json.Unmarshal(a.call(t, memberP1, "POST", "/v1/clustertemplates", tmpl("spare"), http.StatusCreated), &spare)
	expect(t, "/v1/clustertemplates", "clustertemplates", "k8s", "spare")

	cachedOnB(t, "/v1/clustertemplates/detail?limit=5")
	a.call(t, memberP1, "PATCH", "/v1/clustertemplates/"+spare.UUID,
		[]map[string]any{{"op": "replace", "path": "/name", "value": "renamed"}}, http.StatusOK)
	expect(t, "/v1/clustertemplates/detail?limit=5", "clustertemplates", "k8s", "renamed")

	cachedOnB(t, "/v1/clustertemplates")
	a.call(t, memberP1, "DELETE", "/v1/clustertemplates/"+spare.UUID, nil, http.StatusNoContent)
	expect(t, "/v1/clustertemplates", "clustertemplates", "k8s")

	cachedOnB(t, "/v1/clusters")
	var c struct{ UUID string }
	json.Unmarshal(a.call(t, memberP1, "POST", "/v1/clusters",
		map[string]any{"name": "c1", "cluster_template_id": first.UUID, "node_count": 2}, http.StatusAccepted), &c)
	expect(t, "/v1/clusters", "clusters", "c1=CREATE_IN_PROGRESS")

	// The conductor's status write, through A's store.
	cachedOnB(t, "/v1/clusters/detail")
	ngPath := "/v1/clusters/" + c.UUID + "/nodegroups"
	cachedOnB(t, ngPath)
	if _, err := a.st.UpdateClusterStatus(ctx, c.UUID, func(cl *model.Cluster, ngs []*model.NodeGroup) ([]*model.NodeGroup, bool) {
		cl.Status = model.CreateComplete
		for _, ng := range ngs {
			ng.Status = model.CreateComplete
		}
		return ngs, true
	}); err != nil {
		t.Fatal(err)
	}
	expect(t, "/v1/clusters/detail", "clusters", "c1=CREATE_COMPLETE")
	expect(t, ngPath, "nodegroups", "default-master=CREATE_COMPLETE", "default-worker=CREATE_COMPLETE")

	// The conductor removes the cluster once its objects are gone.
	cachedOnB(t, "/v1/clusters")
	if err := a.st.DeleteCluster(ctx, c.UUID); err != nil {
		t.Fatal(err)
	}
	expect(t, "/v1/clusters", "clusters")
}

// TestPageCacheKeepsPolicyViewsApart asks the same listings, in turn, as an
// administrator, members of two projects, at two microversions and under
// both route families, from a server whose page cache is warm, and
// compares every answer with a server that keeps no pages over the same
// database: a page cached for one view is never served to another.
func TestPageCacheKeepsPolicyViewsApart(t *testing.T) {
	base := testapi.Start(t)
	cached := startReplicaAPI(t, base.Store, 0)
	uncached := startReplicaAPI(t, base.Store, -1)

	type tmpl struct {
		owner          viewer
		name           string
		public, hidden bool
	}
	for _, x := range []tmpl{
		{memberP1, "p1-private", false, false},
		{admin, "p1-public", true, false},
		{memberP2, "p2-private", false, false},
		{admin, "ops-public-hidden", true, true},
		{admin, "ops-private", false, false},
	} {
		body := map[string]any{"name": x.name, "coe": "kubernetes", "image_id": "img", "public": x.public, "hidden": x.hidden}
		uncached.call(t, x.owner, "POST", "/v1/clustertemplates", body, http.StatusCreated)
	}
	var pub struct{ UUID string }
	json.Unmarshal(cached.call(t, memberP1, "GET", "/v1/clustertemplates/p1-public", nil, http.StatusOK), &pub)
	for _, who := range []viewer{memberP1, memberP2} {
		uncached.call(t, who, "POST", "/v1/clusters",
			map[string]any{"name": "c-" + who.project, "cluster_template_id": pub.UUID, "node_count": 1}, http.StatusAccepted)
	}

	paths := []string{"/v1/clustertemplates", "/v1/clustertemplates/detail", "/v1/baymodels", "/v1/clusters",
		"/v1/clusters/detail", "/v1/bays/detail", "/v1/clusters?limit=1"}
	callers := []viewer{admin, memberP1, memberP2, {"p1", "reader"}}
	for round := range 2 {
		for _, path := range paths {
			for _, who := range callers {
				want := uncached.call(t, who, "GET", path, nil, http.StatusOK)
				got := cached.call(t, who, "GET", path, nil, http.StatusOK)
				if !bytes.Equal(got, want) {
					t.Errorf("round %d: GET %s as %v from the page cache:\n%s\nwant\n%s", round, path, who, got, want)
				}
			}
		}
	}
	if cached.hits(t) == 0 {
		t.Fatal("no listing was answered from the page cache")
	}
	// The views themselves are Magnum's.
	seen := map[viewer][]string{}
	for _, who := range callers[:3] {
		seen[who] = names(t, cached.call(t, who, "GET", "/v1/clustertemplates", nil, http.StatusOK), "clustertemplates")
	}
	want := map[viewer]string{
		admin:    "[p1-private p1-public p2-private ops-public-hidden ops-private]",
		memberP1: "[p1-private p1-public]",
		memberP2: "[p1-public p2-private]",
	}
	for who, w := range want {
		if fmt.Sprint(seen[who]) != w {
			t.Errorf("%v sees templates %v, want %s", who, seen[who], w)
		}
	}
}

// TestPageCacheUnderConcurrentWrites lists templates from many clients
// while another creates them: every answer holds at least every template
// whose create had returned before the list was asked, whether it was
// served from the cache, read by the request itself, or shared from a
// concurrent request that read it.
func TestPageCacheUnderConcurrentWrites(t *testing.T) {
	base := testapi.Start(t)
	srv := startReplicaAPI(t, base.Store, 0)
	var created atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				before := created.Load()
				req, _ := http.NewRequest("GET", srv.URL+"/v1/clustertemplates", nil)
				req.Header.Set("X-Project-Id", "p1")
				res, err := srv.Client().Do(req)
				if err != nil {
					errs <- err
					return
				}
				var page struct{ ClusterTemplates []struct{ Name string } }
				err = json.NewDecoder(res.Body).Decode(&page)
				res.Body.Close()
				if err != nil || int64(len(page.ClusterTemplates)) < before {
					errs <- fmt.Errorf("list shows %d templates after %d were created (%v)", len(page.ClusterTemplates), before, err)
					return
				}
			}
		}()
	}
	for i := range 30 {
		srv.call(t, memberP1, "POST", "/v1/clustertemplates",
			map[string]any{"name": fmt.Sprint("t", i), "coe": "kubernetes", "image_id": "img"}, http.StatusCreated)
		created.Add(1)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if srv.hits(t) == 0 {
		t.Error("no list was answered from the page cache")
	}
}
