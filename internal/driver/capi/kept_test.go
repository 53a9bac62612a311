package capi_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/testing/testdriver"
)

// TestRebasedClusterKeepsItsNetworkInfrastructureAndAddons: a cluster
// moved onto Magnetite's ClusterClass from another driver's keeps that
// driver's OpenStackCluster spec (at the served version, v1beta1 here),
// with only its credentials Secret Magnetite's (and the cloud in it named
// as before); the Cluster's network and the
// kubeadm configuration follow the kept pod and service ranges; and no
// addon is rendered.
func TestRebasedClusterKeepsItsNetworkInfrastructureAndAddons(t *testing.T) {
	kept := &model.KeptInfrastructure{
		ClusterNetwork: map[string]any{
			"pods":          map[string]any{"cidrBlocks": []any{"10.100.0.0/16"}},
			"services":      map[string]any{"cidrBlocks": []any{"10.254.0.0/16"}},
			"serviceDomain": "magnum.local",
		},
		InfrastructureCluster: map[string]any{
			"identityRef":           map[string]any{"name": "kube-ab12c-cloud-config", "cloudName": "default"},
			"apiServerLoadBalancer": map[string]any{"enabled": true},
			"externalNetwork":       map[string]any{"id": "ext-net"},
			"managedSubnets":        []any{map[string]any{"cidr": "10.0.0.0/24", "dnsNameservers": []any{"8.8.8.8"}}},
			"managedSecurityGroups": map[string]any{"allowAllInClusterTraffic": true},
		},
		Addons: true,
	}
	plain, err := osDriver.Render(testdriver.ServedAt(caseRequest(t, "vm-only"), osDriver, "v1beta1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Addons) == 0 {
		t.Fatal("the case renders no addons: it cannot show that a rebased cluster gets none")
	}
	req := testdriver.ServedAt(caseRequest(t, "vm-only"), osDriver, "v1beta1")
	req.Kept = kept
	res, err := osDriver.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Addons) != 0 {
		t.Errorf("a rebased cluster keeps its driver's addons, yet %d addon releases were rendered", len(res.Addons))
	}
	var cluster *unstructured.Unstructured
	for _, o := range res.Objects {
		if o.GetKind() == "ClusterResourceSet" || o.GetKind() == "HelmChartProxy" {
			t.Errorf("%s %s rendered for a cluster that keeps its addons", o.GetKind(), o.GetName())
		}
		if o.GetKind() == "Cluster" {
			cluster = o
		}
	}
	network, _, _ := unstructured.NestedMap(cluster.Object, "spec", "clusterNetwork")
	if !reflect.DeepEqual(network["pods"], kept.ClusterNetwork["pods"]) || !reflect.DeepEqual(network["services"], kept.ClusterNetwork["services"]) || network["serviceDomain"] != "magnum.local" {
		t.Errorf("clusterNetwork = %v, want the kept one %v", network, kept.ClusterNetwork)
	}
	spec, _ := capi.ValueOf(cluster, "", "openStackCluster")
	want := map[string]any{}
	for k, v := range kept.InfrastructureCluster {
		want[k] = v
	}
	var plainCluster *unstructured.Unstructured
	for _, o := range plain.Objects {
		if o.GetKind() == "Cluster" {
			plainCluster = o
		}
	}
	rendered, _ := capi.ValueOf(plainCluster, "", "openStackCluster")
	// The Secret is Magnetite's; the cloud keeps the name CAPO reads.
	id := map[string]any{}
	for k, v := range rendered.(map[string]any)["identityRef"].(map[string]any) {
		id[k] = v
	}
	id["cloudName"] = "default"
	want["identityRef"] = id
	for _, s := range res.Secrets {
		if s.Credentials == driver.CredentialsCloudConfigAddon {
			t.Errorf("the addons' credentials Secret %s is asked for, but the kept addons read their own", s.Name)
		}
		if s.Credentials == driver.CredentialsCloudsYAML && (s.Name != id["name"] || s.CloudName != "default") {
			t.Errorf("the clouds.yaml Secret is %s with cloud %q, want %s with the kept cloud default", s.Name, s.CloudName, id["name"])
		}
	}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("openstackCluster variable = %v\nwant the kept spec with Magnetite's identityRef: %v", spec, want)
	}
}
