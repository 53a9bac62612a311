// Package terraform drives Magnetite with real OpenTofu and the OpenStack
// provider (both built from their pinned modules by hack/build-testbin.sh
// --only iac) logged in to a real Keystone, the way platform teams declare
// clusters: templates, clusters and node groups applied, resized, replaced,
// imported and destroyed, and a failing cluster's reason shown by apply.
package terraform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/teststack"
)

// Keep in step with hack/build-testbin.sh.
const (
	tofuVersion     = "v1.12.6"
	providerVersion = "v3.4.0"
)

// binaries returns the cached tofu and the folder holding the provider, or
// skips when they have not been built.
func binaries(t *testing.T) (tofu, providerDir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs OpenTofu against Keystone, Magnetite and a local Cluster API for minutes; runs in the full suite")
	}
	testbin, err := testenv.Testbin()
	if err != nil {
		t.Fatal(err)
	}
	tofu = filepath.Join(testbin, "opentofu-"+tofuVersion, "tofu")
	providerDir = filepath.Join(testbin, "terraform-provider-openstack-"+providerVersion)
	for _, f := range []string{tofu, filepath.Join(providerDir, "terraform-provider-openstack")} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("%s is not built (bash hack/build-testbin.sh --only iac): %v", f, err)
		}
	}
	return tofu, providerDir
}

// workspace is one OpenTofu working directory.
type workspace struct {
	tofu, dir string
	env       []string
}

