package labels

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEverySchemaLabelIsDocumentedAndHasAForm(t *testing.T) {
	for _, l := range Schema() {
		if l.Description == "" || strings.Contains(l.Description, "\n") {
			t.Errorf("%s: description must be one line", l.Name)
		}
		if l.Form == "" && l.Type != TypeString {
			t.Errorf("%s: no expected form for errors", l.Name)
		}
		if l.Default != "" {
			if err := l.check(l.Default); err != nil {
				t.Errorf("%s: default %q does not pass its own validation: %v", l.Name, l.Default, err)
			}
		}
	}
}

func TestInvalidLabelNamesTheLabelAndTheExpectedForm(t *testing.T) {
	cases := []struct {
		label, value, want string
	}{
		{"boot_volume_size", "ten", "a whole number of GiB >= 0"},
		{"boot_volume_size", "-1", "a whole number of GiB >= 0"},
		{"auto_healing_enabled", "maybe", "true or false"},
		{"kube_tag", "latest", "a version such as v1.2.3"},
		{"calico_ipv4pool", "10.100.0.0", "a CIDR such as 10.100.0.0/16"},
		{"server_group_policies", "spread", "one of affinity, anti-affinity, soft-affinity, soft-anti-affinity"},
		{"node_startup_timeout", "soon", "a duration such as 30m, or seconds"},
		{"node_startup_timeout", "0", "a duration such as 30m, or seconds"},
		{"api_master_lb_allowed_cidrs", "10.0.0.0/8,everyone", `"everyone" is not valid`},
		{"api_server_floating_ip", "203.0.113", "an IP address"},
		{"managed_security_groups", "yes", "one of auto, true, false"},
		{"server_type", "metal", "one of vm, bm"},
		{"max_node_count", "0", "a whole number >= 1"},
		{"container_infra_prefix", "https://registry/", "a registry path"},
		{"manila_csi_share_network_id", "net-1", "a share network UUID"},
		{"extra_files", "- path: /etc/x\n  content: aGVsbG8gd29ybGQgZnJvbSBhIHNjcmlwdA==", "encoding: base64"},
	}
	for _, c := range cases {
		t.Run(c.label+"="+c.value, func(t *testing.T) {
			_, err := Validate(map[string]string{c.label: c.value, "kube_tag": "v1.33.1"})
			if c.label == "kube_tag" {
				_, err = Validate(map[string]string{c.label: c.value})
			}
			if err == nil {
				t.Fatalf("accepted")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			if !strings.Contains(err.Error(), "label "+c.label+"=") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q should name %s and say %q", err, c.label, c.want)
			}
		})
	}
}

func TestValidLabelsPass(t *testing.T) {
	m := map[string]string{
		"kube_tag": "v1.33.1", "boot_volume_size": "0", "auto_healing_enabled": "True",
		"auto_scaling_enabled": "false", "min_node_count": "1", "max_node_count": "5",
		"calico_ipv4pool": "10.100.0.0/16", "service_cluster_ip_range": "10.254.0.0/16",
		"api_master_lb_allowed_cidrs": "192.0.2.0/24, 198.51.100.7/32", "node_startup_timeout": "45m",
		"node_unhealthy_timeout": "600", "container_infra_prefix": "registry.example.com:5000/k8s/",
		"manila_csi_enabled": "true", "manila_csi_share_network_id": "0f4c5b2a-7a57-4f6b-9f3c-2d7f0e1d2c3b",
		"api_server_cert_sans": "k8s.example.com,203.0.113.10", "managed_security_groups": "false",
		"boot_volume_size_extra": "", // unknown, empty
	}
	rep, err := Validate(m)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Unknown, []string{"boot_volume_size_extra"}) {
		t.Errorf("unknown = %v", rep.Unknown)
	}
}

func TestUnknownLabelsAreKeptAndReported(t *testing.T) {
	in := map[string]string{"kube_tag": "v1.33.1", "my_team": "storage", "cost_center": "42"}
	rep, err := Validate(in)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Unknown, []string{"cost_center", "my_team"}) {
		t.Errorf("unknown = %v", rep.Unknown)
	}
	if len(in) != 3 || in["my_team"] != "storage" {
		t.Errorf("validation changed the input: %v", in)
	}
	merged := Merge(map[string]string{"cost_center": "1"}, in)
	if merged["my_team"] != "storage" || merged["cost_center"] != "42" {
		t.Errorf("merge dropped or misordered unknown labels: %v", merged)
	}
}

