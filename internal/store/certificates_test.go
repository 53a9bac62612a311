package store_test

import (
	"testing"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// The certificate cases run on every backend with the store's other cases.
func init() { storeCases = append(storeCases, certificateCases...) }

func keyPairs(clusterUUID string) []*model.ClusterCertificate {
	var out []*model.ClusterCertificate
	for _, p := range []string{"ca", "etcd", "proxy", "sa"} {
		out = append(out, &model.ClusterCertificate{ClusterID: clusterUUID, Purpose: p,
			CertPEM: []byte("cert of " + p), KeyPEM: []byte("key of " + p)})
	}
	return out
}

var certificateCases = []storeCase{
	{"a cluster create stores its key pairs in the same transaction", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("p1", "t", false, false))
		ch := clusterChange("p1", "c1", ct.UUID, 1)
		ch.Certificates = keyPairs(ch.Cluster.UUID)
		if err := db.ApplyClusterChange(ctx, ch); err != nil {
			t.Fatal(err)
		}
		ca, err := db.ClusterCertificate(ctx, ch.Cluster.UUID, "ca")
		if err != nil {
			t.Fatal(err)
		}
		if string(ca.CertPEM) != "cert of ca" || string(ca.KeyPEM) != "key of ca" || ca.CreatedAt.IsZero() {
			t.Errorf("read back %+v", ca)
		}
		all, err := db.ClusterCertificates(ctx, ch.Cluster.UUID)
		if err != nil || len(all) != 4 {
			t.Fatalf("ClusterCertificates = %d, %v", len(all), err)
		}
		_, err = db.ClusterCertificate(ctx, ch.Cluster.UUID, "nope")
		wantErr(t, err, store.ErrNotFound)
	}},

	{"a failed create leaves no key pairs behind", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("p1", "t", false, false))
		createCluster(t, db, "p1", "taken", ct.UUID, 1)
		ch := clusterChange("p1", "taken", ct.UUID, 1) // same name: the insert fails
		ch.Certificates = keyPairs(ch.Cluster.UUID)
		wantErr(t, db.ApplyClusterChange(ctx, ch), store.ErrConflict)
		if all, err := db.ClusterCertificates(ctx, ch.Cluster.UUID); err != nil || len(all) != 0 {
			t.Fatalf("key pairs of a cluster that was never created: %d, %v", len(all), err)
		}
	}},

	{"key pairs go with the cluster row and cannot be duplicated", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		ct := createTemplate(t, db, template("p1", "t", false, false))
		ch := createCluster(t, db, "p1", "c1", ct.UUID, 1)
		if err := db.AddClusterCertificates(ctx, keyPairs(ch.Cluster.UUID)); err != nil {
			t.Fatal(err)
		}
		wantErr(t, db.AddClusterCertificates(ctx, keyPairs(ch.Cluster.UUID)[:1]), store.ErrConflict)
		if err := db.DeleteCluster(ctx, ch.Cluster.UUID); err != nil {
			t.Fatal(err)
		}
		if all, err := db.ClusterCertificates(ctx, ch.Cluster.UUID); err != nil || len(all) != 0 {
			t.Fatalf("key pairs outlived their cluster: %d, %v", len(all), err)
		}
	}},

	{"key pairs need an existing cluster", func(t *testing.T, db *store.DB, _ func() (*store.DB, error)) {
		if err := db.AddClusterCertificates(ctx, keyPairs("no-such-cluster")); err == nil {
			t.Fatal("stored key pairs of a cluster that does not exist")
		}
	}},
}
