package mgmt

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/kinds"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// testKinds is the base table with two infrastructures' cluster kinds, as
// the drivers would declare them.
func testKinds(t *testing.T) kinds.Table {
	t.Helper()
	table, err := kinds.NewTable(BaseKinds, []kinds.Kind{
		{Kind: "DevCluster", Group: kinds.GroupInfrastructure}, {Kind: "OpenStackCluster", Group: kinds.GroupInfrastructure},
	})
	if err != nil {
		t.Fatal(err)
	}
	return table
}

func TestParseAPIResources(t *testing.T) {
	got, err := ParseAPIResources(" Cluster=cluster.x-k8s.io/v1beta1, KubeadmControlPlane=controlplane.cluster.x-k8s.io/v1beta2 ,Secret=v1, OpenStackCluster=infrastructure.cluster.x-k8s.io/v1beta1", testKinds(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]schema.GroupVersion{
		"Cluster":             {Group: kinds.GroupCluster, Version: "v1beta1"},
		"KubeadmControlPlane": {Group: kinds.GroupControlPlane, Version: "v1beta2"},
		"Secret":              {Version: "v1"},
		"OpenStackCluster":    {Group: kinds.GroupInfrastructure, Version: "v1beta1"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for _, bad := range []struct{ in, mentions string }{
		{"Cluster", "Kind=group/version"},
		{"Cluster=", "Kind=group/version"},
		{"Widget=example.com/v1", "does not use"},
		{"Cluster=controlplane.cluster.x-k8s.io/v1beta1", `API group "cluster.x-k8s.io"`},
		{"Cluster=cluster.x-k8s.io/", "group/version"},
		{"Cluster=cluster.x-k8s.io/v1beta1,Cluster=cluster.x-k8s.io/v1beta2", "twice"},
	} {
		if _, err := ParseAPIResources(bad.in, testKinds(t)); err == nil || !strings.Contains(err.Error(), bad.mentions) {
			t.Errorf("ParseAPIResources(%q) = %v, want an error mentioning %q", bad.in, err, bad.mentions)
		}
	}
	// An infrastructure kind is known only when a driver declared it.
	if _, err := ParseAPIResources("OpenStackCluster=infrastructure.cluster.x-k8s.io/v1beta1", kinds.Table{}); err == nil || !strings.Contains(err.Error(), "does not use") {
		t.Errorf("an undeclared infrastructure kind was accepted: %v", err)
	}
}

func group(name string, preferred string, versions ...string) *metav1.APIGroup {
	g := &metav1.APIGroup{Name: name, PreferredVersion: metav1.GroupVersionForDiscovery{Version: preferred}}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v})
	}
	return g
}

func served(gv string, kinds ...string) *metav1.APIResourceList {
	l := &metav1.APIResourceList{GroupVersion: gv}
	for _, k := range kinds {
		plural := strings.ToLower(k) + "s"
		l.APIResources = append(l.APIResources,
			metav1.APIResource{Name: plural, Kind: k, Namespaced: true},
			metav1.APIResource{Name: plural + "/status", Kind: k, Namespaced: true})
	}
	return l
}

func TestResolveKindsPerKindNotPerGroup(t *testing.T) {
	groups := []*metav1.APIGroup{
		group(kinds.GroupCluster, "v1beta2", "v1beta2", "v1beta1"),
		// CAPD serves v1beta2, so the shared group prefers it, but the
		// OpenStack kinds are served at v1beta1 only.
		group(kinds.GroupInfrastructure, "v1beta2", "v1beta2", "v1beta1"),
	}
	lists := []*metav1.APIResourceList{
		served(kinds.GroupCluster+"/v1beta2", "Cluster", "Machine"),
		served(kinds.GroupCluster+"/v1beta1", "Cluster", "Machine"),
		served(kinds.GroupInfrastructure+"/v1beta2", "DevCluster"),
		served(kinds.GroupInfrastructure+"/v1beta1", "DevCluster", "OpenStackCluster"),
	}
	got, findings := resolveKinds(groups, lists, testKinds(t), map[string]schema.GroupVersion{
		"Machine": {Group: kinds.GroupCluster, Version: "v1beta1"},
	})
	if len(findings) != 0 {
		t.Errorf("unexpected findings %v", findings)
	}
	for kind, want := range map[string]string{
		"Cluster":          "cluster.x-k8s.io/v1beta2",
		"Machine":          "cluster.x-k8s.io/v1beta1",
		"DevCluster":       "infrastructure.cluster.x-k8s.io/v1beta2",
		"OpenStackCluster": "infrastructure.cluster.x-k8s.io/v1beta1",
	} {
		if got[kind].APIVersion() != want {
			t.Errorf("%s resolved to %q, want %q", kind, got[kind].APIVersion(), want)
		}
	}
	if got["Machine"].Source != "override" || got["Cluster"].Source != "discovery" || got["Cluster"].Resource != "clusters" {
		t.Errorf("resolved %+v / %+v", got["Machine"], got["Cluster"])
	}
	if _, ok := got["KubeadmControlPlane"]; ok {
		t.Error("a kind no version serves was resolved")
	}
}

