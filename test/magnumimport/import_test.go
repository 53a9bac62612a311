package magnumimport

import (
	"context"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	_ "modernc.org/sqlite"

	"github.com/magnetite-io/magnetite/internal/testing/testclient"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
	"github.com/magnetite-io/magnetite/internal/testing/testmariadb"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

const openstackBin = testclient.Script

// magnumObjects is what testdata/fill_magnum.py made, as Magnum's objects
// read it back.
type magnumObjects struct {
	Templates []map[string]any `json:"templates"`
	Clusters  []struct {
		Fields     map[string]any
		NodeGroups []map[string]any  `json:"nodegroups"`
		CA         map[string]string `json:"ca"`
	} `json:"clusters"`
	Quotas []struct {
		ProjectID string `json:"project_id"`
		HardLimit int    `json:"hard_limit"`
	} `json:"quotas"`
}

func (m *magnumObjects) UnmarshalJSON(b []byte) error {
	type plain magnumObjects
	if err := json.Unmarshal(b, (*plain)(m)); err != nil {
		return err
	}
	var raw struct{ Clusters []map[string]any }
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for i, c := range raw.Clusters {
		delete(c, "nodegroups")
		delete(c, "ca")
		m.Clusters[i].Fields = c
	}
	return nil
}

// TestImportMagnum moves a Magnum made by Debian's Magnum 15 into Magnetite
// and checks that its users see the same templates, clusters, node groups
// and quotas, and get kubeconfigs signed by their clusters' own CAs.
func TestImportMagnum(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs Debian's Magnum, MariaDB and openstack CLI; runs in the full suite (hack/test.sh)")
	}
	// Nothing it starts is shared with the package's other tests.
	t.Parallel()
	testproc.Require(t, "magnum-db-manage", "/usr/bin/python3", openstackBin)
	db := testmariadb.Start(t)
	magnum := filledMagnum(t, db)
	if len(magnum.objects.Templates) != 2 || len(magnum.objects.Clusters) != 3 {
		t.Fatalf("Magnum holds %d templates and %d clusters, want 2 and 3", len(magnum.objects.Templates), len(magnum.objects.Clusters))
	}

	m := newMagnetite(t, "import-test", "")
	importMagnum := func(args ...string) []importRow { t.Helper(); return m.importMagnum(t, magnum.conf, args...) }
	magnetiteDB := filepath.Join(m.state, "magnetite.db")

	// Every row of Magnum's is listed with what would happen to it, and
	// nothing is written.
	dry := importMagnum("--dry-run")
	checkRows(t, "dry run", dry, magnum.objects, "would import")
	if rows := dumpTables(t, magnetiteDB); rows != "" {
		t.Errorf("--dry-run wrote into Magnetite's database:\n%s", rows)
	}

	checkRows(t, "import", importMagnum(), magnum.objects, "import")
	imported := dumpTables(t, magnetiteDB)
	// A second run takes nothing twice and changes nothing.
	checkRows(t, "second import", importMagnum(), magnum.objects, "already imported")
	if again := dumpTables(t, magnetiteDB); again != imported {
		t.Errorf("the second import changed Magnetite's database:\nbefore:\n%s\nafter:\n%s", imported, again)
	}

	p, cli := m.serve(t)

	t.Run("templates", func(t *testing.T) { checkTemplates(t, cli, p.Base, magnum.objects) })
	t.Run("clusters", func(t *testing.T) { checkClusters(t, cli, p.Base, magnum.objects) })
	t.Run("quotas", func(t *testing.T) { checkQuotas(t, cli, magnum.objects) })
	t.Run("kubeconfig", func(t *testing.T) { checkKubeconfigs(t, cli, p.Base, magnum.objects) })
	t.Run("read-only", func(t *testing.T) { checkReadOnly(t, cli) })
}

// magnetite is a build of Magnetite with its settings (noauth, SQLite in
// a state directory of its own, and extra).
type magnetite struct {
	bin, state, conf, settings string
}

