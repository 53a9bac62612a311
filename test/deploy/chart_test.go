package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/kinds"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

const releaseNamespace = "magnetite-system"

// renderChart renders deploy/helm/magnetite with the Helm SDK, as helm
// install would for release "magnetite" in releaseNamespace, and returns
// its objects by "Kind/name". The values are YAML over the chart's own.
func renderChart(t *testing.T, values string) (map[string]*unstructured.Unstructured, error) {
	t.Helper()
	ch, err := loader.Load(filepath.Join(moduleRoot(t), "deploy/helm/magnetite"))
	if err != nil {
		t.Fatalf("load the chart: %v", err)
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: "magnetite", Namespace: releaseNamespace, IsInstall: true, Revision: 1,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string]*unstructured.Unstructured{}
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		objs, err := testenv.DecodeObjects(strings.NewReader(files[n]))
		if err != nil {
			t.Fatalf("%s does not decode: %v\n%s", n, err, files[n])
		}
		for _, o := range objs {
			key := o.GetKind() + "/" + o.GetName()
			if _, dup := out[key]; dup {
				t.Fatalf("the chart renders %s twice", key)
			}
			out[key] = o
		}
	}
	return out, nil
}

func mustRender(t *testing.T, values string) map[string]*unstructured.Unstructured {
	t.Helper()
	objs, err := renderChart(t, values)
	if err != nil {
		t.Fatalf("render the chart: %v", err)
	}
	return objs
}

const minimalValues = `
secrets:
  databaseConnection: mysql://magnetite:db-password-123@db.example.net:3306/magnetite
  secretKey: c2VjcmV0LWtleS1vZi0zMi1ieXRlcy1leGFjdGx5ISE=
  keystonePassword: keystone-password-456
config:
  keystone_authtoken:
    auth_url: https://keystone.example.net:5000/v3
`

// fullValues turns every optional part on.
const fullValues = minimalValues + `
replicaCount: 3
ingress:
  enabled: true
  className: nginx
  hosts: [magnum.example.net]
  tls: [{hosts: [magnum.example.net], secretName: magnum-tls}]
serviceMonitor:
  enabled: true
rbac:
  metal3Hosts: true
policy: |
  "cluster:create": "role:member"
extraConfig:
  50-baremetal.conf: |
    [baremetal]
    backend = metal3
`

