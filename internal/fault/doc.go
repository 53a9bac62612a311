// Package fault carries the words a person should read on an error raised
// below the API.
//
// Each layer keeps its sentinel errors (store.ErrNotFound, cloud.ErrInvalid,
// auth.ErrForbidden...) so callers can test them with errors.Is. A layer
// that knows what the user should be told raises the sentinel with
// fault.New:
//
//	return fault.New(ErrNotFound, "Cluster %s could not be found.", uuid)
//
// The API's error table (internal/api/errors.go) maps the sentinel to a
// status and shows Text(err) without parsing the message, while Error()
// keeps the package prefix for logs ("store: not found: Cluster ...").
package fault
