package testcloud_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servergroups"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	cloudapi "github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

// imageID is the stand-in Glance's Kubernetes image.
const imageID = "0b3a6c1e-6f0e-4c2a-9d55-3f1f8c2d7a01"

// user is a project member's (or the admin's) clients of the stand-ins,
// made as Magnetite's are: gophercloud, Keystone's catalog, the region.
type user struct {
	compute, network, lb *gophercloud.ServiceClient
}

func login(t *testing.T, ks *testkeystone.Keystone, name, password, project string) user {
	t.Helper()
	ctx := context.Background()
	pc, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: ks.AuthURL(), Username: name,
		Password: password, DomainName: "Default", Scope: &gophercloud.AuthScope{ProjectName: project, DomainName: "Default"}})
	if err != nil {
		t.Fatal(err)
	}
	eo := gophercloud.EndpointOpts{Region: testkeystone.Region}
	var u user
	if u.compute, err = openstack.NewComputeV2(pc, eo); err != nil {
		t.Fatal(err)
	}
	u.compute.Microversion = "2.64"
	if u.network, err = openstack.NewNetworkV2(pc, eo); err != nil {
		t.Fatal(err)
	}
	if lb, err := openstack.NewLoadBalancerV2(pc, eo); err == nil {
		u.lb = lb // nil on a cloud without Octavia
	}
	return u
}

// member makes a project with a member and logs in as them.
func member(t *testing.T, ks *testkeystone.Keystone, name, role string) user {
	t.Helper()
	ks.Grant(ks.CreateUser(name, name+"-password"), ks.CreateProject(name), role)
	return login(t, ks, name, name+"-password", name)
}

// refused checks that err is the service's answer status with msg in it.
func refused(t *testing.T, err error, status int, msg string) {
	t.Helper()
	var unexpected gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &unexpected) || unexpected.Actual != status || !strings.Contains(string(unexpected.Body), msg) {
		got := fmt.Sprint(err)
		if len(got) > 500 {
			got = got[:500] + "…"
		}
		t.Fatalf("want %d with %q, got %s", status, msg, got)
	}
}

