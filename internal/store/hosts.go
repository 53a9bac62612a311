package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/model"
)

// HostOperation is a bare-metal host action queued for the conductor. It
// shares the operations table, its leases and its retry policy with
// cluster operations, but only host workers claim it (ClaimHostOperation),
// and the operations of one host run one at a time in the order they were
// queued.
type HostOperation struct {
	// Operation holds the queue's fields; its Type is the action's
	// operation type and its ClusterID is empty.
	model.Operation
	// Host is the host acted on, by id or name as the request named it
	// (the new host's name for an enrollment).
	Host   string
	Action baremetal.Action
	// Result is what the action answered once the operation ended.
	Result *baremetal.ActionResult
}

func hostOperationAAD(uuid string) string { return "operations/" + uuid }

// QueueHostOperation records a host action to be carried out. An
// enrollment's BMC password is sealed with the database's secret key when
// one is configured, and dropped from the row when the operation ends.
func (s *DB) QueueHostOperation(ctx context.Context, op *HostOperation) error {
	if op.UUID == "" || op.Host == "" {
		return fmt.Errorf("store: a host operation needs a UUID and a host")
	}
	b, err := json.Marshal(op.Action)
	if err != nil {
		return err
	}
	payload, err := s.seal(string(b), hostOperationAAD(op.UUID))
	if err != nil {
		return err
	}
	t := now()
	op.Type = model.OperationType(op.Action.Kind.OperationType())
	op.State, op.CreatedAt, op.UpdatedAt = model.OpPending, t, t
	res, err := s.db.ExecContext(ctx, `INSERT INTO operations (uuid, type, cluster_id, host_ref, project_id, request_id,
		payload, state, attempts, created_at, updated_at) VALUES (?, ?, '', ?, ?, ?, ?, ?, 0, ?, ?)`,
		op.UUID, string(op.Type), op.Host, op.ProjectID, nullString(op.RequestID), payload, string(op.State),
		formatTime(t), formatTime(t))
	if err != nil {
		return fmt.Errorf("store: record host operation: %w", err)
	}
	op.ID, _ = res.LastInsertId()
	return nil
}

const hostOperationCols = `id, uuid, type, COALESCE(host_ref, ''), project_id, COALESCE(request_id, ''), COALESCE(payload, ''),
	state, attempts, COALESCE(lease_owner, ''), COALESCE(lease_expires, ''), COALESCE(next_attempt_at, ''),
	COALESCE(last_error, ''), COALESCE(result, ''), created_at, updated_at`

func (s *DB) scanHostOperation(row scanner) (*HostOperation, error) {
	var op HostOperation
	var typ, state, payload, leaseExpires, nextAttempt, result, created, updated string
	if err := row.Scan(&op.ID, &op.UUID, &typ, &op.Host, &op.ProjectID, &op.RequestID, &payload, &state, &op.Attempts,
		&op.LeaseOwner, &leaseExpires, &nextAttempt, &op.LastError, &result, &created, &updated); err != nil {
		return nil, err
	}
	op.Type, op.State = model.OperationType(typ), model.OperationState(state)
	op.CreatedAt, op.UpdatedAt = parseTime(created), parseTime(updated)
	op.LeaseExpires, op.NextAttemptAt = parseTimeOpt(leaseExpires), parseTimeOpt(nextAttempt)
	plain, err := s.open(payload, hostOperationAAD(op.UUID))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(plain), &op.Action); err != nil {
		return nil, fmt.Errorf("store: host operation %s has an unreadable payload: %w", op.UUID, err)
	}
	if result != "" {
		op.Result = &baremetal.ActionResult{}
		if err := json.Unmarshal([]byte(result), op.Result); err != nil {
			return nil, fmt.Errorf("store: host operation %s has an unreadable result: %w", op.UUID, err)
		}
	}
	return &op, nil
}

// GetHostOperation reads a host operation by UUID.
func (s *DB) GetHostOperation(ctx context.Context, uuid string) (*HostOperation, error) {
	op, err := s.scanHostOperation(s.db.QueryRowContext(ctx,
		"SELECT "+hostOperationCols+" FROM operations WHERE uuid = ? AND host_ref IS NOT NULL", uuid))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(ErrNotFound, "operation %s", uuid)
	}
	return op, err
}

