package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

// cloudWorld is the API behind Keystone, checking requests against the
// OpenStack stand-in (lacking what missing names) as a member of a project.
type cloudWorld struct {
	t     *testing.T
	srv   *testapi.Server
	cloud *testcloud.Cloud
	token string
}

func startCloudWorld(t *testing.T, missing ...testcloud.Missing) *cloudWorld {
	ks := testkeystone.Start(t)
	ks.ServiceUser(testapi.ServiceUser, testapi.ServicePassword)
	oc := testcloud.Start(t, ks, missing...)
	validator := testapi.KeystoneValidator(t, ks)
	srv := startWithDrivers(t, func(o *api.Options) {
		o.Auth, o.Credentials, o.Resources = validator, validator, &cloud.Resources{Catalog: validator}
	})
	return &cloudWorld{t: t, srv: srv, cloud: oc, token: testapi.KeystoneMember(ks, "alpha", "olivia")}
}

func (w *cloudWorld) do(method, path string, body any) (int, string) {
	w.t.Helper()
	res := w.srv.Do(w.t, method, path, body, testapi.Latest(), map[string]string{"X-Auth-Token": w.token})
	return res.Status, string(res.Body)
}

// template makes a cluster template on the stand-in's image and networks.
func (w *cloudWorld) template(name string, fields map[string]any) {
	w.t.Helper()
	body := map[string]any{"name": name, "coe": "kubernetes", "image_id": testcloud.ImageName,
		"flavor_id": testcloud.FlavorName, "master_flavor_id": testcloud.MasterFlavor,
		"external_network_id": testcloud.ExternalNet, "labels": map[string]string{"kube_tag": testcloud.KubeTag}}
	for k, v := range fields {
		body[k] = v
	}
	if status, out := w.do("POST", "/v1/clustertemplates", body); status != http.StatusCreated {
		w.t.Fatalf("template %s: %d %s", name, status, out)
	}
}

// refusedThenAccepted creates a cluster that must be refused with a 400
// saying each of want, then the fixed one, which must be accepted.
func (w *cloudWorld) refusedThenAccepted(t *testing.T, refused, fixed map[string]any, want ...string) {
	t.Helper()
	status, out := w.do("POST", "/v1/clusters", refused)
	if status != http.StatusBadRequest {
		t.Fatalf("create: %d %s, want 400", status, out)
	}
	if !strings.Contains(out, `"errors"`) || !strings.Contains(out, "cannot be built as asked") {
		t.Errorf("not a Magnum-format refusal: %s", out)
	}
	for _, s := range want {
		if !strings.Contains(out, s) {
			t.Errorf("refusal lacks %q: %s", s, out)
		}
	}
	if fixed == nil {
		return
	}
	if status, out := w.do("POST", "/v1/clusters", fixed); status != http.StatusAccepted {
		t.Errorf("the fixed create: %d %s, want 202", status, out)
	}
}

func cluster(name, template string, nodes int, labels map[string]string) map[string]any {
	c := map[string]any{"name": name, "cluster_template_id": template, "master_count": 1, "node_count": nodes}
	if labels != nil {
		c["labels"], c["merge_labels"] = labels, true
	}
	return c
}