// TestResolveKindsPrefersTheVersionsMagnetiteWrites: a kind declaring the
// versions Magnetite writes it at resolves at the first of them served,
// whatever the group prefers (a newer version Magnetite does not know, or
// an older one listed first); at none of them, at the group's order, for
// doctor to refuse.
func TestResolveKindsPrefersTheVersionsMagnetiteWrites(t *testing.T) {
	written := []string{"v1beta2", "v1beta1"}
	table, err := kinds.NewTable([]kinds.Kind{
		{Kind: "OpenStackCluster", Group: kinds.GroupInfrastructure, Versions: written},
		{Kind: "Metal3Cluster", Group: kinds.GroupInfrastructure, Versions: written},
		{Kind: "DevCluster", Group: kinds.GroupInfrastructure, Versions: written},
	})
	if err != nil {
		t.Fatal(err)
	}
	groups := []*metav1.APIGroup{group(kinds.GroupInfrastructure, "v1beta3", "v1beta3", "v1beta2", "v1beta1", "v1alpha7")}
	lists := []*metav1.APIResourceList{
		served(kinds.GroupInfrastructure+"/v1beta3", "DevCluster"),
		served(kinds.GroupInfrastructure+"/v1beta2", "DevCluster", "Metal3Cluster"),
		served(kinds.GroupInfrastructure+"/v1beta1", "DevCluster", "Metal3Cluster"),
		served(kinds.GroupInfrastructure+"/v1alpha7", "OpenStackCluster"),
	}
	got, _ := resolveKinds(groups, lists, table, nil)
	for kind, want := range map[string]string{
		"DevCluster":       "infrastructure.cluster.x-k8s.io/v1beta2",
		"Metal3Cluster":    "infrastructure.cluster.x-k8s.io/v1beta2",
		"OpenStackCluster": "infrastructure.cluster.x-k8s.io/v1alpha7",
	} {
		if got[kind].APIVersion() != want {
			t.Errorf("%s resolved to %q, want %q", kind, got[kind].APIVersion(), want)
		}
	}
}

func TestOverrideOfUnservedVersionIsAFinding(t *testing.T) {
	groups := []*metav1.APIGroup{group(kinds.GroupCluster, "v1beta2", "v1beta2")}
	lists := []*metav1.APIResourceList{served(kinds.GroupCluster+"/v1beta2", "Cluster")}
	got, findings := resolveKinds(groups, lists, testKinds(t), map[string]schema.GroupVersion{"Cluster": {Group: kinds.GroupCluster, Version: "v1beta1"}})
	if got["Cluster"].APIVersion() != "cluster.x-k8s.io/v1beta1" {
		t.Errorf("override lost: %v", got["Cluster"])
	}
	if len(findings) != 1 || !strings.Contains(findings[0].Message, "does not serve (it serves cluster.x-k8s.io/v1beta2)") {
		t.Errorf("findings = %v", findings)
	}
}

func TestNamespaceNamesAreDNSLabelsAndDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{
		"0f6fd1b2a0f34fd6b1e4a5a4a1b0c9d8", "default", "Default", "DEFAULT", "my_project", "my-project",
		"a.b", "-", "", strings.Repeat("x", 80), strings.Repeat("x", 81), "ünïcode",
	} {
		name := namespaceName(DefaultNamespacePrefix, id)
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			t.Errorf("namespace for %q is %q: %v", id, name, errs)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("projects %q and %q share namespace %q", id, other, name)
		}
		seen[name] = id
	}
	if got := namespaceName("magnetite-", "0f6fd1b2a0f34fd6b1e4a5a4a1b0c9d8"); got != "magnetite-0f6fd1b2a0f34fd6b1e4a5a4a1b0c9d8" {
		t.Errorf("keystone project id mangled: %q", got)
	}
}

func TestLabelValuesAreValid(t *testing.T) {
	for _, id := range []string{"default", "a b", strings.Repeat("p", 70), "__", "Project:1"} {
		v := labelValue(id)
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label value for %q is %q: %v", id, v, errs)
		}
	}
	if labelValue("default") != "default" {
		t.Error("valid label value changed")
	}
}

func TestKubeconfigReadableByOthersIsWarnedAbout(t *testing.T) {
	for _, tc := range []struct {
		mode os.FileMode
		warn bool
	}{{0o644, true}, {0o640, true}, {0o604, true}, {0o600, false}, {0o400, false}} {
		var logs bytes.Buffer
		path := testenv.WriteKubeconfig(t, "", &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "secret-token"}, "", tc.mode)
		c, err := New(Options{Kubeconfig: path, Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatalf("mode %04o: %v", tc.mode, err)
		}
		findings := c.Findings()
		warned := len(findings) == 1 && findings[0].Check == "kubeconfig-permissions" &&
			strings.Contains(findings[0].Message, "chmod 0600 "+path)
		logged := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), path)
		if warned != tc.warn || logged != tc.warn {
			t.Errorf("mode %04o: findings %v, log %q; want warning=%v", tc.mode, findings, logs.String(), tc.warn)
		}
		if strings.Contains(logs.String(), "secret-token") {
			t.Errorf("mode %04o: the kubeconfig's token was logged", tc.mode)
		}
	}
}

func TestMissingKubeconfigIsAnError(t *testing.T) {
	_, err := New(Options{Kubeconfig: filepath.Join(t.TempDir(), "nope")})
	if err == nil || !strings.Contains(err.Error(), "[management] kubeconfig") {
		t.Errorf("err = %v", err)
	}
}