func TestChartRendersDeployment(t *testing.T) {
	objs := mustRender(t, fullValues)
	var kinds []string
	for k := range objs {
		kinds = append(kinds, strings.Split(k, "/")[0])
	}
	for _, want := range []string{"Deployment", "Service", "ConfigMap", "Secret", "ServiceAccount", "ClusterRole",
		"ClusterRoleBinding", "PodDisruptionBudget", "Ingress", "ServiceMonitor"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("the chart renders no %s (kinds: %v)", want, kinds)
		}
	}

	dep := objs["Deployment/magnetite"]
	if dep == nil {
		t.Fatalf("no Deployment/magnetite: %v", kinds)
	}
	if n, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "replicas"); fmt.Sprint(n) != "3" {
		t.Errorf("replicas = %v, want replicaCount 3", n)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	for _, probe := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
		if path, _, _ := unstructured.NestedString(c, probe, "httpGet", "path"); path != "/healthcheck" {
			t.Errorf("%s asks %q, want /healthcheck", probe, path)
		}
	}
	if ro, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !ro {
		t.Error("the container's root filesystem is writable")
	}
	if nonRoot, _, _ := unstructured.NestedBool(dep.Object, "spec", "template", "spec", "securityContext", "runAsNonRoot"); !nonRoot {
		t.Error("the pod may run as root")
	}
	env, _ := json.Marshal(c["env"])
	for _, name := range []string{"MAGNETITE_DATABASE_CONNECTION", "MAGNETITE_DATABASE_SECRET_KEY", "MAGNETITE_KEYSTONE_AUTHTOKEN_PASSWORD"} {
		if !strings.Contains(string(env), `"name":"`+name+`","valueFrom":{"secretKeyRef"`) {
			t.Errorf("%s does not come from a Secret: %s", name, env)
		}
	}

	// Secrets live in the Secret only: never in the ConfigMap, the
	// Deployment or anything else a reader of the namespace sees.
	for key, o := range objs {
		if o.GetKind() == "Secret" {
			continue
		}
		b, _ := json.Marshal(o.Object)
		for _, secret := range []string{"db-password-123", "c2VjcmV0LWtleS1vZi0zMi1ieXRlcy1leGFjdGx5ISE=", "keystone-password-456"} {
			if strings.Contains(string(b), secret) {
				t.Errorf("%s holds a secret", key)
			}
		}
	}

	conf, _, _ := unstructured.NestedString(objs["ConfigMap/magnetite"].Object, "data", "magnetite.conf")
	for _, line := range []string{"[DEFAULT]\nstate_dir = /var/lib/magnetite/state", "[api]\nlisten = 0.0.0.0:9511", "[keystone_authtoken]\nauth_url = https://keystone.example.net:5000/v3"} {
		if !strings.Contains(conf, line) {
			t.Errorf("magnetite.conf lacks %q:\n%s", line, conf)
		}
	}
	if strings.Contains(conf, "delete_empty_namespaces") {
		t.Errorf("magnetite.conf turns off namespace release although rbac.releaseNamespaces is true:\n%s", conf)
	}

	// Without the namespace-release rules, the configuration does not ask
	// for what the role cannot do.
	objs = mustRender(t, minimalValues+"rbac: {releaseNamespaces: false}\nreplicaCount: 1\n")
	conf, _, _ = unstructured.NestedString(objs["ConfigMap/magnetite"].Object, "data", "magnetite.conf")
	if !strings.Contains(conf, "delete_empty_namespaces = false") {
		t.Errorf("rbac.releaseNamespaces false but magnetite.conf still deletes namespaces:\n%s", conf)
	}
	if _, ok := objs["ClusterRole/magnetite-namespace-release"]; ok {
		t.Error("rbac.releaseNamespaces false still grants listing every kind")
	}
	rules, _ := json.Marshal(objs["ClusterRole/magnetite"].Object["rules"])
	if strings.Contains(string(rules), "delete") && strings.Contains(string(rules), `"namespaces"],"verbs":["create","patch","delete"]`) {
		t.Errorf("rbac.releaseNamespaces false still grants deleting namespaces: %s", rules)
	}
	if _, ok := objs["PodDisruptionBudget/magnetite"]; ok {
		t.Error("one replica with a PodDisruptionBudget of minAvailable 1 would block every node drain")
	}
}

func TestChartRefusesToRenderWithoutADatabase(t *testing.T) {
	_, err := renderChart(t, "config: {}\n")
	if err == nil || !strings.Contains(err.Error(), "secrets.databaseConnection") {
		t.Fatalf("render without a database: %v, want a failure naming secrets.databaseConnection", err)
	}
}

