package conductor

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/mgmt"
)

// classifyApplyError sorts what the management cluster answered a write
// (apply, scale) with by the Status it returned, in the manner of Metal3's
// provisioner results: what retrying cannot fix is permanent and fails the
// cluster with the API server's message; everything else is returned as it
// is and retried with backoff.
//
//   - Permanent: the objects are refused as written — validation (422
//     Invalid, from the API server or an admission webhook), 400 Bad Request
//     (a webhook denial without a code), 403 Forbidden (a webhook or the
//     conductor's RBAC), and requests the server can never serve (405, 406,
//     413, 415).
//   - Transient: 409 Conflict (another writer; the next attempt re-reads),
//     404 Not Found (a kind or object not there yet), timeouts, 429 Too Many
//     Requests, 5xx, and errors without a Status (the connection).
//
// A create that raced the deletion of its project's namespace is the one
// Forbidden that passes: the namespace is recreated on the next attempt.
func classifyApplyError(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return fault.Wrap(mgmt.ErrNamespaceTerminating, err, "%v", err)
	case applyRefused(err):
		return permanentf("the management cluster refused the cluster's objects: %v", err)
	}
	return err
}

// applyRefused reports whether the API server refused a request for what it
// is, so that sending it again is refused again.
func applyRefused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err) ||
		apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsUnsupportedMediaType(err)
}
