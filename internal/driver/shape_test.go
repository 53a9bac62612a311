package driver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/model"
)

func ptr[T any](v T) *T { return &v }

var shapeFacts = &facts.Facts{
	Flavors: []facts.Flavor{
		{ID: "f-vm", Name: "m1.large", Disk: 40},
		{ID: "f-vm2", Name: "m1.xlarge", Disk: 80},
		{ID: "f-gold", Name: "bm.gold", Disk: 480, ExtraSpecs: map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0"}},
		{ID: "f-old", Name: "bm.old", Disk: 240, ExtraSpecs: map[string]string{"baremetal": "True"}},
	},
	Images: []facts.Image{
		{ID: "i-ubuntu", Name: "ubuntu", Properties: map[string]string{"os_distro": "ubuntu"}},
		{ID: "i-flatcar", Name: "flatcar", Properties: map[string]string{"os_distro": "flatcar-container-linux"}},
	},
}

var shapeDefaults = driver.ShapeDefaults{BootVolumeSize: 20,
	VMNodeStartupTimeout: 10 * time.Minute, BMNodeStartupTimeout: 45 * time.Minute,
	VMNodeUnhealthyTimeout: 5 * time.Minute, BMNodeUnhealthyTimeout: 15 * time.Minute,
	CreateTimeout: 60, BareMetalCreateTimeout: 180}

// shapeOf resolves a template and cluster (labels merged as the API
// merges them) with a master and a worker group, and extra groups.
func shapeOf(ct *model.ClusterTemplate, c *model.Cluster, facts *facts.Facts, extra ...*model.NodeGroup) *driver.Shape {
	if ct.Labels == nil {
		ct.Labels = map[string]string{}
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	ngs := append([]*model.NodeGroup{
		{Name: model.DefaultMasterNodeGroup, Role: model.RoleMaster, NodeCount: 1, Labels: c.Labels},
		{Name: model.DefaultWorkerNodeGroup, Role: model.RoleWorker, NodeCount: 2, Labels: c.Labels},
	}, extra...)
	return driver.Resolve(driver.ShapeInput{Template: ct, Cluster: c, NodeGroups: ngs, Facts: facts, Defaults: shapeDefaults})
}

func group(s *driver.Shape, name string) *driver.GroupShape {
	for _, g := range s.Groups {
		if g.NodeGroup.Name == name {
			return g
		}
	}
	return nil
}

func TestResolveDecidesEachNodeGroupsShape(t *testing.T) {
	vmTemplate := func(labels map[string]string) *model.ClusterTemplate {
		return &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{ServerType: model.ServerTypeVM,
			ImageID: "ubuntu", MasterFlavorID: ptr("m1.large"), FlavorID: ptr("m1.xlarge"),
			Labels: labels}}
	}
	bmTemplate := func(master string) *model.ClusterTemplate {
		return &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{ServerType: model.ServerTypeBM,
			ImageID: "ubuntu", MasterFlavorID: ptr(master), FlavorID: ptr("bm.gold")}}
	}
	type want struct {
		flavor, serverType, reason string
		bootVolume                 int
		configDrive                bool
		startup, unhealthy         time.Duration
		min, max                   int
		autoscale                  bool
	}
	vmWorker := want{flavor: "m1.xlarge", serverType: "vm", reason: "virtual flavor", bootVolume: 20, startup: 10 * time.Minute, unhealthy: 5 * time.Minute, max: 2}
	cases := []struct {
		name  string
		ct    *model.ClusterTemplate
		c     *model.Cluster
		extra []*model.NodeGroup
		facts *facts.Facts
		// groups maps node group names to what they resolve to.
		groups        map[string]want
		createTimeout int
		problem       string
		warning       string
	}{
		{name: "virtual cluster", ct: vmTemplate(nil), c: &model.Cluster{}, facts: shapeFacts, createTimeout: 60,
			groups: map[string]want{
				"default-master": {flavor: "m1.large", serverType: "vm", reason: "virtual flavor", bootVolume: 20, startup: 10 * time.Minute, unhealthy: 5 * time.Minute},
				"default-worker": vmWorker,
			}},
		{name: "the cluster's flavors override the template's", ct: vmTemplate(nil),
			c: &model.Cluster{FlavorID: ptr("bm.gold"), MasterFlavorID: ptr("m1.xlarge")}, facts: shapeFacts, createTimeout: 180,
			groups: map[string]want{
				"default-master": {flavor: "m1.xlarge", serverType: "vm", reason: "virtual flavor", bootVolume: 20, startup: 10 * time.Minute, unhealthy: 5 * time.Minute},
				"default-worker": {flavor: "bm.gold", serverType: "bm", reason: "flavor bm.gold has resources:CUSTOM_BAREMETAL_GOLD=1",
					configDrive: true, startup: 45 * time.Minute, unhealthy: 15 * time.Minute, max: 2},
			}},
		{name: "a node group's flavor overrides the cluster's; a mixed cluster gets the bare-metal create timeout",
			ct: vmTemplate(nil), c: &model.Cluster{}, facts: shapeFacts, createTimeout: 180,
			extra: []*model.NodeGroup{{Name: "old", Role: "worker", NodeCount: 1, FlavorID: ptr("bm.old"), MaxNodeCount: ptr(4)}},
			groups: map[string]want{
				"default-worker": vmWorker,
				"old": {flavor: "bm.old", serverType: "bm", reason: "flavor bm.old has baremetal=true", configDrive: true,
					startup: 45 * time.Minute, unhealthy: 15 * time.Minute, max: 4},
			}},
		{name: "bm template with Ironic flavors", ct: bmTemplate("bm.gold"), c: &model.Cluster{}, facts: shapeFacts, createTimeout: 180,
			groups: map[string]want{"default-master": {flavor: "bm.gold", serverType: "bm", reason: "flavor bm.gold has resources:CUSTOM_BAREMETAL_GOLD=1",
				configDrive: true, startup: 45 * time.Minute, unhealthy: 15 * time.Minute}}},
		{name: "bm template with a virtual master flavor", ct: bmTemplate("m1.large"), c: &model.Cluster{}, facts: shapeFacts, createTimeout: 180,
			groups:  map[string]want{"default-master": {flavor: "m1.large", serverType: "bm", reason: "server_type=bm", configDrive: true, startup: 45 * time.Minute, unhealthy: 15 * time.Minute}},
			problem: "node group default-master: flavor m1.large is not a bare-metal flavor: the bare-metal template needs an Ironic-backed flavor"},
		{name: "bm template without a cloud to ask decides by server_type", ct: bmTemplate("m1.large"), c: &model.Cluster{}, createTimeout: 180,
			groups: map[string]want{"default-master": {flavor: "m1.large", serverType: "bm", reason: "server_type=bm", configDrive: true, startup: 45 * time.Minute, unhealthy: 15 * time.Minute}}},
		{name: "a node group's server_type=vm label on an Ironic flavor", ct: vmTemplate(nil), c: &model.Cluster{}, facts: shapeFacts, createTimeout: 180,
			extra:   []*model.NodeGroup{{Name: "odd", NodeCount: 1, FlavorID: ptr("bm.gold"), Labels: map[string]string{"server_type": "vm"}}},
			problem: "node group odd asks for server_type=vm but flavor bm.gold is Ironic-backed"},
		{name: "a node group's server_type=bm label on a virtual flavor", ct: vmTemplate(nil), c: &model.Cluster{}, facts: shapeFacts, createTimeout: 180,
			extra:   []*model.NodeGroup{{Name: "metal", NodeCount: 1, FlavorID: ptr("m1.large"), Labels: map[string]string{"server_type": "bm"}}},
			problem: "node group metal: flavor m1.large is not a bare-metal flavor: the node group's server_type=bm label"},
		{name: "the template's boot_volume_size is for virtual groups only", createTimeout: 180,
			ct: vmTemplate(map[string]string{"boot_volume_size": "50", "boot_volume_type": "ssd"}), c: &model.Cluster{MergeLabels: true}, facts: shapeFacts,
			extra: []*model.NodeGroup{
				{Name: "gold", NodeCount: 1, FlavorID: ptr("bm.gold"), MergeLabels: true},
				{Name: "gold-bfv", NodeCount: 1, FlavorID: ptr("bm.gold"), MergeLabels: true, Labels: map[string]string{"boot_volume_size": "30", "config_drive": "false"}},
			},
			groups: map[string]want{
				"default-worker": {flavor: "m1.xlarge", serverType: "vm", reason: "virtual flavor", bootVolume: 50, startup: 10 * time.Minute, unhealthy: 5 * time.Minute, max: 2},
				"gold": {flavor: "bm.gold", serverType: "bm", reason: "flavor bm.gold has resources:CUSTOM_BAREMETAL_GOLD=1", configDrive: true,
					startup: 45 * time.Minute, unhealthy: 15 * time.Minute, max: 1},
				"gold-bfv": {flavor: "bm.gold", serverType: "bm", reason: "flavor bm.gold has resources:CUSTOM_BAREMETAL_GOLD=1", bootVolume: 30,
					startup: 45 * time.Minute, unhealthy: 15 * time.Minute, max: 1},
			},
			warning: "node group gold is bare metal: boot_volume_size=50 of the template or cluster applies to virtual node groups only"},
		{name: "timeouts and bounds from labels", createTimeout: 60,
			ct: vmTemplate(map[string]string{"node_startup_timeout": "20m", "auto_scaling_enabled": "true"}), c: &model.Cluster{MergeLabels: true}, facts: shapeFacts,
			extra: []*model.NodeGroup{{Name: "burst", NodeCount: 1, MinNodeCount: 1, MaxNodeCount: ptr(9), MergeLabels: true,
				Labels: map[string]string{"node_unhealthy_timeout": "1h"}}},
			groups: map[string]want{
				"burst": {flavor: "m1.xlarge", serverType: "vm", reason: "virtual flavor", bootVolume: 20, startup: 20 * time.Minute, unhealthy: time.Hour,
					min: 1, max: 9, autoscale: true},
			}},
		{name: "autoscaling needs room to grow", ct: vmTemplate(map[string]string{"auto_scaling_enabled": "true"}), c: &model.Cluster{MergeLabels: true}, facts: shapeFacts,
			extra:   []*model.NodeGroup{{Name: "empty", NodeCount: 0, MinNodeCount: 0, MergeLabels: true}},
			problem: "node group empty: max_node_count 0 must be at least 1", createTimeout: 60},
		{name: "a flavor the cloud does not have is no problem when the cloud was not asked about it", ct: vmTemplate(nil),
			c: &model.Cluster{FlavorID: ptr("m9.unknown")}, facts: shapeFacts, createTimeout: 60,
			groups: map[string]want{"default-worker": {flavor: "m9.unknown", serverType: "vm", reason: "virtual flavor", bootVolume: 20,
				startup: 10 * time.Minute, unhealthy: 5 * time.Minute, max: 2}}},
		{name: "an even control plane", ct: vmTemplate(nil), c: &model.Cluster{}, facts: shapeFacts, createTimeout: 60,
			extra:   []*model.NodeGroup{{Name: "second-master", Role: model.RoleMaster, NodeCount: 1}},
			problem: "more than one master node group (default-master, second-master)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := shapeOf(tc.ct, tc.c, tc.facts, tc.extra...)
			for name, w := range tc.groups {
				g := group(s, name)
				if g == nil {
					t.Fatalf("no node group %s", name)
				}
				got := want{flavor: g.FlavorRef, serverType: string(g.ServerType), reason: g.ServerTypeReason, bootVolume: g.BootVolumeSize,
					configDrive: g.ConfigDrive, startup: g.NodeStartupTimeout, unhealthy: g.NodeUnhealthyTimeout, min: g.Min, max: g.Max, autoscale: g.Autoscale}
				if got != w {
					t.Errorf("%s:\n got %+v\nwant %+v", name, got, w)
				}
			}
			if s.CreateTimeout != tc.createTimeout {
				t.Errorf("create timeout %d, want %d", s.CreateTimeout, tc.createTimeout)
			}
			problems := strings.Join(s.Problems, "\n")
			if (tc.problem == "") != (problems == "") || !strings.Contains(problems, tc.problem) {
				t.Errorf("problems %q, want %q", s.Problems, tc.problem)
			}
			warnings := strings.Join(s.Warnings, "\n")
			if (tc.warning == "") != (warnings == "") || !strings.Contains(warnings, tc.warning) {
				t.Errorf("warnings %q, want %q", s.Warnings, tc.warning)
			}
		})
	}
}