// TestCreateRefusesWhatNovaOrNeutronWouldRefuse: what Nova or Neutron would
// refuse of a cluster's servers or floating IP, and the user can know
// before anything is built, is a 400 at create that says what to change;
// the changed request is accepted.
func TestCreateRefusesWhatNovaOrNeutronWouldRefuse(t *testing.T) {
	t.Parallel()
	w := startCloudWorld(t)
	w.template("vms", nil)
	zeroDisk := "bm.zero"
	w.cloud.AddFlavor(zeroDisk, 32, 131072, 0, "BAREMETAL_GOLD")
	w.template("metal-zero", map[string]any{"server_type": "bm", "flavor_id": zeroDisk, "master_flavor_id": zeroDisk})
	w.template("metal", map[string]any{"server_type": "bm", "flavor_id": testcloud.BareMetalFlavor, "master_flavor_id": testcloud.BareMetalFlavor})
	// The project's own network: the cloud's shared networks are routed
	// by the operator's router, which the project cannot see.
	_, ownSubnet, err := w.cloud.MakeProjectNetwork(w.token, "own", "10.9.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	w.template("private", map[string]any{"fixed_network": "own"})

	t.Run("an availability zone Nova does not have", func(t *testing.T) {
		w.cloud.SetComputeZones("az1", "az2")
		defer w.cloud.SetComputeZones("nova")
		w.refusedThenAccepted(t, cluster("zoned", "vms", 1, map[string]string{"availability_zone": "az9"}),
			cluster("zoned", "vms", 1, map[string]string{"availability_zone": "az2"}),
			"availability_zone az9 is not one of Nova's availability zones (az1, az2)")
		w.refusedThenAccepted(t, cluster("spread", "vms", 1, map[string]string{"control_plane_availability_zones": "az1,az3"}),
			cluster("spread", "vms", 1, map[string]string{"control_plane_availability_zones": "az1,az2"}),
			"control_plane_availability_zones names az3")
		w.refusedThenAccepted(t, cluster("metal-zones", "metal", 1, nil),
			cluster("metal-zones", "metal", 1, map[string]string{"control_plane_availability_zones": "az1"}),
			"set control_plane_availability_zones to the zones that hold them")
	})
	t.Run("image boot on a zero-disk Ironic flavor", func(t *testing.T) {
		w.refusedThenAccepted(t, cluster("zero", "metal-zero", 1, nil), cluster("zero", "metal", 1, nil),
			"flavor bm.zero has a root disk of 0 GiB", "Only volume-backed servers are allowed for flavors with zero disk.")
		// A bare-metal node group of a VM cluster on the zero-disk flavor:
		// refused without a root volume, accepted with its own
		// boot_volume_size (Ironic boots it from Cinder).
		if status, out := w.do("POST", "/v1/clusters", cluster("hybrid", "vms", 1, nil)); status != http.StatusAccepted {
			t.Fatalf("the VM cluster: %d %s", status, out)
		}
		group := func(labels map[string]string) map[string]any {
			ng := map[string]any{"name": "metal", "flavor_id": zeroDisk, "node_count": 1}
			if labels != nil {
				ng["labels"], ng["merge_labels"] = labels, true
			}
			return ng
		}
		status, out := w.do("POST", "/v1/clusters/hybrid/nodegroups", group(nil))
		for _, want := range []string{"The node group cannot be built as asked", "flavor bm.zero has a root disk of 0 GiB",
			"Only volume-backed servers are allowed for flavors with zero disk.", "give the node group a boot_volume_size label"} {
			if status != http.StatusBadRequest || !strings.Contains(out, want) {
				t.Errorf("a bare-metal node group on the zero-disk flavor: %d %s, want 400 with %q", status, out, want)
			}
		}
		if status, out := w.do("POST", "/v1/clusters/hybrid/nodegroups", group(map[string]string{"boot_volume_size": "50"})); status != http.StatusAccepted {
			t.Errorf("the node group with a boot volume: %d %s, want 202", status, out)
		}
	})
	t.Run("hard anti-affinity over more Ironic machines than nova-compute hosts", func(t *testing.T) {
		w.refusedThenAccepted(t, cluster("apart", "metal", 2, map[string]string{"server_group_policies": "anti-affinity"}),
			cluster("apart", "metal", 2, map[string]string{"server_group_policies": "soft-anti-affinity"}),
			"server_group_policies=anti-affinity needs a nova-compute host per machine", "use server_group_policies=soft-anti-affinity")
		// One machine fits; a resize to two is refused the same way, and
		// the group keeps its size.
		if status, out := w.do("POST", "/v1/clusters", cluster("single", "metal", 1, map[string]string{"server_group_policies": "anti-affinity"})); status != http.StatusAccepted {
			t.Fatalf("one bare-metal worker under anti-affinity: %d %s", status, out)
		}
		status, out := w.do("POST", "/v1/clusters/single/actions/resize", map[string]any{"node_count": 2})
		if status != http.StatusBadRequest || !strings.Contains(out, "The resized node group cannot be built as asked") ||
			!strings.Contains(out, "up to 2 machines") {
			t.Errorf("resize to two: %d %s, want 400 naming the anti-affinity policy", status, out)
		}
		if _, out := w.do("GET", "/v1/clusters/single", nil); !strings.Contains(out, `"node_count": 1`) && !strings.Contains(out, `"node_count":1`) {
			t.Errorf("after the refused resize: %s", out)
		}
	})
	t.Run("a floating IP on a network without a router to the external network", func(t *testing.T) {
		w.refusedThenAccepted(t, cluster("routed", "private", 1, nil), nil,
			"ExternalGatewayForFloatingIPNotFound", "External network "+testcloud.ExternalNetID+" is not reachable",
			"add a router with its gateway on public")
		var rt struct {
			Router struct{ ID string } `json:"router"`
		}
		if err := w.cloud.Do(w.token, "POST", "/networking/v2.0/routers", map[string]any{"router": map[string]any{
			"name": "edge", "external_gateway_info": map[string]any{"network_id": testcloud.ExternalNetID}}}, &rt); err != nil {
			t.Fatal(err)
		}
		if err := w.cloud.Do(w.token, "PUT", "/networking/v2.0/routers/"+rt.Router.ID+"/add_router_interface",
			map[string]any{"subnet_id": ownSubnet}, nil); err != nil {
			t.Fatal(err)
		}
		if status, out := w.do("POST", "/v1/clusters", cluster("routed", "private", 1, nil)); status != http.StatusAccepted {
			t.Errorf("create once a router connects the network: %d %s", status, out)
		}
	})
}

// TestCreateRefusesWhatACloudWithoutL3OrOctaviaCannotGive: a load balancer
// on a cloud without Octavia, and a floating IP asked for by label on a
// cloud without routers, are refused at create, and so is a cluster whose
// API would get neither (CAPO has no other address for it); what the cloud
// can give is accepted: a floating IP without Octavia, a load balancer
// without routers (its address on the cluster network).
func TestCreateRefusesWhatACloudWithoutL3OrOctaviaCannotGive(t *testing.T) {
	t.Parallel()
	noEndpoint := "the Kubernetes API would get neither a load balancer (master_lb_enabled is false) nor a floating IP"
	t.Run("without Octavia", func(t *testing.T) {
		t.Parallel()
		w := startCloudWorld(t, testcloud.WithoutOctavia)
		w.template("lb", map[string]any{"master_lb_enabled": true})
		w.template("plain", nil)
		w.template("private", map[string]any{"floating_ip_enabled": false})
		w.refusedThenAccepted(t, cluster("balanced", "lb", 1, nil), cluster("balanced", "plain", 1, nil),
			"master_lb_enabled is set but the cloud has no Octavia", "master_lb_enabled=false")
		w.refusedThenAccepted(t, cluster("hidden", "private", 1, nil), nil,
			noEndpoint+" (floating_ip_enabled is false)", "unable to determine control plane endpoint",
			"give the API a floating IP (floating_ip_enabled=true", "the cloud has no Octavia")
	})
	t.Run("without L3", func(t *testing.T) {
		t.Parallel()
		w := startCloudWorld(t, testcloud.WithoutL3)
		w.template("lb", map[string]any{"master_lb_enabled": true})
		w.template("plain", nil)
		w.refusedThenAccepted(t, cluster("floating", "lb", 1, map[string]string{"master_lb_floating_ip_enabled": "true"}),
			cluster("floating", "lb", 1, nil),
			"Neutron has no L3 extension (no routers or floating IPs), so the API cannot get a floating IP")
		w.refusedThenAccepted(t, cluster("plain", "plain", 1, nil), cluster("plain", "lb", 1, nil),
			noEndpoint+" (the cloud's Neutron has no L3 extension)", "use a cluster template with master_lb_enabled=true")
	})
	t.Run("without either", func(t *testing.T) {
		t.Parallel()
		w := startCloudWorld(t, testcloud.WithoutL3, testcloud.WithoutOctavia)
		w.template("plain", nil)
		w.refusedThenAccepted(t, cluster("plain", "plain", 1, nil), nil,
			noEndpoint, "the cloud has neither Octavia nor Neutron's L3 extension")
	})
}

// TestCreateRefusesWhatACloudWithoutCinderCannotGive: a root volume, or the
// Cinder CSI driver, asked of a cloud whose catalog has no block-storage
// service is refused at create; without them the cluster is accepted and
// its servers boot from their flavors' disks.
func TestCreateRefusesWhatACloudWithoutCinderCannotGive(t *testing.T) {
	t.Parallel()
	w := startCloudWorld(t, testcloud.WithoutCinder)
	w.template("plain", nil)
	w.refusedThenAccepted(t, cluster("volumes", "plain", 1, map[string]string{"boot_volume_size": "40"}),
		cluster("volumes", "plain", 1, nil),
		"boot_volume_size=40 asks for a Cinder root volume but the cloud has no Cinder", "remove the label")
	w.refusedThenAccepted(t, cluster("csi", "plain", 1, map[string]string{"cinder_csi_enabled": "true"}),
		cluster("csi", "plain", 1, map[string]string{"cinder_csi_enabled": "false"}),
		"cinder_csi_enabled=true but the cloud has no Cinder", "set it to false")
}
