package conductor

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/openstack"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// staticCloud answers every cluster's facts with the same flavors, image
// and network.
type staticCloud struct{ facts *facts.Facts }

func (s staticCloud) Facts(context.Context, *model.ClusterTemplate, *model.Cluster, []*model.NodeGroup) (*facts.Facts, error) {
	return s.facts, nil
}

// TestUnbuildableClusterFailsWithTheRenderersReason: a cluster the API
// accepted without a cloud to ask (a server_type=bm template whose master
// flavor is virtual) fails when the conductor reads the flavors, with the
// resolver's reason, saying what to change, as its status_reason.
func TestUnbuildableClusterFailsWithTheRenderersReason(t *testing.T) {
	t.Parallel()
	env := managementPlane(t, testenv.CAPOv014)
	mc, err := mgmt.NewForConfig(env.Config, mgmt.Options{Kinds: builtin.Kinds(), NamespacePrefix: testenv.NamespacePrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	ct := &model.ClusterTemplate{UUID: uuid.NewString(), Name: "bm", ProjectID: "p", UserID: "u",
		TemplateSpec: model.TemplateSpec{COE: "kubernetes", ImageID: "ubuntu-2404",
			ServerType: model.ServerTypeBM, MasterFlavorID: str("m1.medium"), FlavorID: str("bm.gold"),
			ExternalNetworkID: str("public"), Labels: map[string]string{"kube_tag": "v1.33.1"}},
		CreatedAt: time.Now().UTC()}
	cl := &model.Cluster{UUID: uuid.NewString(), Name: "metal", ProjectID: "p", UserID: "u", ClusterTemplateID: ct.UUID,
		Status: model.CreateInProgress, Labels: ct.Labels, MergeLabels: true, MasterFlavorID: ct.MasterFlavorID, FlavorID: ct.FlavorID,
		CreatedAt: time.Now().UTC()}
	ngs := []*model.NodeGroup{
		{UUID: uuid.NewString(), Name: model.DefaultMasterNodeGroup, Role: model.RoleMaster, NodeCount: 1, ClusterID: cl.UUID, ProjectID: "p",
			FlavorID: ct.MasterFlavorID, Labels: cl.Labels, Status: model.CreateInProgress, IsDefault: true, CreatedAt: cl.CreatedAt},
		{UUID: uuid.NewString(), Name: model.DefaultWorkerNodeGroup, Role: model.RoleWorker, NodeCount: 1, ClusterID: cl.UUID, ProjectID: "p",
			FlavorID: ct.FlavorID, Labels: cl.Labels, Status: model.CreateInProgress, IsDefault: true, CreatedAt: cl.CreatedAt},
	}
	op := &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterCreate, ClusterID: cl.UUID, ProjectID: "p"}
	st := storeWith(t, ct, cl, ngs, op)

	reg := driver.NewRegistry()
	if err := reg.Register(openstack.New(capi.Options{})); err != nil {
		t.Fatal(err)
	}
	facts := &facts.Facts{
		Flavors:  []facts.Flavor{{ID: "3", Name: "m1.medium", Disk: 40}, {ID: "4", Name: "bm.gold", Disk: 480, ExtraSpecs: map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1"}}},
		Images:   []facts.Image{{ID: "i", Name: "ubuntu-2404", Properties: map[string]string{"os_distro": "ubuntu", "kube_version": "v1.33.1"}}},
		Networks: []facts.Network{{ID: "n", Name: "public", External: true}},
	}
	c := New(Options{Store: st, Mgmt: mc, Drivers: reg, Facts: staticCloud{facts}, Owner: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	got := executeQueued(t, c, st)
	want := "node group default-master: flavor m1.medium is not a bare-metal flavor: the bare-metal template needs an Ironic-backed flavor"
	if got.Status != model.CreateFailed || got.StatusReason == nil || !strings.Contains(*got.StatusReason, want) {
		t.Errorf("cluster %s, status_reason %v; want CREATE_FAILED saying %q", got.Status, derefOr(got.StatusReason, ""), want)
	}
}