// TestResolveKeepsProblemsWithTheirNodeGroup: the API refuses a new node
// group for its own problems only.
func TestResolveKeepsProblemsWithTheirNodeGroup(t *testing.T) {
	ct := &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{ServerType: model.ServerTypeBM,
		ImageID: "ubuntu", MasterFlavorID: ptr("m1.large"), FlavorID: ptr("bm.gold")}}
	s := shapeOf(ct, &model.Cluster{}, shapeFacts, &model.NodeGroup{Name: "fine", NodeCount: 1, FlavorID: ptr("bm.old")})
	if g := group(s, "fine"); len(g.Problems) != 0 {
		t.Errorf("node group fine has problems %q", g.Problems)
	}
	if g := group(s, "default-master"); len(g.Problems) != 1 || !strings.Contains(g.Problems[0], "flavor m1.large is not a bare-metal flavor") {
		t.Errorf("default-master has problems %q", g.Problems)
	}
}

// TestResolveLabelsFollowTheirScope: cluster labels over the template's,
// node group labels over the cluster's, unknown labels kept and reported.
func TestResolveLabelsFollowTheirScope(t *testing.T) {
	ct := &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{ImageID: "ubuntu",
		FlavorID: ptr("m1.large"), MasterFlavorID: ptr("m1.large"),
		Labels: map[string]string{"kube_tag": "v1.33.1", "boot_volume_size": "40"}}}
	merged := shapeOf(ct, &model.Cluster{MergeLabels: true, Labels: map[string]string{"boot_volume_size": "60"}}, shapeFacts)
	if merged.Labels["kube_tag"] != "v1.33.1" || merged.Labels["boot_volume_size"] != "60" {
		t.Errorf("merged labels %v", merged.Labels)
	}
	if got := group(merged, "default-worker").BootVolumeSize; got != 60 {
		t.Errorf("default-worker boot volume %d, want the cluster's 60", got)
	}
	ng := &model.NodeGroup{Name: "big", NodeCount: 1, MergeLabels: true, Labels: map[string]string{"boot_volume_size": "200"}}
	s := shapeOf(ct, &model.Cluster{MergeLabels: true}, shapeFacts, ng)
	if got := group(s, "big").BootVolumeSize; got != 200 {
		t.Errorf("node group boot volume %d, want its own 200", got)
	}
	if got := group(s, "default-worker").BootVolumeSize; got != 40 {
		t.Errorf("default-worker boot volume %d, want the template's 40", got)
	}
	unknown := shapeOf(ct, &model.Cluster{MergeLabels: true, Labels: map[string]string{"no_such_label": "x"}}, shapeFacts)
	if len(unknown.UnknownLabels) != 1 || unknown.UnknownLabels[0] != "no_such_label" || len(unknown.Problems) != 0 {
		t.Errorf("unknown labels %v, problems %v", unknown.UnknownLabels, unknown.Problems)
	}
}

