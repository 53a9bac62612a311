package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// The import cases run on every backend with the store's other cases.
func init() {
	storeCases = append(storeCases, storeCase{"an import is written whole or not at all", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		existing := createCluster(t, db, "p1", "old", createTemplate(t, db, template("p1", "t0", false, false)).UUID, 1)
		batch := func(quotaProject string) store.Import {
			ct := template("p1", "imported", true, false)
			ch := clusterChange("p1", "c1", ct.UUID, 2)
			ch.Certificates = keyPairs(ch.Cluster.UUID)
			return store.Import{Templates: []*model.ClusterTemplate{ct}, Clusters: []store.ClusterChange{ch},
				Certificates: keyPairs(existing.Cluster.UUID),
				Quotas:       []*model.Quota{{ProjectID: quotaProject, Resource: "Cluster", HardLimit: 3, CreatedAt: time.Now().UTC()}}}
		}
		if err := db.CreateQuota(ctx, &model.Quota{ProjectID: "taken", Resource: "Cluster", HardLimit: 1, CreatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
		refused := batch("taken")
		err := db.WriteImport(ctx, refused)
		wantErr(t, err, store.ErrConflict)
		if !strings.Contains(err.Error(), "quota of project taken") {
			t.Errorf("the refused import's error %q does not name the quota", err)
		}
		if _, err := db.GetClusterTemplateByUUID(ctx, refused.Templates[0].UUID); err == nil {
			t.Error("the refused import wrote its template")
		}
		if _, err := db.GetClusterByUUID(ctx, refused.Clusters[0].Cluster.UUID); err == nil {
			t.Error("the refused import wrote its cluster")
		}
		if all, err := db.ClusterCertificates(ctx, existing.Cluster.UUID); err != nil || len(all) != 0 {
			t.Errorf("the refused import added %d key pairs to a cluster (%v)", len(all), err)
		}

		im := batch("p1")
		if err := db.WriteImport(ctx, im); err != nil {
			t.Fatal(err)
		}
		c, err := db.GetClusterByUUID(ctx, im.Clusters[0].Cluster.UUID)
		if err != nil || im.Clusters[0].Cluster.ID == 0 || im.Templates[0].ID == 0 || im.Quotas[0].ID == 0 {
			t.Fatalf("the import wrote cluster %+v (%v), IDs template %d quota %d", c, err, im.Templates[0].ID, im.Quotas[0].ID)
		}
		groups, err := db.ListNodeGroups(ctx, c.UUID, store.NodeGroupFilter{}, store.ListOptions{})
		if err != nil || len(groups) != 2 {
			t.Errorf("the imported cluster has %d node groups (%v)", len(groups), err)
		}
		for _, id := range []string{c.UUID, existing.Cluster.UUID} {
			if all, err := db.ClusterCertificates(ctx, id); err != nil || len(all) != 4 {
				t.Errorf("cluster %s has %d key pairs after the import (%v)", id, len(all), err)
			}
		}
		if q, err := db.GetQuota(ctx, "p1", "Cluster"); err != nil || q.HardLimit != 3 {
			t.Errorf("the imported quota reads %+v (%v)", q, err)
		}
	}})
}
