package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
)

// RequeueOperation puts op back in the queue, due at at, because it waits
// for something outside Magnetite (Cluster API removing machines, the
// cloud deleting load balancers) rather than because it failed: the
// attempt is not counted, so waiting never lengthens the backoff of a
// later failure, and no error is recorded: what it waits for is not one.
// Any worker, of any replica, may claim it once it is due.
func (s *DB) RequeueOperation(ctx context.Context, op *model.Operation, at time.Time) error {
	t := now()
	res, err := s.db.ExecContext(ctx, `UPDATE operations SET state = 'pending', lease_owner = NULL, lease_expires = NULL,
		next_attempt_at = ?, attempts = attempts - 1, last_error = NULL, updated_at = ? WHERE `+held,
		formatTime(at), formatTime(t), op.ID, op.LeaseOwner, op.Attempts)
	if err := leaseResult(res, err, op); err != nil {
		return err
	}
	op.State, op.LeaseOwner, op.LeaseExpires, op.NextAttemptAt, op.LastError, op.UpdatedAt = model.OpPending, "", nil, &at, "", t
	op.Attempts--
	return nil
}

// WakeOperation makes a requeued operation due now: what it waits for may
// have happened. It does nothing to an operation that is running, finished
// or already due.
func (s *DB) WakeOperation(ctx context.Context, uuid string) error {
	t := formatTime(now())
	_, err := s.db.ExecContext(ctx, `UPDATE operations SET next_attempt_at = ? WHERE uuid = ? AND state = 'pending' AND next_attempt_at > ?`,
		t, uuid, t)
	return err
}

// AbsorbOperations records as done, without running them, pending
// operations whose change an operation of the same cluster has just
// carried out: the conductor coalesces quick successive changes of a
// cluster into one apply of its newest desired state. Only pending
// operations are touched; one another worker claimed meanwhile is left to
// it. It returns how many were absorbed.
func (s *DB) AbsorbOperations(ctx context.Context, ids []int64) (int, error) {
	t := formatTime(now())
	n := 0
	for _, id := range ids {
		res, err := s.db.ExecContext(ctx, `UPDATE operations SET state = 'succeeded', next_attempt_at = NULL, last_error = NULL, updated_at = ?
			WHERE id = ? AND state = 'pending'`, t, id)
		if err != nil {
			return n, fmt.Errorf("store: absorb operation %d: %w", id, err)
		}
		if k, err := res.RowsAffected(); err == nil {
			n += int(k)
		}
	}
	return n, nil
}

// RetryingOperation returns the cluster's operation that failed and waits
// for its next attempt, if the oldest unfinished operation of the cluster
// is one (nil otherwise): its last error is what holds the cluster up.
func (s *DB) RetryingOperation(ctx context.Context, clusterUUID string) (*model.Operation, error) {
	op, err := scanOperation(s.db.QueryRowContext(ctx, "SELECT "+operationCols+` FROM operations
		WHERE cluster_id = ? AND state IN ('pending', 'running') ORDER BY id LIMIT 1`, clusterUUID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil || op.State != model.OpPending || op.LastError == "" {
		return nil, err
	}
	return op, nil
}