func TestResolveOSIsTheControlPlanesImage(t *testing.T) {
	ct := &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{ImageID: "flatcar",
		ClusterDistro: ptr("ubuntu"), FlavorID: ptr("m1.large"), MasterFlavorID: ptr("m1.large")}}
	if s := shapeOf(ct, &model.Cluster{}, shapeFacts); s.OSDistro != "flatcar" || len(s.Problems) != 0 {
		t.Errorf("os %q, problems %v; want the image's flatcar", s.OSDistro, s.Problems)
	}
	if s := shapeOf(ct, &model.Cluster{}, nil); s.OSDistro != "ubuntu" {
		t.Errorf("os without facts %q, want cluster_distro ubuntu", s.OSDistro)
	}
	s := shapeOf(ct, &model.Cluster{}, shapeFacts, &model.NodeGroup{Name: "other", NodeCount: 1, ImageID: ptr("ubuntu")})
	if !strings.Contains(strings.Join(s.Problems, ";"), "node group other: image ubuntu runs ubuntu but the cluster runs flatcar") {
		t.Errorf("problems %q", s.Problems)
	}
}

func TestResolveAuthoritativeFactsNameWhatIsMissing(t *testing.T) {
	ct := &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{ImageID: "no-image",
		FlavorID: ptr("m1.large")}}
	in := driver.ShapeInput{Template: ct, Cluster: &model.Cluster{}, Facts: shapeFacts, Authoritative: true,
		NodeGroups: []*model.NodeGroup{{Name: "default-master", Role: model.RoleMaster, NodeCount: 1}}}
	got := strings.Join(driver.Resolve(in).Problems, "\n")
	for _, want := range []string{"node group default-master has no flavor", "node group default-master: image no-image was not found in the cloud"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
	in.Authoritative = false
	if p := driver.Resolve(in).Problems; len(p) != 0 {
		t.Errorf("without authoritative facts: %q", p)
	}
}

