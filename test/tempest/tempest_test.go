// Package tempest runs Magnum's own API test suite (tempest with
// magnum-tempest-plugin, both from Debian) against `magnetite serve` behind
// a real Keystone, and holds Magnetite to it: every test passes except the
// deliberate exceptions listed, with their reasons, in docs/tempest.md.
//
// The plugin finds Magnetite through the Keystone catalog as the
// container-infra service; the image, flavors, network and keypair it names
// come from a loopback stand-in for Glance, Nova and Neutron registered in
// the same catalog (cloud_test.go).
package tempest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

const (
	tempestBin      = "/usr/bin/tempest"
	suite           = "magnum_tempest_plugin.tests.api"
	servicePassword = "magnetite-tempest-service-password"
	// runTimeout bounds the whole tempest run.
	runTimeout = 40 * time.Minute
)

func TestMagnumTempestAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Magnum's tempest API suite against a real Keystone (Debian's tempest, magnum-tempest-plugin and keystone) for several minutes; runs in the full suite")
	}
	requireTempest(t)
	exceptions := docExceptions(t)

	ks := testkeystone.Start(t)
	cl := testcloud.Start(t, ks)
	// Clusters are built for real by the conductor on a local Cluster API
	// management plane with the in-memory infrastructure.
	mgmt := testenv.SharedClusterAPI(t)
	addr := testmagnetite.FreeAddr(t)
	ks.ServiceUser("magnetite", servicePassword)
	ks.RegisterService("container-infra", "magnetite", "http://"+addr+"/v1")
	// Tempest's API tests wait for clusters to finish, not for machines to
	// boot at a cloud's pace.
	testmagnetite.Serve(t, addr, testmagnetite.KeystoneConf(ks.AuthURL(), servicePassword, testkeystone.Region)+fmt.Sprintf(`
[management]
kubeconfig = %s
namespace_prefix = %s

[conductor]
infrastructure = inmemory

[driver]
inmemory_boot_time = 1s
`, mgmt.KubeconfigFile(t), testenv.NamespacePrefix(t)))

	ws := newWorkspace(t, ks, provisionAccounts(t, ks), clusterTemplate(t, ks, "http://"+addr))
	listed := ws.list(t)
	if len(listed) == 0 {
		t.Fatalf("tempest lists no tests matching %s: is magnum-tempest-plugin installed?", suite)
	}
	start := time.Now()
	results := ws.run(t)
	took := time.Since(start)

	passed, failed := 0, 0
	for _, id := range listed {
		r, ran := results[id]
		reason, excepted := exceptions[id]
		switch {
		case !ran:
			t.Errorf("%s: listed by tempest but no result was reported", id)
			failed++
		case r.Status == "success":
			passed++
			if excepted {
				t.Errorf("%s passes now: remove it from the exceptions in docs/tempest.md (listed because: %s)", id, reason)
			}
		default:
			failed++
			if !excepted {
				t.Errorf("%s: %s\n%s", id, r.Status, r.details())
			}
		}
	}
	for id, r := range results {
		if !slices.Contains(listed, id) && r.Status != "success" {
			t.Errorf("%s: %s\n%s", id, r.Status, r.details())
		}
	}
	for id := range exceptions {
		if !slices.Contains(listed, id) {
			t.Errorf("docs/tempest.md lists %s, which tempest does not have", id)
		}
	}
	if left := clustersLeft(t, ks, "http://"+addr); len(left) > 0 {
		t.Errorf("clusters the suite made are still there: %v", left)
	}
	// Magnum checks the image, flavors, external network and keypair a
	// template or cluster names; so must Magnetite, with the caller's token.
	reads := cl.ReadsByMagnetite()
	for _, route := range []string{"GET /image/v2/images", "GET /compute/v2.1/flavors/detail",
		"GET /networking/v2.0/networks", "GET /compute/v2.1/os-keypairs/{name}"} {
		if reads[route] == 0 {
			t.Errorf("magnetite never asked %s (it asked: %v)", route, reads)
		}
	}
	t.Logf("tempest %s: %d tests, %d passed, %d did not (%d listed exceptions), in %s",
		suite, len(listed), passed, failed, len(exceptions), took.Round(time.Second))
}

func requireTempest(t *testing.T) {
	t.Helper()
	testproc.Require(t, tempestBin)
	if out, err := exec.Command(testkeystone.Python, "-c", "import magnum_tempest_plugin, subunit, testtools").CombinedOutput(); err != nil {
		t.Fatalf("magnum-tempest-plugin is missing (%v: %s): install the packages of hack/ci-packages.txt (bash hack/ci-deps.sh as root)", err, out)
	}
}

// testName shortens a tempest test id to Class.method, the form
// docs/tempest.md uses: module path and attributes ("[negative]") dropped.
func testName(id string) string {
	if !strings.HasPrefix(id, suite+".") {
		return id // setUpClass (...) and the like
	}
	if i := strings.IndexByte(id, '['); i >= 0 {
		id = id[:i]
	}
	parts := strings.Split(id, ".")
	if len(parts) < 2 {
		return id
	}
	return parts[len(parts)-2] + "." + parts[len(parts)-1]
}

