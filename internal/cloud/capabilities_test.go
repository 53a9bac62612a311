package cloud_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
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
	// The cloud's shared networks are routed by the operator's router,
	// which a project cannot see: their routes are unknown. The
	// project's own network is routed by what the project adds.
	_, ownSubnet, err := oc.MakeProjectNetwork(token, "own", "10.9.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	refs := cloud.FactRefs{Networks: []string{"own", testcloud.PrivateNet, testcloud.ExternalNet}}
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
	if shared, _ := f.Network(testcloud.PrivateNet); !shared.Shared || shared.RoutesKnown {
		t.Errorf("the cloud's shared network: %+v, want shared with its routes unknown", shared)
	}
	own, _ := f.Network("own")
	if !own.RoutesKnown || len(own.ExternalRoutes) != 0 || own.Reaches(testcloud.ExternalNetID) {
		t.Errorf("the project's network without a router: %+v", own)
	}

	var rt struct {
		Router struct{ ID string } `json:"router"`
	}
	if err := oc.Do(token, "POST", "/networking/v2.0/routers", map[string]any{"router": map[string]any{"name": "edge",
		"external_gateway_info": map[string]any{"network_id": testcloud.ExternalNetID}}}, &rt); err != nil {
		t.Fatal(err)
	}
	if err := oc.Do(token, "PUT", "/networking/v2.0/routers/"+rt.Router.ID+"/add_router_interface",
		map[string]any{"subnet_id": ownSubnet}, nil); err != nil {
		t.Fatal(err)
	}
	f, err = rs.Facts(t.Context(), token, refs)
	if err != nil {
		t.Fatal(err)
	}
	own, _ = f.Network("own")
	if !own.Reaches(testcloud.ExternalNetID) || !slices.Equal(own.ExternalRoutes, []string{testcloud.ExternalNetID}) {
		t.Errorf("the project's network behind a router to public: %+v", own)
	}
	// The API's checks learn the same.
	found, err := rs.Check(t.Context(), token, cloud.Refs{FixedNetwork: "own", ExternalNetwork: testcloud.ExternalNet})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := found.Facts.Network("own"); !ok || !n.Reaches(testcloud.ExternalNetID) || found.Facts.Services == nil ||
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

// TestTheAPILoadBalancerIsReleasedOnlyOnACloudWithoutL3: where Neutron has
// no L3 extension, the API load balancer CAPO made for a cluster is deleted
// (CAPO cannot: it lists the load balancer's floating IPs first) and no
// other; where Neutron has it, nothing is, CAPO deleting its own.
func TestTheAPILoadBalancerIsReleasedOnlyOnACloudWithoutL3(t *testing.T) {
	const api, other = "k8s-clusterapi-cluster-magnetite-p1-demo-1a2b3c4d-kubeapi", "kube_service_demo-1a2b3c4d_default_web"
	for _, tc := range []struct {
		name     string
		missing  []testcloud.Missing
		released bool
	}{{"without L3", []testcloud.Missing{testcloud.WithoutL3}, true}, {"with L3", nil, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			oc, rs, token := standIn(t, tc.missing...)
			for _, name := range []string{api, other} {
				if err := oc.Do(token, "POST", "/load-balancer/v2.0/lbaas/loadbalancers", map[string]any{"loadbalancer": map[string]any{
					"name": name, "vip_subnet_id": testcloud.PrivateSubnetID}}, nil); err != nil {
					t.Fatal(err)
				}
			}
			names := func() []string {
				var out []string
				for _, lb := range oc.LoadBalancers() {
					out = append(out, lb.Name)
				}
				return out
			}
			var released bool
			testenv.WaitFor(t, "the API load balancer's release to settle", time.Minute, func() (bool, string) {
				res, err := rs.ReleaseAPILoadBalancer(t.Context(), token, api)
				if err != nil {
					t.Fatal(err)
				}
				released = released || len(res.Deleted) > 0
				return res.Done(), fmt.Sprintf("%+v", res)
			})
			if got := names(); released != tc.released || slices.Contains(got, api) == tc.released || !slices.Contains(got, other) {
				t.Errorf("released %v, load balancers left %v; want the API's released: %v, the workload's kept", released, got, tc.released)
			}
		})
	}
}