// TestObjectNameIsOneName: the API's stack_id, the renderer's Cluster
// name and the conductor's are the same name.
func TestObjectNameIsOneName(t *testing.T) {
	cases := []struct{ name, uuid, want string }{
		{"demo", "1b4e28ba-2fa1-4d2b-8f1a-5e8f00000003", "demo-1b4e28ba"},
		{"My_Cluster.prod", "aaaaaaaa-2fa1-4d2b-8f1a-5e8f00000003", "my-cluster-prod-aaaaaaaa"},
		{"a-very-long-cluster-name-that-goes-on-and-on", "bbbbbbbb-0000-0000-0000-000000000000", "a-very-long-cluster-name-that-bbbbbbbb"},
		{"1st", "cccccccc-0000-0000-0000-000000000000", "g-1st-cccccccc"},
	}
	for _, tc := range cases {
		if got := driver.ObjectName(tc.name, tc.uuid); got != tc.want {
			t.Errorf("ObjectName(%q) = %q, want %q", tc.name, got, tc.want)
		}
		c := &model.Cluster{Name: tc.name, UUID: tc.uuid}
		if got := driver.ClusterObjectName(c); got != tc.want {
			t.Errorf("ClusterObjectName without stack_id = %q, want %q", got, tc.want)
		}
	}
	c := &model.Cluster{Name: "demo", UUID: "1b4e28ba-2fa1-4d2b-8f1a-5e8f00000003", StackID: ptr("kept-12345678")}
	if got := driver.ClusterObjectName(c); got != "kept-12345678" {
		t.Errorf("ClusterObjectName = %q, want the stack_id", got)
	}
}

