package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testmariadb"
)

// backend opens fresh databases of one kind; reopen opens the database the
// last fresh call made, as a second process would.
type backend struct {
	name  string
	fresh func(t *testing.T) (db *store.DB, reopen func() (*store.DB, error))
}

// TestStoreOnEveryBackend runs the store's behaviour cases against SQLite and,
// in the full suite, against a real MariaDB server started for the test.
func TestStoreOnEveryBackend(t *testing.T) {
	t.Parallel() // a MariaDB of its own
	backends := []func(t *testing.T) backend{
		func(*testing.T) backend {
			return backend{name: "sqlite", fresh: func(t *testing.T) (*store.DB, func() (*store.DB, error)) {
				path := filepath.Join(t.TempDir(), "magnetite.db")
				open := func() (*store.DB, error) { return store.OpenSQLite(context.Background(), path) }
				return mustOpen(t, open), open
			}}
		},
		func(t *testing.T) backend {
			srv := testmariadb.Start(t)
			return backend{name: "mysql", fresh: func(t *testing.T) (*store.DB, func() (*store.DB, error)) {
				dsn := srv.NewDatabase()
				open := func() (*store.DB, error) { return store.OpenMySQL(context.Background(), dsn) }
				return mustOpen(t, open), open
			}}
		},
	}
	for i, mk := range backends {
		t.Run([]string{"sqlite", "mysql"}[i], func(t *testing.T) {
			b := mk(t)
			for _, c := range storeCases {
				t.Run(c.name, func(t *testing.T) {
					db, reopen := b.fresh(t)
					c.run(t, db, reopen)
				})
			}
		})
	}
}

func mustOpen(t *testing.T, open func() (*store.DB, error)) *store.DB {
	t.Helper()
	db, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var ctx = context.Background()

type storeCase struct {
	name string
	run  func(t *testing.T, db *store.DB, reopen func() (*store.DB, error))
}

func template(project, name string, public, hidden bool) *model.ClusterTemplate {
	return &model.ClusterTemplate{UUID: uuid.NewString(), Name: name, ProjectID: project, UserID: "u",
		TemplateSpec: model.TemplateSpec{COE: "kubernetes", ImageID: "img",
			ServerType: model.ServerTypeVM, Public: public, Hidden: hidden, Labels: map[string]string{}},
		CreatedAt: time.Now().UTC()}
}

func createTemplate(t *testing.T, db *store.DB, ct *model.ClusterTemplate) *model.ClusterTemplate {
	t.Helper()
	if err := db.CreateClusterTemplate(ctx, ct); err != nil {
		t.Fatal(err)
	}
	return ct
}

// clusterChange is a cluster create with its two default node groups and the
// operation that asks for it, as the API writes it.
func clusterChange(project, name, templateUUID string, workers int) store.ClusterChange {
	c := &model.Cluster{UUID: uuid.NewString(), Name: name, ProjectID: project, UserID: "u", ClusterTemplateID: templateUUID,
		Status: model.CreateInProgress, Labels: map[string]string{"kube_tag": "v1.31.1"}, CreatedAt: time.Now().UTC()}
	ngs := []*model.NodeGroup{
		{UUID: uuid.NewString(), Name: "default-master", ClusterID: c.UUID, ProjectID: project, Role: "master", IsDefault: true, NodeCount: 1, Status: model.CreateInProgress, CreatedAt: c.CreatedAt},
		{UUID: uuid.NewString(), Name: "default-worker", ClusterID: c.UUID, ProjectID: project, Role: "worker", IsDefault: true, NodeCount: workers, Status: model.CreateInProgress, CreatedAt: c.CreatedAt},
	}
	op := &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterCreate, ClusterID: c.UUID, ProjectID: project}
	return store.ClusterChange{Cluster: c, Create: true, QuotaLimit: 1000, NodeGroups: ngs, Operation: op}
}

func createCluster(t *testing.T, db *store.DB, project, name, templateUUID string, workers int) store.ClusterChange {
	t.Helper()
	ch := clusterChange(project, name, templateUUID, workers)
	if err := db.ApplyClusterChange(ctx, ch); err != nil {
		t.Fatal(err)
	}
	return ch
}

// recordStatus writes, as the conductor does, a cluster's health and API
// address and an address for each node group.
func recordStatus(t *testing.T, db *store.DB, uuid string, health model.Health) {
	t.Helper()
	_, err := db.UpdateClusterStatus(ctx, uuid, func(cl *model.Cluster, groups []*model.NodeGroup) ([]*model.NodeGroup, bool) {
		cl.HealthStatus = &health
		addr := "https://192.0.2.10:6443"
		cl.APIAddress = &addr
		for i, g := range groups {
			g.NodeAddresses = []string{fmt.Sprintf("192.0.2.2%d", i)}
		}
		return groups, true
	})
	if err != nil {
		t.Fatal(err)
	}
}

// workerOf is the worker group among a cluster's default node groups.
func workerOf(t *testing.T, groups []*model.NodeGroup) *model.NodeGroup {
	t.Helper()
	for _, g := range groups {
		if g.Role == model.RoleWorker {
			return g
		}
	}
	t.Fatal("no worker group")
	return nil
}

// readCluster reads a cluster and its node groups as a request does.
func readCluster(t *testing.T, db *store.DB, uuid string) (*model.Cluster, []*model.NodeGroup) {
	t.Helper()
	c, err := db.GetClusterByUUID(ctx, uuid)
	if err != nil {
		t.Fatal(err)
	}
	ngs, err := db.NodeGroupsOf(ctx, []string{uuid})
	if err != nil {
		t.Fatal(err)
	}
	return c, ngs[uuid]
}

func names[T any](items []T, name func(T) string) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return strings.Join(out, ",")
}

func clusterName(c *model.Cluster) string          { return c.Name }
func templateName(c *model.ClusterTemplate) string { return c.Name }

