package auth

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/fault"
)

// ErrForbidden is returned when policy refuses an action.
var ErrForbidden = errors.New("auth: forbidden")

// Target describes the object an action is about. A nil target stands for
// the caller's own project and user, as in Magnum for collection actions.
type Target struct {
	ProjectID string
	UserID    string
	// Public is set for templates visible to every project.
	Public bool
}

// Rule is one named policy rule: an action the API asks about, or a helper
// rule other rules refer to with rule:NAME.
type Rule struct {
	Name  string
	Check string
	// Action is set for names the API asks about; helper rules leave it unset.
	Action      bool
	Description string
}

// AdminRule is the helper rule that defines who is an administrator; it
// decides cross-project visibility wherever the API lists or finds objects.
const AdminRule = "context_is_admin"

// DefaultRules are Magnum's default semantics written as oslo.policy rules:
// admins may do anything; project members own their project's objects;
// readers may only read; public templates can be read by every project;
// publishing templates, writing quotas and listing services need admin.
// Reading is granted to members too, so noauth callers that send only the
// member role (Keystone implies reader from member) can read what they own.
var DefaultRules = []Rule{
	{Name: AdminRule, Check: "role:admin", Description: "Who is an administrator. Administrators see and act on every project's objects."},
	{Name: "admin_or_owner", Check: "is_admin:True or project_id:%(project_id)s", Description: "Kept for policy files written for Magnum before scoped roles."},
	{Name: "project_member", Check: "role:member and project_id:%(project_id)s", Description: "A member of the object's project."},
	{Name: "project_reader", Check: "(role:reader or role:member) and project_id:%(project_id)s", Description: "A reader (or member) of the object's project."},
	{Name: "public_reader", Check: "(role:reader or role:member) and 'True':%(public)s", Description: "A reader of any project, for objects marked public."},
	{Name: "admin_api", Check: "rule:context_is_admin", Description: "Administrators only."},
	{Name: "admin_or_project_member", Check: "rule:context_is_admin or rule:project_member"},
	{Name: "admin_or_project_reader", Check: "rule:context_is_admin or rule:project_reader"},

	{Name: "clustertemplate:create", Check: "rule:admin_or_project_member", Action: true, Description: "POST /v1/clustertemplates"},
	{Name: "clustertemplate:get", Check: "rule:admin_or_project_reader or rule:public_reader", Action: true, Description: "GET /v1/clustertemplates/{ident}"},
	{Name: "clustertemplate:get_all", Check: "rule:admin_or_project_reader", Action: true, Description: "GET /v1/clustertemplates (own and public templates)"},
	{Name: "clustertemplate:detail", Check: "rule:admin_or_project_reader", Action: true, Description: "GET /v1/clustertemplates/detail"},
	{Name: "clustertemplate:update", Check: "rule:admin_or_project_member", Action: true, Description: "PATCH /v1/clustertemplates/{ident}"},
	{Name: "clustertemplate:delete", Check: "rule:admin_or_project_member", Action: true, Description: "DELETE /v1/clustertemplates/{ident}"},
	{Name: "clustertemplate:publish", Check: "rule:admin_api", Action: true, Description: "Setting public or hidden on a template (create or PATCH)"},

	{Name: "cluster:create", Check: "rule:admin_or_project_member", Action: true, Description: "POST /v1/clusters"},
	{Name: "cluster:get", Check: "rule:admin_or_project_reader", Action: true, Description: "GET /v1/clusters/{ident}"},
	{Name: "cluster:get_all", Check: "rule:admin_or_project_reader", Action: true, Description: "GET /v1/clusters"},
	{Name: "cluster:detail", Check: "rule:admin_or_project_reader", Action: true, Description: "GET /v1/clusters/detail"},
	{Name: "cluster:update", Check: "rule:admin_or_project_member", Action: true, Description: "PATCH /v1/clusters/{ident}"},
	{Name: "cluster:delete", Check: "rule:admin_or_project_member", Action: true, Description: "DELETE /v1/clusters/{ident}"},
	{Name: "cluster:resize", Check: "rule:admin_or_project_member", Action: true, Description: "POST /v1/clusters/{ident}/actions/resize"},
	{Name: "cluster:upgrade", Check: "rule:admin_or_project_member", Action: true, Description: "POST /v1/clusters/{ident}/actions/upgrade"},
	{Name: "cluster:rebase", Check: "rule:admin_or_project_member", Action: true, Description: "POST /v1/clusters/{ident}/actions/rebase (Magnetite: move a cluster adopted from magnum-cluster-api onto Magnetite's ClusterClass)"},

	{Name: "nodegroup:get", Check: "rule:admin_or_project_reader", Action: true, Description: "GET /v1/clusters/{ident}/nodegroups/{ng}"},
	{Name: "nodegroup:get_all", Check: "rule:admin_or_project_reader", Action: true, Description: "GET /v1/clusters/{ident}/nodegroups"},
	{Name: "nodegroup:create", Check: "rule:admin_or_project_member", Action: true, Description: "POST /v1/clusters/{ident}/nodegroups"},
	{Name: "nodegroup:update", Check: "rule:admin_or_project_member", Action: true, Description: "PATCH /v1/clusters/{ident}/nodegroups/{ng}"},
	{Name: "nodegroup:delete", Check: "rule:admin_or_project_member", Action: true, Description: "DELETE /v1/clusters/{ident}/nodegroups/{ng}"},

	{Name: "certificate:get", Check: "rule:admin_or_project_reader", Action: true, Description: "GET /v1/certificates/{cluster}"},
	{Name: "certificate:create", Check: "rule:admin_or_project_member", Action: true, Description: "POST /v1/certificates"},
	{Name: "certificate:rotate_ca", Check: "rule:admin_or_project_member", Action: true, Description: "PATCH /v1/certificates/{cluster}"},
	{Name: "credential:rotate", Check: "rule:admin_or_project_member", Action: true, Description: "PATCH /v1/credentials/{cluster}"},

	{Name: "quota:get", Check: "rule:admin_or_project_reader", Action: true, Description: "GET /v1/quotas/{project}/{resource}"},
	{Name: "quota:get_all", Check: "rule:admin_or_project_reader", Action: true, Description: "GET /v1/quotas (a non-admin sees its own project's quotas)"},
	{Name: "quota:create", Check: "rule:admin_api", Action: true, Description: "POST /v1/quotas"},
	{Name: "quota:update", Check: "rule:admin_api", Action: true, Description: "PATCH /v1/quotas/{project}/{resource}"},
	{Name: "quota:delete", Check: "rule:admin_api", Action: true, Description: "DELETE /v1/quotas/{project}/{resource}"},

	{Name: "stats:get_all", Check: "rule:admin_or_project_reader", Action: true, Description: "GET /v1/stats (another project's figures need admin)"},
	{Name: "magnum-service:get_all", Check: "rule:admin_api", Action: true, Description: "GET /v1/mservices"},

	{Name: "host:get_all", Check: "rule:admin_api", Action: true, Description: "GET /v1/hosts (the bare-metal host inventory, a Magnetite extension)"},
	{Name: "host:get", Check: "rule:admin_api", Action: true, Description: "GET /v1/hosts/{ident}, and GET /v1/hosts/operations/{uuid} (a host action under way; members see only their project's)"},
	{Name: "host:create", Check: "rule:admin_api", Action: true, Description: "POST /v1/hosts (enroll a host with its BMC credentials)"},
	{Name: "host:delete", Check: "rule:admin_api", Action: true, Description: "DELETE /v1/hosts/{ident}"},
	{Name: "host:action", Check: "rule:admin_api", Action: true, Description: "POST /v1/hosts/{ident}/actions/{action}: power, reboot, inspect, provide, detach, attach, cleaning_mode"},
}

