package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/config"
)

// write puts body into name under dir and returns its path.
func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNothingConfiguredMeansEveryDefault(t *testing.T) {
	c, err := config.Load("", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	eff := c.Effective()
	if len(eff) != len(config.Options) {
		t.Fatalf("%d effective values for %d options", len(eff), len(config.Options))
	}
	for i, v := range eff {
		if v.Option != config.Options[i] {
			t.Errorf("effective value %d is %s.%s, want the declaration order (%s.%s)", i, v.Section, v.Name, config.Options[i].Section, config.Options[i].Name)
		}
		if v.Value != v.Default || v.Source != "default" {
			t.Errorf("[%s] %s = %q from %s, want the default %q", v.Section, v.Name, v.Value, v.Source, v.Default)
		}
	}
	if got := c.Int("api", "max_limit"); got != 1000 {
		t.Errorf("[api] max_limit = %d, want 1000", got)
	}
	if c.Bool("api", "merge_labels_by_default") {
		t.Error("[api] merge_labels_by_default is true by default; Magnum replaces the parent's labels")
	}
	if got := c.Duration("conductor", "lease"); got != 2*time.Minute {
		t.Errorf("[conductor] lease = %v, want 2m", got)
	}
	if len(c.Files) != 0 {
		t.Errorf("files read: %v", c.Files)
	}
}

// TestEveryOptionIsDeclaredOnceAndDocumented: `magnetite config show` and
// the README table are built from the declarations.
func TestEveryOptionIsDeclaredOnceAndDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range config.Options {
		k := strings.ToLower(o.Section + "." + o.Name)
		if seen[k] {
			t.Errorf("[%s] %s is declared twice", o.Section, o.Name)
		}
		seen[k] = true
		if strings.TrimSpace(o.Help) == "" {
			t.Errorf("[%s] %s has no help text", o.Section, o.Name)
		}
	}
	// What holds a password or a key must be masked wherever it is shown.
	for _, k := range []string{"keystone_authtoken.password", "database.connection", "database.secret_key", "baremetal.ironic_password"} {
		found := false
		for _, o := range config.Options {
			if o.Section+"."+o.Name == k {
				found = true
				if !o.Secret {
					t.Errorf("%s is not marked secret", k)
				}
			}
		}
		if !found {
			t.Errorf("%s is not declared", k)
		}
	}
}

