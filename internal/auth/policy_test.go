package auth_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/testing/testgolden"
)

var (
	admin       = auth.Identity{ProjectID: "ops", UserID: "root", Roles: []string{"admin", "member", "reader"}}
	member      = auth.Identity{ProjectID: "alpha", UserID: "alice", Roles: []string{"member", "reader"}}
	plainMember = auth.Identity{ProjectID: "alpha", UserID: "amy", Roles: []string{"member"}} // noauth sends no implied roles
	reader      = auth.Identity{ProjectID: "alpha", UserID: "rita", Roles: []string{"reader"}}
	outsider    = auth.Identity{ProjectID: "beta", UserID: "bob", Roles: []string{"member", "reader"}}
	roleless    = auth.Identity{ProjectID: "alpha", UserID: "nobody", Roles: []string{"some-other-role"}}
)

func TestDefaultPolicy(t *testing.T) {
	own := &auth.Target{ProjectID: "alpha"}
	public := &auth.Target{ProjectID: "ops", Public: true}
	private := &auth.Target{ProjectID: "ops"}
	for _, tc := range []struct {
		who    auth.Identity
		action string
		target *auth.Target
		allow  bool
	}{
		{member, "cluster:create", nil, true},
		{plainMember, "cluster:get", own, true},
		{member, "cluster:delete", own, true},
		{member, "cluster:delete", &auth.Target{ProjectID: "beta"}, false},
		{outsider, "cluster:get", own, false},
		{reader, "cluster:get", own, true},
		{reader, "cluster:get_all", nil, true},
		{reader, "cluster:create", nil, false},
		{reader, "cluster:update", own, false},
		{reader, "nodegroup:create", own, false},
		{roleless, "cluster:get", own, false},
		{roleless, "cluster:create", nil, false},
		{admin, "cluster:delete", own, true},
		{outsider, "clustertemplate:get", public, true},
		{reader, "clustertemplate:get", public, true},
		{outsider, "clustertemplate:get", private, false},
		{outsider, "clustertemplate:update", public, false},
		{outsider, "clustertemplate:delete", public, false},
		{member, "clustertemplate:publish", nil, false},
		{admin, "clustertemplate:publish", nil, true},
		{member, "quota:get", own, true},
		{member, "quota:get", &auth.Target{ProjectID: "beta"}, false},
		{member, "quota:create", nil, false},
		{admin, "quota:update", nil, true},
		{member, "stats:get_all", nil, true},
		{member, "stats:get_all", &auth.Target{ProjectID: "beta"}, false},
		{member, "magnum-service:get_all", nil, false},
		{admin, "magnum-service:get_all", nil, true},
		{admin, "no-such:action", nil, false},
	} {
		name := fmt.Sprintf("%s/%s/%+v", tc.who.UserID, tc.action, tc.target)
		err := auth.Policy{}.Authorize(tc.who, tc.action, tc.target)
		if tc.allow && err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
		if !tc.allow && !errors.Is(err, auth.ErrForbidden) {
			t.Errorf("%s: got %v, want ErrForbidden", name, err)
		}
	}
	if !(auth.Policy{}).IsAdmin(admin) || (auth.Policy{}).IsAdmin(member) {
		t.Error("context_is_admin should follow the admin role")
	}
}

