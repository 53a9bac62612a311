// Package testkeystone runs a real Keystone (Debian's keystone package,
// served by uwsgi) on loopback for one test: SQLite under the test's temp
// directory, fernet tokens, an in-memory cache and cheap password hashing so
// logins are fast. It also has the few identity calls tests need: projects,
// users, role grants, tokens and revocation.
//
// The packages come from hack/ci-packages.txt (bash hack/ci-deps.sh as root).
package testkeystone

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

// Python is Debian's interpreter; another python3 may come first on PATH.
const Python = "/usr/bin/python3"

// passwordHashRounds is Keystone's [identity] password_hash_rounds: the
// fewest bcrypt allows, since the tests' passwords protect nothing.
const passwordHashRounds = 4

const (
	keystoneManage = "/usr/bin/keystone-manage"
	wsgiPublic     = "/usr/bin/keystone-wsgi-public"
	// AdminPassword is the bootstrap admin's password.
	AdminPassword = "keystone-admin-test-password"
	// Region is the region bootstrap creates.
	Region = "RegionOne"
)

// Keystone is a running Keystone.
type Keystone struct {
	// URL is the service root, http://127.0.0.1:PORT; the v3 API is URL+"/v3".
	URL string

	t      testing.TB
	dir    string
	client *http.Client
	proc   *testproc.Process
	// adminMu guards the bootstrap admin's token and when it expires; the
	// token is taken again before it runs out, so a test that sets a short
	// token expiration can take its time setting up.
	adminMu      sync.Mutex
	adminToken   string
	adminExpires time.Time
	adminLife    time.Duration
	// nonce is sent by this Keystone's uwsgi in every answer, so an answer
	// from another process on the same port (another test's Keystone that
	// won a race for it) is never taken for this one's.
	nonce string
	// pythonPath holds lazySAML, for Keystone's interpreter.
	pythonPath string

	mu    sync.Mutex
	roles map[string]string // name -> id
}

// Option adjusts the Keystone configuration.
type Option func(*settings)

type settings struct {
	tokenExpiration time.Duration
}

// WithTokenExpiration sets Keystone's [token] expiration (whole seconds).
func WithTokenExpiration(d time.Duration) Option {
	return func(s *settings) { s.tokenExpiration = d }
}

// Start runs Keystone for the test and stops it at cleanup. Under -short it
// skips the test: Keystone is a real external service that takes a minute to
// set up.
func Start(t testing.TB, opts ...Option) *Keystone {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real Keystone (Debian's keystone and uwsgi packages) and about a minute to set it up; runs in the full suite")
	}
	var set settings
	for _, o := range opts {
		o(&set)
	}
	testproc.Require(t, Python, keystoneManage, wsgiPublic)
	uwsgi := testproc.Require(t, "uwsgi")[0]
	dir := t.TempDir()
	// uwsgi closes every connection after its answer; a kept-alive client
	// connection would race that close, and a POST sent on a connection
	// the server has just closed fails with EOF (Go retries only
	// idempotent requests). One connection per request, as uwsgi serves.
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	k := &Keystone{t: t, dir: dir, client: client, roles: map[string]string{}, nonce: nonce()}
	conf := k.writeConfig(set)
	py, err := writeLazySAML(dir)
	if err != nil {
		t.Fatal(err)
	}
	k.pythonPath = py
	k.setup(conf)
	k.serve(uwsgi, conf)
	k.AdminToken()
	// The port is known only now; clients such as the openstack CLI find
	// the identity API itself through the catalog.
	k.RegisterService("identity", "keystone", k.AuthURL())
	return k
}

func (k *Keystone) writeConfig(set settings) string {
	k.t.Helper()
	for _, d := range []string{"fernet", "credential", "policy.d"} {
		if err := os.MkdirAll(filepath.Join(k.dir, d), 0o700); err != nil {
			k.t.Fatal(err)
		}
	}
	expiration := ""
	if set.tokenExpiration > 0 {
		expiration = fmt.Sprintf("expiration = %d\n", int(set.tokenExpiration.Seconds()))
	}
	conf := filepath.Join(k.dir, "keystone.conf")
	body := fmt.Sprintf(`[DEFAULT]
log_file = %[1]s/keystone.log
[database]
connection = sqlite:///%[1]s/keystone.db
[fernet_tokens]
key_repository = %[1]s/fernet
[fernet_receipts]
key_repository = %[1]s/fernet
[credential]
key_repository = %[1]s/credential
[token]
provider = fernet
%[2]s[cache]
enabled = true
backend = dogpile.cache.memory
[identity]
password_hash_rounds = %[3]d
[oslo_policy]
policy_dirs = %[1]s/policy.d
`, k.dir, expiration, passwordHashRounds)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		k.t.Fatal(err)
	}
	return conf
}

