package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/client"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// api is a client of the v1 API through Go (internal/client), signed in as
// the CLI's user. Tests poll through it: one `openstack` run costs over a
// second of Python start-up, and a wait asks many times. What a test
// asserts about the CLI's own output stays a CLI call.
func (c *cli) api(t *testing.T) *client.Client {
	t.Helper()
	c.goClientMu.Lock()
	defer c.goClientMu.Unlock()
	if c.goClient != nil {
		return c.goClient
	}
	s := client.SettingsFromEnv(func(k string) string {
		for _, kv := range c.env {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return ""
	})
	// The admin-token form: --os-endpoint and --os-token on the command line.
	for i := 0; i+1 < len(c.base); i++ {
		switch c.base[i] {
		case "--os-endpoint":
			s.Endpoint = c.base[i+1]
		case "--os-token":
			s.Token = c.base[i+1]
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	api, err := client.Connect(ctx, s)
	if err != nil {
		t.Fatalf("connect the Go client as the CLI's user: %v", err)
	}
	c.goClient = api
	return api
}

// clusterNow is a cluster as the API shows it now; nil and what went wrong
// when it cannot be read (a wait goes on: the server may be restarting).
func (c *cli) clusterNow(t *testing.T, name string) (*apitypes.Cluster, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl, err := c.api(t).GetCluster(ctx, name)
	if err != nil {
		return nil, err.Error()
	}
	return cl, ""
}

// waitCluster waits until done holds for the named cluster, reading it
// through the Go client; the state reported on timeout is its status and
// status_reason. A cluster in a *_FAILED status fails the test at once
// unless failedOK.
func (c *cli) waitCluster(t *testing.T, name, what string, limit time.Duration, failedOK bool, done func(*apitypes.Cluster) bool) {
	t.Helper()
	testenv.WaitFor(t, name+" "+what, limit, func() (bool, string) {
		cl, problem := c.clusterNow(t, name)
		if cl == nil {
			return false, problem
		}
		if !failedOK && strings.HasSuffix(cl.Status, "_FAILED") {
			t.Fatalf("cluster %s is %s: %s", name, cl.Status, str(cl.StatusReason))
		}
		return done(cl), clusterState(cl)
	})
}

// waitStatus waits until the named cluster reaches status want, failing at
// once on a *_FAILED status other than want, then checks that the CLI shows
// that status as users see it.
func (c *cli) waitStatus(t *testing.T, name, want string, limit time.Duration) {
	t.Helper()
	c.waitCluster(t, name, "to reach "+want, limit, strings.HasSuffix(want, "_FAILED"), func(cl *apitypes.Cluster) bool {
		return cl.Status == want
	})
	if st := strings.TrimSpace(c.ok(t, "coe", "cluster", "show", name, "-f", "value", "-c", "status")); st != want {
		t.Errorf("openstack coe cluster show %s: status %s once the API said %s", name, st, want)
	}
}

// waitGone waits until the API answers 404 for the named cluster, then
// checks that the CLI says so as users see it.
func (c *cli) waitGone(t *testing.T, name string, limit time.Duration) {
	t.Helper()
	testenv.WaitFor(t, name+" to be gone (404)", limit, func() (bool, string) {
		cl, problem := c.clusterNow(t, name)
		if cl != nil {
			return false, clusterState(cl)
		}
		return strings.Contains(problem, "could not be found"), problem
	})
	if _, stderr, code := c.run(t, "coe", "cluster", "show", name); code == 0 || !strings.Contains(stderr, "could not be found") {
		t.Errorf("openstack coe cluster show %s of a deleted cluster exited %d: %s", name, code, stderr)
	}
}

// waitNoClusters waits until the caller's project lists no cluster, then
// checks that the CLI lists none either.
func (c *cli) waitNoClusters(t *testing.T, limit time.Duration) {
	t.Helper()
	testenv.WaitFor(t, "every cluster to be gone", limit, func() (bool, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		list, err := c.api(t).ListClusters(ctx, client.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, cl := range list {
			left = append(left, cl.Name+" "+cl.Status)
		}
		return len(list) == 0, strings.Join(left, ", ")
	})
	if out := c.ok(t, "coe", "cluster", "list", "-f", "value", "-c", "name", "-c", "status", "-c", "status_reason"); strings.TrimSpace(out) != "" {
		t.Errorf("openstack coe cluster list still lists %q", out)
	}
}

// clusterState is a cluster's status and status_reason, and its health
// once it has one.
func clusterState(cl *apitypes.Cluster) string {
	s := cl.Status + ": " + str(cl.StatusReason)
	if h := str(cl.HealthStatus); h != "" {
		s += fmt.Sprintf(" (health %s %v)", h, cl.HealthStatusReason)
	}
	return s
}

// str is the value of an optional string field, "" when null.
func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