func newMagnetite(t *testing.T, host, extra string) *magnetite {
	t.Helper()
	return newMagnetiteWith(t, host, "[auth]\nnoauth_roles = admin,member\n"+extra)
}

// newMagnetiteWith is a build of Magnetite with its state directory and
// settings (the [auth] section among them).
func newMagnetiteWith(t *testing.T, host, settings string) *magnetite {
	t.Helper()
	m := &magnetite{bin: testmagnetite.Build(t), state: filepath.Join(t.TempDir(), "state"), conf: filepath.Join(t.TempDir(), "magnetite.conf")}
	m.settings = fmt.Sprintf("[DEFAULT]\nstate_dir = %s\nhost = %s\n\n%s", m.state, host, settings)
	if err := os.WriteFile(m.conf, []byte(m.settings), 0o600); err != nil {
		t.Fatal(err)
	}
	return m
}

// importMagnum runs `magnetite import magnum` on the Magnum of magnumConf
// and reads its table.
func (m *magnetite) importMagnum(t *testing.T, magnumConf string, args ...string) []importRow {
	t.Helper()
	out, err := exec.Command(m.bin, append([]string{"--config-file", m.conf, "import", "magnum", "--magnum-config", magnumConf}, args...)...).Output()
	if err != nil {
		t.Fatalf("magnetite import magnum %v: %v\n%s%s", args, err, out, stderrOf(err))
	}
	return importTable(t, string(out))
}

// doctor runs `magnetite doctor` and returns the result of one check (its
// exit status is not looked at: other checks of the test's setup may fail).
func (m *magnetite) doctor(t *testing.T, check string) (status, detail string) {
	t.Helper()
	out, _ := exec.Command(m.bin, "--config-file", m.conf, "doctor", "-o", "json").Output()
	var rs []struct{ Check, Status, Detail string }
	if err := json.Unmarshal(out, &rs); err != nil {
		t.Fatalf("magnetite doctor -o json: %v in %q", err, out)
	}
	for _, r := range rs {
		if r.Check == check {
			return r.Status, r.Detail
		}
	}
	t.Fatalf("magnetite doctor has no check %q: %s", check, out)
	return "", ""
}

// serve starts `magnetite serve` and returns it with the openstack CLI
// pointed at it.
func (m *magnetite) serve(t *testing.T) (*testmagnetite.Process, *cli) {
	t.Helper()
	addr := testmagnetite.FreeAddr(t)
	return m.serveAt(t, addr), newCLI(t, "http://"+addr+"/v1")
}

// serveAt starts `magnetite serve` listening on addr.
func (m *magnetite) serveAt(t *testing.T, addr string) *testmagnetite.Process {
	t.Helper()
	p, err := testmagnetite.Start(t, m.bin, "magnetite", addr, m.settings)
	if err != nil {
		t.Fatal(err)
	}
	p.WaitReady(t, 30*time.Second)
	return p
}

type filled struct {
	conf    string
	objects *magnumObjects
}

