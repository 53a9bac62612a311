package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/testing/testmariadb"
)

// fakeClock replaces the store's clock for a test; safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func useFakeClock(t *testing.T) *fakeClock {
	t.Helper()
	c := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	old := now
	now = c.now
	t.Cleanup(func() { now = old })
	return c
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// queueBackend opens handles on one fresh database; each call of the
// returned function is a new connection pool, as another process would have.
type queueBackend func(t *testing.T) (open func() *DB)

func sqliteQueue(t *testing.T) func() *DB {
	path := filepath.Join(t.TempDir(), "q.db")
	return func() *DB { return openTestDB(t, path) }
}

// openTestDB opens (creating) a SQLite store at path for one test.
func openTestDB(t *testing.T, path string) *DB {
	t.Helper()
	return mustOpenDB(t, func() (*DB, error) { return OpenSQLite(context.Background(), path) })
}

func mustOpenDB(t *testing.T, open func() (*DB, error)) *DB {
	t.Helper()
	s, err := open()
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestOperationQueue runs the queue's cases on SQLite and, in the full
// suite, on a real MariaDB server.
func TestOperationQueue(t *testing.T) {
	t.Parallel() // a MariaDB of its own
	cases := []struct {
		name string
		run  func(t *testing.T, open func() *DB)
	}{
		{"EachOperationRunsExactlyOnceAcrossProcesses", testClaimRunsEachOperationExactlyOnce},
		{"ExpiredLeaseIsTakenOverAndFencesTheOldWorker", testExpiredLeaseIsTakenOver},
		{"HeartbeatKeepsTheLease", testHeartbeatKeepsTheLease},
		{"OperationsOfOneClusterRunOneAtATimeInOrder", testOperationsOfOneClusterRunInOrder},
		{"TransientFailuresBackOffExponentiallyUpToTheCap", testTransientFailuresBackOff},
		{"NextOperationAtIgnoresQueuedBehindBusyCluster", testNextOperationAt},
		{"PeriodicLeaseHasOneHolderAcrossProcesses", testPeriodicLeaseHasOneHolder},
		{"HostOperationsRunPerHostInOrderApartFromClusterWork", testHostOperations},
		{"HostMirrorKeepsWritesNewerThanAPassList", testHostMirror},
	}
	backends := []struct {
		name string
		mk   func(t *testing.T) queueBackend
	}{
		{"sqlite", func(*testing.T) queueBackend { return sqliteQueue }},
		{"mysql", func(t *testing.T) queueBackend {
			srv := testmariadb.Start(t)
			return func(t *testing.T) func() *DB {
				dsn := srv.NewDatabase()
				return func() *DB { return mustOpenDB(t, func() (*DB, error) { return OpenMySQL(context.Background(), dsn) }) }
			}
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			fresh := b.mk(t)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, fresh(t)) })
			}
		})
	}
}

func enqueue(t *testing.T, s *DB, cluster string, typ model.OperationType) *model.Operation {
	t.Helper()
	op := &model.Operation{UUID: uuid.NewString(), Type: typ, ClusterID: cluster, ProjectID: "p1"}
	if err := s.ApplyClusterChange(context.Background(), ClusterChange{Operation: op}); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	return op
}

func mustClaim(t *testing.T, s *DB, owner string, lease time.Duration) *model.Operation {
	t.Helper()
	op, err := s.ClaimOperation(context.Background(), owner, lease)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return op
}

func claimedUUID(op *model.Operation) string {
	if op == nil {
		return "<none>"
	}
	return op.UUID
}