// Policy decides what a caller may do. The zero value applies DefaultRules;
// LoadPolicyFile overrides them rule by rule, as oslo.policy does.
type Policy struct {
	rules map[string]checkExpr
}

var defaultPolicy = func() Policy {
	p, err := newPolicy(nil)
	if err != nil {
		panic(err)
	}
	return p
}()

func (p Policy) compiled() map[string]checkExpr {
	if p.rules == nil {
		return defaultPolicy.rules
	}
	return p.rules
}

// Authorize returns nil when id may perform action on target, and an error
// wrapping ErrForbidden otherwise. An action without a rule is refused.
func (p Policy) Authorize(id Identity, action string, target *Target) error {
	rules := p.compiled()
	if _, ok := rules[action]; !ok {
		return fault.New(ErrForbidden, "no policy rule is defined for %s", action)
	}
	if !p.check(id, action, target) {
		return fault.New(ErrForbidden, "%s", action)
	}
	return nil
}

// IsAdmin evaluates the context_is_admin rule: whether id sees every
// project's objects.
func (p Policy) IsAdmin(id Identity) bool { return p.check(id, AdminRule, nil) }

func (p Policy) check(id Identity, name string, target *Target) bool {
	t := Target{ProjectID: id.ProjectID, UserID: id.UserID}
	if target != nil {
		t = *target
	}
	e := evalEnv{rules: p.compiled(), id: id, target: t}
	return e.rule(name)
}

