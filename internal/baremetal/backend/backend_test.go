package backend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/config"
)

func loadEnv(t *testing.T, env ...string) *config.Config {
	t.Helper()
	cfg, err := config.Load("", "", env)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestFromConfigBuildsTheConfiguredBackend(t *testing.T) {
	b, s, err := FromConfig(loadEnv(t), nil)
	if err != nil || b != nil || s.ReconcileInterval != 15*time.Second {
		t.Fatalf("default: backend %v, settings %+v, error %v", b, s, err)
	}
	b, _, err = FromConfig(loadEnv(t, "MAGNETITE_BAREMETAL_BACKEND=ironic", "MAGNETITE_BAREMETAL_IRONIC_ENDPOINT=http://127.0.0.1:6385"), nil)
	if err != nil || b == nil || b.Name() != "ironic" {
		t.Fatalf("ironic: backend %v, error %v", b, err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: m\n  cluster: {server: https://127.0.0.1:1}\n" +
		"users:\n- name: m\n  user: {token: t}\ncontexts:\n- name: m\n  context: {cluster: m, user: m}\ncurrent-context: m\n"
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _, err = FromConfig(loadEnv(t, "MAGNETITE_BAREMETAL_BACKEND=metal3", "MAGNETITE_MANAGEMENT_KUBECONFIG="+kubeconfig), nil)
	if err != nil || b == nil || b.Name() != "metal3" {
		t.Fatalf("metal3: backend %v, error %v", b, err)
	}
	if _, _, err := FromConfig(loadEnv(t, "MAGNETITE_BAREMETAL_BACKEND=metal3", "MAGNETITE_MANAGEMENT_KUBECONFIG="+kubeconfig,
		"MAGNETITE_BAREMETAL_METAL3_NAMESPACE=Metal3_Hosts"), nil); err == nil || !strings.Contains(err.Error(), "metal3_namespace") {
		t.Errorf("a bad metal3_namespace: %v", err)
	}
}

func TestFromConfigNamesTheBadOption(t *testing.T) {
	ironic := []string{"MAGNETITE_BAREMETAL_BACKEND=ironic", "MAGNETITE_BAREMETAL_IRONIC_ENDPOINT=http://127.0.0.1:6385"}
	cases := []struct {
		env  []string
		says string
	}{
		{[]string{"MAGNETITE_BAREMETAL_BACKEND=maas"}, "[baremetal] backend = \"maas\" must be none, ironic or metal3"},
		{[]string{"MAGNETITE_BAREMETAL_BACKEND=metal3", "MAGNETITE_MANAGEMENT_KUBECONFIG=/nonexistent/kubeconfig"}, "backend = metal3 needs the management cluster"},
		{[]string{"MAGNETITE_BAREMETAL_RECONCILE_INTERVAL=often"}, "reconcile_interval"},
		{[]string{"MAGNETITE_BAREMETAL_BACKEND=ironic"}, "ironic_endpoint is required"},
		{[]string{"MAGNETITE_BAREMETAL_BACKEND=ironic", "MAGNETITE_BAREMETAL_IRONIC_ENDPOINT=ironic:6385"}, "must be an http:// or https:// URL"},
		{append(ironic, "MAGNETITE_BAREMETAL_IRONIC_TIMEOUT=0s"), "ironic_timeout"},
		{append(ironic, "MAGNETITE_BAREMETAL_IRONIC_FAKE_HARDWARE=yes please"), "ironic_fake_hardware"},
		{append(ironic, "MAGNETITE_BAREMETAL_IRONIC_API_VERSION=latest"), "ironic_api_version"},
		{append(ironic, "MAGNETITE_BAREMETAL_IRONIC_AUTH_TYPE=keystone"), "must be noauth or http_basic"},
		{append(ironic, "MAGNETITE_BAREMETAL_IRONIC_AUTH_TYPE=http_basic"), "needs ironic_username and ironic_password"},
		{append(ironic, "MAGNETITE_BAREMETAL_DEFAULT_RESOURCE_CLASS=gold class"), "default_resource_class"},
	}
	for _, tc := range cases {
		_, _, err := FromConfig(loadEnv(t, tc.env...), nil)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: error %v, want one saying %q", tc.env, err, tc.says)
		}
	}
}