func testClaimRunsEachOperationExactlyOnce(t *testing.T, open func() *DB) {
	useFakeClock(t)
	// Separate handles have separate connection pools, as separate
	// processes sharing the database would.
	handles := []*DB{open(), open(), open()}
	const clusters, perCluster = 12, 5
	var all []*model.Operation
	for i := range perCluster {
		for c := range clusters {
			all = append(all, enqueue(t, handles[0], fmt.Sprintf("cluster-%02d", c), model.OperationType(fmt.Sprintf("step-%d", i))))
		}
	}

	var mu sync.Mutex
	runs := map[string]int{}
	running := map[string]int{}  // cluster -> operations in flight
	lastID := map[string]int64{} // cluster -> id of the last operation run
	var violations []string
	done := 0

	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	var wg sync.WaitGroup
	for w := range 9 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := handles[w%len(handles)]
			owner := fmt.Sprintf("worker-%d", w)
			for {
				mu.Lock()
				finished := done == len(all)
				mu.Unlock()
				if finished || time.Now().After(deadline) {
					return
				}
				op, err := s.ClaimOperation(ctx, owner, time.Minute)
				if err != nil {
					mu.Lock()
					violations = append(violations, "claim: "+err.Error())
					mu.Unlock()
					return
				}
				if op == nil {
					runtime.Gosched()
					continue
				}
				mu.Lock()
				runs[op.UUID]++
				running[op.ClusterID]++
				if running[op.ClusterID] > 1 {
					violations = append(violations, "two operations of "+op.ClusterID+" ran at once")
				}
				if op.ID < lastID[op.ClusterID] {
					violations = append(violations, fmt.Sprintf("%s: operation %d ran after %d", op.ClusterID, op.ID, lastID[op.ClusterID]))
				}
				lastID[op.ClusterID] = op.ID
				mu.Unlock()

				runtime.Gosched()

				mu.Lock()
				running[op.ClusterID]--
				mu.Unlock()
				if err := s.CompleteOperation(ctx, op); err != nil {
					mu.Lock()
					violations = append(violations, "complete: "+err.Error())
					mu.Unlock()
					return
				}
				mu.Lock()
				done++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	for _, v := range violations {
		t.Error(v)
	}
	for _, op := range all {
		if runs[op.UUID] != 1 {
			t.Errorf("operation %d (%s) ran %d times, want once", op.ID, op.ClusterID, runs[op.UUID])
		}
	}
	ops, err := handles[1].OperationsForCluster(ctx, "cluster-03")
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.State != model.OpSucceeded || op.Attempts != 1 || op.LeaseOwner != "" {
			t.Errorf("operation %d: state %s, attempts %d, lease %q; want succeeded after 1 attempt with no lease",
				op.ID, op.State, op.Attempts, op.LeaseOwner)
		}
	}
}

func testExpiredLeaseIsTakenOver(t *testing.T, open func() *DB) {
	clock := useFakeClock(t)
	s := open()
	ctx := context.Background()
	want := enqueue(t, s, "c1", model.OpClusterCreate)

	first := mustClaim(t, s, "conductor-a", 30*time.Second)
	if claimedUUID(first) != want.UUID || first.Attempts != 1 || first.LeaseOwner != "conductor-a" {
		t.Fatalf("first claim = %+v, want the operation at attempt 1 leased to conductor-a", first)
	}
	if op := mustClaim(t, s, "conductor-b", 30*time.Second); op != nil {
		t.Fatalf("claimed %s while its lease is live", op.UUID)
	}

	// conductor-a dies; once the lease runs out the work is claimable again.
	clock.advance(30 * time.Second)
	second := mustClaim(t, s, "conductor-b", 30*time.Second)
	if claimedUUID(second) != want.UUID || second.Attempts != 2 {
		t.Fatalf("takeover claim = %+v, want the same operation at attempt 2", second)
	}
	for name, call := range map[string]func() error{
		"heartbeat": func() error { return s.Heartbeat(ctx, first, time.Minute) },
		"complete":  func() error { return s.CompleteOperation(ctx, first) },
		"fail":      func() error { return s.FailOperation(ctx, first, errors.New("late"), true) },
	} {
		if err := call(); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("old worker's %s = %v, want ErrLeaseLost", name, err)
		}
	}

	// The same owner name coming back (a restarted process) is fenced by
	// the attempt count, not only by its name.
	clock.advance(31 * time.Second)
	third := mustClaim(t, s, "conductor-b", 30*time.Second)
	if claimedUUID(third) != want.UUID || third.Attempts != 3 {
		t.Fatalf("second takeover = %+v, want attempt 3", third)
	}
	if err := s.CompleteOperation(ctx, second); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("superseded claim of the same owner completed: %v", err)
	}
	if err := s.CompleteOperation(ctx, third); err != nil {
		t.Fatalf("complete current claim: %v", err)
	}
	got, err := s.GetOperation(ctx, want.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != model.OpSucceeded || got.Attempts != 3 {
		t.Errorf("stored operation: state %s attempts %d, want succeeded after 3", got.State, got.Attempts)
	}
}