// serviceMonitorCRD is prometheus-operator's ServiceMonitor CRD from its
// module, pinned.
func serviceMonitorCRD(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/prometheus-operator/prometheus-operator@v0.85.0").Output()
	if err != nil {
		t.Fatalf("download prometheus-operator's module (its CRDs): %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %v %s", err, out)
	}
	dir := t.TempDir()
	crd, err := os.ReadFile(filepath.Join(mod.Dir, "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "servicemonitors.yaml"), crd, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// dryRunChart sends every object of the chart to the API server as a
// server-side dry-run apply in the release's namespace.
func dryRunChart(ctx context.Context, t *testing.T, mgmt *testenv.APIServer, objs map[string]*unstructured.Unstructured) {
	t.Helper()
	mgmt.InstallCRDs(t, serviceMonitorCRD(t), nil)
	dc, mapper := mgmt.Dynamic(t), mgmt.Mapper(t)
	keys := make([]string, 0, len(objs))
	for k := range objs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o := objs[k].DeepCopy()
		if m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version); err == nil && m.Scope.Name() == "namespace" {
			o.SetNamespace(releaseNamespace)
		}
		if err := testenv.DryRunApply(ctx, dc, mapper, o); err != nil {
			t.Errorf("server-side dry-run of %s: %v", k, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	fmt.Fprintf(os.Stderr, "dry-run: %d objects of the chart accepted\n", len(keys))
}

// plural is the resource name of a kind, as the API server's discovery
// names Magnetite's kinds.
func plural(kind string) string {
	k := strings.ToLower(kind)
	if strings.HasSuffix(k, "s") {
		return k + "es"
	}
	return k + "s"
}

// grants reads a ClusterRole's rules as "group/resource" -> verbs.
func grants(t *testing.T, role *unstructured.Unstructured) map[string][]string {
	t.Helper()
	var rules []struct {
		APIGroups []string `json:"apiGroups"`
		Resources []string `json:"resources"`
		Verbs     []string `json:"verbs"`
	}
	b, _ := json.Marshal(role.Object["rules"])
	if err := json.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				out[g+"/"+res] = append(out[g+"/"+res], r.Verbs...)
			}
		}
	}
	return out
}

// TestChartRBACCoversEveryRenderedKind checks the ClusterRole against what
// the renderer writes for every infrastructure (the golden files of
// internal/driver/capi, OpenStack and Metal3 included, which the local
// plane cannot run): each kind it applies may be created and patched, and
// what its Roles grant the ClusterRole holds. And the other way: every
// resource the role names is a kind Magnetite uses (internal/mgmt.BaseKinds
// and the drivers' kinds) or grants, so a grant left behind by a removed
// kind fails.
func TestChartRBACCoversEveryRenderedKind(t *testing.T) {
	objs := mustRender(t, minimalValues+"rbac: {metal3Hosts: true}\n")
	granted := grants(t, objs["ClusterRole/magnetite"])
	var golden []string
	for _, dir := range []string{"internal/driver/capi/testdata/golden", "internal/driver/capi/metal3/testdata/golden"} {
		files, err := filepath.Glob(filepath.Join(moduleRoot(t), dir, "*", "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no golden files in %s: %v", dir, err)
		}
		golden = append(golden, files...)
	}
	seen := map[string]bool{"/secrets": true} // the renderer's Secrets are listed as comments
	var delegated []map[string][]string
	for _, f := range golden {
		rendered, err := testenv.ReadObjects(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, o := range rendered {
			seen[o.GroupVersionKind().Group+"/"+plural(o.GetKind())] = true
			if o.GetKind() == "Role" {
				delegated = append(delegated, grants(t, o))
			}
		}
	}
	// Kubernetes refuses a Role that grants more than its writer holds: what
	// the renderer's Roles (the cluster autoscaler's) grant, the ClusterRole
	// must hold, and those grants are in use.
	used := map[string]bool{}
	if len(delegated) == 0 {
		t.Fatal("no Role among the golden files: the autoscaler's Role is not rendered any more, or the test reads the wrong files")
	}
	for _, role := range delegated {
		for res, verbs := range role {
			used[res] = true
			for _, verb := range verbs {
				if !slices.Contains(granted[res], verb) {
					t.Errorf("the renderer's Role grants %s on %s, which the ClusterRole does not hold (has %v): Kubernetes would refuse the Role", verb, res, granted[res])
				}
			}
		}
	}
	for res := range seen {
		for _, verb := range []string{"create", "patch"} {
			if !slices.Contains(granted[res], verb) {
				t.Errorf("the renderer applies %s, but the ClusterRole does not grant %s on it (has %v)", res, verb, granted[res])
			}
		}
	}
	table, err := kinds.NewTable(mgmt.BaseKinds, builtin.Kinds())
	if err != nil {
		t.Fatal(err)
	}
	// The conductor lists and deletes these kinds' objects of a deleted
	// cluster.
	for _, kind := range table.Cleanup() {
		res := table[kind].Group + "/" + plural(kind)
		for _, verb := range []string{"list", "delete"} {
			if !slices.Contains(granted[res], verb) {
				t.Errorf("the conductor cleans up %s after a cluster, but the ClusterRole does not grant %s on it (has %v)", res, verb, granted[res])
			}
		}
	}
	// The status watch lists and watches these kinds across namespaces.
	for _, kind := range table.Watched() {
		res := table[kind].Group + "/" + plural(kind)
		for _, verb := range []string{"list", "watch"} {
			if !slices.Contains(granted[res], verb) {
				t.Errorf("the conductor watches %s, but the ClusterRole does not grant %s on it (has %v)", res, verb, granted[res])
			}
		}
	}
	for kind, k := range table {
		used[k.Group+"/"+plural(kind)] = true
	}
	for res := range granted {
		if !used[res] {
			t.Errorf("the ClusterRole grants %s, which is no kind Magnetite uses (internal/mgmt.BaseKinds and the drivers' kinds)", res)
		}
	}
}

// TestChartLints runs Helm's own linter (what helm lint runs) with the
// values an operator passes: anything it rates a warning or worse fails.
func TestChartLints(t *testing.T) {
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(fullValues), &vals); err != nil {
		t.Fatal(err)
	}
	l := lint.All(filepath.Join(moduleRoot(t), "deploy/helm/magnetite"), vals, releaseNamespace, false)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", m)
		} else {
			t.Logf("helm lint: %s", m)
		}
	}
}
