// Package replicas runs two real `magnetite serve` processes on one MariaDB
// database, as a cloud runs several API replicas on its Galera cluster, and
// checks that both serve the same state, that every request's work is
// recorded exactly once, and that the operations queue hands each operation
// to exactly one worker.
package replicas

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
	"github.com/magnetite-io/magnetite/internal/testing/testmariadb"
)

// clusters are created by eight clients at once through both replicas
// while two workers drain their operations: twelve rounds of races, and
// two pages of every project's list. Each create makes the cluster's four
// RSA keys (0.13 CPU-seconds apiece here), so 200 clusters cost the suite
// about 100 CPU-seconds without more kinds of race.
const (
	clusters = 96
	projects = 4
)

// replica is one `magnetite serve` of the pair.
type replica struct {
	*testmagnetite.Process
}

func TestTwoReplicasShareOneMariaDB(t *testing.T) {
	db := testmariadb.Start(t) // skips under -short
	dsn := db.NewDatabase()
	bin := testmagnetite.Build(t)
	addrs := [2]string{testmagnetite.FreeAddr(t), testmagnetite.FreeAddr(t)}

	// Both start at once, so both find an empty database: the migration
	// lock must let exactly one of them create the schema.
	var replicas [2]*replica
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replicas[i] = startReplica(t, bin, fmt.Sprintf("replica-%d", i), addrs[i], dsn)
		}()
	}
	wg.Wait()
	for _, r := range replicas {
		if r == nil {
			t.FailNow()
		}
	}
	waitReady(t, replicas[:])

	template := replicas[0].must(t, "admin", http.StatusCreated, "POST", "/v1/clustertemplates",
		map[string]any{"name": "k8s", "coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.30.4", "public": true})["uuid"].(string)

	// Two workers, each on its own connection pool as a conductor in each
	// process would be, drain the operations queue while the API replicas
	// fill it.
	claims := newClaimLog()
	workersDone := make(chan error, 2)
	creating := make(chan struct{})
	for i := range 2 {
		st, err := store.OpenMySQL(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		go func() { workersDone <- drain(st, fmt.Sprintf("replica-%d", i), creating, claims) }()
	}

	created := make(chan string, clusters)
	errs := make(chan error, clusters)
	var creators sync.WaitGroup
	jobs := make(chan int)
	for range 8 {
		creators.Add(1)
		go func() {
			defer creators.Done()
			for n := range jobs {
				r := replicas[n%2]
				project := fmt.Sprintf("project-%d", n%projects)
				res, body, err := r.call(project, "POST", "/v1/clusters", map[string]any{
					"name": fmt.Sprintf("c-%03d", n), "cluster_template_id": template, "node_count": 1})
				if err != nil || res != http.StatusAccepted {
					errs <- fmt.Errorf("create c-%03d via %s: %d %v %s", n, r.Name, res, err, body)
					continue
				}
				var out struct{ UUID string }
				json.Unmarshal(body, &out)
				created <- out.UUID
			}
		}()
	}
	for n := range clusters {
		jobs <- n
	}
	close(jobs)
	creators.Wait()
	close(creating)
	close(created)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for range 2 {
		if err := <-workersDone; err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
	var uuids []string
	for u := range created {
		uuids = append(uuids, u)
	}
	if len(uuids) != clusters {
		t.Fatalf("%d clusters created, want %d", len(uuids), clusters)
	}

	check, err := store.OpenMySQL(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()

	t.Run("both replicas serve every cluster", func(t *testing.T) {
		for _, r := range replicas {
			seen := map[string]bool{}
			for p := range projects {
				for _, c := range r.listAll(t, fmt.Sprintf("project-%d", p), "/v1/clusters?limit=17") {
					seen[c] = true
				}
			}
			if len(seen) != clusters {
				t.Errorf("%s lists %d clusters, want %d", r.Name, len(seen), clusters)
			}
			for _, u := range uuids[:20] {
				r.must(t, "admin", http.StatusOK, "GET", "/v1/clusters/"+u, nil)
			}
		}
	})

	t.Run("every cluster's create operation exists exactly once and ran exactly once", func(t *testing.T) {
		for _, u := range uuids {
			ops, err := check.OperationsForCluster(context.Background(), u)
			if err != nil {
				t.Fatal(err)
			}
			if len(ops) != 1 || ops[0].Type != model.OpClusterCreate {
				t.Fatalf("cluster %s has operations %+v, want one cluster_create", u, ops)
			}
			op := ops[0]
			if op.State != model.OpSucceeded || op.Attempts != 1 {
				t.Errorf("operation %s: state %s after %d attempts, want succeeded after 1", op.UUID, op.State, op.Attempts)
			}
			if n := claims.count(op.UUID); n != 1 {
				t.Errorf("operation %s was claimed %d times", op.UUID, n)
			}
		}
		if claims.total() != clusters {
			t.Errorf("%d claims for %d operations", claims.total(), clusters)
		}
		perWorker := claims.byOwner()
		if perWorker["replica-0"] == 0 || perWorker["replica-1"] == 0 {
			t.Errorf("one worker did all the work (%v): the test did not exercise two claimers", perWorker)
		}
		t.Logf("claims per worker: %v", perWorker)
	})

	t.Run("a quota holds across replicas under concurrent creates", func(t *testing.T) {
		replicas[1].must(t, "admin", http.StatusCreated, "POST", "/v1/quotas", map[string]any{"project_id": "capped", "resource": "Cluster", "hard_limit": 10})
		var wg sync.WaitGroup
		var mu sync.Mutex
		results := map[int]int{}
		for n := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, body, err := replicas[n%2].call("capped", "POST", "/v1/clusters", map[string]any{
					"name": fmt.Sprintf("q-%02d", n), "cluster_template_id": template, "node_count": 1})
				if err != nil {
					t.Error(err)
					return
				}
				if status != http.StatusAccepted && status != http.StatusForbidden {
					t.Errorf("status %d: %s", status, body)
				}
				mu.Lock()
				results[status]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		n, err := check.CountClusters(context.Background(), "capped")
		if err != nil {
			t.Fatal(err)
		}
		if results[http.StatusAccepted] != 10 || results[http.StatusForbidden] != 20 || n != 10 {
			t.Fatalf("answers %v and %d clusters stored; want 10 accepted, 20 refused, 10 stored", results, n)
		}
	})

	t.Run("conductors report themselves in mservices and the API replicas register none", func(t *testing.T) {
		// The replicas run no conductor; the workers above stand in for
		// one in each, and report as a conductor does.
		for i := range replicas {
			if err := check.ReportService(context.Background(), fmt.Sprintf("replica-%d", i), "magnum-conductor"); err != nil {
				t.Fatal(err)
			}
		}
		var out struct {
			MServices []struct{ Host, Binary, State string } `json:"mservices"`
		}
		raw := replicas[0].mustRaw(t, "admin", http.StatusOK, "GET", "/v1/mservices", nil)
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		up := map[string]bool{}
		for _, s := range out.MServices {
			up[s.Host] = s.State == "up" && s.Binary == "magnum-conductor"
		}
		if len(out.MServices) != 2 || !up["replica-0"] || !up["replica-1"] {
			t.Fatalf("mservices %+v, want the two conductors up and nothing else", out.MServices)
		}
	})

	t.Run("the database password from the configuration is in no log", func(t *testing.T) {
		for _, r := range replicas {
			logs, err := os.ReadFile(r.Log)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(logs, []byte("database ready")) {
				t.Fatalf("%s log lacks the start-up lines; is it the right file?\n%s", r.Name, logs)
			}
			if bytes.Contains(logs, []byte(testmariadb.Password)) {
				t.Errorf("%s logged the database password", r.Name)
			}
		}
	})
}

// claimLog records which worker claimed which operation.
type claimLog struct {
	mu     sync.Mutex
	claims map[string][]string
}

func newClaimLog() *claimLog { return &claimLog{claims: map[string][]string{}} }

func (c *claimLog) add(op, owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.claims[op] = append(c.claims[op], owner)
}

func (c *claimLog) count(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.claims[op])
}

func (c *claimLog) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, owners := range c.claims {
		n += len(owners)
	}
	return n
}

