package conductor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/fault"
)

// Result is how an attempt at a cluster operation or a host action ended
// when it did not fail: done, or waiting for something outside Magnetite
// (Cluster API removing machines, the cloud deleting what the workload
// left) and to be looked at again after RequeueAfter, or sooner when the
// cluster's objects change. Waiting is not an error: the worker is freed
// at once and the attempt does not count towards the operation's backoff.
// It is Cluster API's ctrl.Result{RequeueAfter} as the topology reconciler
// returns it (internal/controllers/topology/cluster/cluster_controller.go,
// v1.14.0) and Metal3's actionContinue (baremetal-operator
// controllers/metal3.io/action_result.go, v0.9.3).
type Result struct {
	// RequeueAfter is when to look again; zero means done.
	RequeueAfter time.Duration
	// Waiting says what the operation waits for, as status_reason shows it.
	Waiting string
}

// Done is the result of an attempt that finished the operation.
var Done = Result{}

// waitingFor is the result of an attempt that waits: it is looked at again
// after at most after.
func waitingFor(after time.Duration, format string, args ...any) Result {
	return Result{RequeueAfter: after, Waiting: fmt.Sprintf(format, args...)}
}

// IsDone reports whether the operation finished.
func (r Result) IsDone() bool { return r.RequeueAfter <= 0 }

// Failure classes: a failed attempt is transient (tried again with the
// store's backoff, its reason shown meanwhile) unless it is permanent (the
// operation ends and its reason is the user's to act on).
type Failure int

const (
	Transient Failure = iota
	Permanent
)

// errPermanent marks failures retrying cannot mend; raise them with
// permanentf, whose text is what the user reads.
var errPermanent = errors.New("permanent")

func permanentf(format string, args ...any) error {
	return fault.New(errPermanent, format, args...)
}

// permanentKinds are the errors no retry mends, whichever layer raised
// them: Magnetite's own verdict, a render the driver refuses, and the host
// backends' refusals (unknown host, invalid request, conflicting state, a
// BMC address that does not parse). Everything else (a service that does
// not answer, a host locked by other work, a timeout, a conflict with
// another writer) may pass when tried again.
var permanentKinds = []error{errPermanent, driver.ErrInvalid,
	baremetal.ErrHostNotFound, baremetal.ErrInvalidHost, baremetal.ErrConflict, bmc.ErrInvalidAddress}

// Classify sorts a failed attempt of a cluster operation or a host action
// into its class, and says it as the user reads it (fault.Reason: no
// layer's prefix). It is the one classifier of both.
func Classify(err error) (Failure, string) {
	if errors.Is(err, context.DeadlineExceeded) {
		return Transient, fault.Reason(err)
	}
	for _, k := range permanentKinds {
		if errors.Is(err, k) {
			return Permanent, fault.Reason(err)
		}
	}
	return Transient, fault.Reason(err)
}
