package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/endpoints"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/services"

	"github.com/magnetite-io/magnetite/internal/client"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
)

// TestKeystoneRegisterIsIdempotent runs `magnetite keystone register` as
// Keystone's administrator against a real Keystone with Magnetite's own
// configuration: the first run creates the service project, user, roles,
// catalog service and endpoints; the second changes nothing; a run with
// another URL and password corrects just those. Clients then find
// Magnetite through the catalog as they find Magnum.
func TestKeystoneRegisterIsIdempotent(t *testing.T) {
	t.Parallel()
	k := testkeystone.Start(t) // skips under -short
	bin := testmagnetite.Build(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "magnetite.conf")
	write := func(password string) {
		t.Helper()
		ini := "[keystone_authtoken]\nauth_url = " + k.AuthURL() + "\nusername = magnetite\npassword = " + password +
			"\nproject_name = service\nregion_name = " + testkeystone.Region + "\n"
		if err := os.WriteFile(conf, []byte(ini), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	adminEnv := []string{"OS_AUTH_URL=" + k.AuthURL(), "OS_USERNAME=admin", "OS_PASSWORD=" + testkeystone.AdminPassword,
		"OS_PROJECT_NAME=admin", "OS_USER_DOMAIN_NAME=Default", "OS_PROJECT_DOMAIN_NAME=Default"}
	register := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--config-file", conf, "--config-dir", dir, "keystone", "register"}, args...)...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, adminEnv...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("magnetite keystone register %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	const public, internal = "http://magnetite.example.net:9511/v1", "http://10.0.0.5:9511/v1"

	write("service-password-1")
	first := register("--public-url", public, "--internal-url", internal)
	for _, want := range []string{"created   project service", "created   user magnetite", "created   role service\n",
		"created   role service of user magnetite on project service", "created   role admin of user magnetite on project service",
		"created   service magnetite (container-infra)", "created   endpoint RegionOne public " + public,
		"created   endpoint RegionOne internal " + internal} {
		if !strings.Contains(first, want) {
			t.Errorf("first run lacks %q:\n%s", want, first)
		}
	}
	second := register("--public-url", public, "--internal-url", internal)
	for _, line := range strings.Split(strings.TrimSpace(second), "\n") {
		if !strings.HasPrefix(line, "unchanged ") {
			t.Errorf("second run changed something: %q\n%s", line, second)
		}
	}
	if n := len(strings.Split(strings.TrimSpace(second), "\n")); n != 7 {
		t.Errorf("second run checked %d objects, want 7 (project, user, 2 role grants, service, 2 endpoints):\n%s", n, second)
	}

	// The catalog as a Magnum client sees it: one container-infra
	// service, its endpoints, the user's roles.
	ctx := context.Background()
	id, err := client.Identity(ctx, client.SettingsFromEnv(envGetter(adminEnv)))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := services.List(id, services.ListOpts{ServiceType: "container-infra"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	svcs, _ := services.ExtractServices(pages)
	if len(svcs) != 1 {
		t.Fatalf("%d container-infra services after two runs, want 1", len(svcs))
	}
	pages, err = endpoints.List(id, endpoints.ListOpts{ServiceID: svcs[0].ID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eps, _ := endpoints.ExtractEndpoints(pages)
	if len(eps) != 2 {
		t.Errorf("%d endpoints after two runs, want 2: %+v", len(eps), eps)
	}
	serviceUser := []string{"OS_AUTH_URL=" + k.AuthURL(), "OS_USERNAME=magnetite", "OS_PASSWORD=service-password-1",
		"OS_PROJECT_NAME=service", "OS_USER_DOMAIN_NAME=Default", "OS_PROJECT_DOMAIN_NAME=Default"}
	c, err := client.Connect(ctx, client.SettingsFromEnv(envGetter(serviceUser)))
	if err != nil {
		t.Fatalf("the service user logs in and finds container-infra in the catalog: %v", err)
	}
	if c.Endpoint() != public {
		t.Errorf("the catalog gives clients %s, want %s", c.Endpoint(), public)
	}
	pages, err = roles.ListAssignments(id, roles.ListAssignmentsOpts{ScopeProjectID: k.ProjectID("service"), IncludeNames: ptr(true)}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assignments, _ := roles.ExtractRoleAssignments(pages)
	var granted []string
	for _, a := range assignments {
		if a.User.Name == "magnetite" {
			granted = append(granted, a.Role.Name)
		}
	}
	slices.Sort(granted)
	if !slices.Equal(granted, []string{"admin", "service"}) {
		t.Errorf("the service user holds %v on project service, want [admin service]", granted)
	}

	// A moved endpoint and a new password are corrected, nothing else.
	write("service-password-2")
	third := register("--public-url", "https://magnum.example.net/v1", "--internal-url", internal)
	var changed []string
	for _, line := range strings.Split(strings.TrimSpace(third), "\n") {
		if !strings.HasPrefix(line, "unchanged ") {
			changed = append(changed, line)
		}
	}
	if len(changed) != 2 || !strings.Contains(changed[0], "user magnetite (domain Default): password") ||
		!strings.Contains(changed[1], "endpoint RegionOne public https://magnum.example.net/v1 (was "+public+")") {
		t.Errorf("third run changed %q, want the password and the public endpoint:\n%s", changed, third)
	}
	k.Token("magnetite", "service-password-2", "service") // fails the test when the new password does not log in
}

func envGetter(env []string) func(string) string {
	return func(name string) string {
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v
			}
		}
		return ""
	}
}
