package api

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
	"github.com/magnetite-io/magnetite/internal/capacity"
	"github.com/magnetite-io/magnetite/internal/certs"
	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/jsonpatch"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/store"
)

// TestErrorTableAnswersEveryLayersErrors: each layer's sentinel, raised
// with its user-facing text, answers with Magnum's status and the text
// Magnum clients are shown, however deep the handler wrapped it.
func TestErrorTableAnswersEveryLayersErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		detail string
	}{
		{"store not found", fault.New(store.ErrNotFound, "Cluster %s could not be found.", "c1"), 404, "Cluster c1 could not be found."},
		{"store ambiguous name", fault.New(store.ErrAmbiguousName, "cluster %s", "demo"), 409, "Multiple objects match cluster demo. Use the UUID instead of the name."},
		{"store conflict", fault.New(store.ErrConflict, "a cluster named %q already exists in this project", "demo"), 409, `a cluster named "demo" already exists in this project`},
		{"store referenced", fault.New(store.ErrReferenced, "cluster template t1 is used by 2 cluster(s)"), 400,
			"cluster template t1 is used by 2 cluster(s). Only the name, public, hidden or tags of a template in use can change; delete its clusters first to change anything else."},
		{"store quota", fault.New(store.ErrQuotaExceeded, "You have reached the maximum clusters per project, 2."), 403, "Resource limit exceeded: You have reached the maximum clusters per project, 2."},
		{"store sort key", fault.New(store.ErrInvalidSort, "%q", "colour"), 400, `The sort_key value "colour" is an invalid field for sorting.`},
		{"store marker", fault.New(store.ErrInvalidMarker, "m1"), 400, "The marker m1 does not name an object in this listing."},
		{"auth forbidden", fault.New(auth.ErrForbidden, "cluster:create"), 403, "Policy doesn't allow this operation: cluster:create"},
		{"auth unauthenticated", fault.New(auth.ErrUnauthenticated, "the token has expired"), 401, "The request you have made requires authentication: the token has expired."},
		{"auth identity unavailable", fault.New(auth.ErrIdentityUnavailable, "Keystone could not be reached"), 503,
			"The identity service could not validate the token (Keystone could not be reached); try again shortly."},
		{"patch malformed", fault.New(jsonpatch.ErrInvalid, "the patch is empty; send at least one operation"), 400, "the patch is empty; send at least one operation"},
		{"patch not applicable", fault.New(jsonpatch.ErrNotApplicable, "can't remove /labels/x: no such member"), 400, "Couldn't apply patch. Reason: can't remove /labels/x: no such member"},
		{"labels", labels.ValidationError{{Label: "kube_tag", Value: "x", Expected: "a version"}}, 400, `label kube_tag="x" is invalid: expected a version`},
		{"csr", fault.New(certs.ErrInvalidCSR, "expected a PEM block %q", "CERTIFICATE REQUEST"), 400, `Invalid CSR: expected a PEM block "CERTIFICATE REQUEST".`},
		{"no driver", fault.New(driver.ErrNoDriver, "Cluster type (server_type=vm) not supported; supported: none."), 400, "Cluster type (server_type=vm) not supported; supported: none."},
		{"cloud invalid", fault.New(cloud.ErrInvalid, "Unable to find keypair %s.", "k1"), 400, "Unable to find keypair k1."},
		{"cloud unavailable", fault.New(cloud.ErrUnavailable, "could not list images: glance answered 500"), 503, "could not list images: glance answered 500"},
		// Bare-metal errors as the backends raise them today.
		{"capacity short", fault.New(capacity.ErrInsufficient, "flavor bm.large needs 3 hosts, 1 free"), 409, "flavor bm.large needs 3 hosts, 1 free"},
		{"capacity unbuildable", fault.New(capacity.ErrUnbuildable, "flavor bm.large has no resource class"), 400, "The cluster cannot be built as asked: flavor bm.large has no resource class."},
		{"capacity replan", capacity.ErrReplan, 503, "Other requests kept changing the bare-metal hosts being claimed; try again."},
		{"host not found", fault.New(baremetal.ErrHostNotFound, "%q", "h1"), 404, `"h1"`},
		{"host invalid", fault.New(baremetal.ErrInvalidHost, "automated_cleaning_mode %q must be metadata or disabled", "x"), 400, `automated_cleaning_mode "x" must be metadata or disabled`},
		{"bmc address", &bmc.AddressError{Address: "ipmi://", Reason: "no host"}, 400, `BMC address "ipmi://": no host`},
		{"host conflict", fault.New(baremetal.ErrConflict, "host h1 is detached; attach it first"), 409, "host h1 is detached; attach it first"},
		{"backend unavailable", fault.New(baremetal.ErrUnavailable, "Ironic answered 503"), 503, "Ironic answered 503"},
		// A handler's context does not change the answer.
		{"wrapped", fmt.Errorf("update cluster c1: %w", fault.New(store.ErrNotFound, "Cluster c1 could not be found.")), 404, "Cluster c1 could not be found."},
		// An *apiError is its own answer.
		{"api error", badRequest("node_count %d is too big", 9), 400, "node_count 9 is too big"},
		// Anything else is the server's fault and says nothing of its cause.
		{"unknown", errors.New("sql: database is closed"), 500, "The server hit an unexpected error; the request id identifies it in the service logs."},
		{"lease lost", fault.New(store.ErrLeaseLost, "operation 3"), 500, "The server hit an unexpected error; the request id identifies it in the service logs."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ae := toAPIError(tc.err)
			if ae.Status != tc.status || ae.Detail != tc.detail {
				t.Errorf("toAPIError(%v) = %d %q, want %d %q", tc.err, ae.Status, ae.Detail, tc.status, tc.detail)
			}
			if want := http.StatusText(tc.status); ae.Title != want {
				t.Errorf("title %q, want %q", ae.Title, want)
			}
		})
	}
}

// TestErrorTableRowsAreReachable: a row shadowed by an earlier one (a
// sentinel that wraps one listed before it) would never answer.
func TestErrorTableRowsAreReachable(t *testing.T) {
	for i, m := range errorTable {
		err := fault.New(m.kind, "x")
		for _, earlier := range errorTable[:i] {
			if errors.Is(err, earlier.kind) {
				t.Errorf("row %d (%v) is shadowed by the earlier row for %v", i, m.kind, earlier.kind)
			}
		}
		if got := toAPIError(err).Status; got != m.status {
			t.Errorf("%v answers %d, want its row's %d", m.kind, got, m.status)
		}
	}
}
