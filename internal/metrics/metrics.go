package metrics

import (
	"context"
	"database/sql"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/version"
)

const namespace = "magnetite"

// StateSource reads the counts that become gauges at scrape time.
// *store.DB implements it.
type StateSource interface {
	ClusterCounts(ctx context.Context) ([]store.Count, error)
	OperationCounts(ctx context.Context) ([]store.Count, error)
}

// Result is how an operation attempt ended.
type Result string

const (
	// Succeeded: the operation is done.
	Succeeded Result = "succeeded"
	// Failed: the operation ended in failure (permanent error or timeout).
	Failed Result = "failed"
	// Retried: a transient failure put the operation back in the queue.
	Retried Result = "retried"
)

// Registry holds Magnetite's metrics and serves them.
type Registry struct {
	reg               *prometheus.Registry
	log               *slog.Logger
	requestDuration   *prometheus.HistogramVec
	operations        *prometheus.CounterVec
	operationDuration *prometheus.HistogramVec
	watchLag          *prometheus.HistogramVec
	pageCache         *prometheus.CounterVec
	management        prometheus.Gauge
	managementOnce    sync.Once
}

// New builds the registry. state and db may be nil (no store-backed gauges,
// no pool statistics); log receives scrape errors.
func New(state StateSource, db *sql.DB, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.Default()
	}
	r := &Registry{
		reg: prometheus.NewRegistry(),
		log: log,
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "http", Name: "request_duration_seconds",
			Help:    "Time to answer an API request, by method, route pattern and status code.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route", "code"}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "operations_finished_total",
			Help: "Operation attempts that ended, by operation type and result (succeeded, failed, retried).",
		}, []string{"type", "result"}),
		operationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "operation_duration_seconds",
			Help: "Time from an operation's creation to the end of its attempt, by type and result.",
			// Bare-metal clusters take hours; virtual ones minutes.
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400},
		}, []string{"type", "result"}),
		watchLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "watch_lag_seconds",
			Help: "Delay from a change on a management-cluster object (its newest condition transition) " +
				"to Magnetite storing the status it implies, by kind.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"kind"}),
		pageCache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "api_page_cache_requests_total",
			Help: "List requests answered from the encoded-page cache (hit) or read from the database (miss).",
		}, []string{"result"}),
	}
	r.management = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "management_cluster_reachable",
		Help: "1 while the conductor's probes of the management cluster's API succeed, 0 while they fail; absent without a conductor.",
	})
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info", Help: "Always 1; the version label names the build.",
		ConstLabels: prometheus.Labels{"version": version.String()},
	})
	buildInfo.Set(1)
	r.reg.MustRegister(r.requestDuration, r.operations, r.operationDuration, r.watchLag, r.pageCache, buildInfo,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if state != nil {
		r.reg.MustRegister(&stateCollector{src: state})
	}
	if db != nil {
		r.reg.MustRegister(collectors.NewDBStatsCollector(db, namespace))
	}
	return r
}

// Handler serves the metrics in Prometheus text format. A failed store read
// drops only the gauges it feeds; the rest of the scrape is still served.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(r.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// Gatherer exposes the registry, for tests and for embedding.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// ObserveRequest records one answered API request. route is the matched
// route pattern (never the raw path, which would make a series per cluster).
func (r *Registry) ObserveRequest(method, route string, code int, d time.Duration) {
	r.requestDuration.WithLabelValues(method, route, strconv.Itoa(code)).Observe(d.Seconds())
}

// PageCache records a list request answered from the page cache (hit) or
// not.
func (r *Registry) PageCache(hit bool) {
	if hit {
		r.pageCache.WithLabelValues("hit").Inc()
	} else {
		r.pageCache.WithLabelValues("miss").Inc()
	}
}

// OperationFinished records the end of an operation attempt; age is the time
// since the operation was created.
func (r *Registry) OperationFinished(typ model.OperationType, result Result, age time.Duration) {
	r.operations.WithLabelValues(string(typ), string(result)).Inc()
	r.operationDuration.WithLabelValues(string(typ), string(result)).Observe(age.Seconds())
}

// SetManagementReachable records the conductor's view of the management
// cluster; the gauge appears with the first call.
func (r *Registry) SetManagementReachable(reachable bool) {
	r.managementOnce.Do(func() { r.reg.MustRegister(r.management) })
	if reachable {
		r.management.Set(1)
	} else {
		r.management.Set(0)
	}
}

// ObserveWatchLag records how long after a management-cluster change of the
// given kind its status reached the store.
func (r *Registry) ObserveWatchLag(kind string, lag time.Duration) {
	if lag < 0 {
		lag = 0
	}
	r.watchLag.WithLabelValues(kind).Observe(lag.Seconds())
}

// stateCollector turns store counts into gauges at scrape time, so the
// numbers are right whichever replica answers the scrape.
type stateCollector struct{ src StateSource }

var (
	clustersDesc = prometheus.NewDesc(namespace+"_clusters", "Clusters by status and health_status (NONE until the management cluster reports).",
		[]string{"status", "health"}, nil)
	operationsDesc = prometheus.NewDesc(namespace+"_operations", "Operations in the queue by type and state (pending, running, succeeded, failed).",
		[]string{"type", "state"}, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- clustersDesc
	ch <- operationsDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	emit := func(desc *prometheus.Desc, counts []store.Count, err error, blank string) {
		if err != nil {
			ch <- prometheus.NewInvalidMetric(desc, err)
			return
		}
		for _, n := range counts {
			b := n.B
			if b == "" {
				b = blank
			}
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(n.N), n.A, b)
		}
	}
	cs, err := c.src.ClusterCounts(ctx)
	emit(clustersDesc, cs, err, "NONE")
	os, err := c.src.OperationCounts(ctx)
	emit(operationsDesc, os, err, "")
}
