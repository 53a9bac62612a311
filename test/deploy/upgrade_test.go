package deploy

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/magnetite-io/magnetite/internal/client"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
	"github.com/magnetite-io/magnetite/internal/testing/testmariadb"
)

// nextMigration is the schema change of the "next release" the rolling
// upgrade test builds: additive, as docs/deploy.md asks of every
// migration (a new nullable column, a new table and its index), so the
// release before it keeps working on the migrated schema.
const nextMigration = `ALTER TABLE clusters ADD COLUMN rollout_note VARCHAR(255) NULL;
CREATE TABLE rollout_marks (id VARCHAR(36) NOT NULL PRIMARY KEY, cluster_id VARCHAR(36) NOT NULL, created_at VARCHAR(32) NOT NULL);
CREATE INDEX rollout_marks_cluster ON rollout_marks (cluster_id);
`

// buildNext builds this tree as its next release would be: the same code
// with one more migration, added through go build -overlay (the product's
// tree is not touched), and another version string.
func buildNext(t *testing.T) (bin string, schema int) {
	t.Helper()
	root := moduleRoot(t)
	dir := t.TempDir()
	schema = store.LatestVersion(store.MySQL) + 1
	if s := store.LatestVersion(store.SQLite) + 1; s != schema {
		t.Fatalf("the dialects' latest migrations differ (%d, %d)", schema-1, s-1)
	}
	sqlFile := filepath.Join(dir, "next.sql")
	if err := os.WriteFile(sqlFile, []byte(nextMigration), 0o600); err != nil {
		t.Fatal(err)
	}
	replace := map[string]string{
		filepath.Join(root, "internal/store/migrations", fmt.Sprintf("%04d_rollout_marks.sql", schema)): sqlFile,
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": replace})
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "magnetite-next")
	build := exec.Command("go", "build", "-overlay", overlayFile, "-o", bin,
		"-ldflags", "-X github.com/magnetite-io/magnetite/internal/version.Version=next", "./cmd/magnetite")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the next release: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("schema %d (sqlite), %d (mysql)", schema, schema)) {
		t.Fatalf("the next release reports %s (%v), want schema %d", out, err, schema)
	}
	return bin, schema
}

// pool is the load balancer in front of the replicas: requests go round
// robin to the replicas in it, as a Service sends them to ready pods, and a
// replica taken out gets no new requests while those it has run to their
// end, as a pod leaves the Service's endpoints before it gets SIGTERM.
type pool struct {
	mu       sync.Mutex
	replicas []*testmagnetite.Process
	next     int
	inFlight map[*testmagnetite.Process]int
}

func (p *pool) add(r *testmagnetite.Process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.replicas = append(p.replicas, r)
}

func (p *pool) remove(r *testmagnetite.Process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.replicas {
		if x == r {
			p.replicas = append(p.replicas[:i], p.replicas[i+1:]...)
			return
		}
	}
}

// pick is the replica the next request goes to; done says the request
// has its answer.
func (p *pool) pick() (r *testmagnetite.Process, done func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	r = p.replicas[p.next%len(p.replicas)]
	if p.inFlight == nil {
		p.inFlight = map[*testmagnetite.Process]int{}
	}
	p.inFlight[r]++
	return r, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.inFlight[r]--
	}
}

// drain takes r out of the pool and waits until its requests have their
// answers: then it may stop.
func (p *pool) drain(t *testing.T, r *testmagnetite.Process) {
	t.Helper()
	p.remove(r)
	testenv.WaitFor(t, r.Name+"'s requests to finish", time.Minute, func() (bool, string) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.inFlight[r] == 0, fmt.Sprintf("%d in flight", p.inFlight[r])
	})
}

