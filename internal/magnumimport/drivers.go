package magnumimport

import "strings"

// heatDrivers are Magnum's in-tree drivers, every one of which builds a
// cluster as a Heat stack, by the (server_type, os_distro, coe) each
// provides (their provides() in magnum/drivers/*/driver.py of Magnum 15).
var heatDrivers = map[[3]string]string{
	{"vm", "coreos", "kubernetes"}:        "k8s_coreos_v1",
	{"vm", "fedora-atomic", "kubernetes"}: "k8s_fedora_atomic_v1",
	{"vm", "fedora-coreos", "kubernetes"}: "k8s_fedora_coreos_v1",
	{"bm", "fedora", "kubernetes"}:        "k8s_fedora_ironic_v1",
	{"vm", "ubuntu", "mesos"}:             "mesos_ubuntu_v1",
	{"vm", "fedora-atomic", "swarm"}:      "swarm_fedora_atomic_v1",
	{"vm", "fedora-atomic", "swarm-mode"}: "swarm_fedora_atomic_v2",
}

// clusterAPIDriver names the Magnum drivers outside Magnum's tree
// (magnum-cluster-api, magnum-capi-helm) when the template does not say
// which of them built its clusters.
const clusterAPIDriver = "cluster-api"

// magnumDriverOf is the driver Magnum chose for a template and whether it
// is one of the Heat drivers. Magnum 2024.1 and later record the choice
// (cluster_template.driver); before that Magnum chose by the template's
// server_type, the image's os_distro (which it copies into
// cluster_distro) and coe, and every tuple its own drivers do not provide
// was a Cluster API driver's.
func magnumDriverOf(t *magnumTemplate) (name string, heat bool) {
	if t.Driver != nil && *t.Driver != "" {
		for _, d := range heatDrivers {
			if d == *t.Driver {
				return d, true
			}
		}
		return *t.Driver, false
	}
	st := "vm"
	if t.ServerType != nil && *t.ServerType != "" {
		st = *t.ServerType
	}
	distro := ""
	if t.ClusterDistro != nil {
		distro = strings.ToLower(*t.ClusterDistro)
	}
	if d, ok := heatDrivers[[3]string{st, distro, t.COE}]; ok {
		return d, true
	}
	return clusterAPIDriver, false
}
