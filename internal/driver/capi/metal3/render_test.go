package metal3_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/metal3"
	"github.com/magnetite-io/magnetite/internal/kinds"
	"github.com/magnetite-io/magnetite/internal/mgmt"
)

// request is a Metal3 template and cluster with the given template labels
// (and template fields) on top of a valid base.
func request(t *testing.T, tmplLabels map[string]string, tmplFields map[string]any) driver.Request {
	t.Helper()
	l := map[string]string{"kube_tag": "v1.33.1", "api_vip": "192.168.111.5",
		"image_checksum": "8f3c1a0b9d2e4f6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"}
	for k, v := range tmplLabels {
		if v == "" {
			delete(l, k)
		} else {
			l[k] = v
		}
	}
	tmpl := map[string]any{"name": "m3", "driver": "capi-metal3", "server_type": "bm", "cluster_distro": "ubuntu",
		"image_id": "https://images.example.com/ubuntu.qcow2", "master_lb_enabled": true, "labels": l}
	for k, v := range tmplFields {
		tmpl[k] = v
	}
	ct, _ := yaml.Marshal(tmpl)
	cl, _ := yaml.Marshal(map[string]any{"name": "c", "uuid": "6a1e28ba-2fa1-4d2b-8f1a-5e8f000000aa", "stack_id": "c-6a1e28ba",
		"master_count": 3, "node_count": 2, "nodegroups": []any{map[string]any{"name": "gpu", "node_count": 1}}})
	req, err := driver.DecodeRequest(ct, cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Namespace = "magnetite-system"
	return req
}

func TestMetal3RefusesWhatItCannotBuild(t *testing.T) {
	pool := map[string]string{"ip_pool_ranges": "192.168.111.20-192.168.111.60", "ip_pool_prefix": "24", "host_interface": "enp1s0"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	cases := []struct {
		name   string
		labels map[string]string
		fields map[string]any
		says   string
	}{
		{"image without a URL", nil, map[string]any{"image_id": "ubuntu-2404"}, "set the image_url label"},
		{"image without a checksum", map[string]string{"image_checksum": ""}, nil, "image_checksum is required"},
		{"no API address", map[string]string{"api_vip": ""}, nil, "needs an API address: set the api_vip label, or ip_pool_ranges"},
		{"virtual machines", nil, map[string]any{"server_type": "vm"}, "Metal3 builds bare-metal node groups only"},
		{"Ignition", nil, map[string]any{"cluster_distro": "flatcar"}, "need a cloud-init image"},
		{"pool without the host NIC", with(pool, "host_interface", ""), nil, "set host_interface to the host NIC"},
		{"ranges without a prefix", with(pool, "ip_pool_prefix", ""), nil, "ip_pool_prefix is needed with START-END ranges"},
		{"pool labels without ranges", map[string]string{"ip_pool_gateway": "192.168.111.1"}, nil, "ip_pool_gateway is set but ip_pool_ranges is not"},
		{"mixed families", with(pool, "ip_pool_ranges", "192.168.111.20-192.168.111.60,fd00::/120"), nil, "mixes IPv4 and IPv6"},
		{"pre-allocation for a node group that does not exist", with(pool, "ip_pool_preallocations", "storage:0=192.168.111.30"), nil, "the cluster has no node group storage"},
		{"pre-allocation outside the pool", with(pool, "ip_pool_preallocations", "gpu:0=192.168.111.90"), nil, "192.168.111.90 is outside ip_pool_ranges"},
		{"gateway of the other family", with(pool, "ip_pool_gateway", "fd00::1"), nil, "not of the pool's address family"},
		{"a host selector that is no label", map[string]string{"host_selector": "rack"}, nil, "label host_selector=\"rack\" is invalid"},
		{"an image URL that is no URL", map[string]string{"image_url": "images.example.com/u.qcow2"}, nil, "label image_url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newDriver().Render(request(t, tc.labels, tc.fields))
			if !errors.Is(err, driver.ErrInvalid) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %v, want one saying %q", err, tc.says)
			}
		})
	}
}

