package mgmt

import (
	"maps"
	"net/http"
	"sync"
)

// requestCounts counts the requests a client sent to the management
// cluster, by HTTP method: what an operator (or a benchmark) reads to see
// how much load the conductor puts on the management cluster's API server.
type requestCounts struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (r *requestCounts) add(method string) {
	r.mu.Lock()
	if r.counts == nil {
		r.counts = map[string]int64{}
	}
	r.counts[method]++
	r.mu.Unlock()
}

func (r *requestCounts) snapshot() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.counts)
}

// countingTransport counts every request before it is sent.
type countingTransport struct {
	next   http.RoundTripper
	counts *requestCounts
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.counts.add(req.Method)
	return t.next.RoundTrip(req)
}

// Requests returns how many requests the client has sent to the management
// cluster since it was made, by HTTP method (GET, PATCH, DELETE, …), watches
// and discovery included.
func (c *Client) Requests() map[string]int64 { return c.requests.snapshot() }
