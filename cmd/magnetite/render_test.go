package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/testing/testcharts"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

const renderCases = "../../internal/driver/capi/testdata"

// splitCase writes the template and cluster of a golden case to their own
// files, the way an operator keeps them, and returns their paths.
func splitCase(t *testing.T, name string, edit func(tmpl, cluster map[string]any)) (string, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(renderCases, "cases", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Template map[string]any `json:"template"`
		Cluster  map[string]any `json:"cluster"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(c.Template, c.Cluster)
	}
	dir := t.TempDir()
	write := func(file string, v any) string {
		y, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, file)
		if err := os.WriteFile(p, y, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("template.yaml", c.Template), write("cluster.yaml", c.Cluster)
}

func runRender(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = execMagnetite(context.Background(), &out, &errb, append([]string{"render"}, args...)...)
	return out.String(), errb.String(), err
}

func TestRenderPrintsWhatTheDriverRenders(t *testing.T) {
	tmpl, cluster := splitCase(t, "mixed", nil)
	out, _, err := runRender(t, "--template", tmpl, "--cluster", cluster, "--facts", filepath.Join(renderCases, "facts.yaml"),
		"--boot-volume-size", "20")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "# rendered by capi-openstack\n# API versions: the newest of each kind (no --kubeconfig or --api-versions)\n# secret mixed-1b4e28ba-cloud-config: ") {
		t.Errorf("header: %.200s", out)
	}
	sameAsGolden(t, out, filepath.Join(renderCases, "golden", "v1beta2", "mixed.yaml"))
}

// sameAsGolden checks that a render printed the objects of a golden file.
func sameAsGolden(t *testing.T, out, golden string) {
	t.Helper()
	got, err := testenv.DecodeObjects(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want, err := testenv.ReadObjects(golden)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("rendered %d objects, %s has %d", len(got), golden, len(want))
	}
	for i := range got {
		a, _ := yaml.Marshal(got[i].Object)
		b, _ := yaml.Marshal(want[i].Object)
		if !bytes.Equal(a, b) {
			t.Errorf("object %d (%s %s) differs from %s", i, got[i].GetKind(), got[i].GetName(), golden)
		}
	}
}

// TestRenderAtNamedAPIVersions: --api-versions names the versions of a
// management cluster without one, for a whole API group or for one kind;
// what it names is checked.
func TestRenderAtNamedAPIVersions(t *testing.T) {
	tmpl, cluster := splitCase(t, "mixed", nil)
	facts := filepath.Join(renderCases, "facts.yaml")
	golden := filepath.Join(renderCases, "golden", "v1beta1", "mixed.yaml")
	for _, flag := range []string{"infrastructure.cluster.x-k8s.io/v1beta1", "OpenStackClusterTemplate=infrastructure.cluster.x-k8s.io/v1beta1",
		"cluster.x-k8s.io/v1beta2, infrastructure.cluster.x-k8s.io/v1beta2, OpenStackClusterTemplate=infrastructure.cluster.x-k8s.io/v1beta1"} {
		out, _, err := runRender(t, "--template", tmpl, "--cluster", cluster, "--facts", facts, "--boot-volume-size", "20", "--api-versions", flag)
		if err != nil {
			t.Fatalf("--api-versions %s: %v", flag, err)
		}
		if !strings.Contains(out, "\n# API versions: --api-versions "+flag+"\n") {
			t.Errorf("--api-versions %s: header %.200s", flag, out)
		}
		sameAsGolden(t, out, golden)
	}
	for flag, says := range map[string]string{
		"infrastructure.cluster.x-k8s.io/v1alpha7":  "infrastructure.cluster.x-k8s.io/v1alpha7 is not supported: Magnetite writes this infrastructure's kinds at v1beta2 or v1beta1 (CAPO v0.12 to v0.14 serve v1beta1",
		"cluster.x-k8s.io/v1beta1":                  "cluster.x-k8s.io/v1beta1 is not supported: Magnetite writes Cluster API's own kinds at v1beta2 (Cluster API v1.11 or newer)",
		"example.com/v1":                            `API group "example.com", of which Magnetite writes no kind`,
		"OpenStackCluster=cluster.x-k8s.io/v1beta2": `OpenStackCluster belongs to API group "infrastructure.cluster.x-k8s.io"`,
		"v1beta1": `"v1beta1" is neither group/version nor Kind=group/version`,
	} {
		_, _, err := runRender(t, "--template", tmpl, "--cluster", cluster, "--facts", facts, "--api-versions", flag)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("--api-versions %s: err = %v, want %q", flag, err, says)
		}
	}
}

// TestRenderAtTheVersionsAManagementClusterServes renders the VM, the
// all-bare-metal and the mixed case with --kubeconfig against a real
// kube-apiserver serving Cluster API v1.14's CRDs and CAPO v0.14.7's, which
// serves its kinds at v1beta1 only, and dry-runs what it printed there as
// an operator previewing a cluster would: with the testbin's kubectl
// (kubectl apply --dry-run=server, strict validation) and object by object
// through server-side apply.
func TestRenderAtTheVersionsAManagementClusterServes(t *testing.T) {
	t.Parallel()
	env, dc, mapper := testenv.StartGolden(t, []string{testenv.CAPOv014})
	kubeconfig := testenv.WriteKubeconfig(t, filepath.Join(t.TempDir(), "kubeconfig"), env.Config, "", 0o600)
	bin, err := testenv.Testbin()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(bin, "k8s-"+testenv.KubernetesVersion, "kubectl")
	ctx := context.Background()
	for _, name := range []string{"vm-only", "bm-only", "mixed"} {
		t.Run(name, func(t *testing.T) {
			tmpl, cluster := splitCase(t, name, nil)
			out, _, err := runRender(t, "--template", tmpl, "--cluster", cluster, "--facts", filepath.Join(renderCases, "facts.yaml"),
				"--boot-volume-size", "20", "--kubeconfig", kubeconfig, "--preview")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "\n# API versions: served by the management cluster of "+kubeconfig+"\n") {
				t.Errorf("header: %.200s", out)
			}
			objs, err := testenv.DecodeObjects(strings.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			infra := 0
			for _, o := range objs {
				if strings.HasPrefix(o.GetKind(), "OpenStack") {
					infra++
					if o.GetAPIVersion() != "infrastructure.cluster.x-k8s.io/v1beta1" {
						t.Errorf("%s %s written at %s; CAPO v0.14.7 serves v1beta1 only", o.GetKind(), o.GetName(), o.GetAPIVersion())
					}
				}
				if err := testenv.DryRunApply(ctx, dc, mapper, o); err != nil {
					t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
			if infra == 0 {
				t.Error("no OpenStack object rendered")
			}

			// What the operator would type, on what render printed.
			cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "apply", "--dry-run=server", "--validate=strict", "-f", "-")
			cmd.Stdin = strings.NewReader(out)
			applied, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, applied)
			}
			if n := strings.Count(string(applied), " (server dry run)\n"); n != len(objs) {
				t.Errorf("kubectl accepted %d of the %d objects render printed:\n%s", n, len(objs), applied)
			}
			t.Logf("kubectl apply --dry-run=server accepted the %d objects render printed", len(objs))
		})
	}
}

func TestRenderExplainsWhyAClusterCannotBeBuilt(t *testing.T) {
	tmpl, cluster := splitCase(t, "bm-only", func(tmpl, _ map[string]any) {
		tmpl["master_flavor_id"] = "m1.large"
		tmpl["labels"].(map[string]any)["boot_volume_size"] = "-5"
	})
	out, _, err := runRender(t, "--template", tmpl, "--cluster", cluster, "--facts", filepath.Join(renderCases, "facts.yaml"))
	if err == nil {
		t.Fatalf("rendered: %.200s", out)
	}
	for _, want := range []string{"the cluster cannot be rendered:",
		"flavor m1.large is not a bare-metal flavor",
		`label boot_volume_size="-5" is invalid: expected a whole number of GiB >= 0`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if out != "" {
		t.Errorf("objects printed despite the errors: %.200s", out)
	}
}

func TestRenderPreviewAndWarnings(t *testing.T) {
	tmpl, cluster := splitCase(t, "inmemory-mixed", func(_, c map[string]any) {
		c["labels"] = map[string]any{"cost_center": "42"}
	})
	out, errOut, err := runRender(t, "--template", tmpl, "--cluster", cluster, "--preview")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "# rendered by capi-inmemory") {
		t.Errorf("the template's driver field was not used: %.80s", out)
	}
	if !strings.Contains(errOut, "warning: labels cost_center are not known to Magnetite") {
		t.Errorf("stderr = %q", errOut)
	}
	objs, err := testenv.DecodeObjects(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var previews []string
	for _, o := range objs {
		if o.GetKind() == "DevMachineTemplate" && strings.HasPrefix(o.GetName(), "dev-1b4e28ba-") {
			previews = append(previews, o.GetName())
		}
	}
	want := []string{"dev-1b4e28ba-control-plane-machine", "dev-1b4e28ba-md-default-worker-machine", "dev-1b4e28ba-md-metal-machine"}
	if strings.Join(previews, ",") != strings.Join(want, ",") {
		t.Errorf("preview machine templates = %v, want %v", previews, want)
	}
}

func TestRenderRefusesATemplateNoDriverBuilds(t *testing.T) {
	tmpl, cluster := splitCase(t, "vm-only", func(tmpl, _ map[string]any) {
		tmpl["image_id"] = "fedora-coreos-40"
		tmpl["cluster_distro"] = "fedora-coreos"
	})
	_, _, err := runRender(t, "--template", tmpl, "--cluster", cluster, "--facts", filepath.Join(renderCases, "facts.yaml"))
	if err == nil || !strings.Contains(err.Error(), "Cluster type (server_type=vm, os_distro=fedora-coreos, coe=kubernetes) not supported") {
		t.Errorf("err = %v", err)
	}
}

// TestRenderAddonsPrintsTheAddonObjects: with --addons, render also prints
// every object the cluster's addons would deliver, rendered from the
// pinned charts of the given source, and says which chart each came from.
func TestRenderAddonsPrintsTheAddonObjects(t *testing.T) {
	repo := testcharts.Serve(t)
	tmpl, cluster := splitCase(t, "vm-only", func(tmpl, _ map[string]any) {
		l := tmpl["labels"].(map[string]any)
		l["keystone_auth_enabled"] = "true"
		l["container_infra_prefix"] = "registry.example.net/k8s/"
	})
	args := []string{"--template", tmpl, "--cluster", cluster, "--facts", filepath.Join(renderCases, "facts.yaml"), "--addons", "--addons-source", repo.URL}
	if _, _, err := runRender(t, args...); err == nil || !strings.Contains(err.Error(), "--keystone-auth-url") {
		t.Fatalf("render --addons of a keystone_auth_enabled cluster without Keystone's endpoint: %v", err)
	}
	out, _, err := runRender(t, append(args, "--keystone-auth-url", "https://keystone.example.net:5000/v3")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# addon calico v3.31.7: chart tigera-operator v3.31.7 from " + repo.URL,
		"# addon k8s-keystone-auth v1.32.0: chart k8s-keystone-auth 1.5.1 from " + repo.URL, "- https://keystone.example.net:5000/v3\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("render --addons lacks %q", want)
		}
	}
	objs, err := testenv.DecodeObjects(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()+"/"+o.GetName()] = true
	}
	for _, want := range []string{"ClusterResourceSet/web-1b4e28ba-addons", "Installation/default", "DaemonSet/openstack-cloud-controller-manager",
		"Deployment/snapshot-controller", "DaemonSet/k8s-keystone-auth", "Deployment/metrics-server"} {
		if !kinds[want] {
			t.Errorf("render --addons printed no %s", want)
		}
	}
}
