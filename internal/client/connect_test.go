package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSettingsPickTheAuthentication(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Mode
	}{
		{"nothing set: the local noauth endpoint", nil, ModeToken},
		{"endpoint and token skip Keystone", map[string]string{"OS_ENDPOINT": "http://h:9511", "OS_TOKEN": "t", "OS_AUTH_URL": "http://k/v3", "OS_CLOUD": "c"}, ModeToken},
		{"a named cloud wins over OS_AUTH_URL", map[string]string{"OS_CLOUD": "c", "OS_AUTH_URL": "http://k/v3"}, ModeCloud},
		{"OS_AUTH_URL", map[string]string{"OS_AUTH_URL": "http://k/v3", "OS_USERNAME": "u"}, ModeKeystone},
		{"an endpoint alone is noauth", map[string]string{"OS_ENDPOINT": "http://h:9511"}, ModeToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := SettingsFromEnv(func(k string) string { return tc.env[k] })
			if got := s.Mode(); got != tc.want {
				t.Fatalf("mode %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSettingsReadTheDomainsAndProjectOfOSVariables(t *testing.T) {
	env := map[string]string{"OS_AUTH_URL": "http://k/v3", "OS_USERNAME": "alice", "OS_PASSWORD": "pw", "OS_PROJECT_NAME": "alpha",
		"OS_USER_DOMAIN_NAME": "users", "OS_PROJECT_DOMAIN_NAME": "projects", "OS_INTERFACE": "internalURL"}
	s := SettingsFromEnv(func(k string) string { return env[k] })
	ao := s.authOptions()
	if ao.Username != "alice" || ao.DomainName != "users" || ao.Scope == nil || ao.Scope.ProjectName != "alpha" || ao.Scope.DomainName != "projects" {
		t.Fatalf("auth options %+v scope %+v", ao, ao.Scope)
	}
	if got := availability(s.Interface); got != "internal" {
		t.Fatalf("OS_INTERFACE internalURL gave %q", got)
	}
}

func TestConnectReportsAMissingCloudAndAnUnreachableKeystone(t *testing.T) {
	dir := t.TempDir()
	clouds := "clouds:\n  down:\n    auth:\n      auth_url: http://127.0.0.1:1/v3\n      username: u\n      password: p\n      project_name: x\n"
	if err := os.WriteFile(filepath.Join(dir, "clouds.yaml"), []byte(clouds), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OS_CLIENT_CONFIG_FILE", filepath.Join(dir, "clouds.yaml"))
	ctx := context.Background()
	if _, err := Connect(ctx, Settings{Cloud: "elsewhere"}); err == nil || !strings.Contains(err.Error(), `cloud "elsewhere" not found`) {
		t.Fatalf("unknown cloud: %v", err)
	}
	if _, err := Connect(ctx, Settings{Cloud: "down"}); err == nil || !strings.Contains(err.Error(), "authenticate to http://127.0.0.1:1/v3") {
		t.Fatalf("unreachable Keystone: %v", err)
	}
}

func TestEndpointsAreNormalisedToV1(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:9511": "http://h:9511/v1", "http://h:9511/": "http://h:9511/v1", "https://h/magnum/v1/": "https://h/magnum/v1",
	} {
		c, err := New(in, nil, nil)
		if err != nil || c.Endpoint() != want {
			t.Errorf("New(%q) = %v, %v; want %s", in, c, err, want)
		}
	}
	if _, err := New("h:9511", nil, nil); err == nil || !strings.Contains(err.Error(), "is not an http(s) URL") {
		t.Errorf("endpoint without scheme: %v", err)
	}
}

// Answers that are not Magnum's error document (a proxy in the way) still
// give the status and what the body says.
func TestNonMagnumErrorsQuoteTheBody(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream connect error", http.StatusBadGateway)
	}))
	defer proxy.Close()
	c, _ := New(proxy.URL, StaticToken("t"), nil)
	_, err := c.Stats(context.Background(), "")
	if err == nil || err.Error() != "upstream connect error (HTTP 502)" {
		t.Fatalf("got %v", err)
	}
}