func wantErr(t *testing.T, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("got %v, want %v", err, sentinel)
	}
}

var storeCases = []storeCase{
	{"migrations are applied once and reopening is a no-op", func(t *testing.T, db *store.DB, reopen func() (*store.DB, error)) {
		v, err := db.SchemaVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := store.LatestVersion(db.Dialect()); v != want || want < 1 {
			t.Fatalf("schema version %d, want %d", v, want)
		}
		again, err := reopen()
		if err != nil {
			t.Fatalf("reopening a migrated database: %v", err)
		}
		defer again.Close()
		if v2, _ := again.SchemaVersion(ctx); v2 != v {
			t.Fatalf("version after reopen %d, want %d", v2, v)
		}
	}},

	{"an older build refuses a database a newer one migrated", func(t *testing.T, db *store.DB, reopen func() (*store.DB, error)) {
		latest := store.LatestVersion(db.Dialect())
		if _, err := db.SQL().ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			latest+1, fmt.Sprintf("%04d_from_a_newer_release.sql", latest+1), "2026-11-23T00:00:00.000000Z"); err != nil {
			t.Fatal(err)
		}
		d, err := reopen()
		if err == nil {
			d.Close()
		}
		wantErr(t, err, store.ErrNewerSchema)
		if !strings.Contains(err.Error(), fmt.Sprintf("version %d, newer than this build knows (%d)", latest+1, latest)) {
			t.Errorf("refusal %q does not say which versions", err)
		}
	}},

	{"processes opening a new database together migrate it once", func(t *testing.T, db *store.DB, reopen func() (*store.DB, error)) {
		// db already migrated its own database; reopen targets the same one,
		// so this checks concurrent opens of an up-to-date schema do not
		// trip over each other either.
		var g errgroup.Group
		for range 4 {
			g.Go(func() error {
				d, err := reopen()
				if err == nil {
					d.Close()
				}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}},

	{"templates: visibility follows project, public and hidden", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		own := createTemplate(t, db, template("alpha", "own", false, false))
		createTemplate(t, db, template("ops", "shared", true, false))
		createTemplate(t, db, template("ops", "retired", true, true))
		createTemplate(t, db, template("beta", "theirs", false, false))
		list := func(sc store.TemplateScope) string {
			cts, err := db.ListClusterTemplates(ctx, sc, store.ListOptions{SortKey: "name"})
			if err != nil {
				t.Fatal(err)
			}
			return names(cts, templateName)
		}
		if got := list(store.TemplateScope{ProjectID: "alpha"}); got != "own,shared" {
			t.Fatalf("alpha sees %s", got)
		}
		if got := list(store.TemplateScope{IsAdmin: true}); got != "own,retired,shared,theirs" {
			t.Fatalf("admin sees %s", got)
		}
		got, err := db.GetClusterTemplate(ctx, store.TemplateScope{ProjectID: "alpha"}, "own")
		if err != nil || got.UUID != own.UUID {
			t.Fatalf("by name: %v %v", got, err)
		}
		_, err = db.GetClusterTemplate(ctx, store.TemplateScope{ProjectID: "alpha"}, "theirs")
		wantErr(t, err, store.ErrNotFound)
	}},

	{"templates: a name shared by two visible templates is ambiguous", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		a := createTemplate(t, db, template("alpha", "k8s", false, false))
		createTemplate(t, db, template("ops", "k8s", true, false))
		_, err := db.GetClusterTemplate(ctx, store.TemplateScope{ProjectID: "alpha"}, "k8s")
		wantErr(t, err, store.ErrAmbiguousName)
		got, err := db.GetClusterTemplate(ctx, store.TemplateScope{ProjectID: "alpha"}, a.UUID)
		if err != nil || got.Name != "k8s" {
			t.Fatalf("by uuid: %v %v", got, err)
		}
	}},

	{"clusters: found by UUID before name, and a name two visible clusters share is ambiguous", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "k8s", false, false))
		a := createCluster(t, db, "alpha", "prod", ct.UUID, 1).Cluster
		b := createCluster(t, db, "beta", "prod", ct.UUID, 1).Cluster
		// A cluster named after another's UUID: the UUID wins.
		named := createCluster(t, db, "beta", a.UUID, ct.UUID, 1).Cluster
		admin, alpha := store.Scope{AllProjects: true}, store.Scope{ProjectID: "alpha"}
		for _, tc := range []struct {
			sc    store.Scope
			ident string
			want  string
		}{{admin, a.UUID, a.UUID}, {admin, b.UUID, b.UUID}, {alpha, "prod", a.UUID}, {admin, named.UUID, named.UUID},
			{store.Scope{ProjectID: "beta"}, a.UUID, named.UUID}} {
			got, err := db.GetCluster(ctx, tc.sc, tc.ident)
			if err != nil || got.UUID != tc.want {
				t.Errorf("GetCluster(%+v, %s) = %v, %v; want %s", tc.sc, tc.ident, got, err, tc.want)
			}
		}
		_, err := db.GetCluster(ctx, admin, "prod")
		wantErr(t, err, store.ErrAmbiguousName)
		_, err = db.GetCluster(ctx, alpha, b.UUID)
		wantErr(t, err, store.ErrNotFound)
		_, err = db.GetCluster(ctx, admin, "nothing")
		wantErr(t, err, store.ErrNotFound)
	}},

	{"templates: a template in use only changes name, public, hidden or tags, and is not deleted", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "k8s", false, false))
		createCluster(t, db, "alpha", "c1", ct.UUID, 1)
		ct.Name = "renamed"
		if err := db.UpdateClusterTemplate(ctx, ct, []string{"name"}); err != nil {
			t.Fatal(err)
		}
		ct.COE = "swarm"
		wantErr(t, db.UpdateClusterTemplate(ctx, ct, []string{"coe"}), store.ErrReferenced)
		wantErr(t, db.DeleteClusterTemplate(ctx, ct.UUID), store.ErrReferenced)
		got, err := db.GetClusterTemplateByUUID(ctx, ct.UUID)
		if err != nil || got.Name != "renamed" || got.COE != "kubernetes" {
			t.Fatalf("after updates: %+v %v", got, err)
		}
	}},

	{"templates: names keep case and full Unicode", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		long := strings.Repeat("ß", 255)
		for _, n := range []string{"Prod", "prod", "クラスタ-🚀", long} {
			createTemplate(t, db, template("alpha", n, false, false))
		}
		for _, n := range []string{"Prod", "prod", "クラスタ-🚀", long} {
			got, err := db.GetClusterTemplate(ctx, store.TemplateScope{ProjectID: "alpha"}, n)
			if err != nil || got.Name != n {
				t.Fatalf("%q: got %v, %v", n, got, err)
			}
		}
	}},

	{"clusters: a create writes cluster, node groups and operation together", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "k8s", false, false))
		ch := createCluster(t, db, "alpha", "c1", ct.UUID, 3)
		c, err := db.GetCluster(ctx, store.Scope{ProjectID: "alpha"}, "c1")
		if err != nil || c.UUID != ch.Cluster.UUID || c.Labels["kube_tag"] != "v1.31.1" {
			t.Fatalf("get: %+v %v", c, err)
		}
		ngs, err := db.NodeGroupsOf(ctx, []string{c.UUID})
		if err != nil || len(ngs[c.UUID]) != 2 || ngs[c.UUID][1].NodeCount != 3 || ngs[c.UUID][0].ID == 0 {
			t.Fatalf("node groups: %+v %v", ngs[c.UUID], err)
		}
		ops, err := db.OperationsForCluster(ctx, c.UUID)
		if err != nil || len(ops) != 1 || ops[0].Type != model.OpClusterCreate || ops[0].State != model.OpPending {
			t.Fatalf("operations: %+v %v", ops, err)
		}
	}},

	{"clusters: a failed create leaves nothing behind", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "k8s", false, false))
		createCluster(t, db, "alpha", "c1", ct.UUID, 1)
		dup := clusterChange("alpha", "c1", ct.UUID, 1)
		wantErr(t, db.ApplyClusterChange(ctx, dup), store.ErrConflict)
		ops, _ := db.OperationsForCluster(ctx, dup.Cluster.UUID)
		ngs, _ := db.NodeGroupsOf(ctx, []string{dup.Cluster.UUID})
		if len(ops) != 0 || len(ngs[dup.Cluster.UUID]) != 0 {
			t.Fatalf("a refused create left %d operations and %d node groups", len(ops), len(ngs[dup.Cluster.UUID]))
		}
		// The same name in another project is fine.
		createCluster(t, db, "beta", "c1", ct.UUID, 1)
	}},

	{"clusters: scope hides other projects and admins see all", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("ops", "k8s", true, false))
		createCluster(t, db, "alpha", "a1", ct.UUID, 1)
		b := createCluster(t, db, "beta", "b1", ct.UUID, 1)
		_, err := db.GetCluster(ctx, store.Scope{ProjectID: "alpha"}, b.Cluster.UUID)
		wantErr(t, err, store.ErrNotFound)
		all, err := db.ListClusters(ctx, store.Scope{AllProjects: true}, store.ListOptions{SortKey: "name"})
		if err != nil || names(all, clusterName) != "a1,b1" {
			t.Fatalf("admin list: %s %v", names(all, clusterName), err)
		}
		mine, err := db.ListClusters(ctx, store.Scope{ProjectID: "alpha"}, store.ListOptions{})
		if err != nil || names(mine, clusterName) != "a1" {
			t.Fatalf("alpha list: %s %v", names(mine, clusterName), err)
		}
	}},

	{"clusters: pages follow the sort key and marker in both directions", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "k8s", false, false))
		for _, n := range []string{"delta", "alpha", "echo", "charlie", "bravo"} {
			createCluster(t, db, "alpha", n, ct.UUID, 1)
		}
		sc := store.Scope{ProjectID: "alpha"}
		page := func(dir, marker string) []*model.Cluster {
			cs, err := db.ListClusters(ctx, sc, store.ListOptions{SortKey: "name", SortDir: dir, Limit: 2, Marker: marker})
			if err != nil {
				t.Fatal(err)
			}
			return cs
		}
		var got []string
		for marker := ""; ; {
			cs := page("asc", marker)
			if len(cs) == 0 {
				break
			}
			got = append(got, names(cs, clusterName))
			marker = cs[len(cs)-1].UUID
		}
		if strings.Join(got, "|") != "alpha,bravo|charlie,delta|echo" {
			t.Fatalf("ascending pages %v", got)
		}
		first := page("desc", "")
		if names(first, clusterName) != "echo,delta" || names(page("desc", first[1].UUID), clusterName) != "charlie,bravo" {
			t.Fatal("descending pages out of order")
		}
		_, err := db.ListClusters(ctx, sc, store.ListOptions{Marker: uuid.NewString()})
		wantErr(t, err, store.ErrInvalidMarker)
		_, err = db.ListClusters(ctx, sc, store.ListOptions{SortKey: "data"})
		wantErr(t, err, store.ErrInvalidSort)
	}},

	{"node groups: numeric columns sort as numbers", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "k8s", false, false))
		ch := createCluster(t, db, "alpha", "c1", ct.UUID, 10)
		extra := &model.NodeGroup{UUID: uuid.NewString(), Name: "gpu", ClusterID: ch.Cluster.UUID, ProjectID: "alpha", Role: "gpu", NodeCount: 9, Status: model.CreateInProgress, CreatedAt: time.Now().UTC()}
		if err := db.ApplyClusterChange(ctx, store.ClusterChange{Cluster: ch.Cluster, NodeGroups: []*model.NodeGroup{extra}}); err != nil {
			t.Fatal(err)
		}
		ngs, err := db.ListNodeGroups(ctx, ch.Cluster.UUID, store.NodeGroupFilter{}, store.ListOptions{SortKey: "node_count"})
		if err != nil {
			t.Fatal(err)
		}
		if counts := names(ngs, func(ng *model.NodeGroup) string { return fmt.Sprint(ng.NodeCount) }); counts != "1,9,10" {
			t.Fatalf("node_count order %v, want 1,9,10", counts)
		}
		byID, err := db.GetNodeGroup(ctx, ch.Cluster.UUID, fmt.Sprint(extra.ID))
		if err != nil || byID.UUID != extra.UUID {
			t.Fatalf("node group by numeric id: %v %v", byID, err)
		}
		workers, err := db.ListNodeGroups(ctx, ch.Cluster.UUID, store.NodeGroupFilter{Role: "worker"}, store.ListOptions{})
		if err != nil || len(workers) != 1 || !workers[0].IsDefault {
			t.Fatalf("role filter: %+v %v", workers, err)
		}
	}},

	{"clusters: delete removes the cluster and its node groups", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "k8s", false, false))
		ch := createCluster(t, db, "alpha", "c1", ct.UUID, 2)
		if err := db.DeleteCluster(ctx, ch.Cluster.UUID); err != nil {
			t.Fatal(err)
		}
		wantErr(t, db.DeleteCluster(ctx, ch.Cluster.UUID), store.ErrNotFound)
		ngs, _ := db.NodeGroupsOf(ctx, []string{ch.Cluster.UUID})
		if len(ngs[ch.Cluster.UUID]) != 0 {
			t.Fatal("node groups outlived their cluster")
		}
		if err := db.DeleteClusterTemplate(ctx, ct.UUID); err != nil {
			t.Fatalf("the template is free again: %v", err)
		}
	}},

	{"quotas: one per project and resource, listed per project or all", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		for i, p := range []string{"alpha", "beta", "gamma"} {
			if err := db.CreateQuota(ctx, &model.Quota{ProjectID: p, Resource: model.QuotaResourceCluster, HardLimit: 9 + i, CreatedAt: time.Now().UTC()}); err != nil {
				t.Fatal(err)
			}
		}
		wantErr(t, db.CreateQuota(ctx, &model.Quota{ProjectID: "alpha", Resource: model.QuotaResourceCluster, HardLimit: 1, CreatedAt: time.Now().UTC()}), store.ErrConflict)
		q, err := db.GetQuota(ctx, "beta", model.QuotaResourceCluster)
		if err != nil || q.HardLimit != 10 {
			t.Fatalf("get: %+v %v", q, err)
		}
		now := time.Now().UTC()
		q.HardLimit, q.UpdatedAt = 100, &now
		if err := db.UpdateQuota(ctx, q); err != nil {
			t.Fatal(err)
		}
		all, err := db.ListQuotas(ctx, "", store.ListOptions{SortKey: "hard_limit", SortDir: "desc"})
		if err != nil {
			t.Fatal(err)
		}
		if limits := names(all, func(q *model.Quota) string { return fmt.Sprint(q.HardLimit) }); limits != "100,11,9" {
			t.Fatalf("hard_limit desc %v, want 100,11,9", limits)
		}
		own, err := db.ListQuotas(ctx, "gamma", store.ListOptions{})
		if err != nil || len(own) != 1 {
			t.Fatalf("own list: %v %v", own, err)
		}
		if err := db.DeleteQuota(ctx, "gamma", model.QuotaResourceCluster); err != nil {
			t.Fatal(err)
		}
		wantErr(t, db.DeleteQuota(ctx, "gamma", model.QuotaResourceCluster), store.ErrNotFound)
		_, err = db.GetQuota(ctx, "gamma", model.QuotaResourceCluster)
		wantErr(t, err, store.ErrNotFound)
	}},

	{"quotas: the project's quota row overrides the default limit", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "k8s", false, false))
		if err := db.CreateQuota(ctx, &model.Quota{ProjectID: "alpha", Resource: model.QuotaResourceCluster, HardLimit: 2, CreatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			ch := clusterChange("alpha", fmt.Sprint("c", i), ct.UUID, 1)
			ch.QuotaLimit = 50
			err := db.ApplyClusterChange(ctx, ch)
			if i < 2 && err != nil {
				t.Fatal(err)
			}
			if i == 2 {
				wantErr(t, err, store.ErrQuotaExceeded)
			}
		}
		ch := clusterChange("beta", "b", ct.UUID, 1)
		ch.QuotaLimit = 0
		wantErr(t, db.ApplyClusterChange(ctx, ch), store.ErrQuotaExceeded)
	}},

	{"quotas: concurrent creates never exceed the limit", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "k8s", false, false))
		const limit, tries = 5, 24
		var wg sync.WaitGroup
		results := make(chan error, tries)
		start := make(chan struct{})
		for i := range tries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ch := clusterChange("alpha", fmt.Sprint("c", i), ct.UUID, 1)
				ch.QuotaLimit = limit
				<-start
				results <- db.ApplyClusterChange(ctx, ch)
			}()
		}
		close(start)
		wg.Wait()
		close(results)
		created, refused := 0, 0
		for err := range results {
			switch {
			case err == nil:
				created++
			case errors.Is(err, store.ErrQuotaExceeded):
				refused++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}
		n, err := db.CountClusters(ctx, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		if created != limit || refused != tries-limit || n != limit {
			t.Fatalf("created %d, refused %d, %d clusters stored; want %d created and stored", created, refused, n, limit)
		}
	}},

	{"credentials: a cluster has one active application credential; rotation retires the old one", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "cred", false, false))
		ch := clusterChange("alpha", "cred-1", ct.UUID, 1)
		ch.Credential = &model.ClusterCredential{ID: "ac-1", ClusterID: ch.Cluster.UUID, UserID: "u1", ProjectID: "alpha", Secret: "one"}
		if err := db.ApplyClusterChange(ctx, ch); err != nil {
			t.Fatal(err)
		}
		rot := store.ClusterChange{Credential: &model.ClusterCredential{ID: "ac-2", ClusterID: ch.Cluster.UUID, UserID: "u2", ProjectID: "alpha", Secret: "two"}}
		if err := db.ApplyClusterChange(ctx, rot); err != nil {
			t.Fatal(err)
		}
		got, err := db.ClusterCredentials(ctx, ch.Cluster.UUID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].ID != "ac-2" || got[0].Retired || got[0].Secret != "two" || got[0].UserID != "u2" || got[1].ID != "ac-1" || !got[1].Retired {
			t.Fatalf("credentials = %+v %+v, want ac-2 active then ac-1 retired", got[0], got[len(got)-1])
		}
		wantErr(t, db.ApplyClusterChange(ctx, rot), store.ErrConflict)
		if err := db.ForgetClusterCredential(ctx, "ac-1"); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.ClusterCredentials(ctx, ch.Cluster.UUID); len(got) != 1 || got[0].ID != "ac-2" {
			t.Fatalf("after forgetting ac-1: %+v", got)
		}
	}},
	{"a write from a stale read is refused whole and, made again from a new read, keeps both writers' changes", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "stale", false, false))
		ch := createCluster(t, db, "alpha", "stale-1", ct.UUID, 2)
		// The API reads the cluster and its node groups...
		c, groups := readCluster(t, db, ch.Cluster.UUID)
		// ...the conductor records health, addresses and the node groups'
		// status...
		healthy := model.Healthy
		recordStatus(t, db, c.UUID, healthy)
		// ...and the API writes its change from the read it made before:
		// refused, nothing of it written.
		change := func(c *model.Cluster, groups []*model.NodeGroup) store.ClusterChange {
			c.Labels = map[string]string{"kube_tag": "v1.33.1"}
			c.Status = model.UpdateInProgress
			worker := workerOf(t, groups)
			worker.NodeCount = 5
			op := &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterUpdate, ClusterID: c.UUID, ProjectID: "alpha"}
			return store.ClusterChange{Cluster: c, NodeGroups: []*model.NodeGroup{worker}, Operation: op}
		}
		err := db.ApplyClusterChange(ctx, change(c, groups))
		wantErr(t, err, store.ErrStale)
		if !strings.Contains(err.Error(), "stale-1 changed while this request was applied") && !strings.Contains(err.Error(), "default-worker changed while this request was applied") {
			t.Errorf("the refusal %q does not say what changed", err)
		}
		got, after := readCluster(t, db, c.UUID)
		if got.Status != model.CreateInProgress || got.Labels["kube_tag"] != "v1.31.1" || workerOf(t, after).NodeCount != 2 {
			t.Fatalf("the refused write left status %s, labels %v, %d workers", got.Status, got.Labels, workerOf(t, after).NodeCount)
		}
		if ops, err := db.OperationsForCluster(ctx, c.UUID); err != nil || len(ops) != 1 {
			t.Fatalf("the refused write queued work: %d operations, %v", len(ops), err)
		}
		// Made again from a new read, the change keeps the conductor's.
		c, groups = readCluster(t, db, c.UUID)
		if err := db.ApplyClusterChange(ctx, change(c, groups)); err != nil {
			t.Fatal(err)
		}
		got, after = readCluster(t, db, c.UUID)
		if got.HealthStatus == nil || *got.HealthStatus != healthy || got.APIAddress == nil || got.Status != model.UpdateInProgress || got.Labels["kube_tag"] != "v1.33.1" {
			t.Errorf("cluster after both writes: health %v, api %v, status %s, labels %v", got.HealthStatus, got.APIAddress, got.Status, got.Labels)
		}
		if got.ResourceVersion != c.ResourceVersion || got.Generation != c.Generation {
			t.Errorf("the writer's copy is at version %d generation %d, the row at %d and %d", c.ResourceVersion, c.Generation, got.ResourceVersion, got.Generation)
		}
		for _, g := range after {
			if len(g.NodeAddresses) != 1 {
				t.Errorf("node group %s lost the conductor's write: addresses %v", g.Name, g.NodeAddresses)
			}
			if g.Role == model.RoleWorker && g.NodeCount != 5 {
				t.Errorf("the worker group lost the API's write: node_count %d", g.NodeCount)
			}
		}
	}},
	{"read-modify-writes of the API and the conductor racing on two connection pools lose no update", func(t *testing.T, db *store.DB, reopen func() (*store.DB, error)) {
		other := mustOpen(t, reopen) // a second replica
		ct := createTemplate(t, db, template("alpha", "count", false, false))
		ch := createCluster(t, db, "alpha", "count-1", ct.UUID, 1)
		const each = 15
		// The API side: each request reads the cluster, adds one to a
		// label and one to the worker's max_node_count, and writes; a
		// request that lost a race is made again from a new read.
		request := func(st *store.DB) error {
			for {
				c, err := st.GetClusterByUUID(ctx, ch.Cluster.UUID)
				if err != nil {
					return err
				}
				ngs, err := st.NodeGroupsOf(ctx, []string{c.UUID})
				if err != nil {
					return err
				}
				n, _ := strconv.Atoi(c.Labels["count"])
				c.Labels = map[string]string{"count": strconv.Itoa(n + 1)}
				w := workerOf(t, ngs[c.UUID])
				bound := 1
				if w.MaxNodeCount != nil {
					bound = *w.MaxNodeCount + 1
				}
				w.MaxNodeCount = &bound
				err = st.ApplyClusterChange(ctx, store.ClusterChange{Cluster: c, NodeGroups: []*model.NodeGroup{w}})
				if !errors.Is(err, store.ErrStale) {
					return err
				}
			}
		}
		// The conductor side: each status write adds one to a health
		// reason and to the worker's address list.
		status := func(st *store.DB) error {
			_, err := st.UpdateClusterStatus(ctx, ch.Cluster.UUID, func(c *model.Cluster, ngs []*model.NodeGroup) ([]*model.NodeGroup, bool) {
				n, _ := strconv.Atoi(c.HealthStatusReason["writes"])
				c.HealthStatusReason = map[string]string{"writes": strconv.Itoa(n + 1)}
				w := workerOf(t, ngs)
				w.NodeAddresses = append(w.NodeAddresses, fmt.Sprint(n))
				return []*model.NodeGroup{w}, true
			})
			return err
		}
		var g errgroup.Group
		for i := range each {
			st := []*store.DB{db, other}[i%2]
			g.Go(func() error { return request(st) })
			g.Go(func() error { return status(st) })
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		c, ngs := readCluster(t, db, ch.Cluster.UUID)
		w := workerOf(t, ngs)
		if c.Labels["count"] != strconv.Itoa(each) || w.MaxNodeCount == nil || *w.MaxNodeCount != each {
			t.Errorf("after %d requests: label count %q, max_node_count %v", each, c.Labels["count"], w.MaxNodeCount)
		}
		if c.HealthStatusReason["writes"] != strconv.Itoa(each) || len(w.NodeAddresses) != each {
			t.Errorf("after %d status writes: writes %q, %d addresses", each, c.HealthStatusReason["writes"], len(w.NodeAddresses))
		}
		if c.ResourceVersion != 1+2*each {
			t.Errorf("the cluster is at version %d after %d writes, want %d", c.ResourceVersion, 2*each, 1+2*each)
		}
	}},
	{"the desired generation rises with the spec, not with status", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "gen", false, false))
		ch := createCluster(t, db, "alpha", "gen-1", ct.UUID, 2)
		c, _ := readCluster(t, db, ch.Cluster.UUID)
		if c.Generation != 1 || c.ResourceVersion != 1 {
			t.Fatalf("a new cluster is at generation %d, version %d; want 1 and 1", c.Generation, c.ResourceVersion)
		}
		recordStatus(t, db, c.UUID, model.Healthy)
		c, groups := readCluster(t, db, c.UUID)
		if c.Generation != 1 || c.ResourceVersion != 2 {
			t.Fatalf("after a status write: generation %d, version %d; want 1 and 2", c.Generation, c.ResourceVersion)
		}
		// A status-only change by the API (a PATCH of health_status).
		unknown := model.Unknown
		c.HealthStatus = &unknown
		if err := db.ApplyClusterChange(ctx, store.ClusterChange{Cluster: c}); err != nil {
			t.Fatal(err)
		}
		if c.Generation != 1 {
			t.Errorf("a health_status change raised the generation to %d", c.Generation)
		}
		// A node group's spec: the cluster's generation rises.
		worker := workerOf(t, groups)
		worker.NodeCount = 4
		if err := db.ApplyClusterChange(ctx, store.ClusterChange{Cluster: c, NodeGroups: []*model.NodeGroup{worker}}); err != nil {
			t.Fatal(err)
		}
		got, _ := readCluster(t, db, c.UUID)
		if got.Generation != 2 || c.Generation != 2 {
			t.Errorf("after a resize: generation %d (writer's copy %d), want 2", got.Generation, c.Generation)
		}
		// The conductor records what it observed, beside the status.
		if _, err := db.UpdateClusterStatus(ctx, c.UUID, func(cl *model.Cluster, _ []*model.NodeGroup) ([]*model.NodeGroup, bool) {
			cl.ObservedGeneration, cl.AppliedGeneration = cl.Generation, 9
			return nil, true
		}); err != nil {
			t.Fatal(err)
		}
		got, _ = readCluster(t, db, c.UUID)
		if got.ObservedGeneration != 2 || got.AppliedGeneration != 9 || got.Generation != 2 {
			t.Errorf("bookkeeping reads observed %d, applied %d, generation %d", got.ObservedGeneration, got.AppliedGeneration, got.Generation)
		}
	}},
	{"a status write keeps the spec as the API wrote it, but for node_count following the autoscaler", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "own", false, false))
		ch := createCluster(t, db, "alpha", "own-1", ct.UUID, 2)
		if _, err := db.UpdateClusterStatus(ctx, ch.Cluster.UUID, func(cl *model.Cluster, groups []*model.NodeGroup) ([]*model.NodeGroup, bool) {
			cl.Labels = map[string]string{"kube_tag": "v9.9.9"}
			cl.Status = model.CreateComplete
			w := workerOf(t, groups)
			w.NodeCount, w.ServerGroupID = 9, "sg-1"
			return []*model.NodeGroup{w}, true
		}); err != nil {
			t.Fatal(err)
		}
		got, groups := readCluster(t, db, ch.Cluster.UUID)
		if got.Labels["kube_tag"] != "v1.31.1" || got.Status != model.CreateComplete {
			t.Errorf("after a status write that touched the spec: labels %v, status %s", got.Labels, got.Status)
		}
		if w := workerOf(t, groups); w.NodeCount != 9 || w.ServerGroupID != "sg-1" || w.Name != "default-worker" {
			t.Errorf("worker after a status write: %q, %d nodes, server group %q; want default-worker, 9 (the autoscaler's) and sg-1", w.Name, w.NodeCount, w.ServerGroupID)
		}
	}},
	{"a change read before a delete cannot commit after it", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "undo", false, false))
		ch := createCluster(t, db, "alpha", "undo-1", ct.UUID, 2)
		// Two requests read the cluster: a resize and a delete.
		read := func() (*model.Cluster, *model.NodeGroup) {
			c, ngs := readCluster(t, db, ch.Cluster.UUID)
			for _, g := range ngs {
				if g.Role == model.RoleWorker {
					return c, g
				}
			}
			t.Fatal("no worker group")
			return nil, nil
		}
		resizeC, resizeNG := read()
		deleteC, _ := read()
		// The delete commits first...
		deleteC.Status = model.DeleteInProgress
		del := &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterDelete, ClusterID: deleteC.UUID, ProjectID: "alpha"}
		if err := db.ApplyClusterChange(ctx, store.ClusterChange{Cluster: deleteC, Operation: del}); err != nil {
			t.Fatal(err)
		}
		// ...then the resize, from its earlier read, is refused whole (the
		// API reads again, sees the delete and answers 409).
		resizeC.Status = model.UpdateInProgress
		resizeNG.NodeCount, resizeNG.Status = 5, model.UpdateInProgress
		resize := &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterResize, ClusterID: resizeC.UUID, ProjectID: "alpha"}
		err := db.ApplyClusterChange(ctx, store.ClusterChange{Cluster: resizeC, NodeGroups: []*model.NodeGroup{resizeNG}, Operation: resize})
		wantErr(t, err, store.ErrStale)
		// A node group is written with its cluster as read, whose version
		// stands for both: a node group change alone is not a change.
		if err := db.ApplyClusterChange(ctx, store.ClusterChange{NodeGroups: []*model.NodeGroup{resizeNG}}); err == nil {
			t.Error("a node group change without its cluster was written")
		}
		got, worker := read()
		if got.Status != model.DeleteInProgress || worker.NodeCount != 2 || worker.Status != model.CreateInProgress {
			t.Errorf("after the refused changes: cluster %s, worker %d nodes %s; want DELETE_IN_PROGRESS, 2, CREATE_IN_PROGRESS", got.Status, worker.NodeCount, worker.Status)
		}
		ops, err := db.OperationsForCluster(ctx, got.UUID)
		if err != nil {
			t.Fatal(err)
		}
		if last := ops[len(ops)-1]; last.Type != model.OpClusterDelete {
			t.Errorf("the last operation queued is %s, want the delete", last.Type)
		}
		// Deleting again is the same delete, not a change.
		again, _ := read()
		if err := db.ApplyClusterChange(ctx, store.ClusterChange{Cluster: again}); err != nil {
			t.Errorf("writing the deleting cluster as it is: %v", err)
		}
	}},
	{"replicas reserve bare-metal hosts one at a time", func(t *testing.T, db *store.DB, reopen func() (*store.DB, error)) {
		if db.Dialect() == store.SQLite {
			t.Skip("one process owns a SQLite database, and BEGIN IMMEDIATE serializes its writers")
		}
		other := mustOpen(t, reopen) // a second replica, with its own connections
		ct := createTemplate(t, db, template("alpha", "bm", false, false))
		a, b := clusterChange("alpha", "a", ct.UUID, 2), clusterChange("alpha", "b", ct.UUID, 2)
		inA, release := make(chan struct{}), make(chan struct{})
		a.Reserve = func([]store.Building) error {
			close(inA)
			<-release
			return nil
		}
		var sawA bool
		b.Reserve = func(building []store.Building) error {
			for _, bl := range building {
				sawA = sawA || bl.Cluster.Name == "a"
			}
			return nil
		}
		errA, errB := make(chan error, 1), make(chan error, 1)
		go func() { errA <- db.ApplyClusterChange(ctx, a) }()
		<-inA
		go func() { errB <- other.ApplyClusterChange(ctx, b) }()
		// b must wait for a's lock: its locking read stays in progress on
		// the server while a holds the row.
		deadline := time.Now().Add(30 * time.Second)
		for {
			var waiting int
			if err := db.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.PROCESSLIST
				WHERE COMMAND = 'Query' AND INFO LIKE 'SELECT name FROM locks %FOR UPDATE'`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting == 1 {
				break
			}
			select {
			case err := <-errB:
				t.Fatalf("the second replica's change finished while the first held the lock: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("the second replica's transaction never reached the lock")
			}
			time.Sleep(10 * time.Millisecond) // polling interval for the server's process list
		}
		close(release)
		if err := <-errA; err != nil {
			t.Fatal(err)
		}
		if err := <-errB; err != nil {
			t.Fatal(err)
		}
		if !sawA {
			t.Error("the second reservation did not see the cluster the first one committed")
		}
	}},
	{"a node group being deleted cannot be changed back", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "ngdel", false, false))
		ch := createCluster(t, db, "alpha", "ngdel-1", ct.UUID, 2)
		extra := &model.NodeGroup{UUID: uuid.NewString(), Name: "extra", ClusterID: ch.Cluster.UUID, ProjectID: "alpha", Role: "worker",
			NodeCount: 1, Status: model.CreateInProgress, CreatedAt: time.Now().UTC()}
		if err := db.ApplyClusterChange(ctx, store.ClusterChange{Cluster: ch.Cluster, NodeGroups: []*model.NodeGroup{extra}}); err != nil {
			t.Fatal(err)
		}
		stale, err := db.GetNodeGroup(ctx, ch.Cluster.UUID, "extra")
		if err != nil {
			t.Fatal(err)
		}
		deleting := *stale
		deleting.Status = model.DeleteInProgress
		if err := db.ApplyClusterChange(ctx, store.ClusterChange{Cluster: ch.Cluster, NodeGroups: []*model.NodeGroup{&deleting}}); err != nil {
			t.Fatal(err)
		}
		stale.NodeCount, stale.Status = 3, model.UpdateInProgress
		wantErr(t, db.ApplyClusterChange(ctx, store.ClusterChange{Cluster: ch.Cluster, NodeGroups: []*model.NodeGroup{stale}}), store.ErrStale)
		got, err := db.GetNodeGroup(ctx, ch.Cluster.UUID, "extra")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != model.DeleteInProgress || got.NodeCount != 1 {
			t.Errorf("node group after the refused change: %s with %d nodes", got.Status, got.NodeCount)
		}
	}},
	{"secrets are sealed at rest with the secret key and readable only with it", func(t *testing.T, db *store.DB, reopen func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("alpha", "seal", false, false))
		// Written before a key was set: stored as they are, sealed later.
		early := clusterChange("alpha", "seal-0", ct.UUID, 1)
		early.Certificates = []*model.ClusterCertificate{{ClusterID: early.Cluster.UUID, Purpose: "ca", CertPEM: []byte("CERT-0"), KeyPEM: []byte("PRIVATE-KEY-0")}}
		if err := db.ApplyClusterChange(ctx, early); err != nil {
			t.Fatal(err)
		}
		key := bytes.Repeat([]byte{7}, 32)
		if err := db.SealSecrets(key); err != nil {
			t.Fatal(err)
		}
		ch := clusterChange("alpha", "seal-1", ct.UUID, 1)
		ch.Certificates = []*model.ClusterCertificate{{ClusterID: ch.Cluster.UUID, Purpose: "ca", CertPEM: []byte("CERT-1"), KeyPEM: []byte("PRIVATE-KEY-1")}}
		ch.Credential = &model.ClusterCredential{ID: "ac-seal", ClusterID: ch.Cluster.UUID, UserID: "u", ProjectID: "alpha", Secret: "APP-CRED-SECRET"}
		if err := db.ApplyClusterChange(ctx, ch); err != nil {
			t.Fatal(err)
		}
		if n, err := db.SealExisting(ctx); err != nil || n != 1 {
			t.Fatalf("SealExisting sealed %d (%v), want the one key written before", n, err)
		}
		var raw strings.Builder
		for _, q := range []string{"SELECT key_pem FROM cluster_certificates", "SELECT secret FROM cluster_credentials"} {
			rows, err := db.SQL().QueryContext(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var v string
				if err := rows.Scan(&v); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(v, "magnetite-sealed:v1:") {
					t.Errorf("%s holds an unsealed value", q)
				}
				raw.WriteString(v)
			}
			rows.Close()
		}
		for _, secret := range []string{"PRIVATE-KEY-0", "PRIVATE-KEY-1", "APP-CRED-SECRET"} {
			if strings.Contains(raw.String(), secret) {
				t.Errorf("%s is readable in the database", secret)
			}
		}
		got, err := db.ClusterCertificate(ctx, early.Cluster.UUID, "ca")
		if err != nil || string(got.KeyPEM) != "PRIVATE-KEY-0" {
			t.Fatalf("sealed key read back as %v, %v", got, err)
		}
		creds, err := db.ClusterCredentials(ctx, ch.Cluster.UUID)
		if err != nil || len(creds) != 1 || creds[0].Secret != "APP-CRED-SECRET" {
			t.Fatalf("sealed credential read back as %+v, %v", creds, err)
		}

		other, err := reopen()
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if _, err := other.ClusterCertificate(ctx, ch.Cluster.UUID, "ca"); !errors.Is(err, store.ErrSealed) || !strings.Contains(err.Error(), "secret_key") {
			t.Errorf("without the key: %v, want ErrSealed naming [database] secret_key", err)
		}
		if err := other.SealSecrets(bytes.Repeat([]byte{8}, 32)); err != nil {
			t.Fatal(err)
		}
		if _, err := other.ClusterCredentials(ctx, ch.Cluster.UUID); !errors.Is(err, store.ErrSealed) {
			t.Errorf("with another key: %v, want ErrSealed", err)
		}
		if err := db.SealSecrets([]byte("short")); err == nil {
			t.Error("a 5-byte key was accepted")
		}
	}},
	{"stats count clusters and nodes per scope", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("ops", "k8s", true, false))
		createCluster(t, db, "alpha", "a1", ct.UUID, 2)
		createCluster(t, db, "alpha", "a2", ct.UUID, 4)
		createCluster(t, db, "beta", "b1", ct.UUID, 10)
		st, err := db.ClusterStats(ctx, store.Scope{ProjectID: "alpha"})
		if err != nil || st.Clusters != 2 || st.Nodes != 8 {
			t.Fatalf("alpha stats %+v %v, want 2 clusters 8 nodes", st, err)
		}
		st, err = db.ClusterStats(ctx, store.Scope{AllProjects: true})
		if err != nil || st.Clusters != 3 || st.Nodes != 19 {
			t.Fatalf("all stats %+v %v, want 3 clusters 19 nodes", st, err)
		}
		st, err = db.ClusterStats(ctx, store.Scope{ProjectID: "empty"})
		if err != nil || st != (store.Stats{}) {
			t.Fatalf("empty project stats %+v %v", st, err)
		}
	}},

	{"services: reports of many replicas make one row each", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		var wg sync.WaitGroup
		for range 8 {
			for _, host := range []string{"api-0", "api-1"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := db.ReportService(ctx, host, "magnetite-api"); err != nil {
						t.Error(err)
					}
				}()
			}
		}
		wg.Wait()
		svcs, err := db.ListServices(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(svcs) != 2 || svcs[0].ReportCount != 8 || svcs[1].ReportCount != 8 || svcs[0].Disabled {
			t.Fatalf("services %+v", svcs)
		}
		if !store.ServiceUp(svcs[0], time.Minute) {
			t.Fatal("a service that just reported is down")
		}
	}},
}

// TestSQLiteFilesArePrivateAndCommitsSynced: the database and its WAL are
// the owner's only whatever the umask and whatever mode the file had, and
// every commit is synced (synchronous=FULL) so an acknowledged write
// survives a power loss.
func TestSQLiteFilesArePrivateAndCommitsSynced(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "magnetite.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	db := mustOpen(t, func() (*store.DB, error) { return store.OpenSQLite(ctx, path) })
	createTemplate(t, db, template("alpha", "wal", false, false))
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	var sync int
	if err := db.SQL().QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if sync != 2 {
		t.Errorf("PRAGMA synchronous = %d, want 2 (FULL)", sync)
	}
}
