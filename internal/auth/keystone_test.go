package auth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

// countingTransport is the real HTTP transport, counting the requests that
// reach Keystone and remembering the service tokens Magnetite sent.
type countingTransport struct {
	validations atomic.Int64 // GET /v3/auth/tokens
	logins      atomic.Int64 // POST /v3/auth/tokens
	mu          sync.Mutex
	svcTokens   []string
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/auth/tokens") {
		switch r.Method {
		case http.MethodGet:
			c.validations.Add(1)
			c.mu.Lock()
			if tok := r.Header.Get("X-Auth-Token"); !slices.Contains(c.svcTokens, tok) {
				c.svcTokens = append(c.svcTokens, tok)
			}
			c.mu.Unlock()
		case http.MethodPost:
			c.logins.Add(1)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingTransport) lastServiceToken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.svcTokens[len(c.svcTokens)-1]
}

// clock stands still until the test moves it forward, so what a test
// expects within a cache time holds however slowly the machine runs.
type clock struct {
	start  time.Time
	offset atomic.Int64
}

func newClock() *clock { return &clock{start: time.Now()} }

func (c *clock) Now() time.Time          { return c.start.Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

type keystoneWorld struct {
	ks      *testkeystone.Keystone
	project string
	userID  string
	userPwd string
}

func (w *keystoneWorld) validator(t *testing.T, mod func(*auth.KeystoneConfig)) (*auth.Keystone, *countingTransport, *clock) {
	t.Helper()
	ct, clk := &countingTransport{}, newClock()
	adjust := []func(*auth.KeystoneConfig){func(c *auth.KeystoneConfig) { c.Transport, c.Now = ct, clk.Now }}
	if mod != nil {
		adjust = append(adjust, mod)
	}
	k := testapi.KeystoneValidator(t, w.ks, adjust...)
	return k, ct, clk
}

// cachedToken is a validator that caches tokens for cacheTime and a user
// token it has validated once.
func (w *keystoneWorld) cachedToken(t *testing.T, cacheTime time.Duration) (*auth.Keystone, *countingTransport, *clock, string) {
	t.Helper()
	k, ct, clk := w.validator(t, func(c *auth.KeystoneConfig) { c.CacheTime = cacheTime })
	tok := w.userToken(t)
	mustValidate(t, k, tok)
	return k, ct, clk, tok
}

func (w *keystoneWorld) userToken(t *testing.T) string {
	return w.ks.Token("alice", w.userPwd, "alpha")
}

// mustValidate validates tok with k, failing the test when it is refused.
func mustValidate(t *testing.T, k *auth.Keystone, tok string) {
	t.Helper()
	if _, err := k.Validate(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
}

func wantUnauthenticated(t *testing.T, err error, fragment string) {
	t.Helper()
	if !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("got %v, want ErrUnauthenticated", err)
	}
	if !strings.Contains(err.Error(), fragment) {
		t.Fatalf("error %q does not say %q", err, fragment)
	}
}

func TestKeystoneValidation(t *testing.T) {
	ks := testkeystone.Start(t)
	w := &keystoneWorld{ks: ks, userPwd: "alice-password"}
	ks.ServiceUser(testapi.ServiceUser, testapi.ServicePassword)
	w.project = ks.CreateProject("alpha")
	w.userID = ks.CreateUser("alice", w.userPwd)
	ks.Grant(w.userID, w.project, "member")
	ctx := context.Background()

	t.Run("a valid token names the project, user and roles", func(t *testing.T) {
		k, _, _ := w.validator(t, nil)
		tok := w.userToken(t)
		id, err := k.Validate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		if id.ProjectID != w.project || id.UserID != w.userID {
			t.Fatalf("identity %+v, want project %s user %s", id, w.project, w.userID)
		}
		// Keystone expands implied roles: member implies reader.
		if !id.HasRole("member") || !id.HasRole("reader") || id.HasRole("admin") {
			t.Fatalf("roles %v, want member and reader only", id.Roles)
		}
		if id.AuthToken != tok {
			t.Fatal("the identity does not carry the caller's token for calls on their behalf")
		}
	})

	t.Run("repeated and concurrent requests with one token reach Keystone once", func(t *testing.T) {
		k, ct, _ := w.validator(t, nil)
		tok := w.userToken(t)
		var g errgroup.Group
		for range 20 {
			g.Go(func() error {
				_, err := k.Validate(ctx, tok)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		for range 30 {
			mustValidate(t, k, tok)
		}
		if n := ct.validations.Load(); n != 1 {
			t.Fatalf("Keystone validated the token %d times, want 1", n)
		}
		if n := ct.logins.Load(); n != 1 {
			t.Fatalf("Magnetite logged in %d times, want 1", n)
		}
	})

	t.Run("a revoked token is refused once the cache time has passed", func(t *testing.T) {
		k, ct, clk, tok := w.cachedToken(t, 30*time.Second)
		ks.Revoke(tok)
		// Within the cache time the cached answer stands (documented bound).
		clk.advance(29 * time.Second)
		if _, err := k.Validate(ctx, tok); err != nil {
			t.Fatalf("within token_cache_time: %v", err)
		}
		clk.advance(2 * time.Second)
		_, err := k.Validate(ctx, tok)
		wantUnauthenticated(t, err, "invalid, expired or revoked")
		if n := ct.validations.Load(); n != 2 {
			t.Fatalf("Keystone was asked %d times, want 2 (first use, re-validation)", n)
		}
	})

	t.Run("a cached token is refused past its own expiry without asking Keystone", func(t *testing.T) {
		k, ct, clk, tok := w.cachedToken(t, 24*time.Hour)
		// Keystone's tokens live an hour by default.
		clk.advance(61 * time.Minute)
		_, err := k.Validate(ctx, tok)
		wantUnauthenticated(t, err, "expired")
		if n := ct.validations.Load(); n != 1 {
			t.Fatalf("Keystone was asked %d times, want 1: expiry must be decided from the cache", n)
		}
	})

	t.Run("an invalid token is refused and the refusal is remembered", func(t *testing.T) {
		k, ct, _ := w.validator(t, nil)
		for range 3 {
			_, err := k.Validate(ctx, "gAAAAABnot-a-real-token")
			wantUnauthenticated(t, err, "invalid, expired or revoked")
		}
		if n := ct.validations.Load(); n != 1 {
			t.Fatalf("Keystone was asked %d times about one bad token, want 1", n)
		}
	})

	t.Run("a request without a token is refused before asking Keystone", func(t *testing.T) {
		k, ct, _ := w.validator(t, nil)
		_, err := k.Identify(httptest.NewRequest("GET", "/v1/clusters", nil))
		wantUnauthenticated(t, err, "no X-Auth-Token")
		if ct.validations.Load()+ct.logins.Load() != 0 {
			t.Fatal("Keystone was contacted for a request without a token")
		}
	})

	t.Run("an unscoped token is refused", func(t *testing.T) {
		k, _, _ := w.validator(t, nil)
		_, err := k.Validate(ctx, unscopedToken(t, ks, "alice", w.userPwd))
		wantUnauthenticated(t, err, "not scoped to a project")
	})

	t.Run("the cache is bounded and forgets the least recently used token", func(t *testing.T) {
		k, ct, _ := w.validator(t, func(c *auth.KeystoneConfig) { c.CacheSize = 2 })
		a, b, c := w.userToken(t), w.userToken(t), w.userToken(t)
		for _, tok := range []string{a, b, a, c} { // c evicts b, the least recently used
			mustValidate(t, k, tok)
		}
		if n := ct.validations.Load(); n != 3 {
			t.Fatalf("%d validations, want 3", n)
		}
		mustValidate(t, k, a)
		if n := ct.validations.Load(); n != 3 {
			t.Fatalf("a was forgotten although used recently (%d validations)", n)
		}
		mustValidate(t, k, b)
		if n := ct.validations.Load(); n != 4 {
			t.Fatalf("b was still cached in a cache of two (%d validations)", n)
		}
	})

	t.Run("the service token is renewed before it expires", func(t *testing.T) {
		k, ct, clk := w.validator(t, nil)
		if _, err := k.Validate(ctx, w.userToken(t)); err != nil {
			t.Fatal(err)
		}
		first := ct.lastServiceToken()
		clk.advance(50 * time.Minute) // past three quarters of an hour
		if _, err := k.Validate(ctx, w.userToken(t)); err != nil {
			t.Fatal(err)
		}
		if n := ct.logins.Load(); n != 2 {
			t.Fatalf("%d service logins, want 2", n)
		}
		if ct.lastServiceToken() == first {
			t.Fatal("the old service token was used after renewal was due")
		}
	})

	t.Run("a service token revoked early is replaced and the request succeeds", func(t *testing.T) {
		k, ct, _ := w.validator(t, nil)
		if _, err := k.Validate(ctx, w.userToken(t)); err != nil {
			t.Fatal(err)
		}
		ks.Revoke(ct.lastServiceToken())
		id, err := k.Validate(ctx, w.userToken(t))
		if err != nil {
			t.Fatal(err)
		}
		if id.ProjectID != w.project {
			t.Fatalf("project %s, want %s", id.ProjectID, w.project)
		}
		if n := ct.logins.Load(); n != 2 {
			t.Fatalf("%d service logins, want 2", n)
		}
	})

	t.Run("wrong service credentials make validation unavailable, not a user error", func(t *testing.T) {
		k, _, _ := w.validator(t, func(c *auth.KeystoneConfig) { c.Password = "wrong" })
		_, err := k.Validate(ctx, w.userToken(t))
		if !errors.Is(err, auth.ErrIdentityUnavailable) {
			t.Fatalf("got %v, want ErrIdentityUnavailable", err)
		}
	})

	t.Run("the catalog gives the container-infra endpoint of the region", func(t *testing.T) {
		ks.RegisterService("container-infra", "magnetite", "http://127.0.0.1:9511/v1")
		k, _, _ := w.validator(t, func(c *auth.KeystoneConfig) { c.RegionName = testkeystone.Region })
		url, err := k.Endpoint(ctx, "container-infra", "public")
		if err != nil {
			t.Fatal(err)
		}
		if url != "http://127.0.0.1:9511/v1" {
			t.Fatalf("endpoint %s", url)
		}
		other, _, _ := w.validator(t, func(c *auth.KeystoneConfig) { c.RegionName = "elsewhere" })
		if _, err := other.Endpoint(ctx, "container-infra", "public"); err == nil || !strings.Contains(err.Error(), "region elsewhere") {
			t.Fatalf("a region without the service: %v", err)
		}
	})

	t.Run("when Keystone goes away cached tokens still work and new ones get unavailable", func(t *testing.T) {
		k, _, _ := w.validator(t, nil)
		known, unknown := w.userToken(t), w.userToken(t)
		mustValidate(t, k, known)
		ks.Stop()
		if _, err := k.Validate(ctx, known); err != nil {
			t.Fatalf("a cached token within token_cache_time: %v", err)
		}
		_, err := k.Validate(ctx, unknown)
		if !errors.Is(err, auth.ErrIdentityUnavailable) {
			t.Fatalf("got %v, want ErrIdentityUnavailable", err)
		}
	})
}

func unscopedToken(t *testing.T, ks *testkeystone.Keystone, user, password string) string {
	t.Helper()
	body := fmt.Sprintf(`{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":%q,"domain":{"name":"Default"},"password":%q}}}}}`, user, password)
	res, err := http.Post(ks.AuthURL()+"/auth/tokens", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("unscoped login: %d %s", res.StatusCode, b)
	}
	return res.Header.Get("X-Subject-Token")
}

func TestKeystoneUnreachableIsUnavailable(t *testing.T) {
	// A loopback port nobody listens on: the connection is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	k, err := auth.NewKeystone(auth.KeystoneConfig{AuthURL: "http://" + addr, Username: "u", Password: "p", ProjectName: "service",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/v1/clusters", nil)
	r.Header.Set("X-Auth-Token", "some-token")
	if _, err := k.Identify(r); !errors.Is(err, auth.ErrIdentityUnavailable) {
		t.Fatalf("got %v, want ErrIdentityUnavailable", err)
	}
	if got, want := k.Challenge(), `Keystone uri="http://`+addr+`"`; got != want {
		t.Fatalf("challenge %s, want %s", got, want)
	}
}

func TestKeystoneConfigIsChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  auth.KeystoneConfig
		want string
	}{
		{"missing credentials", auth.KeystoneConfig{AuthURL: "http://k:5000"}, "username, password, project_name"},
		{"not a URL", auth.KeystoneConfig{AuthURL: "k:5000", Username: "u", Password: "p", ProjectName: "s"}, "http:// or https://"},
		{"identity v2", auth.KeystoneConfig{AuthURL: "http://k:5000/v2.0", Username: "u", Password: "p", ProjectName: "s"}, "v2.0"},
		{"unreadable CA file", auth.KeystoneConfig{AuthURL: "https://k:5000", Username: "u", Password: "p", ProjectName: "s", CAFile: "/nonexistent/ca.pem"}, "cafile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := auth.NewKeystone(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// BenchmarkValidateCachedToken is the cost authentication adds to a request
// once Keystone has answered for its token: a digest and a cache lookup.
func BenchmarkValidateCachedToken(b *testing.B) {
	ks := testkeystone.Start(b) // skips under -short
	ks.ServiceUser(testapi.ServiceUser, testapi.ServicePassword)
	tok := testapi.KeystoneMember(ks, "bench", "bencher")
	k := testapi.KeystoneValidator(b, ks, func(c *auth.KeystoneConfig) { c.CacheTime = time.Hour })
	ctx := context.Background()
	if _, err := k.Validate(ctx, tok); err != nil {
		b.Fatal(err)
	}
	b.Run("sequential", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.Validate(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := k.Validate(ctx, tok); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
