package replicas

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
	"github.com/magnetite-io/magnetite/internal/testing/testmariadb"
)

// racedClusters is how many clusters each backend's race runs on, all at
// once: enough that requests through the two replicas and the status
// writes meet on the same rows many times.
const racedClusters = 24

// TestRacingWritesLoseNothing runs, on MariaDB and on one SQLite file,
// two replicas taking writes for the same clusters while a conductor
// writes their status through the store as the real one does:
//
//   - a PATCH of the cluster and a PATCH of its worker node group, sent at
//     once through different replicas, both take effect;
//   - a PATCH and a DELETE sent at once either both take effect, the
//     PATCH first (its change is stored and its operation precedes the
//     delete), or the PATCH is refused with a 409 and nothing of it is
//     stored; never is a change stored after the delete, nor lost after a
//     202;
//   - the conductor's last status write of every cluster is what the
//     cluster shows, whatever the requests wrote meanwhile, and the
//     requests' statuses (DELETE_IN_PROGRESS) are not undone by it.
func TestRacingWritesLoseNothing(t *testing.T) {
	backends := []struct {
		name string
		// connect is the [database] connection both replicas use, and
		// open opens the same database for the conductor's store.
		connect func(t *testing.T) (conn string, open func(context.Context) (*store.DB, error))
	}{
		{"mariadb", func(t *testing.T) (string, func(context.Context) (*store.DB, error)) {
			dsn := testmariadb.Start(t).NewDatabase() // skips under -short
			return dsn, func(ctx context.Context) (*store.DB, error) { return store.OpenMySQL(ctx, dsn) }
		}},
		{"sqlite", func(t *testing.T) (string, func(context.Context) (*store.DB, error)) {
			if testing.Short() {
				t.Skip("builds and runs magnetite serve twice; runs in the full suite")
			}
			path := filepath.Join(t.TempDir(), "magnetite.db")
			return "sqlite://" + path, func(ctx context.Context) (*store.DB, error) { return store.OpenSQLite(ctx, path) }
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			conn, open := b.connect(t)
			raceOn(t, conn, open)
		})
	}
}

func raceOn(t *testing.T, conn string, open func(context.Context) (*store.DB, error)) {
	ctx := context.Background()
	bin := testmagnetite.Build(t)
	// The first creates the schema, so the second finds it made.
	a := startReplica(t, bin, "replica-a", testmagnetite.FreeAddr(t), conn)
	if a == nil {
		t.FailNow()
	}
	waitReady(t, []*replica{a})
	b := startReplica(t, bin, "replica-b", testmagnetite.FreeAddr(t), conn)
	if b == nil {
		t.FailNow()
	}
	waitReady(t, []*replica{b})
	st, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	template := a.must(t, "admin", http.StatusCreated, "POST", "/v1/clustertemplates",
		map[string]any{"name": "k8s", "coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.30.4", "public": true})["uuid"].(string)
	ids := make([]string, racedClusters)
	for i := range ids {
		ids[i] = a.must(t, "race", http.StatusAccepted, "POST", "/v1/clusters",
			map[string]any{"name": fmt.Sprintf("race-%02d", i), "cluster_template_id": template, "node_count": 1})["uuid"].(string)
	}

	// The conductor: status writes to every cluster, round after round,
	// until the requests are done; it remembers the last it wrote.
	conductor := newStatusWriter(st, ids)
	stop := make(chan struct{})
	conductorDone := make(chan error, 1)
	go func() { conductorDone <- conductor.run(stop) }()

	// Round one: two PATCHes of the same cluster at once, each replica one.
	forEach(ids, func(id string) {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			expect(t, a, http.StatusAccepted, "PATCH", "/v1/clusters/"+id,
				[]map[string]any{{"op": "replace", "path": "/node_count", "value": 3}})
		}()
		go func() {
			defer wg.Done()
			expect(t, b, http.StatusAccepted, "PATCH", "/v1/clusters/"+id+"/nodegroups/default-worker",
				[]map[string]any{{"op": "replace", "path": "/max_node_count", "value": 9}})
		}()
		wg.Wait()
	})
	for _, id := range ids {
		ng := a.must(t, "race", http.StatusOK, "GET", "/v1/clusters/"+id+"/nodegroups/default-worker", nil)
		if ng["node_count"] != float64(3) || ng["max_node_count"] != float64(9) {
			t.Errorf("cluster %s: after two PATCHes at once the worker group has node_count %v, max_node_count %v; want 3 and 9",
				id, ng["node_count"], ng["max_node_count"])
		}
	}

	// Round two: a PATCH and a DELETE at once.
	patched := make(map[string]int, len(ids))
	var mu sync.Mutex
	forEach(ids, func(id string) {
		var wg sync.WaitGroup
		var patch int
		wg.Add(2)
		go func() {
			defer wg.Done()
			var body []byte
			var err error
			patch, body, err = a.call("race", "PATCH", "/v1/clusters/"+id, []map[string]any{{"op": "replace", "path": "/node_count", "value": 2}})
			if err != nil || (patch != http.StatusAccepted && patch != http.StatusConflict) {
				t.Errorf("PATCH racing a DELETE of %s: %d %v %s", id, patch, err, body)
			}
		}()
		go func() {
			defer wg.Done()
			expect(t, b, http.StatusNoContent, "DELETE", "/v1/clusters/"+id, nil)
		}()
		wg.Wait()
		mu.Lock()
		patched[id] = patch
		mu.Unlock()
	})
	close(stop)
	if err := <-conductorDone; err != nil {
		t.Fatal(err)
	}

	outcomes := map[int]int{}
	for _, id := range ids {
		outcomes[patched[id]]++
		cl := a.must(t, "race", http.StatusOK, "GET", "/v1/clusters/"+id, nil)
		worker := b.must(t, "race", http.StatusOK, "GET", "/v1/clusters/"+id+"/nodegroups/default-worker", nil)
		ops, err := st.OperationsForCluster(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		types := make([]model.OperationType, len(ops))
		for i, op := range ops {
			types[i] = op.Type
		}
		if cl["status"] != string(model.DeleteInProgress) || types[len(types)-1] != model.OpClusterDelete {
			t.Errorf("cluster %s: status %v, operations %v; the delete must stand and be the last operation", id, cl["status"], types)
		}
		updates := 0
		for _, ty := range types {
			if ty == model.OpClusterUpdate {
				updates++
			}
		}
		switch patched[id] {
		case http.StatusAccepted:
			if worker["node_count"] != float64(2) || updates != 2 {
				t.Errorf("cluster %s: the PATCH answered 202 but the worker group has node_count %v after operations %v", id, worker["node_count"], types)
			}
		case http.StatusConflict:
			if worker["node_count"] != float64(3) || updates != 1 {
				t.Errorf("cluster %s: the PATCH answered 409 but the worker group has node_count %v after operations %v", id, worker["node_count"], types)
			}
		}
		if worker["max_node_count"] != float64(9) {
			t.Errorf("cluster %s: max_node_count %v, want 9", id, worker["max_node_count"])
		}
		want := conductor.last(id)
		reasons, _ := cl["health_status_reason"].(map[string]any)
		if cl["health_status"] != string(model.Unhealthy) || reasons["writes"] != want {
			t.Errorf("cluster %s: health %v %v, want the conductor's last write (writes %s)", id, cl["health_status"], reasons, want)
		}
		if addrs, _ := worker["node_addresses"].([]any); len(addrs) != 1 || addrs[0] != "192.0.2."+want {
			t.Errorf("cluster %s: worker addresses %v, want the conductor's last write (192.0.2.%s)", id, worker["node_addresses"], want)
		}
	}
	redone := redoneRequests(t, a, b)
	t.Logf("PATCH racing DELETE: %v; %d status writes; %d requests made again after losing a race",
		outcomes, conductor.writes.Load(), redone)
}

