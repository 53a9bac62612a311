package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// TestStoredJSONMeansWhatWireTypesSay serves templates, clusters and node
// groups (listed and shown) from their stored JSON and checks each object against the same
// row decoded into the model and encoded through the apitypes wire structs
// (what the API served before), for every route family, form and the
// microversions that change a field, including rows written before fields
// existed and times stored with an offset.
func TestStoredJSONMeansWhatWireTypesSay(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := &Server{st: st}
	str := func(v string) *string { return &v }
	num := func(v int) *int { return &v }
	now := time.Date(2026, 11, 24, 10, 11, 12, 345678000, time.UTC)
	later := time.Date(2026, 11, 24, 13, 0, 1, 0, time.FixedZone("CEST", 2*3600))

	full := &model.ClusterTemplate{UUID: uuid.NewString(), Name: `quote " and <tag> & ünï`,
		ProjectID: "p1", UserID: "u1", TemplateSpec: model.TemplateSpec{COE: "kubernetes",
			ImageID: "ubuntu", FlavorID: str("m1"), MasterFlavorID: str("m2"), KeypairID: str("kp"),
			ExternalNetworkID: str("public"), NetworkDriver: str("calico"), APIServerPort: num(6443),
			DockerVolumeSize: num(10), ClusterDistro: str("ubuntu"),
			Labels: map[string]string{"kube_tag": "v1.31.2", "b": "x\ny"}, Public: true,
			ServerType: model.ServerTypeBM, MasterLBEnabled: true, FloatingIPEnabled: true,
			Tags: str("a,b")}, Driver: str("capi"), CreatedAt: now, UpdatedAt: &later}
	bare := &model.ClusterTemplate{UUID: uuid.NewString(), Name: "bare", ProjectID: "p1", UserID: "u1",
		TemplateSpec: model.TemplateSpec{COE: "kubernetes", ImageID: "img",
			ServerType: model.ServerTypeVM, Hidden: true}, CreatedAt: now}
	for _, ct := range []*model.ClusterTemplate{full, bare} {
		if err := st.CreateClusterTemplate(ctx, ct); err != nil {
			t.Fatal(err)
		}
	}
	// A row written before driver and hidden existed.
	if _, err := st.SQL().ExecContext(ctx, `UPDATE cluster_templates SET data = ? WHERE uuid = ?`,
		fmt.Sprintf(`{"uuid":%q,"name":"old","project_id":"p1","user_id":"u1","coe":"kubernetes","image_id":"i","labels":null,"server_type":"vm","created_at":"2020-01-02T03:04:05Z","updated_at":null}`, bare.UUID),
		bare.UUID); err != nil {
		t.Fatal(err)
	}

	health := model.Health("HEALTHY")
	reason := "machine m-1 failed: \"quota\""
	clusters := []struct {
		c   *model.Cluster
		ngs []*model.NodeGroup
	}{
		{c: &model.Cluster{Name: "same-labels", Labels: full.Labels, Status: model.CreateComplete, StackID: str("stack"),
			HealthStatus: &health, HealthStatusReason: map[string]string{"api": "ok"}, MergeLabels: true,
			ClusterRuntime: model.ClusterRuntime{APIAddress: str("https://1.2.3.4:6443"), COEVersion: str("v1.31.2")},
			ClusterNetwork: model.ClusterNetwork{FloatingIPEnabled: true}, UpdatedAt: &later, AppliedGeneration: 3},
			ngs: []*model.NodeGroup{
				{Name: "default-master", Role: model.RoleMaster, NodeCount: 3, IsDefault: true, Status: model.CreateComplete,
					NodeAddresses: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}},
				{Name: "default-worker", Role: model.RoleWorker, NodeCount: 2, IsDefault: true, Status: model.CreateComplete,
					NodeAddresses: []string{"10.0.1.1"}, FlavorID: str("m1")},
				{Name: "gpu", Role: "gpu", NodeCount: 1, Status: model.CreateComplete, NodeAddresses: []string{"10.0.2.1"},
					Labels: map[string]string{"kube_tag": "v1.32.0", "gpu": "yes"}, NodeLabels: map[string]string{"accel": "a100"},
					NodeTaints:   []model.Taint{{Key: "gpu", Value: "only", Effect: "NoSchedule"}, {Key: "b", Effect: "NoExecute"}},
					MaxNodeCount: num(5), MinNodeCount: 1, Version: str("v1.31.2"), MergeLabels: true, UpdatedAt: &later},
			}},
		{c: &model.Cluster{Name: "failed", Labels: map[string]string{"kube_tag": "v1.30.0", "extra": "1"}, Status: model.UpdateFailed,
			StatusReason: str("node group failed"), Keypair: str("kp"), DockerVolumeSize: num(20), MasterFlavorID: str("m2")},
			ngs: []*model.NodeGroup{
				{Name: "default-master", Role: model.RoleMaster, NodeCount: 1, IsDefault: true, Status: model.CreateComplete},
				{Name: "workers", Role: model.RoleWorker, NodeCount: 4, Status: model.UpdateFailed, StatusReason: &reason,
					Labels: map[string]string{"kube_tag": "v1.30.0", "extra": "1"}, DockerVolumeSize: num(50)},
			}},
		{c: &model.Cluster{Name: "failed-no-faults", Status: model.CreateFailed}},
		// The labels of "failed" again: the diff written for it is reused.
		{c: &model.Cluster{Name: "twin", Labels: map[string]string{"extra": "1", "kube_tag": "v1.30.0"}, Status: model.CreateComplete}},
		{c: &model.Cluster{Name: "other-labels", Labels: map[string]string{"kube_tag": "v1.29.0"}, Status: model.CreateComplete}},
	}
	for _, x := range clusters {
		c := x.c
		c.UUID, c.ProjectID, c.UserID, c.ClusterTemplateID, c.CreateTimeout, c.CreatedAt = uuid.NewString(), "p1", "u1", full.UUID, 60, now
		for _, ng := range x.ngs {
			ng.UUID, ng.ClusterID, ng.ProjectID, ng.CreatedAt = uuid.NewString(), c.UUID, "p1", now
		}
		if err := st.ApplyClusterChange(ctx, store.ClusterChange{Cluster: c, Create: true, QuotaLimit: 10, NodeGroups: x.ngs}); err != nil {
			t.Fatal(err)
		}
	}

	type variant struct {
		fam     *family
		version int
	}
	var variants []variant
	for _, fam := range []*family{currentNames, bayEraNames} {
		for _, v := range []int{1, 9, 12, 13, 14} {
			variants = append(variants, variant{fam, v})
		}
	}
	sameMeaning := func(t *testing.T, what string, old any, got []byte) {
		t.Helper()
		want, err := json.Marshal(old)
		if err != nil {
			t.Fatal(err)
		}
		var w, g any
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: served JSON does not decode: %v\n%s", what, err, got)
		}
		if !reflect.DeepEqual(w, g) {
			t.Errorf("%s differs from the wire type's encoding:\nwire:   %s\nstored: %s", what, want, got)
		}
	}
	for _, vr := range variants {
		name := fmt.Sprintf("%s-1.%d", vr.fam.templates, vr.version)
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://api.example:9511/v1/x", nil)
			r.Header.Set("X-Forwarded-Proto", "https")
			r = r.WithContext(context.WithValue(context.WithValue(r.Context(), familyKey{}, vr.fam), versionKey{}, APIVersion{1, vr.version}))

			rows, err := st.StoredClusterTemplates(ctx, store.TemplateScope{IsAdmin: true}, store.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tw := newTemplateWriter(r)
			for _, row := range rows {
				ct, err := st.GetClusterTemplateByUUID(ctx, row.UUID)
				if err != nil {
					t.Fatal(err)
				}
				got, err := tw.appendTo(nil, row)
				if err != nil {
					t.Fatal(err)
				}
				sameMeaning(t, "template "+ct.Name, vr.fam.templateView(s, r, ct), got)
			}

			crows, err := st.StoredClusters(ctx, store.Scope{AllProjects: true}, store.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, detail := range []bool{false, true} {
				cw, err := s.newClusterWriter(r, detail, crows)
				if err != nil {
					t.Fatal(err)
				}
				for _, row := range crows {
					c, err := st.GetClusterByUUID(ctx, row.UUID)
					if err != nil {
						t.Fatal(err)
					}
					ngs, err := st.NodeGroupsOf(ctx, []string{c.UUID})
					if err != nil {
						t.Fatal(err)
					}
					sh := shapeOf(ngs[c.UUID])
					var old any = vr.fam.clusterSummary(s, r, c, sh)
					if detail {
						old = vr.fam.clusterDetail(s, r, c, sh, s.templateLabels(ctx, c.ClusterTemplateID))
					}
					got, err := cw.appendTo(nil, row)
					if err != nil {
						t.Fatal(err)
					}
					sameMeaning(t, fmt.Sprintf("cluster %s (detail %v)", c.Name, detail), old, got)

					ngRows, err := st.StoredNodeGroups(ctx, c.UUID, store.NodeGroupFilter{}, store.ListOptions{})
					if err != nil {
						t.Fatal(err)
					}
					page, err := appendNodeGroupPage(nil, ngRows, "")
					if err != nil {
						t.Fatal(err)
					}
					var oldPage struct {
						NodeGroups []any `json:"nodegroups"`
					}
					oldPage.NodeGroups = []any{}
					for _, ng := range ngs[c.UUID] {
						oldPage.NodeGroups = append(oldPage.NodeGroups, nodeGroupSummary(ng))
					}
					sameMeaning(t, "node groups of "+c.Name, oldPage, page)
					if detail {
						continue
					}
					for _, ng := range ngs[c.UUID] {
						ngRow, err := st.StoredNodeGroup(ctx, c.UUID, ng.Name)
						if err != nil {
							t.Fatal(err)
						}
						got, err := appendNodeGroup(nil, r, row, ngRow)
						if err != nil {
							t.Fatal(err)
						}
						sameMeaning(t, "node group "+c.Name+"/"+ng.Name, s.nodeGroupView(r, c, ng), got)
					}
				}
			}
		})
	}
}

// FuzzEachMember checks the stored-JSON member scanner against
// encoding/json on any object: same members, same raw values.
func FuzzEachMember(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":"x\"}y","b":[1,{"c":"]"}],"d":null,"e":{"f":true}}`,
		` { "a" : [ ] , "b":"\\" } `, `{"a":-1.5e3,"b":false}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &want) != nil || want == nil {
			return
		}
		for k := range want {
			if b, _ := json.Marshal(k); !bytes.Equal(b[1:len(b)-1], []byte(k)) {
				return // stored keys are plain ASCII field names
			}
		}
		got := map[string]json.RawMessage{}
		if err := eachMember([]byte(s), func(k, v []byte) { got[string(k)] = bytes.Clone(v) }); err != nil {
			t.Fatalf("eachMember(%q): %v", s, err)
		}
		if len(got) != len(want) {
			t.Fatalf("eachMember(%q) = %d members, want %d", s, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(bytes.TrimSpace(v), got[k]) {
				t.Fatalf("eachMember(%q)[%q] = %s, want %s", s, k, got[k], v)
			}
		}
	})
}
