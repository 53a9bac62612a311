package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

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

// apiError is an error with the HTTP status and text a client should see.
type apiError struct {
	Status int
	Title  string
	Detail string
	Code   string
}

func (e *apiError) Error() string { return e.Detail }

func badRequest(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Title: "Bad Request", Detail: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Title: "Not Found", Detail: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusConflict, Title: "Conflict", Detail: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusForbidden, Title: "Forbidden", Detail: fmt.Sprintf(format, args...)}
}

// errorBody is Magnum's error document.
type errorBody struct {
	Errors []errorItem `json:"errors"`
}

type errorItem struct {
	RequestID  string        `json:"request_id"`
	Code       string        `json:"code"`
	Status     int           `json:"status"`
	Title      string        `json:"title"`
	Detail     string        `json:"detail"`
	Links      []interface{} `json:"links"`
	MaxVersion string        `json:"max_version,omitempty"`
	MinVersion string        `json:"min_version,omitempty"`
}

// errorMapping is one row of the error table: a layer's sentinel, the
// status it answers with, and the detail written around the error's
// user-facing text (fault.Text). A detail without a verb is a fixed text.
type errorMapping struct {
	kind   error
	status int
	detail string
}

// errorTable maps every layer's sentinel errors to Magnum's answers, the
// way etcd's toGRPCErrorMap maps its server errors to gRPC statuses. The
// first row whose sentinel the error is (errors.Is) wins, so a kind that
// wraps another comes before it. Layers raise these sentinels with
// fault.New and the text a user should read; no handler trims messages.
var errorTable = []errorMapping{
	// store
	{store.ErrNotFound, http.StatusNotFound, "%s"},
	{store.ErrAmbiguousName, http.StatusConflict, "Multiple objects match %s. Use the UUID instead of the name."},
	{store.ErrConflict, http.StatusConflict, "%s"},
	{store.ErrStale, http.StatusConflict, "%s"},
	{store.ErrReferenced, http.StatusBadRequest, "%s. Only the name, public, hidden or tags of a template in use can change; delete its clusters first to change anything else."},
	{store.ErrQuotaExceeded, http.StatusForbidden, "Resource limit exceeded: %s"},
	{store.ErrInvalidSort, http.StatusBadRequest, "The sort_key value %s is an invalid field for sorting."},
	{store.ErrInvalidMarker, http.StatusBadRequest, "The marker %s does not name an object in this listing."},
	// auth
	{auth.ErrForbidden, http.StatusForbidden, "Policy doesn't allow this operation: %s"},
	{auth.ErrUnauthenticated, http.StatusUnauthorized, "The request you have made requires authentication: %s."},
	{auth.ErrIdentityUnavailable, http.StatusServiceUnavailable, "The identity service could not validate the token (%s); try again shortly."},
	// request bodies: JSON patches, labels, certificate signing requests
	{jsonpatch.ErrNotApplicable, http.StatusBadRequest, "Couldn't apply patch. Reason: %s"},
	{jsonpatch.ErrInvalid, http.StatusBadRequest, "%s"},
	{labels.ErrInvalid, http.StatusBadRequest, "%s"},
	{certs.ErrInvalidCSR, http.StatusBadRequest, "Invalid CSR: %s."},
	// drivers and the cloud
	{driver.ErrNoDriver, http.StatusBadRequest, "%s"},
	{cloud.ErrInvalid, http.StatusBadRequest, "%s"},
	{cloud.ErrUnavailable, http.StatusServiceUnavailable, "%s"},
	// bare-metal capacity
	{capacity.ErrInsufficient, http.StatusConflict, "%s"},
	{capacity.ErrUnbuildable, http.StatusBadRequest, "The cluster cannot be built as asked: %s."},
	{capacity.ErrReplan, http.StatusServiceUnavailable, "Other requests kept changing the bare-metal hosts being claimed; try again."},
	// bare-metal hosts
	{baremetal.ErrHostNotFound, http.StatusNotFound, "%s"},
	{bmc.ErrInvalidAddress, http.StatusBadRequest, "%s"},
	{baremetal.ErrInvalidHost, http.StatusBadRequest, "%s"},
	{baremetal.ErrConflict, http.StatusConflict, "%s"},
	{baremetal.ErrUnavailable, http.StatusServiceUnavailable, "%s"},
}

// toAPIError maps an error of any layer to the answer a client sees: an
// *apiError as it is, a sentinel of the error table by its row, anything
// else a 500 whose details stay in the service log.
func toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	for _, m := range errorTable {
		if !errors.Is(err, m.kind) {
			continue
		}
		detail := m.detail
		if strings.Contains(detail, "%s") {
			detail = fmt.Sprintf(detail, fault.Text(err, m.kind))
		}
		return &apiError{Status: m.status, Title: http.StatusText(m.status), Detail: detail}
	}
	return &apiError{Status: http.StatusInternalServerError, Title: "Internal Server Error",
		Detail: "The server hit an unexpected error; the request id identifies it in the service logs."}
}

// statusClientClosed is what nginx logs for a client that went away before
// the answer: not a server error, and counted apart from them.
const statusClientClosed = 499

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		// The client closed the connection (a load balancer's health check
		// giving up, a user's ^C): nobody reads an answer.
		s.log.InfoContext(r.Context(), "client closed the request before the answer", "method", r.Method, "path", r.URL.Path)
		w.WriteHeader(statusClientClosed)
		return
	}
	ae := toAPIError(err)
	rid := requestID(r.Context())
	if ae.Status >= 500 {
		s.log.ErrorContext(r.Context(), "request failed", "error", err.Error(), "method", r.Method, "path", r.URL.Path)
	} else {
		s.log.InfoContext(r.Context(), "request refused", "status", ae.Status, "detail", ae.Detail)
	}
	code := ae.Code
	if code == "" {
		code = "client"
		if ae.Status >= 500 {
			code = "server"
		}
	}
	// magnumclient, and so `openstack coe`, prints only the title; Magnum
	// fills it from the message, so the message goes there too.
	title := ae.Detail
	if title == "" {
		title = ae.Title
	}
	item := errorItem{RequestID: rid, Code: code, Status: ae.Status, Title: title, Detail: ae.Detail, Links: []interface{}{}}
	if ae.Status == http.StatusNotAcceptable && ae.Code == "magnum.microversion-unsupported" {
		item.Title = ae.Title
		item.MinVersion, item.MaxVersion = MinVersion.String(), MaxVersion.String()
		item.Links = []interface{}{map[string]string{"rel": "help", "href": "https://docs.openstack.org/api-guide/compute/microversions.html"}}
	}
	writeJSON(w, ae.Status, errorBody{Errors: []errorItem{item}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		slog.Error("encode response", "error", err)
		status = http.StatusInternalServerError
		b = []byte(`{"errors":[{"request_id":"","code":"server","status":500,"title":"Internal Server Error","detail":"response encoding failed","links":[]}]}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