// LoadPolicyFile reads a YAML (or JSON) file mapping rule names to
// oslo.policy check strings. Rules in the file replace the default of the
// same name; the others keep their defaults.
func LoadPolicyFile(path string) (Policy, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	p, err := ParsePolicy(raw)
	if err != nil {
		return Policy{}, fmt.Errorf("policy: %s: %w", path, err)
	}
	return p, nil
}

// ParsePolicy parses policy file contents (see LoadPolicyFile).
func ParsePolicy(raw []byte) (Policy, error) {
	var overrides map[string]string
	if err := yaml.Unmarshal(raw, &overrides); err != nil {
		return Policy{}, fmt.Errorf("expected a mapping of rule names to check strings: %w", err)
	}
	return newPolicy(overrides)
}

func newPolicy(overrides map[string]string) (Policy, error) {
	src := map[string]string{}
	for _, r := range DefaultRules {
		src[r.Name] = r.Check
	}
	for name, check := range overrides {
		src[name] = check
	}
	p := Policy{rules: make(map[string]checkExpr, len(src))}
	referenced := map[string]bool{}
	for name, check := range src {
		expr, err := parseCheck(check)
		if err != nil {
			return Policy{}, fmt.Errorf("rule %q: %w", name, err)
		}
		p.rules[name] = expr
		expr.walk(func(c checkExpr) {
			if r, ok := c.(ruleRef); ok {
				referenced[string(r)] = true
			}
		})
	}
	var problems []string
	for name := range referenced {
		if _, ok := p.rules[name]; !ok {
			problems = append(problems, fmt.Sprintf("rule:%s is referenced but not defined", name))
		}
	}
	known := map[string]bool{}
	for _, r := range DefaultRules {
		known[r.Name] = true
	}
	for name := range overrides {
		if !known[name] && !referenced[name] {
			problems = append(problems, fmt.Sprintf("%q is neither an action Magnetite asks about nor a rule another rule refers to (docs/policy.md lists the names)", name))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return Policy{}, errors.New(strings.Join(problems, "; "))
	}
	if err := p.checkCycles(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// checkCycles refuses rules that refer to themselves through rule: or
// is_admin checks, which would never finish evaluating.
func (p Policy) checkCycles() error {
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("rules refer to each other in a loop: %s", strings.Join(append(path, name), " -> "))
		case 2:
			return nil
		}
		state[name] = 1
		var err error
		p.rules[name].walk(func(c checkExpr) {
			if err != nil {
				return
			}
			switch c := c.(type) {
			case ruleRef:
				err = visit(string(c), append(path, name))
			case isAdminCheck:
				err = visit(AdminRule, append(path, name))
			}
		})
		state[name] = 2
		return err
	}
	names := make([]string, 0, len(p.rules))
	for n := range p.rules {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return err
		}
	}
	return nil
}