// setup creates the database and keys: the key repositories are made while
// the schema is created, then bootstrap adds the admin, roles and region.
func (k *Keystone) setup(conf string) {
	k.t.Helper()
	if restoreSetup(k.dir) {
		return
	}
	owner, group := "root", "root"
	if u, err := user.Current(); err == nil {
		owner = u.Username
		if g, err := user.LookupGroupId(u.Gid); err == nil {
			group = g.Name
		}
	}
	steps := [][]string{
		{"db_sync"},
		{"fernet_setup", "--keystone-user", owner, "--keystone-group", group},
		{"credential_setup", "--keystone-user", owner, "--keystone-group", group},
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, s := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = k.manage(conf, s...)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			k.t.Fatal(err)
		}
	}
	if err := k.manage(conf, "bootstrap", "--bootstrap-password", AdminPassword,
		"--bootstrap-region-id", Region); err != nil {
		k.t.Fatal(err)
	}
	keepSetup(k.dir)
}

func (k *Keystone) manage(conf string, args ...string) error {
	cmd := exec.Command(Python, append([]string{keystoneManage, "--config-file", conf}, args...)...)
	cmd.Env = k.pythonEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("keystone-manage %s: %v\n%s", args[0], err, out)
	}
	return nil
}

// pythonEnv is the environment of Keystone's interpreter: the test's, with
// lazySAML on its path.
func (k *Keystone) pythonEnv() []string {
	return append(os.Environ(), "PYTHONPATH="+k.pythonPath)
}

// serve starts uwsgi on a free loopback port (trying again if another
// process takes the port first) and waits until Keystone answers.
func (k *Keystone) serve(uwsgi, conf string) {
	k.t.Helper()
	k.t.Cleanup(k.stop)
	for attempt := 1; ; attempt++ {
		port := testmagnetite.FreePort(k.t)
		err := k.startUWSGI(uwsgi, conf, port)
		if err == nil {
			return
		}
		if attempt == 3 || !strings.Contains(err.Error(), "Address already in use") {
			k.t.Fatal(err)
		}
	}
}