func testHeartbeatKeepsTheLease(t *testing.T, open func() *DB) {
	clock := useFakeClock(t)
	s := open()
	ctx := context.Background()
	enqueue(t, s, "c1", model.OpClusterCreate)

	op := mustClaim(t, s, "a", 10*time.Second)
	clock.advance(8 * time.Second)
	// Twice at the same instant: the second changes no value and must still
	// count as holding the lease.
	for range 2 {
		if err := s.Heartbeat(ctx, op, 10*time.Second); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
	}
	if want := clock.now().Add(10 * time.Second); op.LeaseExpires == nil || !op.LeaseExpires.Equal(want) {
		t.Errorf("lease expires %v, want %v", op.LeaseExpires, want)
	}
	clock.advance(8 * time.Second)
	if other := mustClaim(t, s, "b", 10*time.Second); other != nil {
		t.Fatal("operation claimed although its lease was extended")
	}
	clock.advance(2 * time.Second)
	if other := mustClaim(t, s, "b", 10*time.Second); other == nil {
		t.Fatal("operation not claimable after the extended lease ran out")
	}
}

func testOperationsOfOneClusterRunInOrder(t *testing.T, open func() *DB) {
	clock := useFakeClock(t)
	s := open()
	ctx := context.Background()
	create := enqueue(t, s, "c1", model.OpClusterCreate)
	resize := enqueue(t, s, "c1", model.OpClusterResize)
	other := enqueue(t, s, "c2", model.OpClusterCreate)
	del := enqueue(t, s, "c1", model.OpClusterDelete)

	expectClaim := func(step string, want *model.Operation) *model.Operation {
		t.Helper()
		got := mustClaim(t, s, "w", time.Minute)
		if claimedUUID(got) != claimedUUID(want) {
			t.Fatalf("%s: claimed %s, want %s", step, claimedUUID(got), claimedUUID(want))
		}
		return got
	}
	running := expectClaim("first claim takes the oldest", create)
	expectClaim("c1 is busy, so c2 goes next", other)
	expectClaim("nothing else is runnable while c1's create runs", nil)
	if err := s.FailOperation(ctx, running, errors.New("mgmt unreachable"), false); err != nil {
		t.Fatal(err)
	}
	expectClaim("a transient failure keeps c1's queue blocked until its retry", nil)

	// The create comes back after its delay, still ahead of the resize.
	clock.advance(running.NextAttemptAt.Sub(clock.now()))
	retry := expectClaim("after the delay", create)
	if retry.Attempts != 2 {
		t.Fatalf("retried create is at attempt %d, want 2", retry.Attempts)
	}
	if err := s.FailOperation(ctx, retry, errors.New("quota exceeded"), true); err != nil {
		t.Fatal(err)
	}
	// A permanent failure ends the create and frees the queue.
	if err := s.CompleteOperation(ctx, expectClaim("after a permanent failure", resize)); err != nil {
		t.Fatal(err)
	}
	expectClaim("after the resize", del)
	stored, err := s.GetOperation(ctx, create.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.State != model.OpFailed || stored.LastError != "quota exceeded" || stored.Attempts != 2 {
		t.Errorf("failed create stored as %s / %q / attempt %d", stored.State, stored.LastError, stored.Attempts)
	}
}

func testTransientFailuresBackOff(t *testing.T, open func() *DB) {
	clock := useFakeClock(t)
	s := open()
	s.SetRetryPolicy(RetryPolicy{Base: time.Second, Max: 16 * time.Second})
	ctx := context.Background()
	want := enqueue(t, s, "c1", model.OpClusterCreate)

	var prev time.Duration
	for attempt := 1; attempt <= 9; attempt++ {
		op := mustClaim(t, s, "w", time.Minute)
		if claimedUUID(op) != want.UUID || op.Attempts != attempt {
			t.Fatalf("attempt %d: claimed %+v", attempt, op)
		}
		if err := s.FailOperation(ctx, op, fmt.Errorf("try %d failed", attempt), false); err != nil {
			t.Fatal(err)
		}
		stored, err := s.GetOperation(ctx, want.UUID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.State != model.OpPending || stored.Attempts != attempt || stored.LastError != fmt.Sprintf("try %d failed", attempt) {
			t.Fatalf("after attempt %d stored %s / %d / %q", attempt, stored.State, stored.Attempts, stored.LastError)
		}
		delay := stored.NextAttemptAt.Sub(clock.now())
		ceiling := min(time.Second<<(attempt-1), 16*time.Second)
		if delay < ceiling/2 || delay > ceiling {
			t.Errorf("attempt %d: retry in %v, want between %v and %v", attempt, delay, ceiling/2, ceiling)
		}
		if delay < prev/2 {
			t.Errorf("attempt %d: delay %v shrank below half of the previous %v", attempt, delay, prev)
		}
		prev = delay

		clock.advance(delay - time.Microsecond)
		if op := mustClaim(t, s, "w", time.Minute); op != nil {
			t.Fatalf("attempt %d: claimed before the retry delay passed", attempt)
		}
		clock.advance(time.Microsecond)
	}
}

func TestRetryDelayIsJitteredAndCapped(t *testing.T) {
	p := RetryPolicy{Base: 2 * time.Second, Max: time.Minute}
	for _, tc := range []struct {
		attempts int
		lo, hi   time.Duration
	}{
		{0, time.Second, 2 * time.Second},
		{1, time.Second, 2 * time.Second},
		{3, 4 * time.Second, 8 * time.Second},
		{5, 16 * time.Second, 32 * time.Second},
		{6, 30 * time.Second, time.Minute},
		{64, 30 * time.Second, time.Minute},
		{1 << 20, 30 * time.Second, time.Minute},
	} {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := p.Delay(tc.attempts)
			if d < tc.lo || d > tc.hi {
				t.Fatalf("Delay(%d) = %v, want within [%v, %v]", tc.attempts, d, tc.lo, tc.hi)
			}
			seen[d] = true
		}
		if len(seen) < 50 {
			t.Errorf("Delay(%d) took only %d distinct values in 200 draws; jitter is missing", tc.attempts, len(seen))
		}
	}
}

func testNextOperationAt(t *testing.T, open func() *DB) {
	clock := useFakeClock(t)
	s := open()
	ctx := context.Background()
	if _, ok, err := s.NextOperationAt(ctx); err != nil || ok {
		t.Fatalf("empty queue: ok=%v err=%v", ok, err)
	}
	enqueue(t, s, "c1", model.OpClusterCreate)
	clock.advance(time.Second)
	enqueue(t, s, "c1", model.OpClusterDelete)
	op := mustClaim(t, s, "w", 45*time.Second)
	at, ok, err := s.NextOperationAt(ctx)
	if err != nil || !ok {
		t.Fatalf("NextOperationAt: ok=%v err=%v", ok, err)
	}
	if !at.Equal(*op.LeaseExpires) {
		t.Errorf("next due at %v, want the running lease's expiry %v (the queued delete is not due)", at, *op.LeaseExpires)
	}
}
