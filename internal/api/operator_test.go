package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"
)

// send issues one request to srv at the latest microversion, with the
// header name, value pairs, and returns status, headers and body.
func send(t *testing.T, srv *testapi.Server, method, path string, body string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	h := testapi.Latest()
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	res := srv.Do(t, method, path, body, h)
	return res.Status, res.Header, res.Body
}

// scrape fetches /metrics and parses it with Prometheus's text parser.
func scrape(t *testing.T, srv *testapi.Server) map[string]*dto.MetricFamily {
	t.Helper()
	code, hdr, body := send(t, srv, "GET", "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("GET /metrics Content-Type = %q, want Prometheus text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return fams
}

// sample finds the metric of family name whose labels include want; ok is
// false when there is none.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Metric, bool) {
	f, ok := fams[name]
	if !ok {
		return nil, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m, true
	}
	return nil, false
}

// requestCount is how many requests the histogram recorded for the labels.
func requestCount(fams map[string]*dto.MetricFamily, method, route, code string) uint64 {
	m, ok := sample(fams, "magnetite_http_request_duration_seconds", map[string]string{"method": method, "route": route, "code": code})
	if !ok {
		return 0
	}
	return m.GetHistogram().GetSampleCount()
}

func gauge(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	m, ok := sample(fams, name, labels)
	if !ok {
		return 0
	}
	return m.GetGauge().GetValue()
}

func TestMetricsCountRequestsByRoutePatternAndCode(t *testing.T) {
	srv := testapi.Start(t)
	before := scrape(t, srv)

	for range 3 {
		if code, _, b := send(t, srv, "GET", "/v1/clusters/no-such-cluster", ""); code != http.StatusNotFound {
			t.Fatalf("GET missing cluster: %d %s", code, b)
		}
	}
	if code, _, b := send(t, srv, "GET", "/v1/clustertemplates", ""); code != http.StatusOK {
		t.Fatalf("list templates: %d %s", code, b)
	}
	if code, _, _ := send(t, srv, "GET", "/v2/anything", ""); code != http.StatusNotFound {
		t.Fatalf("unknown path: %d", code)
	}

	after := scrape(t, srv)
	for _, c := range []struct {
		method, route, code string
		delta               uint64
	}{
		{"GET", "/v1/clusters/{ident}", "404", 3},
		{"GET", "/v1/clustertemplates", "200", 1},
		{"GET", "unmatched", "404", 1},
		// The first scrape is itself recorded once it has been answered.
		{"GET", "/metrics", "200", 1},
	} {
		got := requestCount(after, c.method, c.route, c.code) - requestCount(before, c.method, c.route, c.code)
		if got != c.delta {
			t.Errorf("requests{method=%s route=%s code=%s} moved by %d, want %d", c.method, c.route, c.code, got, c.delta)
		}
	}
	// Raw paths never become labels: one series per cluster would grow without bound.
	for _, m := range after["magnetite_http_request_duration_seconds"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if strings.Contains(lp.GetValue(), "no-such-cluster") {
				t.Fatalf("a raw path leaked into a label: %s=%s", lp.GetName(), lp.GetValue())
			}
		}
	}
}

func TestMetricsClustersByStatusAndQueueMoveAsClustersAreCreated(t *testing.T) {
	srv := testapi.Start(t)
	inProgress := map[string]string{"status": "CREATE_IN_PROGRESS", "health": "NONE"}
	queued := map[string]string{"type": "cluster_create", "state": "pending"}
	if n := gauge(scrape(t, srv), "magnetite_clusters", inProgress); n != 0 {
		t.Fatalf("clusters in CREATE_IN_PROGRESS before any create = %v", n)
	}

	code, _, b := send(t, srv, "POST", "/v1/clustertemplates", `{"name": "k8s", "coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.30.4"}`)
	if code != http.StatusCreated {
		t.Fatalf("create template: %d %s", code, b)
	}
	var tpl struct{ UUID string }
	if err := json.Unmarshal(b, &tpl); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"one", "two"} {
		code, _, b := send(t, srv, "POST", "/v1/clusters", `{"name": "`+name+`", "cluster_template_id": "`+tpl.UUID+`"}`)
		if code != http.StatusAccepted {
			t.Fatalf("create cluster: %d %s", code, b)
		}
		fams := scrape(t, srv)
		if n := gauge(fams, "magnetite_clusters", inProgress); n != float64(i+1) {
			t.Errorf("after %d creates, magnetite_clusters%v = %v", i+1, inProgress, n)
		}
		if n := gauge(fams, "magnetite_operations", queued); n != float64(i+1) {
			t.Errorf("after %d creates, magnetite_operations%v = %v", i+1, queued, n)
		}
		if n := requestCount(fams, "POST", "/v1/clusters", "202"); n != uint64(i+1) {
			t.Errorf("after %d creates, POST /v1/clusters 202 count = %d", i+1, n)
		}
	}
}

