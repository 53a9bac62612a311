package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/model"
)

// ErrLeaseLost means the operation is no longer held by the caller: its lease
// expired and another worker claimed it, or it already finished. The caller
// must stop working on it and must not write its outcome.
var ErrLeaseLost = errors.New("store: operation lease lost")

// RetryPolicy spaces the attempts of an operation that failed transiently:
// the n-th failure waits a random time between half and all of
// min(Base·2^(n-1), Max), so retries of many operations do not bunch up.
type RetryPolicy struct {
	Base time.Duration
	Max  time.Duration
}

// DefaultRetryPolicy is used until SetRetryPolicy says otherwise.
var DefaultRetryPolicy = RetryPolicy{Base: 5 * time.Second, Max: 5 * time.Minute}

// SetRetryPolicy changes how transient failures are spaced.
func (s *DB) SetRetryPolicy(p RetryPolicy) { s.retry = p }

func (s *DB) retryPolicy() RetryPolicy {
	if s.retry.Base <= 0 || s.retry.Max <= 0 {
		return DefaultRetryPolicy
	}
	return s.retry
}

// Delay is the wait before the attempt that follows the given number of
// attempts already made.
func (p RetryPolicy) Delay(attempts int) time.Duration {
	d := p.Max
	if attempts < 1 {
		attempts = 1
	}
	// Shift only while it cannot overflow past Max.
	if shift := attempts - 1; shift < 62 && p.Base <= p.Max>>shift {
		d = p.Base << shift
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// runnable is the condition under which an operation may be claimed at the
// given time (passed twice): pending and not held back by a retry delay, or
// running under a lease that has expired because its worker died.
const runnable = `((state = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= ?))
	OR (state = 'running' AND lease_expires <= ?))`

// ClaimOperation hands the oldest runnable operation to owner for leaseFor,
// or returns nil, nil when there is none. Operations of one cluster run one at
// a time and in the order they were recorded: only the oldest unfinished
// operation of a cluster is ever a candidate. The claim is a conditional
// UPDATE whose affected-row count decides the race, so it is atomic across
// processes sharing the database. Each claim counts as an attempt.
func (s *DB) ClaimOperation(ctx context.Context, owner string, leaseFor time.Duration) (*model.Operation, error) {
	id, err := s.claim(ctx, owner, leaseFor, clusterQueue)
	if err != nil || id == 0 {
		return nil, err
	}
	return s.getOperation(ctx, id)
}

// A queue is the operations one kind of worker claims, and what orders them:
// only the oldest unfinished operation of each key is ever a candidate.
// Cluster operations queue per cluster; host operations (host_ref set) per
// host.
type queue struct{ scope, key string }

var (
	clusterQueue = queue{scope: "o.host_ref IS NULL", key: "cluster_id"}
	hostQueue    = queue{scope: "o.host_ref IS NOT NULL", key: "host_ref"}
)

// ahead is the condition that no older operation of o's key is unfinished.
func (q queue) ahead() string {
	return `NOT EXISTS (SELECT 1 FROM operations p WHERE p.` + q.key + ` = o.` + q.key + ` AND p.id < o.id
				AND p.state IN ('pending', 'running'))`
}

// claim takes the oldest runnable operation of q for owner and returns its
// id, or 0 when there is none.
func (s *DB) claim(ctx context.Context, owner string, leaseFor time.Duration, q queue) (int64, error) {
	if owner == "" || leaseFor <= 0 {
		return 0, fmt.Errorf("store: claim needs an owner and a positive lease")
	}
	// A few rounds: losing every candidate to other workers is rare, and
	// returning nil then would only delay the work by one poll.
	for range 3 {
		t := formatTime(now())
		rows, err := s.db.QueryContext(ctx, `SELECT id FROM operations o WHERE `+runnable+` AND `+q.scope+`
			AND `+q.ahead()+`
			ORDER BY id LIMIT 8`, t, t)
		if err != nil {
			return 0, fmt.Errorf("store: find runnable operations: %w", err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return 0, err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, err
		}
		if len(ids) == 0 {
			return 0, nil
		}
		expires := formatTime(now().Add(leaseFor))
		for _, id := range ids {
			// A candidate was the oldest unfinished operation of its key
			// when selected; it stays so while it is unfinished, because
			// finished operations never become unfinished again and newer ones
			// have larger ids. So the UPDATE only re-checks runnability.
			res, err := s.db.ExecContext(ctx, `UPDATE operations SET state = 'running', lease_owner = ?, lease_expires = ?,
				next_attempt_at = NULL, attempts = attempts + 1, updated_at = ? WHERE id = ? AND `+runnable,
				owner, expires, t, id, t, t)
			if err != nil {
				return 0, fmt.Errorf("store: claim operation %d: %w", id, err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return 0, err
			} else if n == 1 {
				return id, nil
			}
		}
	}
	return 0, nil
}

func (s *DB) getOperation(ctx context.Context, id int64) (*model.Operation, error) {
	op, err := scanOperation(s.db.QueryRowContext(ctx, "SELECT "+operationCols+" FROM operations WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(ErrNotFound, "operation %d", id)
	}
	return op, err
}

// GetOperation reads one operation by UUID.
func (s *DB) GetOperation(ctx context.Context, uuid string) (*model.Operation, error) {
	op, err := scanOperation(s.db.QueryRowContext(ctx, "SELECT "+operationCols+" FROM operations WHERE uuid = ?", uuid))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(ErrNotFound, "operation %s", uuid)
	}
	return op, err
}

// held is the condition that op is still the caller's: running, leased to
// the same owner, and not claimed again since (the attempt count fences a
// worker whose lease expired and was taken over by an owner of the same name).
const held = `id = ? AND state = 'running' AND lease_owner = ? AND attempts = ?`

// Heartbeat extends the caller's lease on op to leaseFor from now. It returns
// ErrLeaseLost if the lease already passed to another worker.
func (s *DB) Heartbeat(ctx context.Context, op *model.Operation, leaseFor time.Duration) error {
	t := now()
	expires := t.Add(leaseFor)
	res, err := s.db.ExecContext(ctx, `UPDATE operations SET lease_expires = ?, updated_at = ? WHERE `+held,
		formatTime(expires), formatTime(t), op.ID, op.LeaseOwner, op.Attempts)
	if err := leaseResult(res, err, op); err != nil {
		return err
	}
	op.LeaseExpires, op.UpdatedAt = &expires, t
	return nil
}

// CompleteOperation records that op succeeded.
func (s *DB) CompleteOperation(ctx context.Context, op *model.Operation) error {
	t := now()
	res, err := s.db.ExecContext(ctx, `UPDATE operations SET state = 'succeeded', lease_owner = NULL, lease_expires = NULL,
		last_error = NULL, updated_at = ? WHERE `+held, formatTime(t), op.ID, op.LeaseOwner, op.Attempts)
	if err := leaseResult(res, err, op); err != nil {
		return err
	}
	op.State, op.LeaseOwner, op.LeaseExpires, op.LastError, op.UpdatedAt = model.OpSucceeded, "", nil, "", t
	return nil
}

// FailOperation records that an attempt at op failed with cause. A permanent
// failure ends the operation (and lets the cluster's next operation run); a
// transient one puts it back in the queue after the retry policy's delay for
// the attempts made so far.
func (s *DB) FailOperation(ctx context.Context, op *model.Operation, cause error, permanent bool) error {
	msg := "unknown error"
	if cause != nil {
		msg = cause.Error()
	}
	t := now()
	state := model.OpFailed
	var next *time.Time
	if !permanent {
		state = model.OpPending
		n := t.Add(s.retryPolicy().Delay(op.Attempts))
		next = &n
	}
	res, err := s.db.ExecContext(ctx, `UPDATE operations SET state = ?, lease_owner = NULL, lease_expires = NULL,
		next_attempt_at = ?, last_error = ?, updated_at = ? WHERE `+held,
		string(state), formatTimePtr(next), msg, formatTime(t), op.ID, op.LeaseOwner, op.Attempts)
	if err := leaseResult(res, err, op); err != nil {
		return err
	}
	op.State, op.LeaseOwner, op.LeaseExpires, op.NextAttemptAt, op.LastError, op.UpdatedAt = state, "", nil, next, msg, t
	return nil
}

func leaseResult(res sql.Result, err error, op *model.Operation) error {
	if err != nil {
		return fmt.Errorf("store: update operation %d: %w", op.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fault.New(ErrLeaseLost, "operation %d (attempt %d of %s)", op.ID, op.Attempts, op.LeaseOwner)
	}
	return nil
}

// NextOperationAt reports when the earliest held-back operation or expiring
// lease makes work claimable, so an idle worker can sleep until then; ok is
// false when nothing is pending or running.
func (s *DB) NextOperationAt(ctx context.Context) (at time.Time, ok bool, err error) {
	return s.nextAt(ctx, clusterQueue)
}

func (s *DB) nextAt(ctx context.Context, q queue) (at time.Time, ok bool, err error) {
	var v sql.NullString
	// Pending operations queued behind an unfinished one of their key are
	// not due; the one ahead of them is.
	err = s.db.QueryRowContext(ctx, `SELECT MIN(t) FROM (
		SELECT COALESCE(o.next_attempt_at, o.created_at) AS t FROM operations o WHERE o.state = 'pending'
			AND `+q.scope+` AND `+q.ahead()+`
		UNION ALL SELECT o.lease_expires AS t FROM operations o WHERE o.state = 'running' AND `+q.scope+`) due`).Scan(&v)
	if err != nil || !v.Valid {
		return time.Time{}, false, err
	}
	return parseTime(v.String), true, nil
}