func TestPolicyFileOverridesRuleByRule(t *testing.T) {
	p, err := auth.ParsePolicy([]byte(`
# Only cloud operators run clusters; admin is renamed.
context_is_admin: "role:cloud-admin"
"cluster:create": "rule:context_is_admin or (role:member and not role:trial)"
"cluster:get": "rule:admin_or_project_reader and user_id:%(user_id)s"
"quota:get": "@"
"stats:get_all": "!"
`))
	if err != nil {
		t.Fatal(err)
	}
	trial := member
	trial.Roles = append(trial.Roles, "trial")
	operator := auth.Identity{ProjectID: "ops", Roles: []string{"cloud-admin"}}
	for _, tc := range []struct {
		name   string
		who    auth.Identity
		action string
		target *auth.Target
		allow  bool
	}{
		{"a member may still create", member, "cluster:create", nil, true},
		{"a trial member may not", trial, "cluster:create", nil, false},
		{"the renamed admin role rules", operator, "cluster:delete", &auth.Target{ProjectID: "alpha"}, true},
		{"the old admin role no longer does", admin, "cluster:delete", &auth.Target{ProjectID: "alpha"}, false},
		{"user-scoped reading: own", member, "cluster:get", &auth.Target{ProjectID: "alpha", UserID: "alice"}, true},
		{"user-scoped reading: a colleague's", member, "cluster:get", &auth.Target{ProjectID: "alpha", UserID: "amy"}, false},
		{"@ lets anyone", outsider, "quota:get", &auth.Target{ProjectID: "alpha"}, true},
		{"! lets no one", admin, "stats:get_all", nil, false},
		{"untouched rules keep their defaults", reader, "cluster:update", &auth.Target{ProjectID: "alpha"}, false},
	} {
		err := p.Authorize(tc.who, tc.action, tc.target)
		if tc.allow != (err == nil) {
			t.Errorf("%s: allow=%v, got %v", tc.name, tc.allow, err)
		}
	}
	if !p.IsAdmin(operator) || p.IsAdmin(admin) {
		t.Error("IsAdmin must follow the overridden context_is_admin")
	}
}

func TestPolicyFileErrorsSayWhatToFix(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{`"cluster:create": "rule:no_such_rule"`, "rule:no_such_rule is referenced but not defined"},
		{`"cluster:crate": "role:admin"`, `"cluster:crate" is neither an action`},
		{`"cluster:create": "role:admin or"`, "ends where a check was expected"},
		{`"cluster:create": "(role:admin"`, "not closed"},
		{`"cluster:create": "admin"`, "expected KIND:VALUE"},
		{`"cluster:create": "http://policy.example.com"`, "not supported"},
		{`"context_is_admin": "is_admin:True"`, "loop"},
		{`"a": "rule:b"` + "\n" + `"b": "rule:a"` + "\n" + `"cluster:get": "rule:a"`, "loop"},
		{`- just a list`, "mapping of rule names"},
	} {
		_, err := auth.ParsePolicy([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error mentioning %q", tc.file, err, tc.want)
		}
	}
	if _, err := auth.LoadPolicyFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing policy file must be an error")
	}
}

// TestEveryActionTheAPIAsksAboutHasADefault reads the API handlers: every
// action name they pass to the policy must have a default rule, or the
// handler would refuse everyone.
func TestEveryActionTheAPIAsksAboutHasADefault(t *testing.T) {
	files, err := filepath.Glob("../api/*.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?:authorize|lookupCluster|lookupStoredCluster|nodeGroupCluster|clusterSince|Authorize)\([a-z]+, (?:since[A-Za-z]+, )?"([a-z-]+:[a-z_]+)"`)
	actions := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			actions[m[1]] = true
		}
	}
	// The list handlers pick the action from a variable.
	for _, a := range []string{"cluster:get_all", "cluster:detail", "clustertemplate:get_all", "clustertemplate:detail"} {
		actions[a] = true
	}
	if len(actions) < 20 {
		t.Fatalf("found only %d actions in the handlers; did the call shape change?", len(actions))
	}
	defaults := map[string]bool{}
	for _, r := range auth.DefaultRules {
		if r.Action {
			defaults[r.Name] = true
		}
	}
	for a := range actions {
		if !defaults[a] {
			t.Errorf("the API asks about %s, which has no default rule in auth.DefaultRules", a)
		}
	}
}

// policyTable renders DefaultRules as the reference table of docs/policy.md.
func policyTable() string {
	var b strings.Builder
	b.WriteString("| name | default | applies to |\n|---|---|---|\n")
	for _, r := range auth.DefaultRules {
		what := r.Description
		if !r.Action && what == "" {
			what = "helper rule"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", r.Name, strings.ReplaceAll(r.Check, "|", "\\|"), strings.ReplaceAll(what, "|", "\\|"))
	}
	return b.String()
}

// TestPolicyDocListsEveryRule keeps docs/policy.md's table generated from
// DefaultRules; run with -update after changing a rule.
func TestPolicyDocListsEveryRule(t *testing.T) {
	testgolden.Section(t, "../../docs/policy.md", "policy-rules", policyTable(),
		"go test ./internal/auth -run TestPolicyDocListsEveryRule -update")
}