// ClaimHostOperation hands the oldest runnable host operation to owner for
// leaseFor, or returns nil, nil when there is none; see ClaimOperation.
func (s *DB) ClaimHostOperation(ctx context.Context, owner string, leaseFor time.Duration) (*HostOperation, error) {
	id, err := s.claim(ctx, owner, leaseFor, hostQueue)
	if err != nil || id == 0 {
		return nil, err
	}
	op, err := s.scanHostOperation(s.db.QueryRowContext(ctx, "SELECT "+hostOperationCols+" FROM operations WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(ErrNotFound, "operation %d", id)
	}
	return op, err
}

// NextHostOperationAt is NextOperationAt for host operations.
func (s *DB) NextHostOperationAt(ctx context.Context) (time.Time, bool, error) {
	return s.nextAt(ctx, hostQueue)
}

// EndHostOperation records how the caller's attempt at op ended for good:
// succeeded when result has no error, failed otherwise (permanently; a
// transient failure goes through FailOperation). The payload loses its
// secrets. It returns ErrLeaseLost if the operation is no longer the
// caller's.
func (s *DB) EndHostOperation(ctx context.Context, op *HostOperation, result baremetal.ActionResult) error {
	b, err := json.Marshal(result)
	if err != nil {
		return err
	}
	payload, err := json.Marshal(op.Action.WithoutSecrets())
	if err != nil {
		return err
	}
	state, lastErr := model.OpSucceeded, sql.NullString{}
	if result.ErrorKind != "" {
		state, lastErr = model.OpFailed, sql.NullString{String: result.Error, Valid: true}
	}
	t := now()
	res, err := s.db.ExecContext(ctx, `UPDATE operations SET state = ?, lease_owner = NULL, lease_expires = NULL,
		last_error = ?, result = ?, payload = ?, updated_at = ? WHERE `+held,
		string(state), lastErr, string(b), string(payload), formatTime(t), op.ID, op.LeaseOwner, op.Attempts)
	if err := leaseResult(res, err, &op.Operation); err != nil {
		return err
	}
	op.State, op.LeaseOwner, op.LeaseExpires, op.LastError, op.UpdatedAt = state, "", nil, lastErr.String, t
	op.Action, op.Result = op.Action.WithoutSecrets(), &result
	return nil
}

// The host mirror: the conductor writes what the backend shows of its
// hosts after each action and each host pass, and the API reads only
// this.

// MirrorHost writes one host as the backend showed it.
func (s *DB) MirrorHost(ctx context.Context, backend string, h *baremetal.Host) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := mirrorHost(ctx, tx, backend, h, now()); err != nil {
		return err
	}
	return tx.Commit()
}

func mirrorHost(ctx context.Context, tx *sql.Tx, backend string, h *baremetal.Host, t time.Time) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM hosts WHERE id = ?`, h.ID); err != nil {
		return fmt.Errorf("store: mirror host %s: %w", h.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO hosts (id, name, project_id, backend, data, mirrored_at) VALUES (?, ?, ?, ?, ?, ?)`,
		h.ID, h.Name, nullString(h.ProjectID), backend, string(b), formatTime(t)); err != nil {
		return fmt.Errorf("store: mirror host %s: %w", h.Name, err)
	}
	return nil
}

// ForgetHost removes a deleted host, named by id or name, from the mirror.
// Its row stays as a tombstone until a pass's list taken after the delete
// replaces it.
func (s *DB) ForgetHost(ctx context.Context, ident string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE hosts SET gone = 1, mirrored_at = ? WHERE id = ? OR name = ?`,
		formatTime(now()), ident, ident); err != nil {
		return fmt.Errorf("store: forget host %s: %w", ident, err)
	}
	return nil
}

// MirrorHosts replaces the mirror of a backend's hosts with hosts, as the
// backend listed them at listedAt, in one transaction: hosts the backend no
// longer shows go. Rows an action wrote after listedAt are newer than the
// list and stay as they are (a host deleted since stays deleted).
func (s *DB) MirrorHosts(ctx context.Context, backend string, hosts []*baremetal.Host, listedAt time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	at := formatTime(listedAt)
	rows, err := tx.QueryContext(ctx, `SELECT id, name FROM hosts WHERE backend = ? AND mirrored_at > ?`, backend, at)
	if err != nil {
		return fmt.Errorf("store: mirror hosts: %w", err)
	}
	newer := map[string]bool{}
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return err
		}
		newer[id], newer[name] = true, true
	}
	rows.Close()
	if _, err := tx.ExecContext(ctx, `DELETE FROM hosts WHERE backend = ? AND mirrored_at <= ?`, backend, at); err != nil {
		return fmt.Errorf("store: mirror hosts: %w", err)
	}
	t := now()
	for _, h := range hosts {
		if newer[h.ID] || newer[h.Name] {
			continue
		}
		if err := mirrorHost(ctx, tx, backend, h, t); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// MirroredHosts lists the mirrored hosts, by name.
func (s *DB) MirroredHosts(ctx context.Context) ([]*baremetal.Host, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT data FROM hosts WHERE gone = 0 ORDER BY name, id`)
	if err != nil {
		return nil, fmt.Errorf("store: list hosts: %w", err)
	}
	return collect(rows, nil, scanHost)
}

// MirroredHost finds a mirrored host by id, else by name.
func (s *DB) MirroredHost(ctx context.Context, ident string) (*baremetal.Host, error) {
	h, err := scanHost(s.db.QueryRowContext(ctx, `SELECT data FROM hosts WHERE (id = ? OR name = ?) AND gone = 0 ORDER BY CASE WHEN id = ? THEN 0 ELSE 1 END LIMIT 1`,
		ident, ident, ident))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(ErrNotFound, "host %s", ident)
	}
	return h, err
}

func scanHost(row scanner) (*baremetal.Host, error) {
	var data string
	if err := row.Scan(&data); err != nil {
		return nil, err
	}
	var h baremetal.Host
	if err := json.NewDecoder(strings.NewReader(data)).Decode(&h); err != nil {
		return nil, fmt.Errorf("store: a mirrored host is unreadable: %w", err)
	}
	return &h, nil
}