// TestRollingUpgradeKeepsServing runs two replicas of this release on one
// MariaDB database and replaces them one by one with the next release,
// whose start migrates the schema while the old replicas serve, the way
// the chart's Deployment rolls (a new pod ready before an old one goes).
// Clients creating, listing, reading and deleting clusters through the
// pool all along get no error, the old release is seen serving on the
// migrated schema, the migration ran once, and afterwards the old release
// refuses to start on the newer schema with a message saying so.
func TestRollingUpgradeKeepsServing(t *testing.T) {
	t.Parallel()
	db := testmariadb.Start(t) // skips under -short
	dsn := db.NewDatabase()
	oldBin := testmagnetite.Build(t)
	newBin, schema := buildNext(t)
	conf := fmt.Sprintf("[database]\nconnection = %s\n[auth]\nnoauth_roles = admin,member\n[quotas]\nmax_clusters_per_project = 100000\n", dsn)
	start := func(bin, name string) *testmagnetite.Process {
		t.Helper()
		p, err := testmagnetite.Start(t, bin, name, testmagnetite.FreeAddr(t), conf)
		if err != nil {
			t.Fatal(err)
		}
		p.WaitReady(t, time.Minute)
		return p
	}

	lb := &pool{}
	a, b := start(oldBin, "old-a"), start(oldBin, "old-b")
	lb.add(a)
	lb.add(b)
	api := func(p *testmagnetite.Process) *client.Client {
		c, err := client.New(p.Base, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Requests run to their end; stop only ends the clients' loops.
	ctx := context.Background()
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	tmpl, err := api(a).CreateTemplate(ctx, map[string]any{"name": "k8s", "coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.31.2", "public": true})
	if err != nil {
		t.Fatal(err)
	}

	// Clients: each creates a cluster, reads it back, lists, and deletes
	// every other one, through whichever replica the pool gives.
	var (
		failures   = make(chan string, 100)
		requests   atomic.Int64
		migrated   atomic.Bool
		oldOnNew   atomic.Int64 // requests the old release answered on the migrated schema
		created    sync.Map     // uuid -> true
		clientsRun sync.WaitGroup
	)
	call := func(what string, f func(*client.Client) error) {
		r, done := lb.pick()
		err := f(api(r))
		done()
		requests.Add(1)
		if err != nil {
			select {
			case failures <- fmt.Sprintf("%s via %s: %v", what, r.Name, err):
			default:
			}
			return
		}
		if migrated.Load() && strings.HasPrefix(r.Name, "old-") {
			oldOnNew.Add(1)
		}
	}
	for w := range 4 {
		clientsRun.Add(1)
		go func() {
			defer clientsRun.Done()
			for n := 0; stop.Err() == nil; n++ {
				name := fmt.Sprintf("w%d-%d", w, n)
				var uuid string
				call("create "+name, func(c *client.Client) (err error) {
					uuid, err = c.CreateCluster(ctx, map[string]any{"name": name, "cluster_template_id": tmpl.UUID, "node_count": 1})
					return err
				})
				if uuid == "" {
					continue
				}
				created.Store(uuid, true)
				call("get "+name, func(c *client.Client) error {
					cl, err := c.GetCluster(ctx, uuid)
					if err == nil && cl.Name != name {
						err = fmt.Errorf("got cluster %q", cl.Name)
					}
					return err
				})
				call("list", func(c *client.Client) error {
					_, err := c.ListClusters(ctx, client.ListOptions{Limit: 20})
					return err
				})
				if n%2 == 1 {
					call("delete "+name, func(c *client.Client) error { return c.DeleteCluster(ctx, uuid) })
				}
			}
		}()
	}
	// waitRequests lets the clients send at least n more requests.
	waitRequests := func(n int64) {
		t.Helper()
		target := requests.Load() + n
		testenv.WaitFor(t, fmt.Sprintf("%d more client requests", n), 2*time.Minute, func() (bool, string) {
			return requests.Load() >= target, fmt.Sprint(requests.Load())
		})
	}
	waitRequests(30)

	// Surge: the first new replica migrates the schema at start, under the
	// migration lock, while both old replicas serve.
	c := start(newBin, "new-c")
	migrated.Store(true)
	lb.add(c)
	waitRequests(30)
	lb.drain(t, a)
	a.Stop()
	waitRequests(30)
	d := start(newBin, "new-d")
	lb.add(d)
	waitRequests(30)
	lb.drain(t, b)
	b.Stop()
	waitRequests(30)
	cancel()
	clientsRun.Wait()
	close(failures)
	for f := range failures {
		t.Errorf("a client got an error during the rolling upgrade: %s", f)
	}
	if n := oldOnNew.Load(); n == 0 {
		t.Error("no request reached the old release after the schema was migrated: the overlap was not tested")
	} else {
		t.Logf("%d requests in all; the old release answered %d of them on the migrated schema", requests.Load(), n)
	}

	// Everything clients made through either release is there.
	var want int
	created.Range(func(_, _ any) bool { want++; return true })
	all, err := api(d).ListClusters(context.Background(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != want {
		t.Errorf("the new release lists %d clusters, clients created %d", len(all), want)
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = testmariadb.User, testmariadb.Password, "tcp", db.Addr
	cfg.DBName = dsn[strings.LastIndex(dsn, "/")+1:]
	raw, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var applied int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, schema).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != 1 {
		t.Errorf("migration %d recorded %d times, want once", schema, applied)
	}

	// The old release does not start on the schema it does not know.
	late, err := testmagnetite.Start(t, oldBin, "old-late", testmagnetite.FreeAddr(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-late.Exited():
	case <-time.After(time.Minute):
		t.Fatal("the old release started on a schema a newer release migrated")
	}
	logText, _ := os.ReadFile(late.Log)
	wantMsg := fmt.Sprintf("the database's schema is at version %d, newer than this build knows (%d)", schema, schema-1)
	if !strings.Contains(string(logText), wantMsg) {
		t.Errorf("the old release's refusal does not say %q:\n%s", wantMsg, logText)
	}
}
