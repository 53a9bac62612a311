package store

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
	"github.com/magnetite-io/magnetite/internal/model"
)

func queueHostAction(t *testing.T, s *DB, host string, a baremetal.Action) *HostOperation {
	t.Helper()
	op := &HostOperation{Operation: model.Operation{UUID: uuid.NewString(), ProjectID: "admin"}, Host: host, Action: a}
	if err := s.QueueHostOperation(context.Background(), op); err != nil {
		t.Fatalf("queue host action: %v", err)
	}
	return op
}

// testHostOperations: host actions share the operations table with cluster
// work but have their own workers: cluster workers never claim them, each
// host's actions run one at a time in order while another host's go on, a
// transient failure waits for its retry, and the end keeps the result but
// not the BMC password, which is sealed while it waits.
func testHostOperations(t *testing.T, open func() *DB) {
	clock := useFakeClock(t)
	ctx := context.Background()
	a, b := open(), open()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*DB{a, b} {
		if err := s.SealSecrets(key); err != nil {
			t.Fatal(err)
		}
	}
	const password = "bmc-hunter2"
	spec := &baremetal.HostSpec{Name: "node-0", BMCAddress: "ipmi://10.0.0.1",
		Credentials: bmc.Credentials{Username: "admin", Password: password}}
	enroll := queueHostAction(t, a, "node-0", baremetal.Action{Kind: baremetal.ActEnroll, Enroll: spec})
	power := queueHostAction(t, a, "node-0", baremetal.Action{Kind: baremetal.ActPower, Power: baremetal.PowerOff})
	other := queueHostAction(t, a, "node-1", baremetal.Action{Kind: baremetal.ActDelete, Force: true})
	cluster := enqueue(t, a, "cluster-1", model.OpClusterCreate)

	var raw string
	if err := a.db.QueryRowContext(ctx, `SELECT payload FROM operations WHERE uuid = ?`, enroll.UUID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw, password) || !strings.HasPrefix(raw, sealedPrefix) {
		t.Fatalf("the queued enrollment keeps the password unsealed: %s", raw)
	}

	// Cluster workers see only cluster work.
	if op := mustClaim(t, b, "cluster-worker", time.Minute); op == nil || op.UUID != cluster.UUID {
		t.Fatalf("a cluster worker claimed %s, want the cluster operation", claimedUUID(op))
	}
	if op := mustClaim(t, b, "cluster-worker", time.Minute); op != nil {
		t.Fatalf("a cluster worker claimed host operation %s", op.UUID)
	}

	claimHost := func(s *DB, owner string) *HostOperation {
		t.Helper()
		op, err := s.ClaimHostOperation(ctx, owner, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	first := claimHost(a, "host-a")
	if first == nil || first.UUID != enroll.UUID || first.Action.Enroll == nil || first.Action.Enroll.Credentials.Password != password ||
		first.Type != "host_enroll" || first.Host != "node-0" || first.Attempts != 1 {
		t.Fatalf("first host claim = %+v, want the enrollment with its password opened", first)
	}
	second := claimHost(b, "host-b")
	if second == nil || second.UUID != other.UUID {
		t.Fatalf("second host claim = %+v, want node-1's delete (node-0's power waits for its enrollment)", second)
	}
	if op := claimHost(b, "host-b"); op != nil {
		t.Fatalf("claimed %s while node-0's enrollment runs", op.UUID)
	}

	// node-1's delete failed transiently: pending again, not before its delay.
	if err := b.FailOperation(ctx, &second.Operation, errors.New("Ironic did not answer"), false); err != nil {
		t.Fatal(err)
	}
	if op := claimHost(b, "host-b"); op != nil {
		t.Fatalf("claimed %s before its retry was due", op.UUID)
	}
	if at, ok, err := a.NextHostOperationAt(ctx); err != nil || !ok || !at.After(clock.now()) {
		t.Fatalf("next host operation at %v, %v, %v; want the retry's time", at, ok, err)
	}

	// The enrollment ends: the result is kept, the password is not.
	host := &baremetal.Host{ID: "uuid-0", Name: "node-0", State: baremetal.StateRegistering}
	if err := a.EndHostOperation(ctx, first, baremetal.ActionResult{Host: host}); err != nil {
		t.Fatal(err)
	}
	got, err := b.GetHostOperation(ctx, enroll.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != model.OpSucceeded || got.Result == nil || got.Result.Host == nil || got.Result.Host.ID != "uuid-0" ||
		got.Action.Enroll == nil || got.Action.Enroll.Credentials.Password != "" || got.Action.Enroll.Name != "node-0" {
		t.Fatalf("ended enrollment = %+v", got)
	}
	if err := a.db.QueryRowContext(ctx, `SELECT payload FROM operations WHERE uuid = ?`, enroll.UUID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw, password) {
		t.Fatalf("the ended enrollment keeps the password: %s", raw)
	}
	// Ending it again (a worker whose lease was taken) is refused.
	if err := b.EndHostOperation(ctx, first, baremetal.ActionResult{}); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("second end: %v, want ErrLeaseLost", err)
	}

	// node-0's next action runs now; a permanent failure keeps its kind.
	next := claimHost(b, "host-b")
	if next == nil || next.UUID != power.UUID || next.Action.Power != baremetal.PowerOff {
		t.Fatalf("claim after the enrollment = %+v, want node-0's power off", next)
	}
	if err := b.EndHostOperation(ctx, next, baremetal.ActionResult{ErrorKind: baremetal.ErrorKindConflict, Error: "host node-0 is detached"}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.GetHostOperation(ctx, power.UUID); err != nil || got.State != model.OpFailed || got.LastError != "host node-0 is detached" ||
		got.Result.ErrorKind != baremetal.ErrorKindConflict {
		t.Fatalf("failed power = %+v, %v", got, err)
	}
	if _, err := a.GetHostOperation(ctx, cluster.UUID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a cluster operation read as a host operation: %v", err)
	}

	clock.advance(time.Hour)
	if op := claimHost(a, "host-a"); op == nil || op.UUID != other.UUID || op.Attempts != 2 {
		t.Fatalf("retry claim = %+v, want node-1's delete, attempt 2", op)
	}
}

// testHostMirror: the mirror keeps what the backend showed, finds hosts by
// id or name, and a pass's list replaces it without undoing what an action
// wrote after the list was taken.
func testHostMirror(t *testing.T, open func() *DB) {
	clock := useFakeClock(t)
	ctx := context.Background()
	s := open()
	names := func() string {
		t.Helper()
		hs, err := s.MirroredHosts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hs {
			out = append(out, h.Name+"="+h.State)
		}
		return strings.Join(out, ",")
	}
	listedAt := clock.now()
	clock.advance(time.Second)
	if err := s.MirrorHosts(ctx, "ironic", []*baremetal.Host{
		{ID: "u1", Name: "node-1", State: baremetal.StateAvailable,
			HostSettings: baremetal.HostSettings{Labels: map[string]string{"rack": "r1"}}},
		{ID: "u0", Name: "node-0", State: baremetal.StateManageable, Hardware: &baremetal.HostHardware{CPUCount: 8}},
	}, listedAt); err != nil {
		t.Fatal(err)
	}
	if got := names(); got != "node-0=manageable,node-1=available" {
		t.Fatalf("mirror = %s", got)
	}
	for _, ident := range []string{"u0", "node-0"} {
		h, err := s.MirroredHost(ctx, ident)
		if err != nil || h.ID != "u0" || h.Hardware == nil || h.Hardware.CPUCount != 8 {
			t.Fatalf("host %s = %+v, %v", ident, h, err)
		}
	}
	if _, err := s.MirroredHost(ctx, "node-9"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown host: %v", err)
	}

	// A pass lists (node-1 has gone from the backend); before it writes, an
	// action enrolls node-2 and another starts inspecting node-0. The pass's
	// older list must not undo either.
	listedAt = clock.now()
	clock.advance(time.Second)
	if err := s.MirrorHost(ctx, "ironic", &baremetal.Host{ID: "u2", Name: "node-2", State: baremetal.StateRegistering}); err != nil {
		t.Fatal(err)
	}
	if err := s.MirrorHost(ctx, "ironic", &baremetal.Host{ID: "u0", Name: "node-0", State: baremetal.StateInspecting}); err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Second)
	if err := s.MirrorHosts(ctx, "ironic", []*baremetal.Host{
		{ID: "u0", Name: "node-0", State: baremetal.StateManageable},
	}, listedAt); err != nil {
		t.Fatal(err)
	}
	if got := names(); got != "node-0=inspecting,node-2=registering" {
		t.Fatalf("mirror after a pass older than two actions = %s, want the actions' writes kept and node-1 gone", got)
	}
	// node-2 is deleted after a pass listed it: that pass does not bring
	// it back, the next one (listing after the delete) keeps it gone.
	listedAt = clock.now()
	clock.advance(time.Second)
	if err := s.ForgetHost(ctx, "node-2"); err != nil {
		t.Fatal(err)
	}
	if got := names(); got != "node-0=inspecting" {
		t.Fatalf("mirror after forgetting node-2 = %s", got)
	}
	if _, err := s.MirroredHost(ctx, "node-2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("forgotten host: %v", err)
	}
	clock.advance(time.Second)
	if err := s.MirrorHosts(ctx, "ironic", []*baremetal.Host{{ID: "u0", Name: "node-0", State: baremetal.StateManageable},
		{ID: "u2", Name: "node-2", State: baremetal.StateRegistering}}, listedAt); err != nil {
		t.Fatal(err)
	}
	if got := names(); got != "node-0=manageable" {
		t.Fatalf("a pass listed before node-2's delete brought it back (or did not update node-0): %s", got)
	}
	listedAt = clock.now()
	clock.advance(time.Second)
	if err := s.MirrorHosts(ctx, "ironic", []*baremetal.Host{{ID: "u0", Name: "node-0", State: baremetal.StateAvailable}}, listedAt); err != nil {
		t.Fatal(err)
	}
	if got := names(); got != "node-0=available" {
		t.Fatalf("mirror after a pass listed after the actions = %s", got)
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM hosts`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("rows after the tombstone's pass = %d, %v; want the tombstone gone", rows, err)
	}
}