// expect sends a request as project "race" and reports (from any
// goroutine) an answer other than status.
func expect(t *testing.T, r *replica, status int, method, path string, body any) {
	got, b, err := r.call("race", method, path, body)
	if err != nil || got != status {
		t.Errorf("%s %s via %s: %d %v %s, want %d", method, path, r.Name, got, err, b, status)
	}
}

// forEach runs f for every id at once and waits for all of them.
func forEach(ids []string, f func(id string)) {
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(id)
		}()
	}
	wg.Wait()
}

// statusWriter writes clusters' status as the conductor does, through
// UpdateClusterStatus: health and its reasons, the node groups' addresses.
type statusWriter struct {
	st     *store.DB
	ids    []string
	writes atomic.Int64
	mu     sync.Mutex
	wrote  map[string]string
}

func newStatusWriter(st *store.DB, ids []string) *statusWriter {
	return &statusWriter{st: st, ids: ids, wrote: map[string]string{}}
}

func (w *statusWriter) run(stop <-chan struct{}) error {
	unhealthy := model.Unhealthy
	// A conductor writes a status when the management cluster reports a
	// change: paced here at 50 writes a second, the rate of a busy fleet,
	// which a SQLite file shared by three writers still serves.
	pace := time.NewTicker(20 * time.Millisecond)
	defer pace.Stop()
	for round := 1; ; round++ {
		select {
		case <-stop:
			// One more round after the requests, so every cluster's last
			// status write is after its last request.
			return w.round(round, &unhealthy, nil)
		default:
		}
		if err := w.round(round, &unhealthy, pace.C); err != nil {
			return err
		}
	}
}

func (w *statusWriter) round(round int, health *model.Health, pace <-chan time.Time) error {
	mark := fmt.Sprint(round % 250)
	for _, id := range w.ids {
		if pace != nil {
			<-pace
		}
		_, err := w.st.UpdateClusterStatus(context.Background(), id, func(c *model.Cluster, ngs []*model.NodeGroup) ([]*model.NodeGroup, bool) {
			c.HealthStatus, c.HealthStatusReason = health, map[string]string{"writes": mark}
			for _, g := range ngs {
				g.NodeAddresses = []string{"192.0.2." + mark}
			}
			return ngs, true
		})
		if err != nil {
			return fmt.Errorf("status write of %s: %w", id, err)
		}
		w.writes.Add(1)
		w.mu.Lock()
		w.wrote[id] = mark
		w.mu.Unlock()
	}
	return nil
}

func (w *statusWriter) last(id string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.wrote[id]
}

// redoneRequests counts the requests the replicas made again after their
// write lost a race, from their logs.
func redoneRequests(t *testing.T, rs ...*replica) int {
	t.Helper()
	n := 0
	for _, r := range rs {
		logs, err := os.ReadFile(r.Log)
		if err != nil {
			t.Fatal(err)
		}
		n += bytes.Count(logs, []byte("request made again from a new read"))
	}
	return n
}
