package capacity_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/capacity"
	"github.com/magnetite-io/magnetite/internal/model"
)

// inventory counts hosts per resource class as a backend reports them.
type inventory map[string]baremetal.Capacity

func (inventory) Name() string { return "inventory" }
func (i inventory) Capacity(_ context.Context, rc string) (baremetal.Capacity, error) {
	return i[rc], nil
}

func bareMetalRequest(cluster string, workers int) (capacity.Request, *model.NodeGroup) {
	ct := &model.ClusterTemplate{UUID: "t",
		TemplateSpec: model.TemplateSpec{ServerType: model.ServerTypeBM}}
	c := &model.Cluster{UUID: cluster, Name: cluster, ClusterTemplateID: "t"}
	ng := &model.NodeGroup{UUID: cluster + "-worker", Name: "default-worker", ClusterID: cluster, Role: model.RoleWorker, NodeCount: workers}
	return capacity.Request{Template: ct, Cluster: c, Growth: []capacity.Growth{{NodeGroup: ng, Nodes: workers}}}, ng
}

func building(req capacity.Request, ng *model.NodeGroup) capacity.Building {
	return capacity.Building{Template: req.Template, Cluster: req.Cluster, NodeGroup: ng, Outstanding: ng.NodeCount}
}

// TestCapacityReservationsOneAtATime follows two creates for the last two
// free hosts as two replicas make them: both plan from the same database,
// then reserve one after the other inside their transactions. The second
// sees a node group it did not plan for and plans again, and is then
// refused: the hosts are promised to the first.
func TestCapacityReservationsOneAtATime(t *testing.T) {
	cc := &capacity.Check{Mode: capacity.CheckRefuse, DefaultResourceClass: "baremetal",
		Hosts: inventory{"CUSTOM_BAREMETAL": {ResourceClass: "CUSTOM_BAREMETAL", Free: 2, Total: 2}}}
	ctx := context.Background()
	var db []capacity.Building
	read := func(context.Context) ([]capacity.Building, error) { return db, nil }

	reqA, ngA := bareMetalRequest("a", 2)
	reqB, _ := bareMetalRequest("b", 2)
	planA, err := cc.Plan(ctx, reqA, read)
	if err != nil || planA == nil {
		t.Fatalf("plan a: %v, %v", planA, err)
	}
	planB, err := cc.Plan(ctx, reqB, read)
	if err != nil || planB == nil {
		t.Fatalf("plan b: %v, %v", planB, err)
	}
	if _, err := planA.Verify(db); err != nil {
		t.Fatalf("a, first to reserve: %v", err)
	}
	db = append(db, building(reqA, ngA)) // a commits

	if _, err := planB.Verify(db); !errors.Is(err, capacity.ErrReplan) {
		t.Fatalf("b reserving after a committed: %v, want ErrReplan", err)
	}
	planB, err = cc.Plan(ctx, reqB, read)
	if err != nil {
		t.Fatal(err)
	}
	_, err = planB.Verify(db)
	if !errors.Is(err, capacity.ErrInsufficient) {
		t.Fatalf("b after planning again: %v, want ErrInsufficient", err)
	}
	if want := "resource class CUSTOM_BAREMETAL: 2 needed (default-worker 2), 0 free of 2 (0 deployed, 0 detached, 2 promised to node groups being built)"; !strings.Contains(err.Error(), want) {
		t.Errorf("refusal %q does not say %q", err, want)
	}

	// Once a's nodes have their hosts, nothing is promised any more, and
	// the inventory no longer counts those hosts as free.
	db[0].Outstanding = 0
	cc.Hosts = inventory{"CUSTOM_BAREMETAL": {ResourceClass: "CUSTOM_BAREMETAL", Free: 0, Total: 2, Deployed: 2}}
	planB, err = cc.Plan(ctx, reqB, read)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := planB.Verify(db); !errors.Is(err, capacity.ErrInsufficient) {
		t.Fatalf("b with every host deployed: %v, want ErrInsufficient", err)
	}

	// In warn mode the same request is accepted with the reason kept.
	cc.Mode = capacity.CheckWarn
	planB, err = cc.Plan(ctx, reqB, read)
	if err != nil {
		t.Fatal(err)
	}
	warning, err := planB.Verify(db)
	if err != nil || !strings.Contains(warning, "Not enough free bare-metal hosts") {
		t.Fatalf("warn mode: warning %q, error %v", warning, err)
	}
}

// TestVirtualRequestsReserveNothing: a request that adds no bare-metal
// node plans nothing, so it takes no part in reservations (and does not
// even read the node groups being built).
func TestVirtualRequestsReserveNothing(t *testing.T) {
	cc := &capacity.Check{Mode: capacity.CheckRefuse, DefaultResourceClass: "baremetal",
		Hosts: inventory{"CUSTOM_BAREMETAL": {Free: 0}}}
	req, _ := bareMetalRequest("vm", 3)
	req.Template.ServerType = model.ServerTypeVM
	plan, err := cc.Plan(context.Background(), req, func(context.Context) ([]capacity.Building, error) {
		t.Error("a virtual request read the node groups being built")
		return nil, nil
	})
	if err != nil || plan != nil {
		t.Fatalf("virtual request: plan %v, error %v; want none", plan, err)
	}
}