func (k *Keystone) startUWSGI(uwsgi, conf string, port int) error {
	ini := filepath.Join(k.dir, "uwsgi.ini")
	body := fmt.Sprintf(`[uwsgi]
plugins = python3
http-socket = 127.0.0.1:%d
wsgi-file = %s
; SQLite allows one writer: one process, one thread.
processes = 1
threads = 1
master = true
die-on-term = true
need-app = true
add-header = Connection: close
add-header = %s: %s
buffer-size = 65535
env = OS_KEYSTONE_CONFIG_FILES=%s
`, port, wsgiPublic, nonceHeader, k.nonce, conf)
	if err := os.WriteFile(ini, []byte(body), 0o600); err != nil {
		return err
	}
	logPath := filepath.Join(k.dir, "uwsgi.log")
	cmd := exec.Command(uwsgi, "--ini", ini)
	cmd.Env = k.pythonEnv()
	proc, err := testproc.Start(cmd, logPath)
	if err != nil {
		return fmt.Errorf("start uwsgi: %w", err)
	}
	exited := proc.Exited()
	k.proc = proc
	k.URL = "http://127.0.0.1:" + strconv.Itoa(port)

	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-exited:
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("uwsgi serving Keystone exited during start:\n%s", tail(out))
		default:
		}
		if k.answers() {
			return nil
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("keystone did not answer on %s within 2 minutes:\n%s", k.URL, tail(out))
		}
		select {
		case <-exited:
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// answers reports whether this Keystone (not another process that holds
// the port) serves the identity API.
func (k *Keystone) answers() bool {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := c.Get(k.URL + "/v3")
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK && res.Header.Get(nonceHeader) == k.nonce
}

// nonceHeader carries a Keystone's nonce in each of its answers.
const nonceHeader = "X-Test-Keystone-Nonce"

func nonce() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// stop ends uwsgi (the process group this helper started) and waits for it.
func (k *Keystone) stop() {
	if k.proc != nil {
		k.proc.Stop(15 * time.Second)
	}
}

// diagnosis is what a failed call reports about the server: whether uwsgi
// is still running and the end of its log.
func (k *Keystone) diagnosis() string {
	state := "running"
	select {
	case <-k.proc.Exited():
		state = "exited"
	default:
	}
	out, _ := os.ReadFile(filepath.Join(k.dir, "uwsgi.log"))
	return fmt.Sprintf("\nuwsgi serving Keystone is %s; its log ends:\n%s", state, tail(out))
}

// Stop ends Keystone before the test does, to see how clients behave when
// the identity service goes away.
func (k *Keystone) Stop() { k.stop() }

func tail(b []byte) string {
	const n = 4000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// AuthURL is the identity v3 endpoint.
func (k *Keystone) AuthURL() string { return k.URL + "/v3" }

// AdminToken is a token of the bootstrap admin scoped to project admin,
// taken again when less than a third of its life is left.
func (k *Keystone) AdminToken() string {
	k.t.Helper()
	k.adminMu.Lock()
	defer k.adminMu.Unlock()
	if k.adminToken == "" || time.Until(k.adminExpires) < k.adminLife/3 {
		issued := time.Now()
		k.adminToken, k.adminExpires = k.token("admin", AdminPassword, "admin")
		k.adminLife = k.adminExpires.Sub(issued)
	}
	return k.adminToken
}

// call sends an admin request and decodes the answer into out (when not
// nil); the status must be want.
func (k *Keystone) call(method, path string, body any, want int, out any) http.Header {
	k.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			k.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, k.AuthURL()+path, rd)
	if err != nil {
		k.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Auth-Token", k.AdminToken())
	return k.do(req, want, out)
}

func (k *Keystone) do(req *http.Request, want int, out any) http.Header {
	k.t.Helper()
	res, err := k.client.Do(req)
	if err != nil {
		k.t.Fatalf("keystone %s %s: %v%s", req.Method, req.URL.Path, err, k.diagnosis())
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if got := res.Header.Get(nonceHeader); got != k.nonce {
		k.t.Fatalf("keystone %s %s: answered by another process on %s, not this test's Keystone%s", req.Method, req.URL.Path, k.URL, k.diagnosis())
	}
	if res.StatusCode != want {
		k.t.Fatalf("keystone %s %s: status %d, want %d: %s%s", req.Method, req.URL.Path, res.StatusCode, want, b, k.diagnosis())
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			k.t.Fatalf("keystone %s %s: %v: %s", req.Method, req.URL.Path, err, b)
		}
	}
	return res.Header
}

// CreateProject creates a project in the Default domain and returns its id.
func (k *Keystone) CreateProject(name string) string {
	k.t.Helper()
	var out struct {
		Project struct{ ID string } `json:"project"`
	}
	k.call("POST", "/projects", map[string]any{"project": map[string]any{"name": name, "domain_id": "default"}}, http.StatusCreated, &out)
	return out.Project.ID
}

// CreateUser creates a user in the Default domain and returns its id.
func (k *Keystone) CreateUser(name, password string) string {
	k.t.Helper()
	var out struct {
		User struct{ ID string } `json:"user"`
	}
	k.call("POST", "/users", map[string]any{"user": map[string]any{"name": name, "password": password, "domain_id": "default"}}, http.StatusCreated, &out)
	return out.User.ID
}

// RoleID returns the id of a role, creating the role when it does not exist.
func (k *Keystone) RoleID(name string) string {
	k.t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if id, ok := k.roles[name]; ok {
		return id
	}
	var list struct {
		Roles []struct{ ID, Name string } `json:"roles"`
	}
	k.call("GET", "/roles?name="+name, nil, http.StatusOK, &list)
	if len(list.Roles) > 0 {
		k.roles[name] = list.Roles[0].ID
		return list.Roles[0].ID
	}
	var out struct {
		Role struct{ ID string } `json:"role"`
	}
	k.call("POST", "/roles", map[string]any{"role": map[string]any{"name": name}}, http.StatusCreated, &out)
	k.roles[name] = out.Role.ID
	return out.Role.ID
}

// Grant gives a user a role on a project.
func (k *Keystone) Grant(userID, projectID, role string) {
	k.t.Helper()
	k.call("PUT", "/projects/"+projectID+"/users/"+userID+"/roles/"+k.RoleID(role), nil, http.StatusNoContent, nil)
}

// Token logs a user in with a password and returns a token scoped to the
// named project (both in the Default domain).
func (k *Keystone) Token(userName, password, projectName string) string {
	k.t.Helper()
	tok, _ := k.token(userName, password, projectName)
	return tok
}

// token is a project-scoped password token and when Keystone says it
// expires.
func (k *Keystone) token(userName, password, projectName string) (string, time.Time) {
	k.t.Helper()
	body := map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{
			"user": map[string]any{"name": userName, "domain": map[string]string{"name": "Default"}, "password": password}}},
		"scope": map[string]any{"project": map[string]any{"name": projectName, "domain": map[string]string{"name": "Default"}}},
	}}
	b, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", k.AuthURL()+"/auth/tokens", bytes.NewReader(b))
	if err != nil {
		k.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	var answer struct {
		Token struct {
			ExpiresAt time.Time `json:"expires_at"`
		} `json:"token"`
	}
	tok := k.do(req, http.StatusCreated, &answer).Get("X-Subject-Token")
	if tok == "" {
		k.t.Fatal("keystone issued no X-Subject-Token")
	}
	return tok, answer.Token.ExpiresAt
}