// filledMagnum makes Magnum's schema with Debian's magnum-db-manage and
// fills it through Magnum's objects (testdata/fill_magnum.py, given args
// after its own).
func filledMagnum(t *testing.T, db *testmariadb.Server, args ...string) filled {
	t.Helper()
	dir := t.TempDir()
	url := strings.Replace(db.NewDatabase(), "mysql://", "mysql+pymysql://", 1)
	conf := filepath.Join(dir, "magnum.conf")
	text := fmt.Sprintf("[DEFAULT]\nstate_path = %s\n\n[database]\nconnection = %s\n\n[certificates]\ncert_manager_type = x509keypair\n", dir, url)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "magnum-db-manage", "--config-file", conf, "upgrade").CombinedOutput(); err != nil {
		t.Fatalf("magnum-db-manage upgrade: %v\n%s", err, out)
	}
	made := filepath.Join(dir, "magnum.json")
	if out, err := exec.CommandContext(ctx, "/usr/bin/python3", append([]string{"testdata/fill_magnum.py", conf, made}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("fill Magnum's database: %v\n%s", err, out)
	}
	b, err := os.ReadFile(made)
	if err != nil {
		t.Fatal(err)
	}
	var objs magnumObjects
	if err := json.Unmarshal(b, &objs); err != nil {
		t.Fatal(err)
	}
	return filled{conf: conf, objects: &objs}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// importRow is one line of `magnetite import magnum`'s table.
type importRow struct{ Kind, ID, Name, Project, Outcome, Reason string }

// importTable reads the import's table by its header's column offsets.
func importTable(t *testing.T, out string) []importRow {
	t.Helper()
	lines := strings.Split(out, "\n")
	header := lines[0]
	var starts []int
	for _, col := range []string{"KIND", "ID", "NAME", "PROJECT", "OUTCOME", "REASON"} {
		i := strings.Index(header, col)
		if i < 0 {
			t.Fatalf("import printed no %s column:\n%s", col, out)
		}
		starts = append(starts, i)
	}
	var rows []importRow
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		cell := func(i int) string {
			end := len(l)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(l))
			}
			if starts[i] >= len(l) {
				return ""
			}
			return strings.TrimSpace(l[starts[i]:end])
		}
		rows = append(rows, importRow{cell(0), cell(1), cell(2), cell(3), cell(4), cell(5)})
	}
	return rows
}

// checkRows checks that the import listed every row of Magnum's with
// outcome, and the certificates Magnum keeps in Barbican as refused.
func checkRows(t *testing.T, what string, rows []importRow, m *magnumObjects, outcome string) {
	t.Helper()
	want := map[string]string{}
	for _, tpl := range m.Templates {
		want["cluster template "+str(tpl["uuid"])] = outcome
	}
	for _, c := range m.Clusters {
		id := str(c.Fields["uuid"])
		want["cluster "+id] = outcome
		for _, ng := range c.NodeGroups {
			want["node group "+str(ng["uuid"])] = outcome
		}
		for _, purpose := range []string{"ca", "etcd", "proxy"} {
			if c.CA != nil {
				want["certificate "+id+"/"+purpose] = outcome
			} else {
				want["certificate "+id+"/"+purpose] = "refused"
			}
		}
	}
	for _, q := range m.Quotas {
		want["quota "+q.ProjectID+"/Cluster"] = outcome
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.Kind+" "+r.ID] = r.Outcome
		if r.Outcome == "refused" && !strings.Contains(r.Reason, "Barbican") {
			t.Errorf("%s: %s %s refused for %q, want Magnum's Barbican named", what, r.Kind, r.ID, r.Reason)
		}
		if r.Kind == "cluster template" && r.Name == "k8s-fcos-heat" && !strings.Contains(r.Reason, "Heat driver k8s_fedora_coreos_v1") {
			t.Errorf("%s: the Heat template's row says %q, want its Heat driver named", what, r.Reason)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s listed\n%v\nwant\n%v", what, got, want)
	}
}

// dumpTables prints every row of Magnetite's objects, for comparing two
// states of its database ("" when they are all empty).
func dumpTables(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	for _, table := range []string{"cluster_templates", "clusters", "nodegroups", "quotas", "cluster_certificates", "operations"} {
		rows, err := db.Query("SELECT * FROM " + table + " ORDER BY 1")
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %v\n", table, vals)
		}
		rows.Close()
	}
	return b.String()
}

// cli runs Debian's openstack CLI as an administrator of a noauth
// Magnetite, with no settings from the caller's environment.
type cli struct {
	base   []string
	env    []string
	client testclient.CLI // as a client machine has it
}

func newCLI(t *testing.T, endpoint string) *cli {
	env := []string{"HOME=" + t.TempDir(), "SHELL=/bin/bash", "PATH=" + os.Getenv("PATH")}
	return &cli{base: []string{"--os-auth-type", "admin_token", "--os-endpoint", endpoint, "--os-token", "x"}, env: env,
		client: testclient.OpenStack(t)}
}