func TestMetricsExportDatabasePoolAndBuildInfo(t *testing.T) {
	srv := testapi.Start(t)
	fams := scrape(t, srv)
	m, ok := sample(fams, "go_sql_max_open_connections", map[string]string{"db_name": "magnetite"})
	if !ok {
		t.Fatalf("no go_sql_max_open_connections{db_name=magnetite}; families: %v", familyNames(fams))
	}
	// The SQLite store opens a pool of 8.
	if v := m.GetGauge().GetValue(); v != 8 {
		t.Errorf("go_sql_max_open_connections = %v, want 8", v)
	}
	for _, name := range []string{"go_sql_open_connections", "go_sql_in_use_connections", "go_sql_wait_count_total", "magnetite_build_info"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("family %s missing", name)
		}
	}
}

func familyNames(fams map[string]*dto.MetricFamily) []string {
	var out []string
	for n := range fams {
		out = append(out, n)
	}
	return out
}

func TestHealthcheckReportsDatabaseState(t *testing.T) {
	srv := testapi.Start(t)

	code, hdr, body := send(t, srv, "GET", "/healthcheck", "")
	if code != http.StatusOK || string(body) != "OK" || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Fatalf("healthy GET /healthcheck = %d %q (%s), want 200 OK text", code, body, hdr.Get("Content-Type"))
	}
	if code, _, body := send(t, srv, "HEAD", "/healthcheck", ""); code != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("healthy HEAD /healthcheck = %d %q, want 204", code, body)
	}
	detailed := func(path string, header ...string) (int, healthDoc) {
		t.Helper()
		code, hdr, body := send(t, srv, "GET", path, "", header...)
		if ct := hdr.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("GET %s Content-Type = %q, want application/json", path, ct)
		}
		var doc healthDoc
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, body)
		}
		return code, doc
	}
	for _, ask := range [][]string{{"/healthcheck?format=json"}, {"/healthcheck", "Accept", "application/json"},
		{"/healthcheck", "Accept", "text/html;q=0.5, application/json;q=0.9"}} {
		code, doc := detailed(ask[0], ask[1:]...)
		if code != http.StatusOK || !doc.Detailed || len(doc.Reasons) != 1 || doc.Reasons[0].Reason != "OK" ||
			doc.Reasons[0].Class != "DatabaseCheck" || !strings.Contains(doc.Reasons[0].Details, "schema version") {
			t.Fatalf("healthy detailed healthcheck %v = %d %+v", ask, code, doc)
		}
	}
	// A client preferring text gets text even when it accepts JSON too.
	if _, hdr, _ := send(t, srv, "GET", "/healthcheck", "", "Accept", "text/plain, application/json;q=0.5"); !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Fatalf("Accept preferring text got %s", hdr.Get("Content-Type"))
	}

	if err := srv.Store.Close(); err != nil {
		t.Fatal(err)
	}
	code, _, body = send(t, srv, "GET", "/healthcheck", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "database unreachable") {
		t.Fatalf("GET /healthcheck with the database closed = %d %q, want 503 naming the database", code, body)
	}
	if code, _, _ := send(t, srv, "HEAD", "/healthcheck", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("HEAD /healthcheck with the database closed = %d, want 503", code)
	}
	code, doc := detailed("/healthcheck?format=json")
	if code != http.StatusServiceUnavailable || doc.Reasons[0].Reason != "database unreachable" || !strings.Contains(doc.Reasons[0].Details, "closed") {
		t.Fatalf("detailed healthcheck with the database closed = %d %+v", code, doc)
	}
}

type healthDoc struct {
	Detailed bool `json:"detailed"`
	Reasons  []struct {
		Reason, Details, Class string
	} `json:"reasons"`
}

func TestEveryLogLineOfARequestCarriesItsRequestID(t *testing.T) {
	var out testironic.LogBuffer // safe for the server's goroutines
	srv := testapi.Start(t, func(o *api.Options) {
		// A plain JSON handler: the API adds request ids itself.
		o.Log = slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	// A refused request logs twice: the refusal and the access line.
	code, hdr, _ := send(t, srv, "POST", "/v1/clusters", `{"cluster_template_id": "no-such-template"}`)
	if code < 400 {
		t.Fatalf("create on a missing template = %d, want an error", code)
	}
	rid := hdr.Get("X-Openstack-Request-Id")
	if !strings.HasPrefix(rid, "req-") {
		t.Fatalf("X-Openstack-Request-Id = %q", rid)
	}
	lines := 0
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Text())
		}
		lines++
		if rec["request_id"] != rid {
			t.Errorf("log line without the request's id %s: %s", rid, sc.Text())
		}
		if n := strings.Count(sc.Text(), `"request_id"`); n != 1 {
			t.Errorf("request_id appears %d times: %s", n, sc.Text())
		}
	}
	if lines < 2 {
		t.Fatalf("got %d log lines, want the refusal and the access line:\n%s", lines, out.String())
	}
}