// docExceptions reads the table of expected failures from docs/tempest.md:
// test name -> reason.
func docExceptions(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/tempest.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)<!-- exceptions:start -->(.*?)<!-- exceptions:end -->`).FindSubmatch(raw)
	if block == nil {
		t.Fatal("docs/tempest.md has no <!-- exceptions:start --> ... <!-- exceptions:end --> table")
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z0-9_]+\\.[A-Za-z0-9_]+)` \\| (.+?) \\|$")
	out := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(block[1]), -1) {
		if _, dup := out[m[1]]; dup {
			t.Errorf("docs/tempest.md lists %s twice", m[1])
		}
		out[m[1]] = m[2]
	}
	return out
}

// workspace is a tempest workspace (`tempest init`) in the test's temp
// folder, with its own HOME so nothing outside it is read or written.
type workspace struct {
	dir, home string
}

// account is a user tempest runs as, in a project of the same name.
type account struct{ name, role string }

func (a account) password() string { return a.name + "-password" }

var accounts = []account{
	{"tempest-member-1", "member"}, {"tempest-member-2", "member"}, {"tempest-member-3", "member"},
	{"tempest-admin-1", "admin"}, {"tempest-admin-2", "admin"},
}

// clustersLeft lists the clusters of the tempest accounts' projects: the
// plugin deletes every cluster it made (and waits until it is gone), even
// from a test that failed after creating it.
func clustersLeft(t *testing.T, ks *testkeystone.Keystone, base string) []string {
	t.Helper()
	var left []string
	for _, a := range accounts {
		req, err := http.NewRequest("GET", base+"/v1/clusters", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Auth-Token", ks.Token(a.name, a.password(), a.name))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Clusters []struct{ Name, UUID, Status string } `json:"clusters"`
		}
		err = json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("list %s's clusters: %d %v", a.name, res.StatusCode, err)
		}
		for _, c := range out.Clusters {
			left = append(left, fmt.Sprintf("%s %s (%s, project %s)", c.Name, c.UUID, c.Status, a.name))
		}
	}
	return left
}

