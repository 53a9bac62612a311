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
	"github.com/magnetite-io/magnetite/internal/capacity"
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

// toAPIError maps sentinel errors of the lower layers to HTTP in one table.
func toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	msg := cleanMessage(err)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("%s", msg)
	case errors.Is(err, store.ErrAmbiguousName):
		return conflict("Multiple objects match %s. Use the UUID instead of the name.", strings.TrimPrefix(msg, "more than one object has this name: "))
	case errors.Is(err, store.ErrConflict):
		return conflict("%s", msg)
	case errors.Is(err, store.ErrReferenced):
		return badRequest("%s. Only the name, public, hidden or tags of a template in use can change; delete its clusters first to change anything else.", msg)
	case errors.Is(err, store.ErrQuotaExceeded):
		return forbidden("Resource limit exceeded: %s", msg)
	case errors.Is(err, store.ErrInvalidSort):
		return badRequest("The sort_key value %s is an invalid field for sorting.", strings.TrimPrefix(msg, "invalid sort key: "))
	case errors.Is(err, capacity.ErrInsufficient):
		return conflict("%s", msg)
	case errors.Is(err, capacity.ErrUnbuildable):
		return badRequest("The cluster cannot be built as asked: %s.", msg)
	case errors.Is(err, baremetal.ErrUnavailable):
		return &apiError{Status: http.StatusServiceUnavailable, Title: "Service Unavailable", Detail: msg}
	case errors.Is(err, capacity.ErrReplan):
		return &apiError{Status: http.StatusServiceUnavailable, Title: "Service Unavailable",
			Detail: "Other requests kept changing the bare-metal hosts being claimed; try again."}
	case errors.Is(err, store.ErrInvalidMarker):
		return badRequest("The marker %s does not name an object in this listing.", strings.TrimPrefix(msg, "marker not found: "))
	case errors.Is(err, auth.ErrForbidden):
		return forbidden("Policy doesn't allow this operation: %s", msg)
	case errors.Is(err, auth.ErrUnauthenticated):
		return &apiError{Status: http.StatusUnauthorized, Title: "Unauthorized",
			Detail: "The request you have made requires authentication: " + msg + "."}
	case errors.Is(err, auth.ErrIdentityUnavailable):
		return &apiError{Status: http.StatusServiceUnavailable, Title: "Service Unavailable",
			Detail: "The identity service could not validate the token (" + msg + "); try again shortly."}
	}
	return &apiError{Status: http.StatusInternalServerError, Title: "Internal Server Error",
		Detail: "The server hit an unexpected error; the request id identifies it in the service logs."}
}

// cleanMessage drops the "store: not found: " style prefixes of sentinel
// errors, keeping what the user needs to read.
func cleanMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"store: not found: ", "store: conflicts with an existing object: ",
		"store: object is referenced by clusters: ", "store: project quota exceeded: ", "store: ",
		"auth: forbidden: ", "auth: authentication required: ", "auth: identity service unavailable: ",
		capacity.ErrInsufficient.Error() + ": ", baremetal.ErrUnavailable.Error() + ": ",
		capacity.ErrUnbuildable.Error() + ": "} {
		if strings.HasPrefix(msg, p) {
			return strings.TrimPrefix(msg, p)
		}
	}
	return msg
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
