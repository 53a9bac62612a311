package magnumimport

import "testing"

func TestMagnumDriverOfATemplate(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		serverType, distro, driver *string
		coe                        string
		want                       string
		heat                       bool
	}{
		{"Fedora CoreOS picks k8s_fedora_coreos_v1", ptr("vm"), ptr("fedora-coreos"), nil, "kubernetes", "k8s_fedora_coreos_v1", true},
		{"no server_type is vm", nil, ptr("fedora-atomic"), nil, "kubernetes", "k8s_fedora_atomic_v1", true},
		{"bare-metal Fedora picks k8s_fedora_ironic_v1", ptr("bm"), ptr("fedora"), nil, "kubernetes", "k8s_fedora_ironic_v1", true},
		{"swarm-mode", ptr("vm"), ptr("fedora-atomic"), nil, "swarm-mode", "swarm_fedora_atomic_v2", true},
		{"os_distro is matched without case", ptr("vm"), ptr("Fedora-CoreOS"), nil, "kubernetes", "k8s_fedora_coreos_v1", true},
		{"Ubuntu is no Heat driver's", ptr("vm"), ptr("ubuntu"), nil, "kubernetes", clusterAPIDriver, false},
		{"Flatcar is no Heat driver's", ptr("vm"), ptr("flatcar"), nil, "kubernetes", clusterAPIDriver, false},
		{"a recorded Heat driver wins", ptr("vm"), ptr("ubuntu"), ptr("k8s_fedora_coreos_v1"), "kubernetes", "k8s_fedora_coreos_v1", true},
		{"a recorded Cluster API driver is kept", ptr("vm"), ptr("fedora-coreos"), ptr("k8s_capi_helm_v1"), "kubernetes", "k8s_capi_helm_v1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, heat := magnumDriverOf(&magnumTemplate{ServerType: tc.serverType, ClusterDistro: tc.distro, Driver: tc.driver, COE: tc.coe})
			if got != tc.want || heat != tc.heat {
				t.Errorf("driver %q (heat %v), want %q (heat %v)", got, heat, tc.want, tc.heat)
			}
		})
	}
}
