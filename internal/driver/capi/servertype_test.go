package capi_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/capacity"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/model"
)

// factsFlavors answers the capacity check's flavor reads from the facts
// the renderer is given, as Nova would for both.
type factsFlavors struct{ facts *facts.Facts }

func (f factsFlavors) Flavor(_ context.Context, _, ref string) (facts.Flavor, error) {
	if fl, ok := f.facts.Flavor(ref); ok {
		return fl, nil
	}
	return facts.Flavor{}, capacity.ErrFlavorNotFound
}

// noFreeHosts has no free host of any class, so the capacity check names
// every node group it counts as bare metal in its refusal.
type noFreeHosts struct{}

func (noFreeHosts) Name() string { return "none" }
func (noFreeHosts) Capacity(_ context.Context, rc string) (baremetal.Capacity, error) {
	return baremetal.Capacity{ResourceClass: rc}, nil
}

var neededRE = regexp.MustCompile(`\d+ needed \(([^)]*)\)`)

// capacityBareMetal lists the node groups the capacity check counts as
// bare-metal hosts when the whole cluster is created, or its refusal of a
// cluster that cannot be built.
func capacityBareMetal(t *testing.T, req driver.Request) ([]string, error) {
	t.Helper()
	cc := &capacity.Check{Mode: capacity.CheckRefuse, Hosts: noFreeHosts{}, Flavors: factsFlavors{req.Facts},
		DefaultResourceClass: "baremetal"}
	creq := capacity.Request{Template: req.Template, Cluster: req.Cluster}
	for _, ng := range req.NodeGroups {
		creq.Growth = append(creq.Growth, capacity.Growth{NodeGroup: ng, Nodes: ng.NodeCount})
	}
	plan, err := cc.Plan(context.Background(), creq, func(context.Context) ([]capacity.Building, error) { return nil, nil })
	if errors.Is(err, capacity.ErrUnbuildable) {
		return nil, err
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = plan.Verify(nil)
	if err == nil {
		return nil, nil
	}
	if !errors.Is(err, capacity.ErrInsufficient) {
		t.Fatal(err)
	}
	var out []string
	for _, m := range neededRE.FindAllStringSubmatch(err.Error(), -1) {
		for _, g := range strings.Split(m[1], ", ") {
			out = append(out, g[:strings.LastIndex(g, " ")])
		}
	}
	slices.Sort(out)
	return out, nil
}

// TestCapacityAndRendererAgreeOnBareMetalGroups: over the layouts that
// decide a node group's server type (its flavor, the template's
// server_type, the node group's own server_type label), the capacity
// check counts a node group's nodes as bare-metal hosts exactly when the
// renderer builds them as bare metal; where the renderer refuses the
// cluster because a node group contradicts its flavor, the capacity check
// refuses it with the same reason instead of counting hosts for it.
func TestCapacityAndRendererAgreeOnBareMetalGroups(t *testing.T) {
	facts, err := os.ReadFile("testdata/facts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const cluster = "name: c\nuuid: 1b4e28ba-2fa1-4d2b-8f1a-5e8f00000042\nmaster_lb_enabled: true\nmaster_count: 1\nnode_count: 2\n"
	template := func(serverType, master, worker string) string {
		return "name: t\nimage_id: ubuntu-2404-kube-v1.33.1\nexternal_network_id: public\nfixed_network: tenant-net\n" +
			"master_lb_enabled: true\nlabels: {kube_tag: v1.33.1}\nserver_type: " + serverType +
			"\nmaster_flavor_id: " + master + "\nflavor_id: " + worker + "\n"
	}
	cases := []struct {
		name, template, cluster string
		bareMetal               []string
		// refused is what the renderer says instead of rendering.
		refused string
	}{
		{name: "virtual flavors", template: template("vm", "m1.large", "m1.xlarge"), cluster: cluster},
		{name: "vm template with an Ironic worker flavor", template: template("vm", "m1.large", "bm.standard"), cluster: cluster,
			bareMetal: []string{"default-worker"}},
		{name: "bm template with Ironic flavors", template: template("bm", "bm.standard", "bm.gpu"), cluster: cluster,
			bareMetal: []string{"default-master", "default-worker"}},
		{name: "bm template with a legacy baremetal=true flavor", template: template("bm", "bm.legacy", "bm.legacy"), cluster: cluster,
			bareMetal: []string{"default-master", "default-worker"}},
		{name: "bm template with a virtual master flavor", template: template("bm", "m1.large", "bm.standard"), cluster: cluster,
			refused: "node group default-master: flavor m1.large is not a bare-metal flavor"},
		{name: "cluster flavor overrides the template's", template: template("vm", "m1.large", "m1.xlarge"),
			cluster: cluster + "flavor_id: bm.gpu\n", bareMetal: []string{"default-worker"}},
		{name: "node group on an Ironic flavor beside a virtual one", template: template("vm", "m1.large", "m1.xlarge"),
			cluster:   cluster + "nodegroups: [{name: gold, flavor_id: bm.standard, node_count: 1}]\n",
			bareMetal: []string{"gold"}},
		{name: "node group asking for bare metal on a virtual flavor", template: template("vm", "m1.large", "m1.xlarge"),
			cluster: cluster + "nodegroups: [{name: metal, flavor_id: m1.large, node_count: 1, labels: {server_type: bm}}]\n",
			refused: "node group metal: flavor m1.large is not a bare-metal flavor: the node group's server_type=bm label"},
		{name: "node group asking for a VM on an Ironic flavor", template: template("vm", "m1.large", "m1.xlarge"),
			cluster: cluster + "nodegroups: [{name: odd, flavor_id: bm.gpu, node_count: 1, labels: {server_type: vm}}]\n",
			refused: "node group odd asks for server_type=vm but flavor bm.gpu is Ironic-backed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := driver.DecodeRequest([]byte(tc.template), []byte(tc.cluster), facts)
			if err != nil {
				t.Fatal(err)
			}
			counted, refusal := capacityBareMetal(t, req)
			types, err := osDriver.ServerTypes(req)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Errorf("the renderer answered %v (%v), want a refusal saying %q", types, err, tc.refused)
				}
				if refusal == nil || !strings.Contains(refusal.Error(), tc.refused) {
					t.Errorf("the capacity check counted %v (%v), want a refusal saying %q", counted, refusal, tc.refused)
				}
				return
			}
			if refusal != nil || !slices.Equal(counted, tc.bareMetal) {
				t.Errorf("the capacity check counts %v as bare metal (%v), want %v", counted, refusal, tc.bareMetal)
			}
			if err != nil {
				t.Fatalf("the renderer refused: %v", err)
			}
			var rendered []string
			for name, st := range types {
				if strings.HasPrefix(st, string(model.ServerTypeBM)+" ") {
					rendered = append(rendered, name)
				}
			}
			slices.Sort(rendered)
			if !slices.Equal(rendered, counted) {
				t.Errorf("the renderer builds %v as bare metal (%v), the capacity check counts %v", rendered, types, counted)
			}
		})
	}
}
