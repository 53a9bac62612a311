// Package testapi starts a real Magnetite API server on loopback for tests:
// the production handler over a fresh SQLite database in a temp directory.
package testapi

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/conductor"
	"github.com/magnetite-io/magnetite/internal/store"
)

// Server is a running API server and its store.
type Server struct {
	*httptest.Server
	Store *store.DB
	API   *api.Server
	// HostPass is the host pass of StartWithHosts, nil otherwise.
	HostPass *conductor.HostPass
}

// Option adjusts the API options before the server starts.
type Option func(*api.Options)

// WithNoAuthRoles sets the roles of noauth callers that send no X-Roles.
func WithNoAuthRoles(roles ...string) Option {
	return func(o *api.Options) {
		o.Auth = auth.NoAuth{DefaultProject: "default", DefaultUser: "admin", DefaultRoles: roles}
	}
}

// Start runs a server for the test and stops it at cleanup. By default,
// callers without headers are project "default" with the admin role.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	srv, _ := start(t, opts)
	return srv
}

func start(t testing.TB, opts []Option) (*Server, api.Options) {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "magnetite.db"))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	o := api.Options{
		Store: st,
		Auth:  auth.NoAuth{DefaultProject: "default", DefaultUser: "admin", DefaultRoles: []string{"admin"}},
		Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, opt := range opts {
		opt(&o)
	}
	h := api.New(o)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		st.Close()
	})
	return &Server{Server: srv, Store: st, API: h}, o
}

// StartWithHosts runs a server whose host inventory is backend b, served as
// `magnetite serve` serves it: the conductor's HostActions carries out the
// actions the API queues, and its HostPass steps the hosts and mirrors them
// into the store every pass, both logging to the server's logger and
// stopped at cleanup. A test that changes hosts behind the backend's back
// and wants to see it before the next pass calls HostPass.Mirror.
func StartWithHosts(t testing.TB, b baremetal.Backend, pass time.Duration, opts ...Option) *Server {
	t.Helper()
	wake := &notifier{}
	opts = append([]Option{func(o *api.Options) { o.HostBackend, o.OnQueued = b.Name(), wake.notify }}, opts...)
	srv, o := start(t, opts)
	ctx, cancel := context.WithCancel(context.Background())
	actions := &conductor.HostActions{Store: srv.Store, Backend: b, Owner: "apitest", Log: o.Log, IdleWait: min(pass, time.Second)}
	wake.set(actions.Notify)
	hostPass := &conductor.HostPass{Store: srv.Store, Backend: b, Owner: "apitest", Every: pass, Log: o.Log}
	var wg sync.WaitGroup
	srv.HostPass = hostPass
	wg.Add(2)
	go func() { defer wg.Done(); actions.Run(ctx) }()
	go func() { defer wg.Done(); hostPass.Run(ctx) }()
	// Cleanups run last-in first-out: the workers stop before the store
	// closes.
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return srv
}

// notifier forwards the API's wake-ups to a worker started after the API.
type notifier struct {
	mu sync.Mutex
	fn func()
}

func (n *notifier) set(fn func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fn = fn
}

func (n *notifier) notify() {
	n.mu.Lock()
	fn := n.fn
	n.mu.Unlock()
	if fn != nil {
		fn()
	}
}