func newWorkspace(t *testing.T, tofu, providerDir string, st *teststack.Stack, config string) *workspace {
	t.Helper()
	home := t.TempDir()
	// No provider registry is reachable: the provider is taken from the
	// testbin folder, and OpenTofu then needs no `tofu init`.
	cli := filepath.Join(home, "tofu.tfrc")
	rc := fmt.Sprintf(`provider_installation {
  dev_overrides {
    "terraform-provider-openstack/openstack" = %q
  }
  direct {}
}
`, providerDir)
	if err := os.WriteFile(cli, []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append([]string{"HOME=" + home, "PATH=/usr/bin:/bin", "TF_CLI_CONFIG_FILE=" + cli,
		"TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1", "NO_COLOR=1"}, st.Env()...)
	if v := os.Getenv("TMPDIR"); v != "" {
		env = append(env, "TMPDIR="+v)
	}
	return &workspace{tofu: tofu, dir: dir, env: env}
}

// run runs tofu and returns its combined output and exit code.
func (w *workspace) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), w.tofu, args...)
	cmd.Dir, cmd.Env = w.dir, w.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("tofu %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Second))
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("tofu %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), code
}

func (w *workspace) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, code := w.run(t, args...)
	if code != 0 {
		t.Fatalf("tofu %s exited %d:\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// apply applies the configuration with the given variables.
func (w *workspace) apply(t *testing.T, vars ...string) string {
	t.Helper()
	args := []string{"apply", "-auto-approve", "-no-color"}
	for _, v := range vars {
		args = append(args, "-var", v)
	}
	return w.ok(t, args...)
}

// requireNoChanges fails the test unless a plan with the given variables
// finds nothing to change (exit code 0; 2 would be a diff).
func (w *workspace) requireNoChanges(t *testing.T, when string, vars ...string) {
	t.Helper()
	args := []string{"plan", "-detailed-exitcode", "-no-color"}
	for _, v := range vars {
		args = append(args, "-var", v)
	}
	if out, code := w.run(t, args...); code != 0 {
		t.Fatalf("plan %s exited %d (want 0, no changes):\n%s", when, code, out)
	}
}

// output reads one output as JSON into v.
func (w *workspace) output(t *testing.T, name string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(w.ok(t, "output", "-json", name)), v); err != nil {
		t.Fatalf("output %s: %v", name, err)
	}
}

// clusterConfig is a template, a cluster on it and, when extra_group is
// set, a second node group whose label value is node_role. The cluster and
// the node group declare labels and leave merge_labels at the provider's
// default (false): Magnetite replaces the parent's labels, as Magnum does,
// so what the provider reads back is what was declared, and a second plan
// finds nothing to change.
const clusterConfig = `
terraform {
  required_providers {
    openstack = { source = "terraform-provider-openstack/openstack" }
  }
}

provider "openstack" {}

variable "node_count" { default = 1 }
variable "extra_group" { default = false }
variable "node_role" { default = "batch" }

resource "openstack_containerinfra_clustertemplate_v1" "mem" {
  name                = "tf-mem"
  coe                 = "kubernetes"
  image               = "ubuntu-2204-kube-v1.31.2"
  external_network_id = "public"
  labels              = { kube_tag = "v1.31.2", node_startup_timeout = "20m" }
}

resource "openstack_containerinfra_cluster_v1" "demo" {
  name                = "tf-demo"
  cluster_template_id = openstack_containerinfra_clustertemplate_v1.mem.id
  master_count        = 1
  node_count          = var.node_count
  labels              = { kube_tag = "v1.31.2" }
}

resource "openstack_containerinfra_nodegroup_v1" "extra" {
  count      = var.extra_group ? 1 : 0
  name       = "extra"
  cluster_id = openstack_containerinfra_cluster_v1.demo.id
  node_count = 1
  labels     = { node_role = var.node_role }
}

output "cluster_id" { value = openstack_containerinfra_cluster_v1.demo.id }
output "template_id" { value = openstack_containerinfra_clustertemplate_v1.mem.id }
output "api_address" { value = openstack_containerinfra_cluster_v1.demo.api_address }
output "kubeconfig" {
  value     = openstack_containerinfra_cluster_v1.demo.kubeconfig
  sensitive = true
}
output "extra_group_id" { value = one(openstack_containerinfra_nodegroup_v1.extra[*].id) }
`

// failingConfig is a cluster that cannot come up: Cluster API's kubeadm
// bootstrap provider makes no bootstrap data for Kubernetes v1.0.0, so the
// control plane never initialises and Magnetite fails the cluster when its
// one-minute create_timeout runs out.
const failingConfig = `
terraform {
  required_providers {
    openstack = { source = "terraform-provider-openstack/openstack" }
  }
}

provider "openstack" {}

resource "openstack_containerinfra_clustertemplate_v1" "ancient" {
  name                = "tf-ancient"
  coe                 = "kubernetes"
  image               = "ubuntu-2204-kube-v1.31.2"
  external_network_id = "public"
  labels              = { kube_tag = "v1.0.0" }
}

resource "openstack_containerinfra_cluster_v1" "doomed" {
  name                = "tf-doomed"
  cluster_template_id = openstack_containerinfra_clustertemplate_v1.ancient.id
  master_count        = 1
  node_count          = 1
  create_timeout      = 1
}
`

// TestOpenTofuDrivesClustersThroughTheOpenStackProvider applies, changes,
// imports and destroys a template, a cluster and a node group with
// OpenTofu, and, alongside, applies a cluster that fails.
func TestOpenTofuDrivesClustersThroughTheOpenStackProvider(t *testing.T) {
	tofu, providerDir := binaries(t) // skips under -short
	st := teststack.Start(t)

	t.Run("clients", func(t *testing.T) {
		t.Run("lifecycle", func(t *testing.T) {
			t.Parallel()
			testLifecycle(t, newWorkspace(t, tofu, providerDir, st, clusterConfig), st)
		})
		t.Run("failing cluster", func(t *testing.T) {
			t.Parallel()
			testFailingCluster(t, newWorkspace(t, tofu, providerDir, st, failingConfig), st)
		})
	})
	if !t.Failed() {
		st.RequireNothingLeft(t)
	}
}

func testLifecycle(t *testing.T, w *workspace, st *teststack.Stack) {
	step := func(name string, f func(t *testing.T)) {
		t.Helper()
		if !t.Run(name, f) {
			// Whatever was made is destroyed so the stack can stop cleanly.
			w.run(t, "destroy", "-auto-approve", "-no-color")
			t.FailNow()
		}
	}
	var clusterID, templateID string
	cluster := func(t *testing.T) teststack.Cluster {
		t.Helper()
		var c teststack.Cluster
		if code := st.Get(t, "/clusters/"+clusterID, &c); code != 200 {
			t.Fatalf("GET cluster %s: HTTP %d", clusterID, code)
		}
		return c
	}

	step("apply waits for CREATE_COMPLETE", func(t *testing.T) {
		out := w.apply(t)
		if !strings.Contains(out, "Apply complete! Resources: 2 added, 0 changed, 0 destroyed.") {
			t.Fatalf("apply:\n%s", out)
		}
		w.output(t, "cluster_id", &clusterID)
		w.output(t, "template_id", &templateID)
		// The provider returns only once it has seen CREATE_COMPLETE.
		if c := cluster(t); c.Status != "CREATE_COMPLETE" || c.NodeCount != 1 {
			t.Fatalf("cluster after apply: %+v", c)
		}
		// The cluster's labels replaced the template's: node_startup_timeout
		// is not inherited, so the provider reads back what it declared.
		var labels struct {
			Labels map[string]string `json:"labels"`
		}
		st.Get(t, "/clusters/"+clusterID, &labels)
		if want := map[string]string{"kube_tag": "v1.31.2"}; !maps.Equal(labels.Labels, want) {
			t.Errorf("cluster labels %v, want the declared %v", labels.Labels, want)
		}
		w.requireNoChanges(t, "after the first apply")
	})

	step("the kubeconfig attributes reach the cluster's CA and API", func(t *testing.T) {
		var kc map[string]string
		w.output(t, "kubeconfig", &kc)
		var api string
		w.output(t, "api_address", &api)
		if api == "" || kc["host"] != api {
			t.Fatalf("kubeconfig host %q, api_address %q", kc["host"], api)
		}
		for _, k := range []string{"cluster_ca_certificate", "client_certificate", "client_key"} {
			if !strings.HasPrefix(kc[k], "-----BEGIN ") {
				t.Errorf("kubeconfig %s is not PEM: %.40q", k, kc[k])
			}
		}
		cfg, err := clientcmd.Load([]byte(kc["raw_config"]))
		if err != nil {
			t.Fatalf("raw_config is not a kubeconfig: %v", err)
		}
		rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		if rest.Host != api || string(rest.CAData) != kc["cluster_ca_certificate"] {
			t.Errorf("raw_config points at %s with another CA, want %s", rest.Host, api)
		}
	})

	step("node_count changes in place and a node group is added", func(t *testing.T) {
		out := w.apply(t, "node_count=2", "extra_group=true")
		if !strings.Contains(out, "Resources: 1 added, 1 changed, 0 destroyed.") {
			t.Fatalf("apply:\n%s", out)
		}
		// A cluster's node_count counts the workers of every group, as
		// Magnum's does: two in the default group, one in extra. The
		// provider reads the default group's.
		if c := cluster(t); c.UUID != clusterID || c.NodeCount != 3 || c.Status != "UPDATE_COMPLETE" {
			t.Errorf("cluster after resize: %+v", c)
		}
		var group string
		w.output(t, "extra_group_id", &group)
		var extra struct {
			Labels map[string]string `json:"labels"`
		}
		st.Get(t, "/clusters/"+strings.Replace(group, "/", "/nodegroups/", 1), &extra)
		if want := map[string]string{"node_role": "batch"}; !maps.Equal(extra.Labels, want) {
			t.Errorf("node group labels %v, want the declared %v", extra.Labels, want)
		}
		w.requireNoChanges(t, "after the node group was added", "node_count=2", "extra_group=true")
	})

	step("a node group label change replaces the group", func(t *testing.T) {
		var before, after string
		w.output(t, "extra_group_id", &before)
		out := w.apply(t, "node_count=2", "extra_group=true", "node_role=gpu")
		if !strings.Contains(out, "must be replaced") || !strings.Contains(out, "Resources: 1 added, 0 changed, 1 destroyed.") {
			t.Fatalf("apply:\n%s", out)
		}
		w.output(t, "extra_group_id", &after)
		if after == before || after == "" {
			t.Errorf("node group id %q -> %q, want a new group", before, after)
		}
		// The provider's node group id is "<cluster>/<node group>".
		cluster, group, _ := strings.Cut(before, "/")
		if code := st.Get(t, "/clusters/"+cluster+"/nodegroups/"+group, nil); code != 404 {
			t.Errorf("replaced node group %s: HTTP %d, want 404", before, code)
		}
	})

	step("an existing cluster, template and node group import without drift", func(t *testing.T) {
		vars := []string{"node_count=2", "extra_group=true", "node_role=gpu"}
		var groupID string
		w.output(t, "extra_group_id", &groupID)
		// The provider's import never reads merge_labels back (on Magnum
		// too): an imported group plans no replacement only because the
		// declared value is the default, false.
		w.ok(t, "state", "rm", "openstack_containerinfra_cluster_v1.demo", "openstack_containerinfra_clustertemplate_v1.mem",
			"openstack_containerinfra_nodegroup_v1.extra[0]")
		varArgs := func(args ...string) []string {
			out := []string{"import"}
			for _, v := range vars {
				out = append(out, "-var", v)
			}
			return append(out, args...)
		}
		w.ok(t, varArgs("openstack_containerinfra_clustertemplate_v1.mem", templateID)...)
		w.ok(t, varArgs("openstack_containerinfra_cluster_v1.demo", clusterID)...)
		w.ok(t, varArgs("openstack_containerinfra_nodegroup_v1.extra[0]", groupID)...)
		w.requireNoChanges(t, "after import", vars...)
	})

	step("the node group is removed", func(t *testing.T) {
		out := w.apply(t, "node_count=2")
		if !strings.Contains(out, "Resources: 0 added, 0 changed, 1 destroyed.") {
			t.Fatalf("apply:\n%s", out)
		}
		var groups struct {
			NodeGroups []struct{ Name string } `json:"nodegroups"`
		}
		st.Get(t, "/clusters/"+clusterID+"/nodegroups", &groups)
		for _, g := range groups.NodeGroups {
			if g.Name == "extra" {
				t.Errorf("node group extra is still listed: %+v", groups)
			}
		}
	})

	step("destroy leaves nothing", func(t *testing.T) {
		out := w.ok(t, "destroy", "-auto-approve", "-no-color", "-var", "node_count=2")
		if !strings.Contains(out, "Destroy complete! Resources: 2 destroyed.") {
			t.Fatalf("destroy:\n%s", out)
		}
		if code := st.Get(t, "/clusters/"+clusterID, nil); code != 404 {
			t.Errorf("destroyed cluster: HTTP %d, want 404", code)
		}
		if code := st.Get(t, "/clustertemplates/"+templateID, nil); code != 404 {
			t.Errorf("destroyed template: HTTP %d, want 404", code)
		}
	})
}

func testFailingCluster(t *testing.T, w *workspace, st *teststack.Stack) {
	out, code := w.run(t, "apply", "-auto-approve", "-no-color")
	if code == 0 {
		t.Fatalf("apply of a cluster that cannot come up succeeded:\n%s", out)
	}
	// The list's summary has no status_reason (as Magnum's); the
	// cluster's own document has.
	var failed teststack.Cluster
	for _, c := range st.Clusters(t) {
		if c.Name == "tf-doomed" {
			st.Get(t, "/clusters/"+c.UUID, &failed)
		}
	}
	if failed.Status != "CREATE_FAILED" || failed.StatusReason == "" {
		t.Fatalf("want tf-doomed CREATE_FAILED with a reason, got %+v; apply said:\n%s", failed, out)
	}
	// OpenTofu wraps long lines of diagnostics; the reason is compared with
	// white space folded.
	fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if !strings.Contains(fold(out), fold("is in an error state: "+failed.StatusReason)) {
		t.Errorf("apply output does not carry status_reason %q:\n%s", failed.StatusReason, out)
	}
	// The failed cluster is tainted in the state; destroy removes it.
	out = w.ok(t, "destroy", "-auto-approve", "-no-color")
	if !strings.Contains(out, "Destroy complete! Resources: 2 destroyed.") {
		t.Errorf("destroy:\n%s", out)
	}
}
