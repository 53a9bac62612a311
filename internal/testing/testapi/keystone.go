package testapi

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

// Magnetite's service account in a test Keystone: register it once with
// ks.ServiceUser(ServiceUser, ServicePassword).
const (
	ServiceUser     = "magnetite"
	ServicePassword = "magnetite-service-secret-4711"
)

// KeystoneValidator is auth's token validator against ks, logging in as the
// service account (project "service"), caching tokens a minute and logging
// nowhere, each adjust then changing the configuration.
func KeystoneValidator(t testing.TB, ks *testkeystone.Keystone, adjust ...func(*auth.KeystoneConfig)) *auth.Keystone {
	t.Helper()
	cfg := auth.KeystoneConfig{
		AuthURL: ks.AuthURL(), Username: ServiceUser, Password: ServicePassword, ProjectName: "service",
		CacheTime: time.Minute, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, a := range adjust {
		a(&cfg)
	}
	k, err := auth.NewKeystone(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// KeystoneMember creates project and user (password user+"-password") in
// ks, makes the user a member of the project and returns a token of theirs
// scoped to it.
func KeystoneMember(ks *testkeystone.Keystone, project, user string) string {
	id := ks.CreateUser(user, user+"-password")
	ks.Grant(id, ks.CreateProject(project), "member")
	return ks.Token(user, user+"-password", project)
}
