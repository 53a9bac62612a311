package magnumimport

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/certs"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

func openStore(t *testing.T) *store.DB {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "magnetite.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func ptr[T any](v T) *T { return &v }

var created = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// magnumWith is a Magnum database of one Heat template and one Cluster API
// template in project p1, and the given clusters, with one Cluster quota.
func magnumWith(clusters ...*magnumCluster) *magnumDB {
	m := &magnumDB{
		Templates: []*magnumTemplate{
			{UUID: "11111111-0000-0000-0000-000000000001", Name: "fcos", ProjectID: "p1", COE: "kubernetes",
				ClusterDistro: ptr("fedora-coreos"), ServerType: ptr("vm"), CreatedAt: created},
			{UUID: "11111111-0000-0000-0000-000000000002", Name: "ubuntu", ProjectID: "p1", COE: "kubernetes",
				ClusterDistro: ptr("ubuntu"), CreatedAt: created, Public: true},
		},
		Clusters:   clusters,
		NodeGroups: map[string][]*magnumNodeGroup{},
		Quotas:     []*magnumQuota{{ProjectID: "p1", Resource: "Cluster", HardLimit: 1, CreatedAt: created}},
		KeyPairs:   map[string]*magnumKeyPair{},
	}
	for _, c := range clusters {
		m.NodeGroups[c.UUID] = []*magnumNodeGroup{
			{UUID: "a" + c.UUID[1:], Name: "default-master", ClusterID: c.UUID, ProjectID: c.ProjectID, Role: "master", NodeCount: ptr(1), IsDefault: true, CreatedAt: created},
			{UUID: "b" + c.UUID[1:], Name: "default-worker", ClusterID: c.UUID, ProjectID: c.ProjectID, Role: "worker", NodeCount: ptr(2), IsDefault: true, CreatedAt: created},
		}
	}
	return m
}

func cluster(uuid, name, template string) *magnumCluster {
	return &magnumCluster{UUID: uuid, Name: ptr(name), ProjectID: "p1", UserID: "u1", ClusterTemplateID: template,
		StackID: ptr("kube-" + uuid[:5]), Status: ptr("CREATE_COMPLETE"), CreatedAt: created}
}

// withCA gives c a Kubernetes CA kept in Magnum's x509keypair table, its
// key stored unencrypted (as Magnum does when given no passphrase).
func withCA(t *testing.T, m *magnumDB, c *magnumCluster, ref string) certs.KeyPair {
	t.Helper()
	pairs, err := certs.GenerateCluster()
	if err != nil {
		t.Fatal(err)
	}
	ca := pairs[0]
	m.KeyPairs[ref] = &magnumKeyPair{UUID: ref, Certificate: string(ca.Cert), PrivateKey: string(ca.Key)}
	c.CACertRef = ptr(ref)
	return ca
}

func outcomes(r *Report) map[string]string {
	out := map[string]string{}
	for _, row := range r.Rows {
		out[row.Kind+" "+row.ID] = string(row.Outcome) + " " + row.Reason
	}
	return out
}

func runPlan(t *testing.T, m *magnumDB, st *store.DB, dryRun bool) *Report {
	t.Helper()
	p, err := makePlan(context.Background(), m, st, Options{Now: time.Now, Unbuildable: func(*model.ClusterTemplate) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if !dryRun {
		if err := p.apply(context.Background(), st); err != nil {
			t.Fatalf("%v: %v", err, outcomes(&p.report))
		}
	}
	return &p.report
}

func TestImportTakesEveryRowOnceAndMarksHeatRowsReadOnly(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	heat := cluster("22222222-0000-0000-0000-000000000001", "prod", "11111111-0000-0000-0000-000000000001")
	capi := cluster("22222222-0000-0000-0000-000000000002", "dev", "11111111-0000-0000-0000-000000000002")
	m := magnumWith(heat, capi)
	ca := withCA(t, m, heat, "33333333-0000-0000-0000-000000000001")

	if r := runPlan(t, m, st, true); r.Count(Import) != 2+2+4+1+1 {
		t.Fatalf("dry run plans %d imports: %v", r.Count(Import), outcomes(r))
	}
	if _, err := st.GetClusterByUUID(ctx, heat.UUID); err == nil {
		t.Fatal("a dry run wrote a cluster")
	}

	r := runPlan(t, m, st, false)
	if r.Count(Failed) != 0 || r.Count(Import) != 10 {
		t.Fatalf("import: %v", outcomes(r))
	}
	got, err := st.GetClusterByUUID(ctx, heat.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.ReadOnlyReason(), "Heat driver k8s_fedora_coreos_v1") || !strings.Contains(*got.StatusReason, "read-only") {
		t.Errorf("the Heat cluster is read-only for %q (status_reason %q)", got.ReadOnlyReason(), *got.StatusReason)
	}
	if !got.CreatedAt.Equal(created) || got.Status != model.CreateComplete || *got.StackID != "kube-22222" {
		t.Errorf("the cluster came over as %+v", got)
	}
	tpl, err := st.GetClusterTemplateByUUID(ctx, "11111111-0000-0000-0000-000000000002")
	if err != nil || tpl.UnsupportedReason() != "" || !tpl.Public {
		t.Errorf("the Cluster API template came over as %+v (%v)", tpl, err)
	}
	held, err := st.ClusterCertificate(ctx, heat.UUID, string(certs.ClusterCA))
	if err != nil || string(held.CertPEM) != string(ca.Cert) {
		t.Errorf("the cluster's CA came over as %v (%v)", held, err)
	}

	again := runPlan(t, m, st, false)
	if again.Count(Import) != 0 || again.Count(Failed) != 0 || again.Count(AlreadyImported) != 10 {
		t.Errorf("a second run: %v", outcomes(again))
	}
}

func TestImportRefusesWhatMagnetiteCannotTakeAndSaysWhy(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	// Magnetite has a template of its own under the UUID of Magnum's Heat
	// template, a cluster named "dev" and a quota for p1.
	if err := st.CreateClusterTemplate(ctx, &model.ClusterTemplate{UUID: "11111111-0000-0000-0000-000000000001", Name: "mine",
		ProjectID: "p1", TemplateSpec: model.TemplateSpec{COE: "kubernetes", Labels: map[string]string{}}, CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	if err := st.ApplyClusterChange(ctx, store.ClusterChange{Create: true, QuotaLimit: 10, Cluster: &model.Cluster{
		UUID: "44444444-0000-0000-0000-000000000001", Name: "dev", ProjectID: "p1", ClusterTemplateID: "11111111-0000-0000-0000-000000000001",
		Status: model.CreateComplete, Labels: map[string]string{}, CreatedAt: created}}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateQuota(ctx, &model.Quota{ProjectID: "p1", Resource: "Cluster", HardLimit: 5, CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	heat := cluster("22222222-0000-0000-0000-000000000001", "prod", "11111111-0000-0000-0000-000000000001")
	dev := cluster("22222222-0000-0000-0000-000000000002", "dev", "11111111-0000-0000-0000-000000000002")
	first := cluster("22222222-0000-0000-0000-000000000003", "twin", "11111111-0000-0000-0000-000000000002")
	second := cluster("22222222-0000-0000-0000-000000000004", "twin", "11111111-0000-0000-0000-000000000002")
	orphan := cluster("22222222-0000-0000-0000-000000000005", "orphan", "11111111-0000-0000-0000-00000000ffff")
	m := magnumWith(heat, dev, first, second, orphan)
	first.CACertRef = ptr("https://barbican.example.net:9311/v1/containers/5f0e")
	first.EtcdCACertRef = ptr("55555555-0000-0000-0000-000000000001")
	// A key pair whose key is not its certificate's.
	withCA(t, m, second, "66666666-0000-0000-0000-000000000001")
	other := withCA(t, m, second, "66666666-0000-0000-0000-000000000002")
	m.KeyPairs["66666666-0000-0000-0000-000000000001"].PrivateKey = string(other.Key)
	second.CACertRef = ptr("66666666-0000-0000-0000-000000000001")
	m.Quotas = append(m.Quotas, &magnumQuota{ProjectID: "p2", Resource: "Volume", HardLimit: 3})

	r := runPlan(t, m, st, false)
	got := outcomes(r)
	for key, want := range map[string]string{
		"cluster template 11111111-0000-0000-0000-000000000001": "refused Magnetite has a cluster template with this UUID that was not imported",
		"cluster 22222222-0000-0000-0000-000000000001":          "refused its cluster template 11111111-0000-0000-0000-000000000001 is not imported",
		"cluster 22222222-0000-0000-0000-000000000002":          `refused Magnetite has a cluster named "dev" in project p1 already`,
		"cluster 22222222-0000-0000-0000-000000000003":          "import",
		"certificate 22222222-0000-0000-0000-000000000003/ca":   "refused kept in Barbican by Magnum",
		"certificate 22222222-0000-0000-0000-000000000003/etcd": "refused x509keypair 55555555-0000-0000-0000-000000000001 is not in Magnum's database",
		"cluster 22222222-0000-0000-0000-000000000004":          `refused cluster 22222222-0000-0000-0000-000000000003 of the same project has the name "twin" too`,
		"cluster 22222222-0000-0000-0000-000000000005":          "refused its cluster template 11111111-0000-0000-0000-00000000ffff is not imported",
		"quota p1/Cluster": "refused Magnetite has its own quota for this project (hard limit 5)",
		"quota p2/Volume":  "refused Magnetite has quotas for Cluster only",
	} {
		if !strings.HasPrefix(got[key], want) {
			t.Errorf("%s: %q, want %q…", key, got[key], want)
		}
	}
	if r.Count(Failed) != 0 {
		t.Errorf("failed rows: %v", got)
	}
	// The mismatched key pair is refused on a cluster that is imported.
	second.Name = ptr("twin-2")
	alone := magnumWith(second)
	alone.KeyPairs = m.KeyPairs
	r = runPlan(t, alone, openStore(t), true)
	for _, row := range r.Rows {
		if row.ID == second.UUID+"/ca" && (row.Outcome != Refused || !strings.Contains(row.Reason, "does not belong to its certificate")) {
			t.Errorf("a key pair whose key is not its certificate's: %s %q", row.Outcome, row.Reason)
		}
	}
}

// TestCAsKeptOutsideMagnumsDatabaseComeFromTheCertDir: a CA Magnum's local
// certificate manager wrote to its storage_path, and one exported from
// Barbican, are read from --cert-dir; a cluster imported before without
// them gets them on the next run.
func TestCAsKeptOutsideMagnumsDatabaseComeFromTheCertDir(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	c := cluster("22222222-0000-0000-0000-000000000001", "prod", "11111111-0000-0000-0000-000000000002")
	m := magnumWith(c)
	local, barbican := "77777777-0000-0000-0000-000000000001", "88888888-0000-0000-0000-000000000001"
	c.CACertRef = ptr(local)
	c.EtcdCACertRef = ptr("https://barbican.example.net:9311/v1/containers/" + barbican)
	pairs, err := certs.GenerateCluster()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, ref := range []string{local, barbican} {
		if err := os.WriteFile(filepath.Join(dir, ref+".crt"), pairs[i].Cert, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ref+".key"), pairs[i].Key, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	first := outcomes(runPlan(t, m, st, false))
	if !strings.HasPrefix(first["certificate "+c.UUID+"/ca"], "refused") || !strings.Contains(first["certificate "+c.UUID+"/ca"], "--cert-dir") {
		t.Errorf("without --cert-dir the local CA is %q, want refused naming --cert-dir", first["certificate "+c.UUID+"/ca"])
	}
	p, err := makePlan(ctx, m, st, Options{CertDir: dir, Now: time.Now, Unbuildable: func(*model.ClusterTemplate) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.apply(ctx, st); err != nil {
		t.Fatal(err)
	}
	second := outcomes(&p.report)
	for _, purpose := range []string{"ca", "etcd"} {
		if got := second["certificate "+c.UUID+"/"+purpose]; got != "import " {
			t.Errorf("with --cert-dir the %s CA is %q, want imported", purpose, got)
		}
	}
	for i, purpose := range []certs.Purpose{certs.ClusterCA, certs.EtcdCA} {
		held, err := st.ClusterCertificate(ctx, c.UUID, string(purpose))
		if err != nil || string(held.CertPEM) != string(pairs[i].Cert) {
			t.Errorf("the %s CA held is %v (%v)", purpose, held, err)
		}
	}
}

// racingWriter is Magnetite's store while someone creates a quota through
// the API between the import's plan and its write.
type racingWriter struct {
	*store.DB
	quota *model.Quota
}

func (w racingWriter) WriteImport(ctx context.Context, im store.Import) error {
	if err := w.CreateQuota(ctx, w.quota); err != nil {
		return err
	}
	return w.DB.WriteImport(ctx, im)
}

// TestAnImportTheStoreRefusesWritesNothing: the import is one transaction.
// A row the store refuses at the last step leaves no template, cluster,
// node group or CA behind, every planned row says it was not written, the
// error names the row, and the next run imports the rest.
func TestAnImportTheStoreRefusesWritesNothing(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	c := cluster("22222222-0000-0000-0000-000000000002", "dev", "11111111-0000-0000-0000-000000000002")
	m := magnumWith(c)
	withCA(t, m, c, "33333333-0000-0000-0000-000000000001")
	opts := Options{Now: time.Now, Unbuildable: func(*model.ClusterTemplate) string { return "" }}

	r, err := run(ctx, m, racingWriter{st, &model.Quota{ProjectID: "p1", Resource: "Cluster", HardLimit: 7, CreatedAt: created}}, opts)
	if err == nil || !strings.Contains(err.Error(), "quota of project p1 for Cluster") {
		t.Fatalf("the refused import returned %v, want an error naming the quota", err)
	}
	if r.Count(Import) != 0 || r.Count(Failed) != 2+1+2+1+1 {
		t.Errorf("rows of the refused import: %v", outcomes(r))
	}
	for _, row := range r.Rows {
		if row.Outcome == Failed && !strings.Contains(row.Reason, "not written") {
			t.Errorf("%s %s failed with %q", row.Kind, row.ID, row.Reason)
		}
	}
	if _, err := st.GetClusterTemplateByUUID(ctx, "11111111-0000-0000-0000-000000000001"); err == nil {
		t.Error("a template of the refused import was written")
	}
	if _, err := st.GetClusterByUUID(ctx, c.UUID); err == nil {
		t.Error("a cluster of the refused import was written")
	}
	if held, err := st.ClusterCertificates(ctx, c.UUID); err != nil || len(held) != 0 {
		t.Errorf("the refused import left key pairs %v (%v)", held, err)
	}

	again, err := run(ctx, m, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := outcomes(again)
	if again.Count(Import) != 2+1+2+1 || !strings.HasPrefix(got["quota p1/Cluster"], "refused Magnetite has its own quota") {
		t.Errorf("the next run: %v", got)
	}
}
