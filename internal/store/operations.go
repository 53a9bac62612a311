package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
)

// now is the store's clock; tests of lease expiry replace it.
var now = time.Now

func insertOperation(ctx context.Context, tx *sql.Tx, op *model.Operation) error {
	var payload any
	b, err := model.EncodePayload(op.Type, op.Payload)
	if err != nil {
		return fmt.Errorf("store: record operation: %w", err)
	}
	if b != nil {
		payload = string(b)
	}
	if op.State == "" {
		op.State = model.OpPending
	}
	t := now()
	if op.CreatedAt.IsZero() {
		op.CreatedAt = t
	}
	op.UpdatedAt = t
	res, err := tx.ExecContext(ctx, `INSERT INTO operations (uuid, type, cluster_id, nodegroup_id, project_id, request_id,
		payload, state, attempts, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`,
		op.UUID, string(op.Type), op.ClusterID, nullString(op.NodeGroupID), op.ProjectID, nullString(op.RequestID),
		payload, string(op.State), formatTime(op.CreatedAt), formatTime(op.UpdatedAt))
	if err != nil {
		return fmt.Errorf("store: record operation: %w", err)
	}
	op.ID, _ = res.LastInsertId()
	return nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

const operationCols = `id, uuid, type, cluster_id, COALESCE(nodegroup_id, ''), project_id, COALESCE(request_id, ''),
	COALESCE(payload, ''), state, attempts, COALESCE(lease_owner, ''), COALESCE(lease_expires, ''),
	COALESCE(next_attempt_at, ''), COALESCE(last_error, ''), created_at, updated_at`

func scanOperation(row scanner) (*model.Operation, error) {
	var op model.Operation
	var typ, state, payload, leaseExpires, nextAttempt, created, updated string
	if err := row.Scan(&op.ID, &op.UUID, &typ, &op.ClusterID, &op.NodeGroupID, &op.ProjectID, &op.RequestID,
		&payload, &state, &op.Attempts, &op.LeaseOwner, &leaseExpires, &nextAttempt, &op.LastError, &created, &updated); err != nil {
		return nil, err
	}
	op.NextAttemptAt = parseTimeOpt(nextAttempt)
	op.Type = model.OperationType(typ)
	op.State = model.OperationState(state)
	p, err := model.DecodePayload(op.Type, []byte(payload))
	if err != nil {
		return nil, fmt.Errorf("store: operation %d: %w", op.ID, err)
	}
	op.Payload = p
	op.LeaseExpires = parseTimeOpt(leaseExpires)
	op.CreatedAt = parseTime(created)
	op.UpdatedAt = parseTime(updated)
	return &op, nil
}

// OperationsForCluster lists a cluster's operations, oldest first.
func (s *DB) OperationsForCluster(ctx context.Context, clusterUUID string) ([]*model.Operation, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+operationCols+" FROM operations WHERE cluster_id = ? ORDER BY id", clusterUUID)
	return collect(rows, err, scanOperation)
}
