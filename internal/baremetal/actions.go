package baremetal

import (
	"context"
	"errors"

	"github.com/magnetite-io/magnetite/internal/fault"
)

// Host actions are carried out by the conductor, not the API: the API checks
// a request, queues an operation of one of these kinds with its Action, and
// a conductor replica claims it under a lease and calls the backend (see
// Action.Do). The types below are the operations' payloads and results as
// the store keeps them (JSON); they are the one place that defines them.

// ActionKind names a host action; the operation's type is "host_" + kind.
type ActionKind string

// Host actions.
const (
	ActEnroll       ActionKind = "enroll"
	ActPower        ActionKind = "power"
	ActInspect      ActionKind = "inspect"
	ActProvide      ActionKind = "provide"
	ActDetach       ActionKind = "detach"
	ActAttach       ActionKind = "attach"
	ActCleaningMode ActionKind = "cleaning_mode"
	ActDelete       ActionKind = "delete"
)

// OperationTypePrefix starts the type of every host operation.
const OperationTypePrefix = "host_"

// OperationType is the operation type of an action kind.
func (k ActionKind) OperationType() string { return OperationTypePrefix + string(k) }

// Action is a host operation's payload: the kind and its arguments. Only
// the fields of its kind are set.
type Action struct {
	Kind ActionKind `json:"kind"`
	// Enroll: the validated spec. Its BMC password is sealed in the store
	// and dropped from the payload once the operation ends.
	Enroll *HostSpec `json:"enroll,omitempty"`
	// Power: on, off, soft-off, reboot-hard or reboot-soft.
	Power PowerAction `json:"power,omitempty"`
	// Detach: why the host is taken out of management.
	Reason string `json:"reason,omitempty"`
	// CleaningMode: metadata or disabled.
	CleaningMode string `json:"cleaning_mode,omitempty"`
	// Delete: skip deprovisioning and cleaning.
	Force bool `json:"force,omitempty"`
}

// WithoutSecrets is the action with the BMC password removed, as it is
// kept once its operation ended.
func (a Action) WithoutSecrets() Action {
	if a.Enroll != nil {
		spec := *a.Enroll
		spec.Credentials.Password = ""
		a.Enroll = &spec
	}
	return a
}

// Error kinds of an action's permanent failure, which the API maps to
// statuses as it mapped the backend's errors.
const (
	ErrorKindNotFound = "not_found"
	ErrorKindInvalid  = "invalid"
	ErrorKindConflict = "conflict"
	ErrorKindOther    = "error"
)

// ActionResult is what an action answered: the host as the backend showed
// it after the action (never with a password), whether a delete finished,
// or, when it failed permanently, the kind of failure and the backend's
// message.
type ActionResult struct {
	Host      *Host  `json:"host,omitempty"`
	Deleted   bool   `json:"deleted,omitempty"`
	ErrorKind string `json:"error_kind,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Do carries the action out on host ident with the backend.
func (a Action) Do(ctx context.Context, b Backend, ident string) (ActionResult, error) {
	var h *Host
	var err error
	switch a.Kind {
	case ActEnroll:
		if a.Enroll == nil {
			return ActionResult{}, fault.New(ErrInvalidHost, "the enroll operation has no host spec")
		}
		h, err = b.Enroll(ctx, *a.Enroll)
	case ActPower:
		h, err = b.Power(ctx, ident, a.Power)
	case ActInspect:
		h, err = b.Inspect(ctx, ident)
	case ActProvide:
		h, err = b.Provide(ctx, ident)
	case ActDetach:
		h, err = b.Detach(ctx, ident, a.Reason)
	case ActAttach:
		h, err = b.Attach(ctx, ident)
	case ActCleaningMode:
		h, err = b.SetCleaningMode(ctx, ident, a.CleaningMode)
	case ActDelete:
		var outcome DeleteOutcome
		outcome, h, err = b.Delete(ctx, ident, a.Force)
		if err == nil && outcome == Deleted {
			return ActionResult{Deleted: true}, nil
		}
	default:
		return ActionResult{}, fault.New(ErrInvalidHost, "unknown host action %q", a.Kind)
	}
	if err != nil {
		return ActionResult{}, err
	}
	return ActionResult{Host: h}, nil
}

// Failure is the result of a permanent failure: its kind, and reason, the
// error as the user reads it (the conductor's classifier says it without
// any layer's prefix).
func Failure(err error, reason string) ActionResult {
	kind := ErrorKindOther
	switch {
	case errors.Is(err, ErrHostNotFound):
		kind = ErrorKindNotFound
	case errors.Is(err, ErrInvalidHost):
		kind = ErrorKindInvalid
	case errors.Is(err, ErrConflict):
		kind = ErrorKindConflict
	}
	return ActionResult{ErrorKind: kind, Error: reason}
}
