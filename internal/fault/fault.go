package fault

import (
	"errors"
	"fmt"
	"strings"
)

// Error is an error of a layer's kind (its sentinel) with the text a user
// should read.
type Error struct {
	// Kind is the sentinel errors.Is matches, such as store.ErrNotFound.
	Kind error
	// Text says what is wrong and, where it can, what to fix. It never
	// holds a secret.
	Text string
	// Cause is the lower error this one was raised for, if any; errors.Is
	// and errors.As see it too.
	Cause error
}

// New returns an error of kind whose user-facing text is the formatted
// message.
func New(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Text: fmt.Sprintf(format, args...)}
}

// Wrap is New for an error raised because of cause: the text (which
// should say what cause means to the user) is the formatted message, and
// errors.Is matches both kind and cause.
func Wrap(kind, cause error, format string, args ...any) error {
	return &Error{Kind: kind, Text: fmt.Sprintf(format, args...), Cause: cause}
}

func (e *Error) Error() string { return e.Kind.Error() + ": " + e.Text }

// Unwrap makes errors.Is(err, e.Kind) hold, and errors.Is(err, e.Cause)
// when there is a cause.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

// Text is the user-facing text err carries for kind: that of the first
// *Error of that kind in its chain (or of any kind, for a nil kind). An
// error that does not carry one is shown as it reads.
func Text(err error, kind error) string {
	if fe := find(err, kind); fe != nil {
		return fe.Text
	}
	return err.Error()
}

// Reason is err as a person reads it: its whole message, with the text of
// every *Error in it in place of that error's kind prefix ("could not
// delete the cluster: store: not found: Cluster c1 ..." reads "could not
// delete the cluster: Cluster c1 ..."). Status reasons and the failures of
// host actions are shown this way, so no internal vocabulary reaches a
// user.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	walk(err, func(fe *Error) {
		msg = strings.Replace(msg, fe.Kind.Error()+": ", "", 1)
	})
	return msg
}

// find walks err's tree depth first, as errors.Is does.
func find(err error, kind error) *Error {
	var found *Error
	walk(err, func(fe *Error) {
		if found == nil && (kind == nil || errors.Is(fe.Kind, kind)) {
			found = fe
		}
	})
	return found
}

// walk calls fn on every *Error of err's tree, depth first.
func walk(err error, fn func(*Error)) {
	for err != nil {
		if fe, ok := err.(*Error); ok {
			fn(fe)
			if fe.Cause != nil {
				walk(fe.Cause, fn)
			}
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e, fn)
			}
			return
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return
		}
	}
}
