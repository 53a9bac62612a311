package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/capacity"
	"github.com/magnetite-io/magnetite/internal/facts"
)

// shapeCloud is a cloud with virtual flavors and an Ironic-backed one.
func shapeCloud() *cloudAnswers {
	return &cloudAnswers{flavors: map[string]facts.Flavor{
		"m1.small":  {ID: "2", Name: "m1.small", Disk: 20},
		"m1.medium": {ID: "3", Name: "m1.medium", Disk: 40},
		"bm.gold":   {ID: "4", Name: "bm.gold", Disk: 480, ExtraSpecs: map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1"}},
	}}
}

func shapeTemplate(name, serverType, master, worker string) map[string]any {
	return map[string]any{"name": name, "coe": "kubernetes", "image_id": "ubuntu-2404-kube-v1.33.1", "cluster_distro": "ubuntu",
		"external_network_id": "public", "server_type": serverType, "master_flavor_id": master, "flavor_id": worker,
		"labels": map[string]string{"kube_tag": "v1.33.1"}}
}

// TestBareMetalTemplateWithVirtualMasterIsRefusedWhenTheCloudCanBeAsked:
// what the renderer would refuse of a new cluster or node group, the API
// refuses at once with what to change when it can read the flavors; the
// clusters it accepts get the bare-metal create timeout when any node
// group is bare metal.
func TestBareMetalTemplateWithVirtualMasterIsRefusedWhenTheCloudCanBeAsked(t *testing.T) {
	srv := startWithDrivers(t, func(o *api.Options) { o.Resources = shapeCloud() })
	for _, tpl := range []map[string]any{
		shapeTemplate("bm-vm-master", "bm", "m1.medium", "bm.gold"),
		shapeTemplate("mixed", "vm", "m1.medium", "bm.gold"),
		shapeTemplate("vms", "vm", "m1.medium", "m1.small"),
	} {
		if status, body := call(t, srv, "POST", "/v1/clustertemplates", tpl); status != http.StatusCreated {
			t.Fatalf("template %s: %d %v", tpl["name"], status, body)
		}
	}

	status, body := call(t, srv, "POST", "/v1/clusters", map[string]any{"name": "refused", "cluster_template_id": "bm-vm-master"})
	if want := "node group default-master: flavor m1.medium is not a bare-metal flavor: the bare-metal template needs an Ironic-backed flavor"; status != http.StatusBadRequest ||
		!strings.Contains(detail(body), want) || !strings.Contains(detail(body), "master_flavor_id") {
		t.Errorf("a bm template with a virtual master flavor: %d %q, want 400 saying %q and what to change", status, detail(body), want)
	}
	if status, _ := call(t, srv, "GET", "/v1/clusters/refused", nil); status != http.StatusNotFound {
		t.Errorf("the refused cluster was stored: GET answered %d", status)
	}

	createTimeout := func(name, tpl string, extra map[string]any) any {
		t.Helper()
		req := map[string]any{"name": name, "cluster_template_id": tpl}
		for k, v := range extra {
			req[k] = v
		}
		status, body := call(t, srv, "POST", "/v1/clusters", req)
		if status != http.StatusAccepted {
			t.Fatalf("cluster %s: %d %v", name, status, body)
		}
		_, got := call(t, srv, "GET", "/v1/clusters/"+name, nil)
		return got["create_timeout"]
	}
	for _, tc := range []struct {
		name, template string
		extra          map[string]any
		want           string
	}{
		{"fixed", "bm-vm-master", map[string]any{"master_flavor_id": "bm.gold"}, "180"},
		{"mixed", "mixed", nil, "180"},
		{"mixed-asked", "mixed", map[string]any{"create_timeout": 30}, "30"},
		{"virtual", "vms", nil, "60"},
	} {
		if got := createTimeout(tc.name, tc.template, tc.extra); fmt.Sprint(got) != tc.want {
			t.Errorf("cluster %s: create_timeout %v, want %s", tc.name, got, tc.want)
		}
	}

	status, body = call(t, srv, "POST", "/v1/clusters/mixed/nodegroups", map[string]any{"name": "metal", "flavor_id": "m1.small",
		"labels": map[string]string{"server_type": "bm"}})
	if want := "node group metal: flavor m1.small is not a bare-metal flavor: the node group's server_type=bm label"; status != http.StatusBadRequest || !strings.Contains(detail(body), want) {
		t.Errorf("a node group asking for bare metal on a virtual flavor: %d %q, want 400 saying %q", status, detail(body), want)
	}
	status, body = call(t, srv, "POST", "/v1/clusters/mixed/nodegroups", map[string]any{"name": "odd", "flavor_id": "bm.gold",
		"labels": map[string]string{"server_type": "vm"}})
	if want := "node group odd asks for server_type=vm but flavor bm.gold is Ironic-backed"; status != http.StatusBadRequest || !strings.Contains(detail(body), want) {
		t.Errorf("a node group asking for a VM on an Ironic flavor: %d %q, want 400 saying %q", status, detail(body), want)
	}
	if status, body := call(t, srv, "POST", "/v1/clusters/mixed/nodegroups", map[string]any{"name": "metal", "flavor_id": "bm.gold",
		"labels": map[string]string{"server_type": "bm"}}); status != http.StatusAccepted {
		t.Errorf("a bare-metal node group on an Ironic flavor: %d %v", status, body)
	}

	// An upgrade to a template the cluster cannot be built from is refused
	// as a create would be, and leaves the cluster on its template.
	status, body = call(t, srv, "POST", "/v1/clusters/virtual/actions/upgrade", map[string]any{"cluster_template": "bm-vm-master"})
	if want := "The upgraded cluster cannot be built as asked: node group default-master: flavor m1.medium is not a bare-metal flavor"; status != http.StatusBadRequest ||
		!strings.Contains(detail(body), want) {
		t.Errorf("upgrade of a virtual cluster to a bm template: %d %q, want 400 saying %q", status, detail(body), want)
	}
	_, got := call(t, srv, "GET", "/v1/clusters/virtual", nil)
	_, vms := call(t, srv, "GET", "/v1/clustertemplates/vms", nil)
	if got["cluster_template_id"] != vms["uuid"] || got["status"] != "CREATE_IN_PROGRESS" {
		t.Errorf("after the refused upgrade: template %v status %v", got["cluster_template_id"], got["status"])
	}
}

// TestBareMetalTemplateWithVirtualMasterIsAcceptedWithoutCloud: with no
// cloud to ask, the API cannot tell the master's flavor is virtual; it
// accepts the create, and the conductor's refusal becomes the cluster's
// status_reason (TestUnbuildableClusterFailsWithTheRenderersReason).
func TestBareMetalTemplateWithVirtualMasterIsAcceptedWithoutCloud(t *testing.T) {
	srv := startWithDrivers(t)
	if status, body := call(t, srv, "POST", "/v1/clustertemplates", shapeTemplate("bm-vm-master", "bm", "m1.medium", "bm.gold")); status != http.StatusCreated {
		t.Fatalf("template: %d %v", status, body)
	}
	status, body := call(t, srv, "POST", "/v1/clusters", map[string]any{"name": "accepted", "cluster_template_id": "bm-vm-master"})
	if status != http.StatusAccepted {
		t.Fatalf("create without a cloud to ask: %d %v, want 202", status, body)
	}
	_, got := call(t, srv, "GET", "/v1/clusters/accepted", nil)
	if got["status"] != "CREATE_IN_PROGRESS" || fmt.Sprint(got["create_timeout"]) != "180" {
		t.Errorf("accepted cluster: status %v, create_timeout %v", got["status"], got["create_timeout"])
	}
}

// novaFlavors answers the capacity check's flavor reads.
type novaFlavors map[string]facts.Flavor

func (n novaFlavors) Flavor(_ context.Context, _, ref string) (facts.Flavor, error) {
	if f, ok := n[ref]; ok {
		return f, nil
	}
	return facts.Flavor{}, capacity.ErrFlavorNotFound
}

type goldHosts struct{}

func (goldHosts) Name() string { return "ironic" }
func (goldHosts) Capacity(_ context.Context, rc string) (baremetal.Capacity, error) {
	return baremetal.Capacity{ResourceClass: rc, Free: 10, Total: 10}, nil
}

// TestCapacityCheckRefusesWhatCannotBeBuilt: a deployment whose API has no
// catalog to check resources in, but whose capacity check reads Nova's
// flavors, refuses a bm template's virtual master with a 400 saying so,
// instead of counting bare-metal hosts for it.
func TestCapacityCheckRefusesWhatCannotBeBuilt(t *testing.T) {
	cc := &capacity.Check{Mode: capacity.CheckRefuse, Hosts: goldHosts{}, DefaultResourceClass: "baremetal",
		Flavors: novaFlavors(shapeCloud().flavors)}
	srv := startWithDrivers(t, func(o *api.Options) { o.Capacity = cc })
	if status, body := call(t, srv, "POST", "/v1/clustertemplates", shapeTemplate("bm-vm-master", "bm", "m1.medium", "bm.gold")); status != http.StatusCreated {
		t.Fatalf("template: %d %v", status, body)
	}
	status, body := call(t, srv, "POST", "/v1/clusters", map[string]any{"name": "refused", "cluster_template_id": "bm-vm-master"})
	if want := "The cluster cannot be built as asked: node group default-master: flavor m1.medium is not a bare-metal flavor"; status != http.StatusBadRequest ||
		!strings.Contains(detail(body), want) {
		t.Errorf("create: %d %q, want 400 saying %q", status, detail(body), want)
	}
	if status, body := call(t, srv, "POST", "/v1/clusters", map[string]any{"name": "fixed", "cluster_template_id": "bm-vm-master",
		"master_flavor_id": "bm.gold"}); status != http.StatusAccepted {
		t.Errorf("create with an Ironic master flavor: %d %v", status, body)
	}
}