// Revoke revokes a token (DELETE /v3/auth/tokens).
func (k *Keystone) Revoke(token string) {
	k.t.Helper()
	req, err := http.NewRequest("DELETE", k.AuthURL()+"/auth/tokens", nil)
	if err != nil {
		k.t.Fatal(err)
	}
	req.Header.Set("X-Auth-Token", k.AdminToken())
	req.Header.Set("X-Subject-Token", token)
	k.do(req, http.StatusNoContent, nil)
}

// ServiceUser creates a user holding the service role on project "service"
// (creating the project on first use), as a deployment registers a service
// such as Magnetite, and returns the user's id.
func (k *Keystone) ServiceUser(name, password string) string {
	k.t.Helper()
	project := k.ProjectID("service")
	if project == "" {
		project = k.CreateProject("service")
	}
	id := k.CreateUser(name, password)
	k.Grant(id, project, "service")
	return id
}

// ProjectID returns the id of the named project, or "" when there is none.
func (k *Keystone) ProjectID(name string) string {
	k.t.Helper()
	var list struct {
		Projects []struct{ ID string } `json:"projects"`
	}
	k.call("GET", "/projects?name="+name, nil, http.StatusOK, &list)
	if len(list.Projects) == 0 {
		return ""
	}
	return list.Projects[0].ID
}

// RegisterService adds a service and its public endpoint in Region to the
// catalog, as `openstack service create` and `openstack endpoint create` do.
func (k *Keystone) RegisterService(serviceType, name, url string) {
	k.t.Helper()
	var svc struct {
		Service struct{ ID string } `json:"service"`
	}
	k.call("POST", "/services", map[string]any{"service": map[string]any{"type": serviceType, "name": name, "enabled": true}}, http.StatusCreated, &svc)
	k.call("POST", "/endpoints", map[string]any{"endpoint": map[string]any{
		"service_id": svc.Service.ID, "interface": "public", "region_id": Region, "url": url, "enabled": true,
	}}, http.StatusCreated, nil)
}

// ApplicationCredential makes an application credential of a user, on the
// project its token is scoped to (as `openstack application credential
// create` does), and returns its id and secret.
func (k *Keystone) ApplicationCredential(userID, userName, password, projectName, name string) (id, secret string) {
	k.t.Helper()
	b, _ := json.Marshal(map[string]any{"application_credential": map[string]any{"name": name}})
	req, err := http.NewRequestWithContext(context.Background(), "POST", k.AuthURL()+"/users/"+userID+"/application_credentials", bytes.NewReader(b))
	if err != nil {
		k.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Auth-Token", k.Token(userName, password, projectName))
	var out struct {
		AppCred struct{ ID, Secret string } `json:"application_credential"`
	}
	k.do(req, http.StatusCreated, &out)
	return out.AppCred.ID, out.AppCred.Secret
}
