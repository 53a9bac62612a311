package cloud_test

import (
	"slices"
	"testing"

	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/testapi"
	"github.com/magnetite-io/magnetite/internal/testcloud"
	"github.com/magnetite-io/magnetite/internal/testkeystone"
)

// standIn is the OpenStack stand-in lacking what missing names, with
// Keystone's catalog and a member of a project.
func standIn(t *testing.T, missing ...testcloud.Missing) (*testcloud.Cloud, *cloud.Resources, string) {
	t.Helper()
	ks := testkeystone.Start(t)
	ks.ServiceUser(testapi.ServiceUser, testapi.ServicePassword)
	oc := testcloud.Start(t, ks, missing...)
	token := testapi.KeystoneMember(ks, "alpha", "olivia")
	return oc, &cloud.Resources{Catalog: testapi.KeystoneValidator(t, ks)}, token
}

// The services a cloud has come from its catalog and Neutron's extension
// list; the zones from Nova; the external networks a fixed network reaches
// from the routers on its subnets.
func TestFactsSayWhatTheCloudHasAndWhereItsNetworksReach(t *testing.T) {
	oc, rs, token := standIn(t)
	oc.SetComputeZones("az1", "az2")
	refs := cloud.FactRefs{Networks: []string{testcloud.PrivateNet, testcloud.ExternalNet}}
	f, err := rs.Facts(t.Context(), token, refs)
	if err != nil {
		t.Fatal(err)
	}
	if want := (facts.Services{FloatingIPs: true, LoadBalancers: true, BlockStorage: true}); f.Services == nil || *f.Services != want {
		t.Errorf("services %+v, want %+v", f.Services, want)
	}
	if !slices.Equal(f.Zones, []string{"az1", "az2"}) {
		t.Errorf("zones %v, want az1, az2", f.Zones)
	}
	private, _ := f.Network(testcloud.PrivateNet)
	if !private.RoutesKnown || len(private.ExternalRoutes) != 0 || private.Reaches(testcloud.ExternalNetID) {
		t.Errorf("private network without a router: %+v", private)
	}

	var rt struct {
		Router struct{ ID string } `json:"router"`
	}
	if err := oc.Do(token, "POST", "/networking/v2.0/routers", map[string]any{"router": map[string]any{"name": "edge",
		"external_gateway_info": map[string]any{"network_id": testcloud.ExternalNetID}}}, &rt); err != nil {
		t.Fatal(err)
	}
	if err := oc.Do(token, "PUT", "/networking/v2.0/routers/"+rt.Router.ID+"/add_router_interface",
		map[string]any{"subnet_id": testcloud.PrivateSubnetID}, nil); err != nil {
		t.Fatal(err)
	}
	f, err = rs.Facts(t.Context(), token, refs)
	if err != nil {
		t.Fatal(err)
	}
	private, _ = f.Network(testcloud.PrivateNet)
	if !private.Reaches(testcloud.ExternalNetID) || !slices.Equal(private.ExternalRoutes, []string{testcloud.ExternalNetID}) {
		t.Errorf("private network behind a router to public: %+v", private)
	}
	// The API's checks learn the same.
	found, err := rs.Check(t.Context(), token, cloud.Refs{FixedNetwork: testcloud.PrivateNet, ExternalNetwork: testcloud.ExternalNet})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := found.Facts.Network(testcloud.PrivateNet); !ok || !n.Reaches(testcloud.ExternalNetID) || found.Facts.Services == nil ||
		!slices.Equal(found.Facts.Zones, []string{"az1", "az2"}) {
		t.Errorf("checked facts: %+v", found.Facts)
	}
}

// A cloud without Neutron's L3 extension, Octavia or Cinder has nothing of
// those to create or clean up: its facts say so, and a sweep of a
// cluster's leftovers finishes instead of failing on Neutron's 404 for
// floating IPs.
func TestACloudWithoutL3OctaviaOrCinderHasNothingOfThemToSweep(t *testing.T) {
	oc, rs, token := standIn(t, testcloud.WithoutL3, testcloud.WithoutOctavia, testcloud.WithoutCinder)
	f, err := rs.Facts(t.Context(), token, cloud.FactRefs{Networks: []string{testcloud.PrivateNet}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Services == nil || *f.Services != (facts.Services{}) {
		t.Errorf("services %+v, want none", f.Services)
	}
	if private, ok := f.Network(testcloud.PrivateNet); !ok || private.RoutesKnown {
		t.Errorf("private network on a cloud without routers: %+v (found %v)", private, ok)
	}
	// Neutron really has no floating IPs to list.
	if err := oc.Do(token, "GET", "/networking/v2.0/floatingips", nil, nil); err == nil {
		t.Fatal("the stand-in without L3 lists floating IPs")
	}
	out, err := rs.CleanWorkloadLeftovers(t.Context(), token, "demo-1a2b3c4d", cloud.LeftoverPolicy{})
	if err != nil || !out.Done() {
		t.Fatalf("sweep on a cloud without L3, Octavia or Cinder: %+v, %v", out, err)
	}
}