// objectsOf renders and indexes the objects by kind/name.
func objectsOf(t *testing.T, d *capi.Driver, req driver.Request) (map[string]*unstructured.Unstructured, *driver.Result) {
	t.Helper()
	res, err := d.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, o := range res.Objects {
		out[o.GetKind()+"/"+o.GetName()] = o
	}
	return out, res
}

func TestTheAPIAddressStaysOutOfTheNodePool(t *testing.T) {
	cases := []struct {
		name   string
		labels map[string]string
		vip    string
		pools  string
	}{
		{"given inside a range, which is split around it",
			map[string]string{"ip_pool_ranges": "192.168.111.20-192.168.111.60", "api_vip": "192.168.111.40", "ip_pool_prefix": "24"},
			"192.168.111.40", "192.168.111.20-192.168.111.39 192.168.111.41-192.168.111.60"},
		{"taken from the pool, which keeps neither it, the gateway nor pre-allocated addresses for others",
			map[string]string{"ip_pool_ranges": "192.168.111.1-192.168.111.60", "api_vip": "", "ip_pool_prefix": "24",
				"ip_pool_gateway": "192.168.111.1", "ip_pool_preallocations": "default-master:0=192.168.111.2"},
			"192.168.111.3", "192.168.111.2-192.168.111.2 192.168.111.4-192.168.111.60"},
		{"taken from an IPv6 subnet",
			map[string]string{"ip_pool_ranges": "fd00:111::/120", "api_vip": "", "ip_pool_gateway": "fd00:111::1"},
			"fd00:111::2", "fd00:111::3-fd00:111::ff/fd00:111::/120"},
		{"outside the pool, which stays whole",
			map[string]string{"ip_pool_ranges": "192.168.112.0/26", "api_vip": "192.168.111.5"},
			"192.168.111.5", "192.168.112.1-192.168.112.62/192.168.112.0/26"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := map[string]string{"host_interface": "enp1s0"}
			for k, v := range tc.labels {
				l[k] = v
			}
			objs, _ := objectsOf(t, newDriver(), request(t, l, nil))
			var cluster *unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() == "Cluster" {
					cluster = o
				}
			}
			ep, _ := capi.ValueOf(cluster, "", "metal3Cluster")
			if host := ep.(map[string]any)["controlPlaneEndpoint"].(map[string]any)["host"]; host != tc.vip {
				t.Errorf("API address %v, want %s", host, tc.vip)
			}
			pool := objs["IPPool/c-6a1e28ba-nodes"]
			if pool == nil {
				t.Fatal("no IPPool rendered")
			}
			entries, _, _ := unstructured.NestedSlice(pool.Object, "spec", "pools")
			var got []string
			for _, e := range entries {
				m := e.(map[string]any)
				s := fmt.Sprintf("%v-%v", m["start"], m["end"])
				if m["subnet"] != nil {
					s += fmt.Sprintf("/%v", m["subnet"])
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != tc.pools {
				t.Errorf("pool ranges %v, want %s", got, tc.pools)
			}
		})
	}
}

func TestPreallocationsNameTheClaimsCAPM3Makes(t *testing.T) {
	objs, _ := objectsOf(t, newDriver(), request(t, map[string]string{"host_interface": "enp1s0",
		"ip_pool_ranges": "192.168.111.20-192.168.111.60", "ip_pool_prefix": "24",
		"ip_pool_preallocations": "default-master:0=192.168.111.30,gpu:2=192.168.111.31"}, nil))
	pre, _, _ := unstructured.NestedStringMap(objs["IPPool/c-6a1e28ba-nodes"].Object, "spec", "preAllocations")
	want := map[string]string{
		// <data template>-<index>-<pool>: the IPClaim of the group's
		// Metal3Data of that index.
		"c-6a1e28ba-default-master-0-c-6a1e28ba-nodes": "192.168.111.30",
		"c-6a1e28ba-gpu-2-c-6a1e28ba-nodes":            "192.168.111.31",
	}
	if fmt.Sprint(pre) != fmt.Sprint(want) {
		t.Errorf("preAllocations %v, want %v", pre, want)
	}
	for _, dt := range []string{"c-6a1e28ba-default-master", "c-6a1e28ba-default-worker", "c-6a1e28ba-gpu"} {
		if objs["Metal3DataTemplate/"+dt] == nil {
			t.Errorf("no Metal3DataTemplate %s", dt)
		}
	}
}

