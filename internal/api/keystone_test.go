package api_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

// shiftedClock is real time plus an offset the test moves forward.
type shiftedClock struct{ offset atomic.Int64 }

func (c *shiftedClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *shiftedClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

const (
	tokenCacheTime = time.Minute
)

// keystoneWorld is the isolation world behind real Keystone tokens: users
// and projects in Keystone, Magnetite validating every request there.
type keystoneWorld struct {
	*isolationWorld
	ks      *testkeystone.Keystone
	clock   *shiftedClock
	logs    *testironic.LogBuffer
	secrets map[string]string // what must never be seen, by name
}

func startKeystoneWorld(t *testing.T) *keystoneWorld {
	ks := testkeystone.Start(t)
	kw := &keystoneWorld{ks: ks, clock: &shiftedClock{}, logs: &testironic.LogBuffer{}, secrets: map[string]string{
		"service password": testapi.ServicePassword, "keystone admin password": testkeystone.AdminPassword,
	}}
	ks.ServiceUser(testapi.ServiceUser, testapi.ServicePassword)
	alpha, beta := ks.CreateProject("alpha"), ks.CreateProject("beta")
	users := []struct {
		name, project, projectName, role string
		p                                persona
	}{
		{"olivia", alpha, "alpha", "member", owner},
		{"rita", alpha, "alpha", "reader", readerP},
		{"oscar", beta, "beta", "member", outsider},
	}
	log := slog.New(slog.NewJSONHandler(kw.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	validator := testapi.KeystoneValidator(t, ks, func(c *auth.KeystoneConfig) {
		c.CacheTime, c.Now, c.Log = tokenCacheTime, kw.clock.Now, log
	})
	w := &isolationWorld{projectA: alpha, projectB: beta, challenge: fmt.Sprintf("Keystone uri=%q", ks.AuthURL())}
	w.srv = testapi.Start(t, func(o *api.Options) {
		o.Auth, o.Log, o.DefaultClusterQuota = validator, log, 1000
		o.Credentials = validator
	})
	withToken := func(tok string) *caller { return &caller{w: w, headers: map[string]string{"X-Auth-Token": tok}} }
	w.callers = map[persona]*caller{anonymous: {w: w, headers: map[string]string{}}}
	for _, u := range users {
		pwd := u.name + "-password-0815"
		id := ks.CreateUser(u.name, pwd)
		ks.Grant(id, u.project, u.role)
		tok := ks.Token(u.name, pwd, u.projectName)
		w.callers[u.p] = withToken(tok)
		kw.secrets[u.name+"'s password"], kw.secrets[u.name+"'s token"] = pwd, tok
	}
	adminTok := ks.Token("admin", testkeystone.AdminPassword, "admin")
	w.callers[adminP] = withToken(adminTok)
	kw.secrets["admin's token"] = adminTok
	kw.isolationWorld = w
	w.populate(t)

	// The revoked persona: a token of the owner that worked and is cached,
	// then revoked in Keystone; once token_cache_time has passed it must be
	// refused.
	stale := ks.Token("olivia", kw.secrets["olivia's password"], "alpha")
	kw.secrets["olivia's revoked token"] = stale
	w.callers[revoked] = withToken(stale)
	w.as(revoked).must(t, http.StatusOK, "GET", "/v1/clusters", nil)
	ks.Revoke(stale)
	if ex := w.as(revoked).send(t, "GET", "/v1/clusters", nil); ex.Status != http.StatusOK {
		t.Fatalf("within token_cache_time a cached token is still trusted (the documented bound); got %d", ex.Status)
	}
	kw.clock.advance(tokenCacheTime + time.Second)
	return kw
}

// TestKeystoneTenantIsolation runs the isolation matrix with real Keystone
// tokens for all six personas, then proves no secret reached a log line or
// an answer, then that Keystone going away gives 503 for unknown tokens.
func TestKeystoneTenantIsolation(t *testing.T) {
	t.Parallel()
	kw := startKeystoneWorld(t)

	t.Run("matrix", func(t *testing.T) { runMatrix(t, kw.isolationWorld) })

	t.Run("a token of an unknown user is refused with the challenge", func(t *testing.T) {
		ex := kw.as(anonymous).send(t, "GET", "/v1/clusters", nil)
		ex2 := (&caller{w: kw.isolationWorld, headers: map[string]string{"X-Auth-Token": "gAAAAAB-forged"}}).send(t, "GET", "/v1/clusters", nil)
		for _, e := range []exchange{ex, ex2} {
			if e.Status != http.StatusUnauthorized || e.Header.Get("WWW-Authenticate") != kw.challenge {
				t.Fatalf("status %d, challenge %q: %s", e.Status, e.Header.Get("WWW-Authenticate"), e.Body)
			}
		}
	})

	t.Run("no secret appears in logs or answers", func(t *testing.T) {
		// The private keys of the clusters' certificate authorities are
		// secrets too: they leave Magnetite only towards the management
		// cluster.
		keys, err := kw.srv.Store.ClusterCertificates(context.Background(), kw.ids["{C}"])
		if err != nil || len(keys) == 0 {
			t.Fatalf("cluster %s has no key pairs: %v", kw.ids["{C}"], err)
		}
		for _, k := range keys {
			kw.secrets["the "+k.Purpose+" private key"] = pemBody(k.KeyPEM)
		}
		// So are the clusters' application credentials, the active one and
		// the one a rotation retired.
		creds, err := kw.srv.Store.ClusterCredentials(context.Background(), kw.ids["{C}"])
		if err != nil || len(creds) < 2 {
			t.Fatalf("cluster %s has %d application credentials, want the active and the retired one: %v", kw.ids["{C}"], len(creds), err)
		}
		for i, c := range creds {
			kw.secrets[fmt.Sprintf("application credential secret %d", i)] = c.Secret
		}
		logs := kw.logs.String()
		if !strings.Contains(logs, `"msg":"request"`) {
			t.Fatalf("the session logged no requests; the log capture is broken:\n%.2000s", logs)
		}
		kw.mu.Lock()
		seen := append([]exchange(nil), kw.seen...)
		kw.mu.Unlock()
		if len(seen) < 200 {
			t.Fatalf("only %d answers recorded", len(seen))
		}
		for name, secret := range kw.secrets {
			if strings.Contains(logs, secret) {
				t.Errorf("the %s appears in the logs", name)
			}
			for _, ex := range seen {
				if bytes.Contains(ex.Body, []byte(secret)) {
					t.Errorf("the %s appears in an answer body: %s", name, ex.Body)
					break
				}
				if headerContains(ex.Header, secret) {
					t.Errorf("the %s appears in an answer header: %v", name, ex.Header)
					break
				}
			}
		}
	})

	t.Run("when Keystone is down new tokens get 503 and cached ones still work", func(t *testing.T) {
		fresh := kw.ks.Token("oscar", kw.secrets["oscar's password"], "beta")
		kw.as(owner).must(t, http.StatusOK, "GET", "/v1/clusters", nil) // cached now
		kw.ks.Stop()
		kw.as(owner).must(t, http.StatusOK, "GET", "/v1/clusters", nil)
		ex := (&caller{w: kw.isolationWorld, headers: map[string]string{"X-Auth-Token": fresh}}).send(t, "GET", "/v1/clusters", nil)
		if ex.Status != http.StatusServiceUnavailable || !bytes.Contains(ex.Body, []byte(`"status": 503`)) && !bytes.Contains(ex.Body, []byte(`"status":503`)) {
			t.Fatalf("status %d: %s", ex.Status, ex.Body)
		}
		if strings.Contains(kw.logs.String(), fresh) {
			t.Error("the token refused for lack of Keystone appears in the logs")
		}
	})
}

func headerContains(h http.Header, s string) bool {
	for _, vs := range h {
		for _, v := range vs {
			if strings.Contains(v, s) {
				return true
			}
		}
	}
	return false
}

// pemBody is the base64 text of a PEM block's first line of data, enough to
// recognise the key wherever it would be copied.
func pemBody(p []byte) string {
	lines := strings.Split(string(p), "\n")
	if len(lines) < 3 {
		return string(p)
	}
	return lines[1]
}
