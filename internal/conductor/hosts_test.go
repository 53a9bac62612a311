package conductor_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
	"github.com/magnetite-io/magnetite/internal/baremetal/ironic"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"

	"github.com/magnetite-io/magnetite/internal/conductor"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testmariadb"
)

// passLog records the host passes every replica runs against one backend,
// and the host actions they carry out.
type passLog struct {
	mu       sync.Mutex
	running  int
	overlaps int
	by       map[string]int
	// actions counts the backend calls of each action (kind:argument).
	actions map[string]int
}

func (l *passLog) action(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.actions[name]++
}

func (l *passLog) actionCalls(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.actions[name]
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

func (r *recordingBackend) Enroll(ctx context.Context, spec baremetal.HostSpec) (*baremetal.Host, error) {
	r.log.action("enroll")
	return r.Backend.Enroll(ctx, spec)
}

func (r *recordingBackend) Power(ctx context.Context, ident string, a baremetal.PowerAction) (*baremetal.Host, error) {
	r.log.action("power:" + string(a))
	return r.Backend.Power(ctx, ident, a)
}

func (r *recordingBackend) Detach(ctx context.Context, ident, reason string) (*baremetal.Host, error) {
	r.log.action("detach")
	return r.Backend.Detach(ctx, ident, reason)
}

func (r *recordingBackend) Attach(ctx context.Context, ident string) (*baremetal.Host, error) {
	r.log.action("attach")
	return r.Backend.Attach(ctx, ident)
}

func (r *recordingBackend) SetCleaningMode(ctx context.Context, ident, mode string) (*baremetal.Host, error) {
	r.log.action("cleaning_mode:" + mode)
	return r.Backend.SetCleaningMode(ctx, ident, mode)
}

func (r *recordingBackend) Delete(ctx context.Context, ident string, force bool) (baremetal.DeleteOutcome, *baremetal.Host, error) {
	r.log.action("delete")
	return r.Backend.Delete(ctx, ident, force)
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

// TestHostPassRunsInOneReplicaAtATime runs the host pass and host action
// workers of two replicas sharing one MariaDB against a real Ironic
// holding an enrolled host: only one replica runs passes, never two at
// once, and when it stops the other takes over; a host's actions, queued
// as the API queues them, are each carried out by one worker of one
// replica (one backend call per attempt), in order, and the mirror follows.
func TestHostPassRunsInOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: starts real MariaDB and Ironic; runs in the full suite")
	}
	srv := testmariadb.Start(t)
	dsn := srv.NewDatabase()
	irc := testironic.StartIronic(t)
	b, err := ironic.New(ironic.Config{Endpoint: irc.URL, FakeHardware: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec := baremetal.HostSpec{Name: "pass-0", BMCAddress: "ipmi://127.0.0.1:6230",
		HostSettings: baremetal.HostSettings{BootMACAddress: "52:54:00:00:00:10"},
		Credentials:  bmc.Credentials{Username: "admin", Password: "password"}}
	if _, err := baremetal.ValidateSpec(&spec, "baremetal"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enroll(ctx, spec); err != nil {
		t.Fatal(err)
	}
	log := &passLog{by: map[string]int{}, actions: map[string]int{}}
	var queue *store.DB
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
		if queue == nil {
			queue = st
		}
		rb := &recordingBackend{Backend: b, owner: owner, log: log}
		pass := &conductor.HostPass{Store: st, Backend: rb, Owner: owner, Every: 50 * time.Millisecond}
		var wg sync.WaitGroup
		// Two action workers per replica, as two processes' would race.
		for i := range 2 {
			actions := &conductor.HostActions{Store: st, Backend: rb, Owner: fmt.Sprintf("%s-%d", owner, i), IdleWait: 20 * time.Millisecond}
			wg.Add(1)
			go func() { defer wg.Done(); actions.Run(rctx) }()
		}
		wg.Add(1)
		go func() { defer wg.Done(); pass.Run(rctx) }()
		go func() {
			defer close(done)
			wg.Wait()
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
	runHostActions(t, queue, log)
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

// runHostActions queues a host's life as actions, as the API would, and
// checks that each was carried out once per attempt and succeeded, and
// that the mirror shows the host while it exists.
func runHostActions(t *testing.T, st *store.DB, log *passLog) {
	t.Helper()
	ctx := context.Background()
	spec := baremetal.HostSpec{Name: "act-0", BMCAddress: "ipmi://127.0.0.1:6231",
		HostSettings: baremetal.HostSettings{BootMACAddress: "52:54:00:00:00:11",
			TargetState: baremetal.TargetManageable},
		Credentials: bmc.Credentials{Username: "admin", Password: "password"}}
	if _, err := baremetal.ValidateSpec(&spec, "baremetal"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		call   string
		action baremetal.Action
	}{
		{"enroll", baremetal.Action{Kind: baremetal.ActEnroll, Enroll: &spec}},
		{"detach", baremetal.Action{Kind: baremetal.ActDetach, Reason: "rack move"}},
		{"attach", baremetal.Action{Kind: baremetal.ActAttach}},
		{"cleaning_mode:disabled", baremetal.Action{Kind: baremetal.ActCleaningMode, CleaningMode: baremetal.CleaningDisabled}},
		{"power:off", baremetal.Action{Kind: baremetal.ActPower, Power: baremetal.PowerOff}},
		{"delete", baremetal.Action{Kind: baremetal.ActDelete, Force: true}},
	}
	var ops []*store.HostOperation
	for _, s := range steps {
		op := &store.HostOperation{Operation: model.Operation{UUID: uuid.NewString(), ProjectID: "admin"}, Host: "act-0", Action: s.action}
		if err := st.QueueHostOperation(ctx, op); err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	mirrored := false
	deadline := time.Now().Add(2 * time.Minute)
	for i, op := range ops {
		for {
			got, err := st.GetHostOperation(ctx, op.UUID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State == model.OpFailed {
				t.Fatalf("%s failed: %s", steps[i].call, got.LastError)
			}
			if got.State == model.OpSucceeded {
				if n := log.actionCalls(steps[i].call); n != got.Attempts {
					t.Errorf("%s: %d backend calls for %d attempts", steps[i].call, n, got.Attempts)
				}
				break
			}
			if i < len(ops)-1 {
				if _, err := st.MirroredHost(ctx, "act-0"); err == nil {
					mirrored = true
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never ended: %+v", steps[i].call, got)
			}
			time.Sleep(20 * time.Millisecond) // poll interval
		}
	}
	if !mirrored {
		t.Error("the host never showed in the mirror while it existed")
	}
	if _, err := st.MirroredHost(ctx, "act-0"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the deleted host is still mirrored: %v", err)
	}
}
