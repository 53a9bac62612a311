package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/testing/testmariadb"
)

// TestSpecAndStatusCoverEveryFieldOnce: every member of a cluster's and a
// node group's JSON is in exactly one of its two documents, so a field
// added to the model is stored (in the spec, unless it is declared status)
// and never served twice.
func TestSpecAndStatusCoverEveryFieldOnce(t *testing.T) {
	s := "s"
	n := 1
	h := model.Healthy
	c := &model.Cluster{UUID: "u", Name: "n", Keypair: &s, DockerVolumeSize: &n, Labels: map[string]string{"a": "b"},
		MasterFlavorID: &s, FlavorID: &s, StackID: &s, Status: model.CreateComplete, StatusReason: &s, HealthStatus: &h,
		HealthStatusReason: map[string]string{"api": "ok"}, ClusterRuntime: model.ClusterRuntime{DiscoveryURL: &s, APIAddress: &s, COEVersion: &s, ContainerVersion: &s}}
	c.AppliedGeneration, c.Generation, c.ObservedGeneration, c.ResourceVersion = 3, 4, 5, 6
	ng := &model.NodeGroup{ID: 7, UUID: "g", Name: "w", NodeAddresses: []string{"a"}, Status: model.CreateComplete, StatusReason: &s, Version: &s,
		NodeTaints: []model.Taint{{Key: "k", Effect: "NoSchedule"}}, ServerGroupID: "sg"}
	ng.ResourceVersion = 2
	cd, err := clusterDocuments(c)
	if err != nil {
		t.Fatal(err)
	}
	nd, err := nodeGroupDocuments(ng)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		whole  any
		docs   documents
		status []string
	}{
		{"cluster", c, cd, []string{"api_address", "coe_version", "container_version", "health_status", "health_status_reason", "status", "status_reason", "updated_at"}},
		{"node group", ng, nd, []string{"node_addresses", "status", "status_reason", "updated_at", "version"}},
	} {
		whole, err := json.Marshal(tc.whole)
		if err != nil {
			t.Fatal(err)
		}
		want, spec, status := members(t, whole), members(t, tc.docs.spec), members(t, tc.docs.status)
		if got := slices.Sorted(maps.Keys(status)); !slices.Equal(got, tc.status) {
			t.Errorf("%s status document holds %v, want %v", tc.name, got, tc.status)
		}
		for k := range status {
			if _, dup := spec[k]; dup {
				t.Errorf("%s: %s is in both documents", tc.name, k)
			}
		}
		served := members(t, tc.docs.served())
		if !reflect.DeepEqual(served, want) {
			t.Errorf("%s served as\n%s\nwant\n%s", tc.name, tc.docs.served(), whole)
		}
		for _, k := range []string{"applied_generation", "server_group_id", "resource_version", "generation"} {
			if bytes.Contains(tc.docs.served(), []byte(`"`+k+`"`)) {
				t.Errorf("%s: bookkeeping %s is in a served document", tc.name, k)
			}
		}
	}
}

func members(t *testing.T, doc []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return m
}