func (c *cli) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r, err := c.client.Run(ctx, c.env, append(append([]string{}, c.base...), args...)...)
	if err != nil {
		t.Fatalf("openstack %v: %v", args, err)
	}
	return r.Stdout, r.Stderr, r.Code
}

// ok runs a command that must succeed.
func (c *cli) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := c.run(t, args...)
	if code != 0 {
		t.Fatalf("openstack %v exited %d: %s%s", args, code, out, errOut)
	}
	return out
}

// json runs a command that must succeed and decodes its JSON output.
func (c *cli) json(t *testing.T, v any, args ...string) {
	t.Helper()
	out := c.ok(t, args...)
	if err := json.Unmarshal([]byte(out[strings.IndexAny(out, "{["):]), v); err != nil {
		t.Fatalf("openstack %v: %v in %q", args, err, out)
	}
}

// apiGet reads an object straight from the API as an administrator, for
// the fields the CLI does not print (project and user of a template, a
// cluster's stack_id, which microversions from 1.13 call cluster_id).
func apiGet(t *testing.T, base, path, microversion string) map[string]any {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
	asAdministrator(req, base)
	req.Header.Set("OpenStack-API-Version", "container-infra "+microversion)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, res.StatusCode, err)
	}
	return out
}

// adminTokens maps the base URL of a Magnetite that authenticates with
// Keystone to what gives an administrator's token for it.
var adminTokens sync.Map

