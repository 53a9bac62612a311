package conductor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
	"github.com/magnetite-io/magnetite/internal/baremetal/ironic"
	"github.com/magnetite-io/magnetite/internal/baremetal/ironictest"
	"github.com/magnetite-io/magnetite/internal/conductor"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testmariadb"
)

// passLog records the host passes every replica runs against one backend.
type passLog struct {
	mu       sync.Mutex
	running  int
	overlaps int
	by       map[string]int
}

func (l *passLog) count(owner string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.by[owner]
}

func (l *passLog) total() (n, overlaps int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.by {
		n += c
	}
	return n, l.overlaps
}

// recordingBackend is a real backend whose passes are recorded under the
// replica that runs them.
type recordingBackend struct {
	baremetal.Backend
	owner string
	log   *passLog
}

func (r *recordingBackend) Reconcile(ctx context.Context) error {
	r.log.mu.Lock()
	r.log.running++
	if r.log.running > 1 {
		r.log.overlaps++
	}
	r.log.by[r.owner]++
	r.log.mu.Unlock()
	defer func() {
		r.log.mu.Lock()
		r.log.running--
		r.log.mu.Unlock()
	}()
	return r.Backend.Reconcile(ctx)
}

// TestHostPassRunsInOneReplicaAtATime runs the host pass of two replicas
// sharing one MariaDB against a real Ironic holding an enrolled host: only
// one replica runs passes, never two at once, and when it stops the other
// takes over.
func TestHostPassRunsInOneReplicaAtATime(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MariaDB and Ironic")
	}
	srv := testmariadb.Start(t)
	dsn := srv.NewDatabase()
	irc := ironictest.StartIronic(t)
	b, err := ironic.New(ironic.Config{Endpoint: irc.URL, FakeHardware: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec := baremetal.HostSpec{Name: "pass-0", BMCAddress: "ipmi://127.0.0.1:6230", BootMACAddress: "52:54:00:00:00:10",
		Credentials: bmc.Credentials{Username: "admin", Password: "password"}}
	if _, err := baremetal.ValidateSpec(&spec, "baremetal"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enroll(ctx, spec); err != nil {
		t.Fatal(err)
	}
	log := &passLog{by: map[string]int{}}
	type replica struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func(owner string) replica {
		st, err := store.OpenMySQL(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		pass := &conductor.HostPass{Store: st, Backend: &recordingBackend{Backend: b, owner: owner, log: log},
			Owner: owner, Every: 50 * time.Millisecond}
		go func() {
			defer close(done)
			pass.Run(rctx)
		}()
		r := replica{cancel: cancel, done: done}
		t.Cleanup(func() { cancel(); <-done })
		return r
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				n, overlaps := log.total()
				t.Fatalf("timed out waiting for %s: passes a=%d b=%d (%d in all, %d overlapping)", what, log.count("a"), log.count("b"), n, overlaps)
			}
			time.Sleep(20 * time.Millisecond) // poll interval
		}
	}
	replicas := map[string]replica{"a": start("a"), "b": start("b")}
	waitFor("ten passes", func() bool { n, _ := log.total(); return n >= 10 })
	holder, other := "a", "b"
	if log.count("b") > 0 {
		holder, other = "b", "a"
	}
	if log.count(other) != 0 {
		t.Fatalf("both replicas ran the host pass: a=%d b=%d", log.count("a"), log.count("b"))
	}
	replicas[holder].cancel()
	<-replicas[holder].done
	stopped := log.count(holder)
	waitFor("the other replica to take over", func() bool { return log.count(other) >= 5 })
	if n := log.count(holder); n != stopped {
		t.Errorf("the stopped replica ran %d passes after it stopped", n-stopped)
	}
	if _, overlaps := log.total(); overlaps != 0 {
		t.Errorf("%d passes ran while another was running", overlaps)
	}
	if h, err := b.Get(ctx, "pass-0"); err != nil || h.ErrorCount != 0 {
		t.Errorf("the enrolled host after the passes: %+v, %v", h, err)
	}
}
