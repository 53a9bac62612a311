// Package testapi starts a real Magnetite API server on loopback for tests:
// the production handler over a fresh SQLite database in a temp directory.
package testapi

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/store"
)

// Server is a running API server and its store.
type Server struct {
	*httptest.Server
	Store *store.DB
	API   *api.Server
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
	return &Server{Server: srv, Store: st, API: h}
}