func TestASharedPoolFromTheDriverConfiguration(t *testing.T) {
	d := metal3.New(capi.Options{}, metal3.Options{SharedIPPool: "site-provisioning"})
	objs, _ := objectsOf(t, d, request(t, map[string]string{"host_interface": "eno1"}, nil))
	for k := range objs {
		if strings.HasPrefix(k, "IPPool/") {
			t.Errorf("a cluster on the shared pool rendered its own %s", k)
		}
	}
	dt := objs["Metal3DataTemplate/c-6a1e28ba-gpu"]
	ref, _, _ := unstructured.NestedSlice(dt.Object, "spec", "networkData", "networks", "ipv4")
	dns, _, _ := unstructured.NestedString(dt.Object, "spec", "networkData", "services", "dnsFromIPPool")
	if len(ref) != 1 || fmt.Sprint(ref[0].(map[string]any)["fromPoolRef"]) != "map[name:site-provisioning]" || dns != "site-provisioning" {
		t.Errorf("network data on the shared pool: %v, dns %q", ref, dns)
	}
	// Without any pool, nodes take DHCP addresses: no network data.
	objs, _ = objectsOf(t, newDriver(), request(t, nil, nil))
	if nd, found, _ := unstructured.NestedMap(objs["Metal3DataTemplate/c-6a1e28ba-gpu"].Object, "spec", "networkData"); found {
		t.Errorf("network data without a pool: %v", nd)
	}
}

func TestNodeReuseIsAClassOfItsOwn(t *testing.T) {
	plain, _ := objectsOf(t, newDriver(), request(t, nil, nil))
	reuse, res := objectsOf(t, newDriver(), request(t, map[string]string{"node_reuse": "true"}, nil))
	classOf := func(objs map[string]*unstructured.Unstructured) string {
		for k := range objs {
			if strings.HasPrefix(k, "ClusterClass/") {
				return k
			}
		}
		return ""
	}
	if classOf(plain) == classOf(reuse) {
		t.Fatalf("node reuse renders the same ClusterClass %s", classOf(plain))
	}
	n := 0
	for _, o := range reuse {
		if o.GetKind() == "Metal3MachineTemplate" {
			if v, _, _ := unstructured.NestedBool(o.Object, "spec", "nodeReuse"); !v {
				t.Errorf("%s lacks nodeReuse", o.GetName())
			}
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d machine templates, want 3", n)
	}
	// The default bare-metal rollouts replace in place; a surge is warned
	// about.
	if len(res.Warnings) != 0 {
		t.Errorf("warnings: %v", res.Warnings)
	}
	req := request(t, map[string]string{"node_reuse": "true"}, nil)
	for _, ng := range req.NodeGroups {
		if ng.Name == "gpu" {
			ng.Labels = map[string]string{"rollout_max_surge": "1"}
		}
	}
	res, err := newDriver().Render(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "node group gpu: node_reuse needs rollouts that remove a machine") {
		t.Errorf("warnings with a surging group: %v", res.Warnings)
	}
}

// TestTheManagementClientKnowsEveryMetal3Kind keeps the renderer and the
// management client in step: the conductor applies every rendered object
// through mgmt, which refuses kinds it does not know, and mgmt knows its
// own kinds and those the driver declares.
func TestTheManagementClientKnowsEveryMetal3Kind(t *testing.T) {
	table, err := kinds.NewTable(mgmt.BaseKinds, newDriver().Kinds())
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range goldenCases(t) {
		res, err := newDriver().Render(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Objects {
			k := o.GetKind()
			known, ok := table[k]
			if !ok || known.Group != o.GroupVersionKind().Group {
				t.Errorf("%s: %s (%s) is not a kind the management client knows in its group (%q)", name, k, o.GetAPIVersion(), known.Group)
			}
		}
	}
}