// asAdministrator makes req an administrator's: with a token from
// Keystone when the Magnetite at base uses it, else noauth's roles.
func asAdministrator(req *http.Request, base string) {
	if token, ok := adminTokens.Load(base); ok {
		req.Header.Set("X-Auth-Token", token.(func() string)())
		return
	}
	req.Header.Set("X-Roles", "admin")
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// sameFields compares the named fields of what Magnetite shows with
// Magnum's objects; the CLI prints a missing value as "-" or null.
func sameFields(t *testing.T, what string, got, want map[string]any, fields ...string) {
	t.Helper()
	for _, f := range fields {
		g, w := got[f], want[f]
		if g == "-" {
			g = nil
		}
		if gm, ok := g.(map[string]any); ok && len(gm) == 0 {
			g = nil
		}
		if wm, ok := w.(map[string]any); ok && len(wm) == 0 {
			w = nil
		}
		if wn, ok := w.(float64); ok {
			w = fmt.Sprint(wn)
			g = str(g)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: %s = %#v, Magnum has %#v", what, f, g, w)
		}
	}
}

func checkTemplates(t *testing.T, c *cli, base string, m *magnumObjects) {
	var list []map[string]any
	c.json(t, &list, "coe", "cluster", "template", "list", "-f", "json")
	var got, want []string
	for _, tpl := range list {
		got = append(got, str(tpl["uuid"])+" "+str(tpl["name"]))
	}
	for _, tpl := range m.Templates {
		want = append(want, str(tpl["uuid"])+" "+str(tpl["name"]))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("template list = %v, Magnum has %v", got, want)
	}
	for _, tpl := range m.Templates {
		id := str(tpl["uuid"])
		var shown map[string]any
		c.json(t, &shown, "coe", "cluster", "template", "show", id, "-f", "json")
		sameFields(t, "template "+id, shown, tpl, "uuid", "name", "coe", "image_id", "flavor_id", "master_flavor_id",
			"keypair_id", "external_network_id", "dns_nameserver", "network_driver", "volume_driver", "cluster_distro",
			"server_type", "public", "hidden", "labels", "docker_volume_size", "master_lb_enabled", "floating_ip_enabled",
			"tls_disabled", "registry_enabled", "created_at")
		sameFields(t, "template "+id+" (API)", apiGet(t, base, "/v1/clustertemplates/"+id, "latest"), tpl, "project_id", "user_id")
	}
}

func checkClusters(t *testing.T, c *cli, base string, m *magnumObjects) {
	var list []map[string]any
	c.json(t, &list, "coe", "cluster", "list", "-f", "json")
	if len(list) != len(m.Clusters) {
		t.Fatalf("cluster list shows %d clusters, Magnum has %d: %v", len(list), len(m.Clusters), list)
	}
	for i, mc := range m.Clusters {
		want := mc.Fields
		id := str(want["uuid"])
		masters, workers := 0, 0
		for _, ng := range mc.NodeGroups {
			n := int(ng["node_count"].(float64))
			if ng["role"] == "master" {
				masters += n
			} else {
				workers += n
			}
		}
		sameFields(t, "cluster list row "+id, list[i], want, "uuid", "name", "keypair", "status", "health_status")
		if list[i]["master_count"] != float64(masters) || list[i]["node_count"] != float64(workers) {
			t.Errorf("cluster list row %s counts %v masters and %v nodes, Magnum's node groups %d and %d", id, list[i]["master_count"], list[i]["node_count"], masters, workers)
		}
		var shown map[string]any
		c.json(t, &shown, "coe", "cluster", "show", id, "-f", "json")
		sameFields(t, "cluster "+id, shown, want, "uuid", "name", "project_id", "cluster_template_id", "keypair", "status",
			"api_address", "coe_version", "container_version", "labels", "health_status", "health_status_reason",
			"master_flavor_id", "flavor_id", "create_timeout", "docker_volume_size", "fixed_network",
			"master_lb_enabled", "floating_ip_enabled", "created_at", "updated_at")
		reason := str(shown["status_reason"])
		if !strings.Contains(reason, "read-only") || !strings.Contains(reason, str(want["stack_id"])) ||
			(want["status_reason"] != nil && !strings.Contains(reason, str(want["status_reason"]))) {
			t.Errorf("cluster %s status_reason %q, want it read-only with its stack %v and Magnum's reason %v", id, reason, want["stack_id"], want["status_reason"])
		}
		sameFields(t, "cluster "+id+" (API 1.12)", apiGet(t, base, "/v1/clusters/"+id, "1.12"), want, "stack_id", "user_id")

		// The CLI lists node groups with their main columns; the rest
		// (its show prints neither version nor created_at) is read from
		// the API.
		var groups []map[string]any
		c.json(t, &groups, "coe", "nodegroup", "list", id, "-f", "json")
		if len(groups) != len(mc.NodeGroups) {
			t.Errorf("cluster %s has %d node groups, Magnum %d", id, len(groups), len(mc.NodeGroups))
			continue
		}
		for j, ng := range mc.NodeGroups {
			what := "node group " + str(ng["uuid"])
			sameFields(t, what, groups[j], ng, "uuid", "name", "flavor_id", "image_id", "node_count", "status", "role")
			sameFields(t, what+" (API)", apiGet(t, base, "/v1/clusters/"+id+"/nodegroups/"+str(ng["uuid"]), "latest"), ng,
				"min_node_count", "max_node_count", "is_default", "version", "labels", "node_addresses", "project_id",
				"created_at", "updated_at", "stack_id", "status_reason")
		}
	}
}

func checkQuotas(t *testing.T, c *cli, m *magnumObjects) {
	// `coe quotas list` prints a table only.
	out, errOut, code := c.run(t, "coe", "quotas", "list", "--all-tenants")
	if code != 0 {
		t.Fatalf("quotas list exited %d: %s", code, errOut)
	}
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) == 3 && strings.TrimSpace(cells[0]) != "project_id" {
			got[strings.TrimSpace(cells[0])+"/"+strings.TrimSpace(cells[1])] = strings.TrimSpace(cells[2])
		}
	}
	want := map[string]string{}
	for _, q := range m.Quotas {
		want[q.ProjectID+"/Cluster"] = fmt.Sprint(q.HardLimit)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("quotas = %v, Magnum has %v\n%s", got, want, out)
	}
}

