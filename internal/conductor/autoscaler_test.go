package conductor

import (
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/model"
)

func autoscaledMD(ngUUID string, replicas int64, bounds bool) map[string]any {
	meta := map[string]any{
		"name":   "elastic-" + ngUUID,
		"labels": map[string]any{LabelNodeGroupUUID: ngUUID},
	}
	if bounds {
		meta["annotations"] = map[string]any{annotationAutoscalerMin: "1", annotationAutoscalerMax: "5"}
	}
	return map[string]any{"metadata": meta, "spec": map[string]any{"replicas": replicas}}
}

func TestNodeCountFollowsTheAutoscalersReplicas(t *testing.T) {
	ngs := []*model.NodeGroup{
		{UUID: "m", Name: "default-master", Role: model.RoleMaster, NodeCount: 1},
		{UUID: "w", Name: "default-worker", Role: model.RoleWorker, NodeCount: 2},
		{UUID: "fixed", Name: "fixed", Role: model.RoleWorker, NodeCount: 2},
		{UUID: "same", Name: "same", Role: model.RoleWorker, NodeCount: 3},
	}
	obs := Observed{MachineDeployments: []map[string]any{
		autoscaledMD("w", 4, true),
		// Not autoscaled: the topology's replicas are Magnetite's own.
		autoscaledMD("fixed", 5, false),
		autoscaledMD("same", 3, true),
	}}
	all, moved, notes := followAutoscaler(ngs, obs)
	if len(moved) != 1 || moved[0].UUID != "w" || moved[0].NodeCount != 4 {
		t.Fatalf("moved %+v", moved)
	}
	if ngs[1].NodeCount != 2 {
		t.Error("followAutoscaler changed the stored node group in place")
	}
	if all[1].NodeCount != 4 || all[2].NodeCount != 2 || all[3].NodeCount != 3 {
		t.Errorf("node counts after following: %d %d %d", all[1].NodeCount, all[2].NodeCount, all[3].NodeCount)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "default-worker: node_count 2 -> 4") || !strings.Contains(notes[0], "cluster autoscaler") {
		t.Errorf("notes %q", notes)
	}

	// A decision that changed the group for another reason keeps its copy
	// and still carries the new count.
	d := Decision{NodeGroups: []*model.NodeGroup{all[1]}}
	withMoved(&d, moved)
	if len(d.NodeGroups) != 1 || !d.Changed {
		t.Errorf("decision %+v", d)
	}
}