// provisionAccounts creates the users tempest runs as, each in a project
// of its own, and returns their accounts file. Tempest's dynamic
// credentials cannot be used: magnum-tempest-plugin registers the
// credentials ClusterTest makes in setUpClass for cleanup after each test,
// so the project and user are deleted after its first test while the
// class's clients go on with their token, which Keystone (and every
// service asking it) then refuses. Pre-provisioned accounts are kept.
func provisionAccounts(t *testing.T, ks *testkeystone.Keystone) string {
	t.Helper()
	var yaml strings.Builder
	for _, a := range accounts {
		ks.Grant(ks.CreateUser(a.name, a.password()), ks.CreateProject(a.name), a.role)
		fmt.Fprintf(&yaml, "- username: %q\n  project_name: %q\n  password: %q\n  user_domain_name: Default\n  project_domain_name: Default\n  roles: [%q]\n",
			a.name, a.name, a.password(), a.role)
	}
	path := filepath.Join(t.TempDir(), "accounts.yaml")
	if err := os.WriteFile(path, []byte(yaml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// clusterTemplate creates, as the cloud's admin, the public template
// ClusterTest builds its clusters from ([magnum] cluster_template_id): the
// plugin's own templates name no Kubernetes version (kube_tag), which
// Magnetite needs to build a cluster where Magnum would pick its driver's
// default.
func clusterTemplate(t *testing.T, ks *testkeystone.Keystone, base string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"name": "tempest-k8s", "coe": "kubernetes", "public": true, "image_id": testcloud.ImageName,
		"flavor_id": testcloud.FlavorName, "master_flavor_id": testcloud.MasterFlavor, "external_network_id": testcloud.ExternalNet,
		"labels": map[string]string{"kube_tag": testcloud.KubeTag},
	})
	req, err := http.NewRequest("POST", base+"/v1/clustertemplates", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Auth-Token", ks.AdminToken())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct{ UUID string }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("create the cluster template: %d %v", res.StatusCode, err)
	}
	return out.UUID
}

func newWorkspace(t *testing.T, ks *testkeystone.Keystone, accounts, template string) *workspace {
	t.Helper()
	root := t.TempDir()
	ws := &workspace{dir: filepath.Join(root, "workspace"), home: filepath.Join(root, "home")}
	if err := os.Mkdir(ws.home, 0o700); err != nil {
		t.Fatal(err)
	}
	ws.tempest(t, context.Background(), "init", "--workspace-path", filepath.Join(root, "workspaces.yaml"), ws.dir)
	conf := fmt.Sprintf(`[DEFAULT]
log_dir = %[1]s/logs
log_file = tempest.log

[oslo_concurrency]
lock_path = %[1]s/tempest_lock

[auth]
admin_username = admin
admin_password = %[2]s
admin_project_name = admin
admin_domain_name = Default
use_dynamic_credentials = false
test_accounts_file = %[9]s
create_isolated_networks = false

[identity]
uri_v3 = %[3]s
auth_version = v3
region = %[4]s
v3_endpoint_type = public
admin_role = admin

[identity-feature-enabled]
api_v2 = false

[service_available]
magnum = true
nova = true
glance = true
neutron = false
cinder = false
swift = false

[validation]
run_validation = false

[magnum]
image_id = %[5]s
nic_id = %[6]s
flavor_id = %[7]s
master_flavor_id = %[8]s
keypair_name = magnum-test
dns_nameserver = 8.8.8.8
copy_logs = false
cluster_creation_timeout = 15
cluster_template_id = %[10]s
`, ws.dir, testkeystone.AdminPassword, ks.AuthURL(), testkeystone.Region, testcloud.ImageName, testcloud.ExternalNet, testcloud.FlavorName, testcloud.MasterFlavor, accounts, template)
	if err := os.WriteFile(filepath.Join(ws.dir, "etc", "tempest.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return ws
}

// tempest runs a tempest command in the workspace and returns its standard
// output; a failure ends the test.
func (ws *workspace) tempest(t *testing.T, ctx context.Context, args ...string) []byte {
	t.Helper()
	out, stderr, err := ws.command(ctx, args...)
	if err != nil {
		t.Fatalf("tempest %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

func (ws *workspace) command(ctx context.Context, args ...string) ([]byte, []byte, error) {
	cmd := exec.CommandContext(ctx, testkeystone.Python, append([]string{tempestBin}, args...)...)
	if _, err := os.Stat(ws.dir); err == nil {
		cmd.Dir = ws.dir
	}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + ws.home, "LANG=C.UTF-8"}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	return out.Bytes(), stderr.Bytes(), err
}

// list returns the ids of the suite's tests, attributes stripped, as
// docs/tempest.md names them.
func (ws *workspace) list(t *testing.T) []string {
	t.Helper()
	out := ws.tempest(t, context.Background(), "run", "--list-tests", "--regex", suite)
	var ids []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, suite+".") {
			ids = append(ids, testName(line))
		}
	}
	slices.Sort(ids)
	return ids
}

// result is one test's outcome read from the subunit stream.
type result struct {
	ID      string            `json:"id"`
	Status  string            `json:"status"`
	Details map[string]string `json:"details"`
}

func (r result) details() string {
	var b strings.Builder
	// The end of a traceback names the exception and the API's answer.
	if tb := strings.Split(strings.TrimSpace(r.Details["traceback"]), "\n"); len(tb) > 1 {
		b.WriteString(strings.Join(tb[max(0, len(tb)-6):], "\n"))
	}
	b.WriteString(r.Details["reason"])
	if b.Len() == 0 {
		for k, v := range r.Details {
			if !strings.HasPrefix(k, "pythonlogging") {
				fmt.Fprintf(&b, "%s: %s\n", k, v)
			}
		}
	}
	return b.String()
}

// subunitToJSON reads a subunit v2 stream on stdin with the subunit
// library tempest itself uses and prints one JSON object per test.
const subunitToJSON = `
import json, sys
import subunit, testtools

def emit(test):
    details = {}
    for name, content in test["details"].items():
        try:
            details[name] = content.as_text()
        except Exception:
            pass
    print(json.dumps({"id": test["id"], "status": test["status"], "details": details}))

result = testtools.StreamToDict(emit)
result.startTestRun()
subunit.ByteStreamToStreamResult(sys.stdin.buffer, non_subunit_name="stdout").run(result)
result.stopTestRun()
`

// run runs the suite, one test at a time, and returns the results by test
// name.
func (ws *workspace) run(t *testing.T) map[string]result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	stream, stderr, err := ws.command(ctx, "run", "--concurrency", "1", "--subunit", "--regex", suite)
	if ctx.Err() != nil {
		t.Fatalf("tempest did not finish within %s\n%s", runTimeout, stderr)
	}
	// A failing test makes tempest exit non-zero: the results say which.
	if err != nil {
		t.Logf("tempest run: %v", err)
	}
	conv := exec.Command(testkeystone.Python, "-c", subunitToJSON)
	conv.Stdin = bytes.NewReader(stream)
	var out, convErr bytes.Buffer
	conv.Stdout, conv.Stderr = &out, &convErr
	if err := conv.Run(); err != nil {
		t.Fatalf("read tempest's subunit stream: %v\n%s", err, convErr.String())
	}
	results := map[string]result{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var r result
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("read tempest's results: %v", err)
		}
		results[testName(r.ID)] = r
	}
	if len(results) == 0 {
		t.Fatalf("tempest reported no results\n%s", tail(stderr))
	}
	return results
}

func tail(b []byte) string {
	const n = 6000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