// TestRowsOfThePreviousReleaseAreCarriedOver: a database at schema 10 (the
// release that kept one document per cluster and node group, bookkeeping
// inside) is migrated: each row's documents are split, its applied
// generation and server group move to their columns, and the API's view
// no longer holds them. A row that release inserts after the migration (a
// replica not yet upgraded, during a rolling upgrade) is read the same way
// and split by its next write; the previous release's document stays
// current for it meanwhile.
func TestRowsOfThePreviousReleaseAreCarriedOver(t *testing.T) {
	backends := map[Dialect]func(t *testing.T) *sql.DB{
		SQLite: func(t *testing.T) *sql.DB {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "m.db")+"?_pragma=busy_timeout(10000)&_txlock=immediate")
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1)
			return db
		},
		MySQL: func(t *testing.T) *sql.DB {
			srv := testmariadb.Start(t)
			db, err := connectMySQL(context.Background(), srv.NewDatabase(), func(*sql.DB) {})
			if err != nil {
				t.Fatal(err)
			}
			return db
		},
	}
	for _, dialect := range []Dialect{SQLite, MySQL} {
		t.Run(string(dialect), func(t *testing.T) {
			ctx := context.Background()
			raw := backends[dialect](t)
			t.Cleanup(func() { raw.Close() })
			s := &DB{db: raw, dialect: dialect}
			if err := s.migrateTo(ctx, 10); err != nil {
				t.Fatal(err)
			}
			old := func(uuid, name string, applied int) {
				t.Helper()
				doc := `{"uuid":"` + uuid + `","name":"` + name + `","project_id":"p","user_id":"u","cluster_template_id":"t",` +
					`"labels":{"kube_tag":"v1.31.1"},"status":"CREATE_COMPLETE","status_reason":"ready","health_status":"HEALTHY",` +
					`"health_status_reason":{"api":"ok"},"api_address":"https://192.0.2.1:6443","merge_labels":false,` +
					`"applied_generation":` + strconv.Itoa(applied) + `,"created_at":"2026-11-01T10:00:00Z","updated_at":null}`
				if _, err := raw.ExecContext(ctx, `INSERT INTO clusters (uuid, name, project_id, user_id, cluster_template_id, status,
					health_status, created_at, data) VALUES (?, ?, 'p', 'u', 't', 'CREATE_COMPLETE', 'HEALTHY', '2026-11-01T10:00:00.000000Z', ?)`,
					uuid, name, doc); err != nil {
					t.Fatal(err)
				}
				ng := `{"id":0,"uuid":"` + uuid + `-w","name":"default-worker","cluster_id":"` + uuid + `","project_id":"p","node_count":3,` +
					`"role":"worker","node_addresses":["10.0.0.5"],"status":"CREATE_COMPLETE","server_group_id":"sg-` + name + `",` +
					`"created_at":"2026-11-01T10:00:00Z","updated_at":null}`
				if _, err := raw.ExecContext(ctx, `INSERT INTO nodegroups (uuid, name, cluster_id, project_id, role, status, node_count,
					created_at, data) VALUES (?, 'default-worker', ?, 'p', 'worker', 'CREATE_COMPLETE', 3, '2026-11-01T10:00:00.000000Z', ?)`,
					uuid+"-w", uuid, ng); err != nil {
					t.Fatal(err)
				}
			}
			old("c-before", "before", 4)
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			old("c-during", "during", 2)

			for _, want := range []struct {
				uuid    string
				applied int64
				split   bool
			}{{"c-before", 4, true}, {"c-during", 2, false}} {
				var spec sql.NullString
				if err := raw.QueryRowContext(ctx, `SELECT spec_json FROM clusters WHERE uuid = ?`, want.uuid).Scan(&spec); err != nil {
					t.Fatal(err)
				}
				if spec.Valid != want.split {
					t.Errorf("%s: split by the migration %v, want %v", want.uuid, spec.Valid, want.split)
				}
				c, err := s.GetClusterByUUID(ctx, want.uuid)
				if err != nil {
					t.Fatal(err)
				}
				if c.AppliedGeneration != want.applied || c.Labels["kube_tag"] != "v1.31.1" || c.Status != model.CreateComplete ||
					c.APIAddress == nil || c.HealthStatusReason["api"] != "ok" {
					t.Errorf("%s reads %+v", want.uuid, c)
				}
				row, err := s.StoredCluster(ctx, Scope{AllProjects: true}, want.uuid)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(row.Data), "applied_generation") {
					t.Errorf("%s: the API's view holds bookkeeping: %s", want.uuid, row.Data)
				}
				groups, err := s.StoredNodeGroupsOf(ctx, []string{want.uuid})
				if err != nil || len(groups[want.uuid]) != 1 {
					t.Fatalf("%s: node groups %v, %v", want.uuid, groups, err)
				}
				if strings.Contains(string(groups[want.uuid][0].Data), "server_group_id") {
					t.Errorf("%s: the API's view of a node group holds bookkeeping: %s", want.uuid, groups[want.uuid][0].Data)
				}
				ng, err := s.GetNodeGroup(ctx, want.uuid, "default-worker")
				if err != nil || ng.ServerGroupID != "sg-"+strings.TrimPrefix(want.uuid, "c-") || ng.NodeCount != 3 || len(ng.NodeAddresses) != 1 {
					t.Errorf("%s: worker reads %+v, %v", want.uuid, ng, err)
				}
			}

			// The row inserted during the upgrade is split by its next write,
			// and its previous-release document keeps the bookkeeping.
			unhealthy := model.Unhealthy
			if _, err := s.UpdateClusterStatus(ctx, "c-during", func(c *model.Cluster, ngs []*model.NodeGroup) ([]*model.NodeGroup, bool) {
				c.HealthStatus = &unhealthy
				ngs[0].StatusReason = &[]string{"3/3 nodes ready"}[0]
				return ngs, true
			}); err != nil {
				t.Fatal(err)
			}
			var spec, data, ngData string
			if err := raw.QueryRowContext(ctx, `SELECT spec_json, data FROM clusters WHERE uuid = 'c-during'`).Scan(&spec, &data); err != nil {
				t.Fatal(err)
			}
			if err := raw.QueryRowContext(ctx, `SELECT data FROM nodegroups WHERE uuid = 'c-during-w'`).Scan(&ngData); err != nil {
				t.Fatal(err)
			}
			var legacy struct {
				Labels            map[string]string `json:"labels"`
				HealthStatus      string            `json:"health_status"`
				AppliedGeneration int64             `json:"applied_generation"`
			}
			if err := json.Unmarshal([]byte(data), &legacy); err != nil || legacy.HealthStatus != "UNHEALTHY" || legacy.AppliedGeneration != 2 || legacy.Labels["kube_tag"] != "v1.31.1" {
				t.Errorf("the previous release's document after a status write: %s (%v)", data, err)
			}
			if !strings.Contains(spec, `"kube_tag":"v1.31.1"`) || !strings.Contains(ngData, `"server_group_id":"sg-during"`) {
				t.Errorf("after its first write the row keeps spec %s, node group document %s", spec, ngData)
			}
		})
	}
}