// checkKubeconfigs gets each cluster's kubeconfig as its users do and
// checks that it trusts the CA Magnum made for the cluster and holds a
// client certificate that CA signed.
func checkKubeconfigs(t *testing.T, c *cli, base string, m *magnumObjects) {
	for _, mc := range m.Clusters {
		id := str(mc.Fields["uuid"])
		dir := t.TempDir()
		out, errOut, code := c.run(t, "coe", "cluster", "config", id, "--dir", dir)
		if mc.CA == nil {
			if code == 0 || !strings.Contains(errOut, "certificate authority") {
				t.Errorf("cluster config of %s (CA in Barbican) = %d %q %q, want a refusal naming its missing CA", id, code, out, errOut)
			}
			continue
		}
		if code != 0 {
			t.Fatalf("cluster config %s exited %d: %s%s", id, code, out, errOut)
		}
		cfg, err := clientcmd.LoadFromFile(filepath.Join(dir, "config"))
		if err != nil {
			t.Fatal(err)
		}
		ctxName := cfg.CurrentContext
		kctx := cfg.Contexts[ctxName]
		cluster, user := cfg.Clusters[kctx.Cluster], cfg.AuthInfos[kctx.AuthInfo]
		if cluster.Server != str(mc.Fields["api_address"]) {
			t.Errorf("kubeconfig of %s points at %s, Magnum's api_address is %v", id, cluster.Server, mc.Fields["api_address"])
		}
		ca := parseCert(t, cluster.CertificateAuthorityData)
		magnumCA := parseCert(t, []byte(mc.CA["kubernetes"]))
		if !ca.Equal(magnumCA) {
			t.Errorf("kubeconfig of %s trusts %s, not the CA Magnum made (%s)", id, ca.Subject, magnumCA.Subject)
		}
		roots := x509.NewCertPool()
		roots.AddCert(magnumCA)
		client := parseCert(t, user.ClientCertificateData)
		if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("kubeconfig of %s: its client certificate does not chain to the cluster's Magnum CA: %v", id, err)
		}
		// The cluster's other CAs came along too.
		for kind, purpose := range map[string]string{"etcd": "etcd", "front-proxy": "front-proxy"} {
			shown := apiGet(t, base, "/v1/certificates/"+id+"?ca_cert_type="+purpose, "latest")
			if got := parseCert(t, []byte(str(shown["pem"]))); !got.Equal(parseCert(t, []byte(mc.CA[kind]))) {
				t.Errorf("cluster %s's %s CA is %s, not Magnum's", id, kind, got.Subject)
			}
		}
	}
}

func parseCert(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("not a PEM certificate: %q", b)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkReadOnly checks that imported clusters are not changed and the Heat
// template makes no new clusters, each refusal saying why.
func checkReadOnly(t *testing.T, c *cli) {
	for _, args := range [][]string{
		{"coe", "cluster", "resize", "prod", "3"},
		{"coe", "cluster", "delete", "dev"},
		{"coe", "nodegroup", "create", "prod", "extra"},
		{"coe", "cluster", "update", "dev", "replace", "node_count=3"},
	} {
		_, errOut, code := c.run(t, args...)
		if code == 0 || !strings.Contains(errOut, "read-only") || !strings.Contains(errOut, "HTTP 409") {
			t.Errorf("openstack %v = %d %q, want a 409 saying the cluster is read-only", args, code, errOut)
		}
	}
	_, errOut, code := c.run(t, "coe", "cluster", "create", "--cluster-template", "k8s-fcos-heat", "new")
	if code == 0 || !strings.Contains(errOut, "Heat driver k8s_fedora_coreos_v1") || !strings.Contains(errOut, "HTTP 400") {
		t.Errorf("cluster create from the Heat template = %d %q, want a 400 naming its Heat driver", code, errOut)
	}
}
