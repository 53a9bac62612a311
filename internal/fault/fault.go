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
}

// New returns an error of kind whose user-facing text is the formatted
// message.
func New(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Text: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return e.Kind.Error() + ": " + e.Text }

// Unwrap makes errors.Is(err, e.Kind) hold.
func (e *Error) Unwrap() error { return e.Kind }

// Text is the user-facing text err carries for kind: that of the first
// *Error of that kind in its chain (or of any kind, for a nil kind). An
// error that does not carry one is shown as it reads, except that a layer
// still wrapping its sentinel as fmt.Errorf("%w: text", kind) shows text;
// that form is accepted until every layer raises *Error.
func Text(err error, kind error) string {
	if fe := find(err, kind); fe != nil {
		return fe.Text
	}
	msg := err.Error()
	if kind != nil {
		if rest, ok := strings.CutPrefix(msg, kind.Error()+": "); ok {
			return rest
		}
	}
	return msg
}

// find walks err's tree depth first, as errors.Is does.
func find(err error, kind error) *Error {
	for err != nil {
		if fe, ok := err.(*Error); ok && (kind == nil || errors.Is(fe.Kind, kind)) {
			return fe
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if fe := find(e, kind); fe != nil {
					return fe
				}
			}
			return nil
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return nil
		}
	}
	return nil
}
