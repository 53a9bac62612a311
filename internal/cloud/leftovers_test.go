package cloud_test

import (
	"testing"

	"github.com/magnetite-io/magnetite/internal/cloud"
)

// The names and marks are those the cloud controller manager and the
// Cinder CSI plugin write; another cluster's, or a user's own, never match.
func TestWorkloadLeftoversAreFoundByTheirMakersMarks(t *testing.T) {
	const cluster = "demo-1a2b3c4d"
	lbs := map[string]bool{
		"kube_service_demo-1a2b3c4d_default_web":          true,
		"kube_service_demo-1a2b3c4d_kube-system_in":       true,
		"kube_service_demo-1a2b3c4d-2_default_web":        false, // another cluster whose name starts alike
		"kube_service_other_default_web":                  false,
		"demo-1a2b3c4d-lb":                                false,
		"k8s-clusterapi-cluster-ns-demo-1a2b3c4d-kubeapi": false, // CAPO's, deleted by CAPO
	}
	for name, want := range lbs {
		if got := cloud.IsWorkloadLoadBalancer(name, cluster); got != want {
			t.Errorf("load balancer %q: %v, want %v", name, got, want)
		}
	}
	fips := map[string]bool{
		"Floating IP for Kubernetes external service default/web from cluster demo-1a2b3c4d":     true,
		"Floating IP for Kubernetes ingress web in namespace default from cluster demo-1a2b3c4d": true,
		"Floating IP for Kubernetes external service default/web from cluster demo-1a2b3c4d-2":   false,
		"Created by cluster-api-provider-openstack cluster ns-demo-1a2b3c4d":                     false,
		"my floating IP from cluster demo-1a2b3c4d":                                              false,
	}
	for d, want := range fips {
		if got := cloud.IsWorkloadFloatingIP(d, cluster); got != want {
			t.Errorf("floating IP %q: %v, want %v", d, got, want)
		}
	}
	sgs := map[[2]string]bool{
		{"lb-sg-5e0f-default-web", "Security Group for default/web Service LoadBalancer in cluster demo-1a2b3c4d"}:   true,
		{"lb-sg-5e0f-default-web", "Security Group for default/web Service LoadBalancer in cluster demo-1a2b3c4d-2"}: false,
		{"my-sg", "Security Group for default/web Service LoadBalancer in cluster demo-1a2b3c4d"}:                    false,
		{"lb-sg-5e0f-default-web", ""}:                       false,
		{"k8s-cluster-ns-demo-1a2b3c4d-secgroup-worker", ""}: false, // CAPO's
	}
	for g, want := range sgs {
		if got := cloud.IsWorkloadSecurityGroup(g[0], g[1], cluster); got != want {
			t.Errorf("security group %q %q: %v, want %v", g[0], g[1], got, want)
		}
	}
	if !cloud.IsWorkloadVolume(map[string]string{"cinder.csi.openstack.org/cluster": cluster}, cluster) ||
		cloud.IsWorkloadVolume(map[string]string{"cinder.csi.openstack.org/cluster": "other"}, cluster) ||
		cloud.IsWorkloadVolume(nil, cluster) || cloud.IsWorkloadLoadBalancer("kube_service__x", "") {
		t.Error("volume marks or an empty cluster name are misread")
	}
}

func TestServiceMessageReadsEveryEnvelope(t *testing.T) {
	cases := map[string]string{
		`{"badRequest": {"code": 400, "message": "Invalid volume: busy"}}`:                                                                   "Invalid volume: busy",
		`{"NeutronError": {"type": "PortSecurityAndIPRequiredForSecurityGroups", "message": "Port security must be enabled", "detail": ""}}`: "PortSecurityAndIPRequiredForSecurityGroups: Port security must be enabled",
		`{"faultcode": "Client", "faultstring": "Invalid state PENDING_UPDATE of loadbalancer resource x", "debuginfo": null}`:               "Invalid state PENDING_UPDATE of loadbalancer resource x",
		"404 Not Found\n\nNo image found\n": "404 Not Found\n\nNo image found",
	}
	for body, want := range cases {
		if got := cloud.ServiceMessage([]byte(body)); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}
