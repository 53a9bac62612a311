package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// cloudFacts writes the golden cases' facts, changed by edit, to a file.
func cloudFacts(t *testing.T, edit func(f map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(renderCases, "facts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	edit(f)
	y, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "facts.yaml")
	if err := os.WriteFile(p, y, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// editFlavor sets a field of the named flavor.
func editFlavor(f map[string]any, name, field string, v any) {
	for _, x := range f["flavors"].([]any) {
		if fl := x.(map[string]any); fl["name"] == name {
			fl[field] = v
		}
	}
}

// editNetwork sets fields of the named network.
func editNetwork(f map[string]any, name string, fields map[string]any) {
	for _, x := range f["networks"].([]any) {
		if n := x.(map[string]any); n["name"] == name {
			for k, v := range fields {
				n[k] = v
			}
		}
	}
}

const publicNetID = "9c8b7a65-4321-4fed-8cba-0987654321a0"

// TestRenderRefusesWhatTheCloudWouldRefuse: each thing the API refuses at
// create because Nova or Neutron would (a zone Nova does not have, a
// bare-metal control plane spread over every zone, image boot on a zero-disk
// flavor, hard anti-affinity over more Ironic machines than nova-compute
// hosts, a floating IP without a router to its network, a load balancer,
// floating IP, root volume or Cinder CSI driver the cloud does not offer,
// an API that would get neither a load balancer nor a floating IP, a load
// balancer without a floating IP that CAPO's v1beta2 cannot record),
// render says the same, and the fix the message names renders.
func TestRenderRefusesWhatTheCloudWouldRefuse(t *testing.T) {
	type variant struct {
		edit  func(tmpl, cluster map[string]any)
		facts func(f map[string]any)
		// args are render's further flags.
		args []string
	}
	labels := func(m map[string]any) map[string]any {
		if m["labels"] == nil {
			m["labels"] = map[string]any{}
		}
		return m["labels"].(map[string]any)
	}
	twoZones := func(f map[string]any) { f["availability_zones"] = []any{"az1", "az2"} }
	// What a management cluster running CAPO v0.14 serves.
	capoV014 := []string{"--api-versions", "infrastructure.cluster.x-k8s.io/v1beta1"}
	withoutL3 := func(f map[string]any) {
		f["services"] = map[string]any{"floating_ips": false, "load_balancers": true, "block_storage": true}
	}
	withoutCinder := func(f map[string]any) {
		f["services"] = map[string]any{"floating_ips": true, "load_balancers": true, "block_storage": false}
	}
	cases := []struct {
		name, base string
		refused    variant
		want       []string
		fixed      variant
		// rendered is in the objects once fixed, absent is not.
		rendered, absent string
	}{
		{name: "an availability_zone Nova does not have", base: "mixed",
			refused: variant{edit: func(_, c map[string]any) {
				labels(c)["availability_zone"] = "az9"
			}, facts: twoZones},
			want: []string{"availability_zone az9 is not one of Nova's availability zones (az1, az2)"},
			fixed: variant{edit: func(_, c map[string]any) {
				labels(c)["availability_zone"] = "az2"
			}, facts: twoZones},
			rendered: "failureDomain: az2"},
		{name: "control_plane_availability_zones naming a zone Nova does not have", base: "mixed",
			refused:  variant{edit: func(tmpl, _ map[string]any) { labels(tmpl)["control_plane_availability_zones"] = "az1,az3" }, facts: twoZones},
			want:     []string{"control_plane_availability_zones names az3, which is not one of Nova's availability zones (az1, az2); name only those"},
			fixed:    variant{edit: func(tmpl, _ map[string]any) { labels(tmpl)["control_plane_availability_zones"] = "az1,az2" }, facts: twoZones},
			rendered: "controlPlaneAvailabilityZones:"},
		{name: "a bare-metal control plane left to every zone", base: "bm-only",
			refused:  variant{facts: twoZones},
			want:     []string{"set control_plane_availability_zones to the zones that hold them", "flavor bm.standard"},
			fixed:    variant{edit: func(tmpl, _ map[string]any) { labels(tmpl)["control_plane_availability_zones"] = "az2" }, facts: twoZones},
			rendered: "controlPlaneAvailabilityZones:"},
		{name: "image boot on a zero-disk Ironic flavor", base: "bm-boot-volume",
			refused: variant{edit: func(_, c map[string]any) { c["nodegroups"].([]any)[0].(map[string]any)["labels"] = map[string]any{} },
				facts: func(f map[string]any) { editFlavor(f, "bm.standard", "disk", 0) }},
			want: []string{"flavor bm.standard has a root disk of 0 GiB", "Only volume-backed servers are allowed for flavors with zero disk.",
				"give the node group a boot_volume_size label"},
			fixed: variant{edit: func(tmpl, c map[string]any) {
				c["nodegroups"] = append(c["nodegroups"].([]any), map[string]any{"name": "default-master", "role": "master",
					"node_count": 1, "labels": map[string]any{"boot_volume_size": "40"}})
			}, facts: func(f map[string]any) { editFlavor(f, "bm.standard", "disk", 0) }},
			rendered: "sizeGiB: 50"},
		{name: "hard anti-affinity over more Ironic machines than nova-compute hosts", base: "bm-only",
			refused:  variant{edit: func(tmpl, _ map[string]any) { labels(tmpl)["server_group_policies"] = "anti-affinity" }},
			want:     []string{"server_group_policies=anti-affinity needs a nova-compute host per machine", "behind 1 nova-compute host(s)", "up to 3 machines", "soft-anti-affinity"},
			fixed:    variant{edit: func(tmpl, _ map[string]any) { labels(tmpl)["server_group_policies"] = "soft-anti-affinity" }},
			rendered: "soft-anti-affinity"},
		{name: "a floating IP on a network without a router to the external network", base: "mixed",
			refused: variant{facts: func(f map[string]any) {
				editNetwork(f, "tenant-net", map[string]any{"routes_known": true})
			}},
			want: []string{"ExternalGatewayForFloatingIPNotFound: External network " + publicNetID + " is not reachable",
				"add a router with its gateway on public and an interface on the subnet of tenant-net"},
			fixed: variant{facts: func(f map[string]any) {
				editNetwork(f, "tenant-net", map[string]any{"routes_known": true, "external_routes": []any{publicNetID}})
			}},
			rendered: "enableFloatingIP: true"},
		{name: "a floating IP asked for on a cloud without routers", base: "mixed",
			refused: variant{edit: func(tmpl, _ map[string]any) { labels(tmpl)["master_lb_floating_ip_enabled"] = "true" },
				facts: func(f map[string]any) {
					f["services"] = map[string]any{"floating_ips": false, "load_balancers": true, "block_storage": true}
				}},
			want:     []string{"Neutron has no L3 extension (no routers or floating IPs), so the API cannot get a floating IP"},
			fixed:    variant{facts: withoutL3, args: capoV014},
			rendered: "disableExternalNetwork: true"},
		{name: "an API load balancer without a floating IP where CAPO writes v1beta2", base: "mixed",
			refused: variant{facts: withoutL3},
			want: []string{"CAPO at infrastructure.cluster.x-k8s.io/v1beta2 (v0.15 and newer) cannot record a load balancer without one",
				"or run CAPO v0.14, which serves v1beta1"},
			fixed:    variant{facts: withoutL3, args: capoV014},
			rendered: "disableAPIServerFloatingIP: true"},
		{name: "a load balancer on a cloud without Octavia", base: "mixed",
			refused: variant{facts: func(f map[string]any) {
				f["services"] = map[string]any{"floating_ips": true, "load_balancers": false, "block_storage": true}
			}},
			want: []string{"master_lb_enabled is set but the cloud has no Octavia"},
			fixed: variant{edit: func(tmpl, _ map[string]any) { tmpl["master_lb_enabled"] = false },
				facts: func(f map[string]any) {
					f["services"] = map[string]any{"floating_ips": true, "load_balancers": false, "block_storage": true}
				}},
			rendered: "enabled: false"},
		{name: "an API without a load balancer or a floating IP", base: "os-debian",
			refused: variant{facts: withoutL3},
			want: []string{"the Kubernetes API would get neither a load balancer (master_lb_enabled is false) nor a floating IP (the cloud's Neutron has no L3 extension)",
				"unable to determine control plane endpoint", "use a cluster template with master_lb_enabled=true"},
			fixed:    variant{edit: func(tmpl, _ map[string]any) { tmpl["master_lb_enabled"] = true }, facts: withoutL3, args: capoV014},
			rendered: "enabled: true"},
		{name: "a root volume on a cloud without Cinder", base: "mixed",
			refused:  variant{edit: func(tmpl, _ map[string]any) { labels(tmpl)["boot_volume_size"] = "40" }, facts: withoutCinder},
			want:     []string{"boot_volume_size=40 asks for a Cinder root volume but the cloud has no Cinder", "remove the label"},
			fixed:    variant{facts: withoutCinder},
			rendered: "kind: OpenStackMachineTemplate", absent: "rootVolume"},
		{name: "the Cinder CSI driver on a cloud without Cinder", base: "mixed",
			refused:  variant{edit: func(tmpl, _ map[string]any) { labels(tmpl)["cinder_csi_enabled"] = "true" }, facts: withoutCinder},
			want:     []string{"cinder_csi_enabled=true but the cloud has no Cinder", "set it to false"},
			fixed:    variant{edit: func(tmpl, _ map[string]any) { labels(tmpl)["cinder_csi_enabled"] = "false" }, facts: withoutCinder},
			rendered: "kind: Cluster\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(v variant) (string, string, error) {
				tmpl, cluster := splitCase(t, tc.base, v.edit)
				facts := filepath.Join(renderCases, "facts.yaml")
				if v.facts != nil {
					facts = cloudFacts(t, v.facts)
				}
				return runRender(t, append([]string{"--template", tmpl, "--cluster", cluster, "--facts", facts}, v.args...)...)
			}
			out, _, err := run(tc.refused)
			if err == nil {
				t.Fatalf("rendered: %.200s", out)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			out, errOut, err := run(tc.fixed)
			if err != nil {
				t.Fatalf("after the fix: %v", err)
			}
			if !strings.Contains(out, tc.rendered) {
				t.Errorf("after the fix the objects lack %q", tc.rendered)
			}
			if tc.absent != "" && strings.Contains(out, tc.absent) {
				t.Errorf("after the fix the objects still hold %q", tc.absent)
			}
			if tc.base == "mixed" && tc.fixed.facts != nil && strings.Contains(tc.name, "without routers") &&
				!strings.Contains(errOut, "warning: the cloud's Neutron has no L3 extension") {
				t.Errorf("stderr lacks the warning that the API gets no floating IP: %q", errOut)
			}
		})
	}
}
