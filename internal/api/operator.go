package api

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/version"
)

// Operator endpoints live beside the Magnum API, outside /v1, and need no
// token: load balancers poll /healthcheck and Prometheus scrapes /metrics.
const (
	healthcheckPath = "/healthcheck"
	metricsPath     = "/metrics"
)

// serveOperator answers the operator endpoints; it reports false for any
// other path.
func (s *Server) serveOperator(w http.ResponseWriter, r *http.Request) bool {
	switch r.URL.Path {
	case healthcheckPath:
		s.healthcheck(w, r)
	case metricsPath:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return true
		}
		s.metrics.Handler().ServeHTTP(w, r)
	default:
		return false
	}
	return true
}

// healthReason is one check's outcome, shaped as oslo.middleware's detailed
// healthcheck reports it.
type healthReason struct {
	Reason  string `json:"reason"`
	Details string `json:"details"`
	Class   string `json:"class"`
}

// healthcheck answers as oslo.middleware's healthcheck does: GET gives 200
// "OK" or 503 with the reasons as text, HEAD 204 or 503 without a body;
// ?format=json or an Accept header preferring JSON gives the detailed form.
func (s *Server) healthcheck(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	db := s.databaseHealth(r.Context())
	healthy := db.Reason == "OK"
	reasons := []healthReason{db}
	// The management cluster is reported, never counted: every replica
	// shares it, and taking them all out of the load balancer would stop
	// the reads and queued changes that still work without it.
	if s.opts.Management != nil {
		reasons = append(reasons, managementHealth(s.opts.Management()))
	}
	status := http.StatusOK
	if !healthy {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		if healthy {
			status = http.StatusNoContent
		}
		w.WriteHeader(status)
		return
	}
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		body := map[string]any{"detailed": true, "reasons": reasons, "version": version.String(),
			"now": time.Now().UTC().Format(time.RFC3339Nano)}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "    ")
		_ = enc.Encode(body)
		return
	}
	lines := make([]string, len(reasons))
	for i, hr := range reasons {
		lines[i] = hr.Reason
	}
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprint(w, strings.Join(lines, "\n"))
}

// databaseHealth asks the database for its schema version: a real query, so
// a closed pool, a locked file or an unreachable server all show.
func (s *Server) databaseHealth(ctx context.Context) healthReason {
	hr := healthReason{Class: "DatabaseCheck"}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	v, err := s.st.SchemaVersion(ctx)
	if err != nil {
		hr.Reason = "database unreachable"
		hr.Details = err.Error()
		s.log.WarnContext(ctx, "healthcheck: database unreachable", "error", err)
		return hr
	}
	hr.Reason = "OK"
	hr.Details = fmt.Sprintf("%s database answered in %s; schema version %d (this build's latest %d)",
		s.st.Dialect(), time.Since(start).Round(time.Microsecond), v, store.LatestVersion(s.st.Dialect()))
	return hr
}

// ManagementHealth is the conductor's view of the management cluster.
type ManagementHealth struct {
	// Known is false until the conductor's first probe.
	Known, Reachable bool
	Since            time.Time
	Error            string
}

func managementHealth(m ManagementHealth) healthReason {
	hr := healthReason{Class: "ManagementClusterCheck"}
	switch {
	case !m.Known:
		hr.Reason, hr.Details = "OK", "the conductor has not probed the management cluster yet"
	case m.Reachable:
		hr.Reason, hr.Details = "OK", "the management cluster answers (since "+m.Since.UTC().Format(time.RFC3339)+")"
	default:
		hr.Reason = "management cluster unreachable"
		hr.Details = "unreachable since " + m.Since.UTC().Format(time.RFC3339) + ": " + m.Error +
			"; cluster status is not being watched and operations wait (the API still serves reads and queues changes)"
	}
	return hr
}

// wantsJSON reports ?format=json, or an Accept header that ranks JSON above
// plain text and HTML.
func wantsJSON(r *http.Request) bool {
	if f := r.URL.Query().Get("format"); f != "" {
		return strings.EqualFold(f, "json")
	}
	best, bestQ := "", -1.0
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if qs, ok := params["q"]; ok {
			if _, err := fmt.Sscanf(qs, "%g", &q); err != nil {
				continue
			}
		}
		switch mt {
		case "application/json", "text/plain", "text/html", "*/*", "text/*":
			if q > bestQ {
				best, bestQ = mt, q
			}
		}
	}
	return best == "application/json"
}

// observeRequest records the request's latency under its route pattern.
func (s *Server) observeRequest(r *http.Request, rec *statusRecorder, d time.Duration) {
	method := r.Method
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		// Any token is a valid method; keep the label's values bounded.
		method = "other"
	}
	s.metrics.ObserveRequest(method, s.routeOf(r, rec.route), rec.status, d)
}

// routeOf names the route a request matched: the pattern of the handler
// that answered (or would have, for requests refused before routing)
// without its method, "/healthcheck" or "/metrics", or "unmatched".
func (s *Server) routeOf(r *http.Request, pattern string) string {
	switch r.URL.Path {
	case healthcheckPath, metricsPath:
		return r.URL.Path
	}
	if pattern == "" {
		_, pattern = s.mux.Handler(r)
	}
	if _, path, ok := strings.Cut(pattern, " "); ok {
		pattern = path
	}
	if pattern == "" || pattern == "/" {
		return "unmatched"
	}
	return pattern
}