func TestCrossLabelChecks(t *testing.T) {
	cases := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"max below min", map[string]string{"min_node_count": "3", "max_node_count": "2"}, "max_node_count"},
		{"service range overlaps pods", map[string]string{"service_cluster_ip_range": "10.0.0.0/8"}, "does not overlap calico_ipv4pool"},
		{"pods overlap services", map[string]string{"cilium_ipv4pool": "10.254.128.0/17"}, "does not overlap cilium_ipv4pool"},
		{"manila without share network", map[string]string{"manila_csi_enabled": "true"}, "manila_csi_share_network_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Validate(c.labels)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestClusterLabelsMergeOverTemplateLabels(t *testing.T) {
	tmpl := map[string]string{"kube_tag": "v1.32.4", "auto_healing_enabled": "true", "calico_tag": "v3.32.1"}
	cluster := map[string]string{"kube_tag": "v1.33.1", "auto_scaling_enabled": "true"}
	got := Merge(tmpl, cluster)
	want := map[string]string{"kube_tag": "v1.33.1", "auto_healing_enabled": "true", "calico_tag": "v3.32.1", "auto_scaling_enabled": "true"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merge = %v, want %v", got, want)
	}
	if tmpl["kube_tag"] != "v1.32.4" || len(cluster) != 2 {
		t.Error("merge changed its inputs")
	}
}

func TestClusterMayNotOverrideTemplateScopeLabel(t *testing.T) {
	tmpl := map[string]string{"calico_tag": "v3.32.1"}
	err := CheckOverrides(tmpl, map[string]string{"calico_tag": "v3.99.0", "kube_tag": "v1.33.1"}, ScopeCluster)
	if err == nil || !strings.Contains(err.Error(), "calico_tag can only be set on the template") {
		t.Fatalf("err = %v", err)
	}
	if err := CheckOverrides(tmpl, map[string]string{"calico_tag": "v3.32.1", "kube_tag": "v1.33.1"}, ScopeCluster); err != nil {
		t.Errorf("same value refused: %v", err)
	}
	// A node group may change nodegroup-scope labels, not cluster-scope ones.
	if err := CheckOverrides(map[string]string{}, map[string]string{"boot_volume_size": "50"}, ScopeNodeGroup); err != nil {
		t.Errorf("nodegroup label refused: %v", err)
	}
	err = CheckOverrides(map[string]string{"auto_healing_enabled": "true"}, map[string]string{"auto_healing_enabled": "false"}, ScopeNodeGroup)
	if err == nil || !strings.Contains(err.Error(), "can only be set on the cluster") {
		t.Errorf("err = %v", err)
	}
}

func TestEffectiveTakesBroaderScopeLabelsFromParent(t *testing.T) {
	parent := map[string]string{"calico_tag": "v3.32.1", "kube_tag": "v1.32.4"}
	got := Effective(parent, map[string]string{"calico_tag": "v9.9.9", "kube_tag": "v1.33.1", "x": "y"}, ScopeCluster)
	if got["calico_tag"] != "v3.32.1" || got["kube_tag"] != "v1.33.1" || got["x"] != "y" {
		t.Errorf("effective = %v", got)
	}
	got = Effective(map[string]string{}, map[string]string{"calico_tag": "v9.9.9"}, ScopeCluster)
	if _, ok := got["calico_tag"]; ok {
		t.Errorf("a template-scope label set only on the cluster survived: %v", got)
	}
}

func TestTypedAccessorsReturnValuesAndDefaults(t *testing.T) {
	v := Values{"boot_volume_size": "40", "auto_healing_enabled": "False", "node_startup_timeout": "45m",
		"api_server_cert_sans": "a.example.com, ,b.example.com", "config_drive": ""}
	if n, set := v.LookupInt(BootVolumeSize); n != 40 || !set {
		t.Errorf("boot_volume_size = %d, %v", n, set)
	}
	if v.Bool(AutoHealingEnabled) {
		t.Error("auto_healing_enabled should be false")
	}
	if !v.Bool(MasterLBFloatingIPEnabled) {
		t.Error("master_lb_floating_ip_enabled should default to true")
	}
	if _, set := v.LookupBool(ConfigDrive); set {
		t.Error("an empty label counts as unset")
	}
	if d, _ := v.LookupDuration(NodeStartupTimeout); d != 45*time.Minute {
		t.Errorf("node_startup_timeout = %v", d)
	}
	if got := v.List(APIServerCertSANs); !reflect.DeepEqual(got, []string{"a.example.com", "b.example.com"}) {
		t.Errorf("cert sans = %v", got)
	}
	if v.String(DNSClusterDomain) != "cluster.local" || v.String(CalicoTag) != "" || !v.Bool(MetricsServerEnabled) {
		t.Error("defaults not returned")
	}
	defer func() {
		if recover() == nil {
			t.Error("reading a label outside the schema should panic")
		}
	}()
	v.String("no_such_label")
}

func TestParseDurationAcceptsSecondsAndGoDurations(t *testing.T) {
	for in, want := range map[string]time.Duration{"90": 90 * time.Second, "30m": 30 * time.Minute, "1h30m": 90 * time.Minute} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("%s = %v, %v", in, got, err)
		}
	}
	if _, err := ParseDuration("99999999999999"); err == nil {
		t.Error("absurd seconds accepted")
	}
}