func (c *claimLog) byOwner() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, owners := range c.claims {
		for _, o := range owners {
			out[o]++
		}
	}
	return out
}

// drain claims and completes operations until the API is done creating and
// the queue is empty.
func drain(st *store.DB, owner string, creating <-chan struct{}, claims *claimLog) error {
	ctx := context.Background()
	for {
		done := false
		select {
		case <-creating:
			done = true
		default:
		}
		op, err := st.ClaimOperation(ctx, owner, time.Minute)
		if err != nil {
			return err
		}
		if op == nil {
			if done {
				return nil
			}
			// Nothing runnable yet: wait for the API to queue more, or for
			// creation to end.
			select {
			case <-creating:
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		claims.add(op.UUID, owner)
		if err := st.CompleteOperation(ctx, op); err != nil {
			return fmt.Errorf("complete %s: %w", op.UUID, err)
		}
	}
}

func startReplica(t *testing.T, bin, name, addr, dsn string) *replica {
	p, err := testmagnetite.Start(t, bin, name, addr, fmt.Sprintf(`[database]
connection = %s

[auth]
noauth_roles = member

[quotas]
max_clusters_per_project = 1000

[services]
report_interval = 1s
`, dsn))
	if err != nil {
		t.Error(err)
		return nil
	}
	return &replica{p}
}

func waitReady(t *testing.T, rs []*replica) {
	t.Helper()
	for _, r := range rs {
		r.WaitReady(t, time.Minute)
	}
}

// call sends a request as a caller of project (admin for "admin").
func (r *replica) call(project, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.Base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("OpenStack-API-Version", "container-infra latest")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Project-Id", project)
	if project == "admin" {
		req.Header.Set("X-Roles", "admin,member")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

func (r *replica) mustRaw(t *testing.T, project string, status int, method, path string, body any) []byte {
	t.Helper()
	got, b, err := r.call(project, method, path, body)
	if err != nil {
		t.Fatalf("%s %s via %s: %v", method, path, r.Name, err)
	}
	if got != status {
		t.Fatalf("%s %s via %s: status %d, want %d: %s", method, path, r.Name, got, status, b)
	}
	return b
}

func (r *replica) must(t *testing.T, project string, status int, method, path string, body any) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.mustRaw(t, project, status, method, path, body), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// listAll follows next links and returns every cluster UUID.
func (r *replica) listAll(t *testing.T, project, path string) []string {
	t.Helper()
	var out []string
	for path != "" {
		var page struct {
			Clusters []struct{ UUID string } `json:"clusters"`
			Next     string                  `json:"next"`
		}
		if err := json.Unmarshal(r.mustRaw(t, project, http.StatusOK, "GET", path, nil), &page); err != nil {
			t.Fatal(err)
		}
		for _, c := range page.Clusters {
			out = append(out, c.UUID)
		}
		path = strings.TrimPrefix(page.Next, r.Base)
		if len(page.Clusters) == 0 {
			path = ""
		}
	}
	return out
}