func TestNodeBoundsFromLabels(t *testing.T) {
	cases := []struct {
		labels   map[string]string
		min, max int
		err      string
	}{
		{labels: map[string]string{}, max: -1},
		{labels: map[string]string{"min_node_count": "2", "max_node_count": "5"}, min: 2, max: 5},
		{labels: map[string]string{"min_node_count": "x"}, err: "min_node_count must be a whole number"},
		{labels: map[string]string{"min_node_count": "3", "max_node_count": "2"}, err: "max_node_count (2) must be >= min_node_count (3)"},
	}
	for _, tc := range cases {
		minN, maxN, err := driver.NodeBounds(tc.labels)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.labels, err, tc.err)
			}
			continue
		}
		gotMax := -1
		if maxN != nil {
			gotMax = *maxN
		}
		if err != nil || minN != tc.min || gotMax != tc.max {
			t.Errorf("%v: %d, %d, %v", tc.labels, minN, gotMax, err)
		}
	}
}

// TestResolveWithoutACluster: the capacity check may ask about a node
// group of a template alone; the template's flavors and server type
// decide.
func TestResolveWithoutACluster(t *testing.T) {
	ct := &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{ServerType: model.ServerTypeBM,
		ImageID: "ubuntu", FlavorID: ptr("bm.gold")}}
	s := driver.Resolve(driver.ShapeInput{Template: ct, Facts: shapeFacts,
		NodeGroups: []*model.NodeGroup{{Name: "w", Role: model.RoleWorker, NodeCount: 1}}})
	if g := s.Groups[0]; !g.BareMetal() || g.FlavorRef != "bm.gold" || !g.HasFlavor {
		t.Errorf("node group without a cluster: %+v", g)
	}
}