// TestLaterSourcesOverrideEarlierOnes: the main file, then the drop-in
// directory's *.conf files in name order, then the environment.
func TestLaterSourcesOverrideEarlierOnes(t *testing.T) {
	dir := t.TempDir()
	main := write(t, dir, "magnetite.conf", `# comment
; another comment
host = from-main

[API]
Listen = 127.0.0.1:1000
max_limit = 10
[auth]
noauth_project = from-main
noauth_user = from-main
`)
	confd := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(confd, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, confd, "20-later.conf", "[api]\nmax_limit = 30\n")
	first := write(t, confd, "10-first.conf", "[api]\nmax_limit = 20\n[auth]\nnoauth_project = from-drop-in\n")
	write(t, confd, "30-ignored.conf.disabled", "[api]\nmax_limit = not-read\n")
	if err := os.Mkdir(filepath.Join(confd, "40-dir.conf"), 0o700); err != nil {
		t.Fatal(err)
	}

	c, err := config.Load(main, confd, []string{"MAGNETITE_AUTH_NOAUTH_USER=from-env", "OTHER_AUTH_NOAUTH_ROLES=admin", "MAGNETITE_NOT_AN_OPTION=x", "MAGNETITE_BROKEN"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{main, first, filepath.Join(confd, "20-later.conf")}
	if strings.Join(c.Files, " ") != strings.Join(want, " ") {
		t.Errorf("files read %v, want %v", c.Files, want)
	}
	source := map[string]config.Value{}
	for _, v := range c.Effective() {
		source[v.Section+"."+v.Name] = v
	}
	for _, tc := range []struct {
		option, value string
		from          config.Source
	}{
		{"DEFAULT.host", "from-main", config.Source(main)},    // before any section header
		{"api.listen", "127.0.0.1:1000", config.Source(main)}, // section and option names are not case-sensitive
		{"api.max_limit", "30", config.Source(filepath.Join(confd, "20-later.conf"))},
		{"auth.noauth_project", "from-drop-in", config.Source(first)},
		{"auth.noauth_user", "from-env", "env MAGNETITE_AUTH_NOAUTH_USER"},
		{"auth.noauth_roles", "member", "default"},
	} {
		v := source[tc.option]
		if v.Value != tc.value || v.Source != tc.from {
			t.Errorf("%s = %q from %q, want %q from %q", tc.option, v.Value, v.Source, tc.value, tc.from)
		}
	}
	if c.Int("api", "max_limit") != 30 {
		t.Errorf("Int(api, max_limit) = %d", c.Int("api", "max_limit"))
	}
}

func TestAMissingDropInDirectoryIsNoConfiguration(t *testing.T) {
	if _, err := config.Load("", filepath.Join(t.TempDir(), "absent"), nil); err != nil {
		t.Errorf("absent conf.d: %v", err)
	}
	file := write(t, t.TempDir(), "a-file", "")
	if _, err := config.Load("", file, nil); err == nil || !strings.Contains(err.Error(), "drop-in directory "+file) {
		t.Errorf("conf.d that is a file: %v", err)
	}
	if _, err := config.Load(filepath.Join(t.TempDir(), "absent.conf"), "", nil); err == nil || !strings.Contains(err.Error(), "absent.conf") {
		t.Errorf("a main file that does not exist: %v", err)
	}
}

// TestRefusalsSayWhatToFix: a configuration Magnetite cannot run with is
// refused at load, naming the file and line or the option and where its
// value came from, and what a valid value looks like.
func TestRefusalsSayWhatToFix(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		env        []string
		want       []string
	}{
		{"section header", "[api\nlisten = x\n", nil, []string{"magnetite.conf:1", `"[api"`, "lacks a closing ]"}},
		{"no equals sign", "[api]\n\nlisten 127.0.0.1:1\n", nil, []string{"magnetite.conf:3", `expected "option = value"`}},
		{"unknown option", "[api]\nlisten_port = 1\n", nil, []string{"magnetite.conf:2", "unknown option listen_port in section [api]", "magnetite config show"}},
		{"option in the wrong section", "[auth]\nlisten = x\n", nil, []string{"unknown option listen in section [auth]"}},
		{"whole number", "[api]\nmax_limit = lots\n", nil, []string{"[api] max_limit", `"lots"`, "magnetite.conf", "not a whole number"}},
		{"whole number from the environment", "", []string{"MAGNETITE_CONDUCTOR_WORKERS=two"}, []string{"[conductor] workers", "env MAGNETITE_CONDUCTOR_WORKERS", "not a whole number"}},
		{"boolean", "[api]\nmerge_labels_by_default = yes please\n", nil, []string{"[api] merge_labels_by_default", "must be true or false"}},
		{"duration", "[conductor]\nlease = 2\n", nil, []string{"[conductor] lease", `"2"`, "not a duration such as 10s"}},
		{"tri-state", "[conductor]\nenabled = sometimes\n", nil, []string{"[conductor] enabled must be auto, true or false", `"sometimes"`}},
		{"credentials without keystone", "[cluster_credentials]\nenabled = true\n", nil, []string{"needs [auth] strategy = keystone"}},
		{"secret key", "[database]\nsecret_key = c2hvcnQ=\n", nil, []string{"secret_key must be 32 random bytes, base64-encoded", "openssl rand -base64 32"}},
		{"infrastructure", "[conductor]\ninfrastructure = vsphere\n", nil, []string{"must be openstack or inmemory", `"vsphere"`}},
		{"auth strategy", "[auth]\nstrategy = ldap\n", nil, []string{"must be noauth or keystone", `"ldap"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := ""
			if tc.file != "" {
				file = write(t, t.TempDir(), "magnetite.conf", tc.file)
			}
			_, err := config.Load(file, "", tc.env)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Errorf("%q lacks the package prefix", err)
			}
		})
	}
}

// TestASecretKeyIsNeverRepeatedInTheRefusal: the refusal of a bad
// secret_key must not print the value it refused.
func TestASecretKeyIsNeverRepeatedInTheRefusal(t *testing.T) {
	_, err := config.Load("", "", []string{"MAGNETITE_DATABASE_SECRET_KEY=bm90LTMyLWJ5dGVzLWxvbmctc2VjcmV0"})
	if err == nil || strings.Contains(err.Error(), "bm90LTMyLWJ5dGVzLWxvbmctc2VjcmV0") {
		t.Errorf("err = %v", err)
	}
	good := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	if _, err := config.Load("", "", []string{"MAGNETITE_DATABASE_SECRET_KEY=" + good}); err != nil {
		t.Errorf("a 32-byte key was refused: %v", err)
	}
}

func TestOverrideRecordsTheFlagAsSource(t *testing.T) {
	c, err := config.Load("", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Override("api", "listen", "0.0.0.0:9511", "flag --listen")
	for _, v := range c.Effective() {
		if v.Section == "api" && v.Name == "listen" && (v.Value != "0.0.0.0:9511" || v.Source != "flag --listen") {
			t.Errorf("after Override: %q from %q", v.Value, v.Source)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("reading an undeclared option did not panic")
		}
	}()
	c.String("api", "no_such_option")
}

func TestStateDirResolution(t *testing.T) {
	c, err := config.Load("", "", []string{"MAGNETITE_DEFAULT_STATE_DIR=/var/lib/magnetite"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.StateDir(); got != "/var/lib/magnetite" {
		t.Errorf("configured state_dir: %s", got)
	}
	c, err = config.Load("", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_STATE_HOME", "/xdg/state")
	if got := c.StateDir(); got != "/xdg/state/magnetite" {
		t.Errorf("with XDG_STATE_HOME: %s", got)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/operator")
	if got := c.StateDir(); got != "/home/operator/.local/state/magnetite" {
		t.Errorf("with only HOME: %s", got)
	}
}