func TestNeutronFloatingIPsNeedARouterAndQuota(t *testing.T) {
	ks := testkeystone.Start(t)
	cloud := testcloud.Start(t, ks)
	u := member(t, ks, "alice", "member")
	ctx := context.Background()

	net, err := networks.Create(ctx, u.network, networks.CreateOpts{Name: "k8s"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	sub, err := subnets.Create(ctx, u.network, subnets.CreateOpts{NetworkID: net.ID, CIDR: "10.6.0.0/24", IPVersion: gophercloud.IPv4}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	port, err := ports.Create(ctx, u.network, ports.CreateOpts{NetworkID: net.ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	_, err = floatingips.Create(ctx, u.network, floatingips.CreateOpts{FloatingNetworkID: testcloud.ExternalNetID, PortID: port.ID}).Extract()
	refused(t, err, 404, "External network "+testcloud.ExternalNetID+" is not reachable from subnet "+sub.ID+
		".  Therefore, cannot associate Port "+port.ID+" with a Floating IP.")
	refused(t, err, 404, "ExternalGatewayForFloatingIPNotFound")
	// Allocated without a port, it cannot be associated either.
	fip, err := floatingips.Create(ctx, u.network, floatingips.CreateOpts{FloatingNetworkID: testcloud.ExternalNetID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	_, err = floatingips.Update(ctx, u.network, fip.ID, floatingips.UpdateOpts{PortID: &port.ID}).Extract()
	refused(t, err, 404, "ExternalGatewayForFloatingIPNotFound")

	// With a router from the subnet to the external network, it can.
	rt, err := routers.Create(ctx, u.network, routers.CreateOpts{Name: "k8s",
		GatewayInfo: &routers.GatewayInfo{NetworkID: testcloud.ExternalNetID}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := routers.AddInterface(ctx, u.network, rt.ID, routers.AddInterfaceOpts{SubnetID: sub.ID}).Extract(); err != nil {
		t.Fatal(err)
	}
	got, err := floatingips.Update(ctx, u.network, fip.ID, floatingips.UpdateOpts{PortID: &port.ID}).Extract()
	if err != nil || got.PortID != port.ID || got.RouterID != rt.ID || got.FixedIP == "" {
		t.Fatalf("association over the router: %+v, %v", got, err)
	}

	// The cloud's private network reaches the external one through the
	// cloud's own router.
	private, err := ports.Create(ctx, u.network, ports.CreateOpts{NetworkID: testcloud.PrivateNetID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	got, err = floatingips.Create(ctx, u.network, floatingips.CreateOpts{FloatingNetworkID: testcloud.ExternalNetID, PortID: private.ID}).Extract()
	if err != nil || got.RouterID != testcloud.CloudRouterID {
		t.Fatalf("floating IP on the private network: %+v, %v", got, err)
	}
	// Without router1's interface on the private subnet, it cannot.
	cloud.SetCloudRoute(testcloud.PrivateSubnetID, false)
	_, err = floatingips.Create(ctx, u.network, floatingips.CreateOpts{FloatingNetworkID: testcloud.ExternalNetID, PortID: private.ID}).Extract()
	refused(t, err, 404, "is not reachable from subnet "+testcloud.PrivateSubnetID)
	cloud.SetCloudRoute(testcloud.PrivateSubnetID, true)

	// Quotas: the project's floating IPs, and its security groups
	// counting its default group.
	cloud.SetNeutronQuota("floatingip", 2)
	_, err = floatingips.Create(ctx, u.network, floatingips.CreateOpts{FloatingNetworkID: testcloud.ExternalNetID}).Extract()
	refused(t, err, 409, `"OverQuota"`)
	refused(t, err, 409, "Quota exceeded for resources: ['floatingip'].")
	for i := range 9 {
		if _, err := groups.Create(ctx, u.network, groups.CreateOpts{Name: "g" + string(rune('a'+i))}).Extract(); err != nil {
			t.Fatalf("security group %d of 10: %v", i+2, err)
		}
	}
	_, err = groups.Create(ctx, u.network, groups.CreateOpts{Name: "one-too-many"}).Extract()
	refused(t, err, 409, "Quota exceeded for resources: ['security_group'].")
}

// server creates a server on a port of the private network and waits
// until Nova settles it, returning it (ERROR ones with their fault).
func server(t *testing.T, u user, opts servers.CreateOpts, hints servers.SchedulerHintOpts) (*servers.Server, error) {
	t.Helper()
	ctx := context.Background()
	p, err := ports.Create(ctx, u.network, ports.CreateOpts{NetworkID: testcloud.PrivateNetID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	opts.Networks = []servers.Network{{Port: p.ID}}
	if opts.ImageRef == "" && opts.BlockDevice == nil {
		opts.ImageRef = imageID
	}
	s, err := servers.Create(ctx, u.compute, opts, hints).Extract()
	if err != nil {
		return nil, err
	}
	testenv.WaitFor(t, "the server to settle", 10*time.Second, func() (bool, string) {
		s, err = servers.Get(ctx, u.compute, s.ID).Extract()
		if err != nil {
			return false, err.Error()
		}
		return s.Status != "BUILD", s.Status
	})
	return s, err
}

func TestNovaRefusals(t *testing.T) {
	ks := testkeystone.Start(t)
	cloud := testcloud.Start(t, ks)
	u := member(t, ks, "alice", "member")
	admin := login(t, ks, "admin", testkeystone.AdminPassword, "admin")
	ctx := context.Background()

	t.Run("missing flavor", func(t *testing.T) {
		_, err := server(t, u, servers.CreateOpts{Name: "a", FlavorRef: "404"}, servers.SchedulerHintOpts{})
		refused(t, err, 400, "Flavor 404 could not be found.")
	})
	t.Run("zones", func(t *testing.T) {
		cloud.SetComputeHosts(testcloud.ComputeHost{Name: "kvm-1", Zone: "az1"},
			testcloud.ComputeHost{Name: "ironic-1", Zone: "metal", Ironic: true})
		defer cloud.SetComputeZones("nova")
		_, err := server(t, u, servers.CreateOpts{Name: "a", FlavorRef: "2", AvailabilityZone: "az9"}, servers.SchedulerHintOpts{})
		refused(t, err, 400, "The requested availability zone is not available")
		// A zone without an Ironic host cannot hold a bare-metal flavor.
		s, err := server(t, u, servers.CreateOpts{Name: "b", FlavorRef: "4", AvailabilityZone: "az1"}, servers.SchedulerHintOpts{})
		if err != nil || s.Status != "ERROR" || s.Fault.Message != "No valid host was found. There are not enough hosts available." {
			t.Fatalf("bare metal in a VM zone: %+v, %v", s, err)
		}
		s, err = server(t, u, servers.CreateOpts{Name: "c", FlavorRef: "4", AvailabilityZone: "metal"}, servers.SchedulerHintOpts{})
		if err != nil || s.Status != "ACTIVE" || s.AvailabilityZone != "metal" {
			t.Fatalf("bare metal in its zone: %+v, %v", s, err)
		}
		s, err = server(t, u, servers.CreateOpts{Name: "d", FlavorRef: "2"}, servers.SchedulerHintOpts{})
		if err != nil || s.Status != "ACTIVE" || s.AvailabilityZone != "az1" {
			t.Fatalf("a VM in no zone goes where VMs run: %+v, %v", s, err)
		}
	})
	t.Run("zero-disk flavor", func(t *testing.T) {
		id := cloud.AddFlavor("bm.zero", 32, 131072, 0, "BAREMETAL_ZERO")
		_, err := server(t, u, servers.CreateOpts{Name: "a", FlavorRef: id}, servers.SchedulerHintOpts{})
		refused(t, err, 403, "Only volume-backed servers are allowed for flavors with zero disk.")
		// Nova's default policy lets an admin boot it from an image.
		s, err := server(t, admin, servers.CreateOpts{Name: "b", FlavorRef: id}, servers.SchedulerHintOpts{})
		if err != nil || s.Status != "ACTIVE" {
			t.Fatalf("admin on a zero-disk flavor: %+v, %v", s, err)
		}
	})
	t.Run("user data", func(t *testing.T) {
		_, err := server(t, u, servers.CreateOpts{Name: "a", FlavorRef: "2", UserData: []byte(strings.Repeat("#", 49152))}, servers.SchedulerHintOpts{})
		refused(t, err, 400, "Invalid input for field/attribute user_data. Value: ")
		refused(t, err, 400, "is too long")
		s, err := server(t, u, servers.CreateOpts{Name: "b", FlavorRef: "2", UserData: []byte(strings.Repeat("#", 49149))}, servers.SchedulerHintOpts{})
		if err != nil || s.Status != "ACTIVE" {
			t.Fatalf("65532 characters of user data: %+v, %v", s, err)
		}
	})
	t.Run("anti-affinity counts hosts", func(t *testing.T) {
		// Two Ironic nodes sit behind one nova-compute host.
		cloud.SetComputeHosts(testcloud.ComputeHost{Name: "kvm-1", Zone: "nova"}, testcloud.ComputeHost{Name: "kvm-2", Zone: "nova"},
			testcloud.ComputeHost{Name: "ironic-1", Zone: "nova", Ironic: true})
		defer cloud.SetComputeZones("nova")
		for _, tc := range []struct {
			policy, flavor string
			second         string
		}{
			{"anti-affinity", "4", "ERROR"},
			{"soft-anti-affinity", "4", "ACTIVE"},
			{"anti-affinity", "2", "ACTIVE"},
		} {
			g, err := servergroups.Create(ctx, u.compute, servergroups.CreateOpts{Name: tc.policy, Policy: tc.policy}).Extract()
			if err != nil {
				t.Fatal(err)
			}
			hints := servers.SchedulerHintOpts{Group: g.ID}
			first, err := server(t, u, servers.CreateOpts{Name: "first", FlavorRef: tc.flavor}, hints)
			if err != nil || first.Status != "ACTIVE" {
				t.Fatalf("%s, flavor %s, first: %+v, %v", tc.policy, tc.flavor, first, err)
			}
			second, err := server(t, u, servers.CreateOpts{Name: "second", FlavorRef: tc.flavor}, hints)
			if err != nil || second.Status != tc.second {
				t.Fatalf("%s, flavor %s, second: want %s, got %+v, %v", tc.policy, tc.flavor, tc.second, second, err)
			}
			if tc.second == "ERROR" && second.Fault.Message != "No valid host was found. There are not enough hosts available." {
				t.Fatalf("fault: %+v", second.Fault)
			}
		}
	})
	// What Magnetite's auto-healing asks Cinder before it replaces a
	// machine whose root volume was refused: the volume types and zones
	// the member can use, and the same once an operator made them.
	t.Run("cinder lists what a root volume may name", func(t *testing.T) {
		token := ks.Token("alice", "alice-password", "alice")
		rs := &cloudapi.Resources{Catalog: endpoints{"block-storage": cloud.URL + "/volume/v3"}}
		refs := cloudapi.ServerRefs{VolumeType: "gold", VolumeZone: "az3"}
		for _, want := range []string{"volume type gold, volume availability zone az3", ""} {
			missing, err := rs.MissingServerRefs(ctx, token, refs)
			if err != nil || strings.Join(missing, ", ") != want {
				t.Fatalf("missing %q, %v; want %q", missing, err, want)
			}
			cloud.AddVolumeType("gold")
			cloud.AddVolumeAvailabilityZone("az3")
		}
		missing, err := rs.MissingServerRefs(ctx, token, cloudapi.ServerRefs{VolumeType: "lvmdriver-1", VolumeZone: "nova"})
		if err != nil || len(missing) > 0 {
			t.Fatalf("devstack's type and zone: missing %q, %v", missing, err)
		}
	})
}

// endpoints is a catalog of one URL per service type.
type endpoints map[string]string

func (e endpoints) Endpoint(_ context.Context, serviceType, _ string) (string, error) {
	if u, ok := e[serviceType]; ok {
		return u, nil
	}
	return "", fmt.Errorf("no %s in the catalog", serviceType)
}

func TestOctaviaRefusals(t *testing.T) {
	ks := testkeystone.Start(t)
	testcloud.Start(t, ks)
	u := member(t, ks, "alice", "member")
	reader := member(t, ks, "rita", "reader")
	ctx := context.Background()

	_, err := loadbalancers.Create(ctx, u.lb, loadbalancers.CreateOpts{Name: "api", VipSubnetID: "0d6a1c2e-0000-4000-8000-000000000000"}).Extract()
	refused(t, err, 400, "Subnet 0d6a1c2e-0000-4000-8000-000000000000 not found.")
	_, err = loadbalancers.Create(ctx, reader.lb, loadbalancers.CreateOpts{Name: "api", VipSubnetID: testcloud.PrivateSubnetID}).Extract()
	refused(t, err, 403, "Policy does not allow this request to be performed.")
	if _, err := loadbalancers.List(reader.lb, nil).AllPages(ctx); err != nil {
		t.Fatalf("a reader lists load balancers: %v", err)
	}
	lb, err := loadbalancers.Create(ctx, u.lb, loadbalancers.CreateOpts{Name: "api", VipSubnetID: testcloud.PrivateSubnetID}).Extract()
	if err != nil || lb.VipSubnetID != testcloud.PrivateSubnetID {
		t.Fatalf("a member's load balancer: %+v, %v", lb, err)
	}
}

func TestCloudsWithoutServices(t *testing.T) {
	ks := testkeystone.Start(t)
	testcloud.Start(t, ks, testcloud.WithoutL3, testcloud.WithoutOctavia, testcloud.WithoutCinder)
	u := member(t, ks, "alice", "member")
	ctx := context.Background()

	all, err := extensions.List(u.network).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exts, _ := extensions.ExtractExtensions(all)
	for _, e := range exts {
		if e.Alias == "router" {
			t.Fatal("Neutron without L3 lists the router extension")
		}
	}
	_, err = routers.List(u.network, nil).AllPages(ctx)
	refused(t, err, 404, "The resource could not be found.")
	_, err = floatingips.List(u.network, nil).AllPages(ctx)
	refused(t, err, 404, "The resource could not be found.")
	if u.lb != nil {
		t.Fatal("the catalog lists Octavia")
	}
	pc, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: ks.AuthURL(), Username: "alice",
		Password: "alice-password", DomainName: "Default", Scope: &gophercloud.AuthScope{ProjectName: "alice", DomainName: "Default"}})
	if err != nil {
		t.Fatal(err)
	}
	var missing *gophercloud.ErrEndpointNotFound
	if _, err := openstack.NewBlockStorageV3(pc, gophercloud.EndpointOpts{Region: testkeystone.Region}); !errors.As(err, &missing) {
		t.Fatalf("Cinder in the catalog: %v", err)
	}
}
