package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

// tokenLog passes requests to the Keystone validator and remembers which
// tokens it saw.
type tokenLog struct {
	next api.Authenticator
	mu   sync.Mutex
	seen map[string]bool
}

func (l *tokenLog) Identify(r *http.Request) (auth.Identity, error) {
	l.mu.Lock()
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[r.Header.Get("X-Auth-Token")] = true
	l.mu.Unlock()
	return l.next.Identify(r)
}

func (l *tokenLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// keystoneCLI runs a client command with only the environment given: no
// --os-endpoint or --os-token, so Keystone and the catalog are used.
func keystoneCLI(t *testing.T, env map[string]string, args ...string) clientRun {
	t.Helper()
	for _, k := range []string{"OS_CLOUD", "OS_ENDPOINT", "OS_TOKEN", "OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME",
		"OS_PROJECT_ID", "OS_USER_DOMAIN_NAME", "OS_PROJECT_DOMAIN_NAME", "OS_REGION_NAME", "OS_INTERFACE", "OS_CLIENT_CONFIG_FILE"} {
		t.Setenv(k, env[k])
	}
	var out, errb lockedBuffer
	root := rootCommand()
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return clientRun{out.String(), errb.String(), err}
}

// TestClientAuthenticatesWithKeystone drives the client through a real
// Keystone: password authentication from OS_* variables and from
// clouds.yaml in the working directory, the container-infra endpoint taken
// from the catalog, and an API server that validates the tokens, so each
// user sees their own project's clusters.
func TestClientAuthenticatesWithKeystone(t *testing.T) {
	// Tokens live 5 s, so a wait outlives its first token.
	ks := testkeystone.Start(t, testkeystone.WithTokenExpiration(5*time.Second))
	ks.ServiceUser("magnetite", "magnetite-service-password")
	alpha, beta := ks.CreateProject("alpha"), ks.CreateProject("beta")
	ks.Grant(ks.CreateUser("alice", "alice-password"), alpha, "member")
	ks.Grant(ks.CreateUser("bob", "bob-password"), beta, "member")
	validator, err := auth.NewKeystone(auth.KeystoneConfig{
		AuthURL: ks.AuthURL(), Username: "magnetite", Password: "magnetite-service-password", ProjectName: "service",
		CacheTime: time.Minute, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	tokens := &tokenLog{next: validator}
	srv := testapi.Start(t, func(o *api.Options) { o.Auth = tokens })
	ks.RegisterService("container-infra", "magnum", srv.URL+"/v1")

	alice := map[string]string{
		"OS_AUTH_URL": ks.AuthURL(), "OS_USERNAME": "alice", "OS_PASSWORD": "alice-password", "OS_PROJECT_NAME": "alpha",
		"OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_NAME": "Default", "OS_REGION_NAME": testkeystone.Region, "OS_INTERFACE": "public",
	}
	r := keystoneCLI(t, alice, "template", "create", "k8s", "--coe", "kubernetes", "--image", "ubuntu", "--external-network", "public",
		"--flavor", "m1", "--master-flavor", "m1", "-o", "json")
	if r.err != nil {
		t.Fatalf("template create as alice: %v\n%s", r.err, r.stderr)
	}
	if got := shown(t, "json", r.stdout)["project_id"]; got != alpha {
		t.Fatalf("template project %q, want alice's project %s", got, alpha)
	}
	if r := keystoneCLI(t, alice, "cluster", "create", "c1", "--cluster-template", "k8s"); r.err != nil {
		t.Fatalf("cluster create as alice: %v", r.err)
	}

	// The same user through clouds.yaml, found in the working directory.
	dir := t.TempDir()
	cloudsYAML := "clouds:\n  magnetite-test:\n    region_name: " + testkeystone.Region + "\n    interface: public\n    auth:\n" +
		"      auth_url: " + ks.AuthURL() + "\n      username: alice\n      password: alice-password\n      project_name: alpha\n" +
		"      user_domain_name: Default\n      project_domain_name: Default\n"
	if err := os.WriteFile(filepath.Join(dir, "clouds.yaml"), []byte(cloudsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	r = keystoneCLI(t, map[string]string{"OS_CLOUD": "magnetite-test"}, "cluster", "list", "-o", "json")
	if r.err != nil {
		t.Fatalf("cluster list with OS_CLOUD: %v", r.err)
	}
	if rows := listed(t, "json", r.stdout, "name"); len(rows) != 1 || rows[0]["name"] != "c1" {
		t.Fatalf("alice's clusters through clouds.yaml: %v", rows)
	}
	r = keystoneCLI(t, nil, "cluster", "show", "c1", "--os-cloud", "magnetite-test", "-o", "yaml")
	if r.err != nil || shown(t, "yaml", r.stdout)["project_id"] != alpha {
		t.Fatalf("cluster show with --os-cloud: %v\n%s", r.err, r.stdout)
	}

	// Another project's user sees none of it.
	bob := map[string]string{}
	for k, v := range alice {
		bob[k] = v
	}
	bob["OS_USERNAME"], bob["OS_PASSWORD"], bob["OS_PROJECT_NAME"] = "bob", "bob-password", "beta"
	r = keystoneCLI(t, bob, "cluster", "list", "-o", "json")
	if r.err != nil || len(listed(t, "json", r.stdout, "name")) != 0 {
		t.Fatalf("bob's cluster list: %v %s", r.err, r.stdout)
	}
	if r = keystoneCLI(t, bob, "cluster", "show", "c1"); r.err == nil || !strings.Contains(r.err.Error(), "HTTP 404") {
		t.Fatalf("bob shows alice's cluster: %v", r.err)
	}

	// A wait longer than a token's life: the API refuses the expired token,
	// the client logs in again and goes on.
	uuid := clusterUUIDByName(t, srv.Store, "c1")
	for k, v := range alice {
		t.Setenv(k, v)
	}
	before := tokens.count()
	var out, errb lockedBuffer
	done := make(chan error, 1)
	go func() {
		root := rootCommand()
		root.SetOut(&out)
		root.SetErr(&errb)
		root.SetArgs([]string{"cluster", "show", "c1", "--watch", "--poll-interval", "250ms"})
		done <- root.ExecuteContext(context.Background())
	}()
	deadline := time.Now().Add(60 * time.Second)
	for tokens.count() < before+2 {
		select {
		case err := <-done:
			t.Fatalf("the watch ended before its token expired: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watching client never came back with a new token; output:\n%s%s", out.String(), errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	applyStep(t, srv.Store, uuid, conductorStep{status: "CREATE_COMPLETE", reason: "Cluster API reports the cluster available with every node ready"})
	if err := <-done; err != nil {
		t.Fatalf("watch across a token expiry: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "Cluster c1 is CREATE_COMPLETE after") {
		t.Fatalf("watch output:\n%s", out.String())
	}

	// Bad credentials and unknown clouds say what went wrong.
	bad := map[string]string{}
	for k, v := range alice {
		bad[k] = v
	}
	bad["OS_PASSWORD"] = "wrong"
	if r = keystoneCLI(t, bad, "cluster", "list"); r.err == nil || !strings.Contains(r.err.Error(), "authenticate to "+ks.AuthURL()) {
		t.Fatalf("wrong password: %v", r.err)
	}
	if r = keystoneCLI(t, map[string]string{"OS_CLOUD": "nowhere"}, "cluster", "list"); r.err == nil || !strings.Contains(r.err.Error(), `cloud "nowhere" not found in clouds.yaml`) {
		t.Fatalf("unknown cloud: %v", r.err)
	}
}
