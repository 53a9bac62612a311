// Package metrics defines every Prometheus metric Magnetite exports and
// serves them on /metrics: API request latency by route and status code,
// operations by type and result, clusters by status and health and the
// operations queue (both read from the store at scrape time), watch lag,
// and the database connection pool.
//
// The API server observes requests itself; the conductor reports finished
// operations and watch lag through the Registry's methods.
package metrics
