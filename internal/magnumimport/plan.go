package magnumimport

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// Target is the part of Magnetite's store the import reads and writes:
// it reads with the API's methods and writes the rows the API would, all
// in one transaction.
type Target interface {
	GetClusterTemplateByUUID(ctx context.Context, uuid string) (*model.ClusterTemplate, error)
	GetClusterByUUID(ctx context.Context, uuid string) (*model.Cluster, error)
	GetCluster(ctx context.Context, sc store.Scope, ident string) (*model.Cluster, error)
	GetNodeGroup(ctx context.Context, clusterUUID, ident string) (*model.NodeGroup, error)
	ClusterCertificates(ctx context.Context, clusterUUID string) ([]*model.ClusterCertificate, error)
	GetQuota(ctx context.Context, projectID, resource string) (*model.Quota, error)
	WriteImport(ctx context.Context, im store.Import) error
}

// Options steer an import.
type Options struct {
	// Unbuildable says why Magnetite's drivers cannot build clusters from
	// a template, or "" when they can (cmd/magnetite asks its driver
	// registry and label schema).
	Unbuildable func(*model.ClusterTemplate) string
	// Management, when set, is the management cluster where the import
	// looks for the Cluster API objects of clusters that a Magnum Cluster
	// API driver built.
	Management ClusterAPIReader
	// CAPIHelmNamespacePrefix is magnum-capi-helm's [capi_helm]
	// namespace_prefix (DefaultCAPIHelmNamespacePrefix when empty).
	CAPIHelmNamespacePrefix string
	// CertDir holds CAs Magnum kept outside its database, as its local
	// certificate manager writes them (<ref>.crt, .key, .pass).
	CertDir string
	// DryRun plans and reports without writing.
	DryRun bool
	// Now stamps the import (time.Now when nil).
	Now func() time.Time
}

// Outcome is what happens, or happened, to one of Magnum's rows.
type Outcome string

const (
	Import          Outcome = "import"
	AlreadyImported Outcome = "already imported"
	Refused         Outcome = "refused"
	// Failed is a planned import that was not written because the
	// store refused the import's transaction (Run's error says why);
	// running the import again retries it.
	Failed Outcome = "failed"
)

// Row is one of Magnum's rows and what the import does with it.
type Row struct {
	Kind    string // "cluster template", "cluster", "node group", "certificate", "quota"
	ID      string // UUID, cluster UUID/purpose, or project/resource
	Name    string
	Project string
	Outcome Outcome
	// Reason says why a row is refused or failed; Note what a user of an
	// imported row should know (read-only, a CA that must be supplied).
	Reason, Note string
}

// Report is every row of Magnum's database the import looked at, in the
// order it takes them.
type Report struct {
	Rows   []*Row
	DryRun bool
}

// Count is how many rows had the outcome.
func (r *Report) Count(o Outcome) int {
	n := 0
	for _, row := range r.Rows {
		if row.Outcome == o {
			n++
		}
	}
	return n
}

// plannedCluster is a cluster to write, with what belongs to it.
type plannedCluster struct {
	row        *Row
	cluster    *model.Cluster
	nodeGroups []*model.NodeGroup
	groupRows  []*Row
	certs      []*model.ClusterCertificate
	certRows   []*Row
	// adopt queues the conductor's taking over of the cluster's Cluster
	// API objects with the cluster's row.
	adopt bool
}

type plan struct {
	certDir   string
	report    Report
	templates []*model.ClusterTemplate
	tplRows   []*Row
	clusters  []*plannedCluster
	// addCerts are CAs of clusters imported before whose keys this run
	// can read (a first run may have failed to).
	addCerts    []*model.ClusterCertificate
	addCertRows []*Row
	quotas      []*model.Quota
	quotaRows   []*Row
}

// Run imports Magnum's database db into dst, or only reports what it
// would do when opts.DryRun is set. When the write fails, the report says
// which rows were not written and the error why.
func Run(ctx context.Context, db *sql.DB, dst Target, opts Options) (*Report, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CAPIHelmNamespacePrefix == "" {
		opts.CAPIHelmNamespacePrefix = DefaultCAPIHelmNamespacePrefix
	}
	if opts.Unbuildable == nil {
		opts.Unbuildable = func(*model.ClusterTemplate) string { return "" }
	}
	src, err := read(ctx, db)
	if err != nil {
		return nil, err
	}
	return run(ctx, src, dst, opts)
}

// run imports src, read from Magnum's database, into dst.
func run(ctx context.Context, src *magnumDB, dst Target, opts Options) (*Report, error) {
	p, err := makePlan(ctx, src, dst, opts)
	if err != nil {
		return nil, err
	}
	p.report.DryRun = opts.DryRun
	if !opts.DryRun {
		err = p.apply(ctx, dst)
	}
	return &p.report, err
}

func (p *plan) add(r *Row) *Row {
	p.report.Rows = append(p.report.Rows, r)
	return r
}

func makePlan(ctx context.Context, src *magnumDB, dst Target, opts Options) (*plan, error) {
	p := &plan{certDir: opts.CertDir}
	at := opts.Now().UTC()
	// Templates the clusters may use: the imported ones and the ones
	// imported before, with whether Magnetite builds from them.
	usable := map[string]*model.ClusterTemplate{}
	for _, t := range src.Templates {
		row := p.add(&Row{Kind: "cluster template", ID: t.UUID, Name: t.Name, Project: t.ProjectID})
		existing, err := dst.GetClusterTemplateByUUID(ctx, t.UUID)
		switch {
		case err == nil && existing.Imported != nil:
			row.Outcome, row.Note = AlreadyImported, existing.UnsupportedReason()
			usable[t.UUID] = existing
			continue
		case err == nil:
			row.Outcome, row.Reason = Refused, "Magnetite has a cluster template with this UUID that was not imported from Magnum"
			continue
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		ct := templateOf(t)
		name, heat := magnumDriverOf(t)
		ct.Imported = &model.Imported{MagnumDriver: name, At: at}
		if heat {
			ct.Imported.Unsupported = fmt.Sprintf("Magnum's Heat driver %s built this template's clusters; Magnetite builds Cluster API clusters only and makes no new clusters from it", name)
		} else if why := opts.Unbuildable(ct); why != "" {
			ct.Imported.Unsupported = "Magnetite makes no new clusters from this template: " + why
		}
		row.Outcome, row.Note = Import, ct.Imported.Unsupported
		usable[t.UUID] = ct
		p.templates = append(p.templates, ct)
		p.tplRows = append(p.tplRows, row)
	}
	// Magnetite keeps a cluster's name unique in its project; Magnum did not.
	names := map[[2]string]string{}
	for _, c := range src.Clusters {
		if err := p.planCluster(ctx, src, dst, c, usable, names, at, opts); err != nil {
			return nil, err
		}
	}
	for _, q := range src.Quotas {
		if err := p.planQuota(ctx, dst, q); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *plan) planCluster(ctx context.Context, src *magnumDB, dst Target, c *magnumCluster, usable map[string]*model.ClusterTemplate, names map[[2]string]string, at time.Time, opts Options) error {
	name := deref(c.Name)
	row := p.add(&Row{Kind: "cluster", ID: c.UUID, Name: name, Project: c.ProjectID})
	existing, err := dst.GetClusterByUUID(ctx, c.UUID)
	switch {
	case err == nil && existing.Imported != nil:
		row.Outcome, row.Note = AlreadyImported, existing.ReadOnlyReason()
		for _, g := range src.NodeGroups[c.UUID] {
			gr := p.add(&Row{Kind: "node group", ID: g.UUID, Name: g.Name, Project: g.ProjectID, Outcome: AlreadyImported})
			if _, err := dst.GetNodeGroup(ctx, c.UUID, g.UUID); errors.Is(err, store.ErrNotFound) {
				gr.Outcome, gr.Reason = Refused, "Magnum made it after its cluster was imported; Magnetite adds no node groups to an imported cluster"
			} else if err != nil {
				return err
			}
		}
		p.planMissingCerts(ctx, src, dst, c)
		return nil
	case err == nil:
		row.Outcome, row.Reason = Refused, "Magnetite has a cluster with this UUID that was not imported from Magnum"
		return nil
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	ct, ok := usable[c.ClusterTemplateID]
	if !ok {
		row.Outcome, row.Reason = Refused, fmt.Sprintf("its cluster template %s is not imported (see that template's row)", c.ClusterTemplateID)
		return nil
	}
	key := [2]string{c.ProjectID, name}
	if other, dup := names[key]; dup {
		row.Outcome, row.Reason = Refused, fmt.Sprintf("cluster %s of the same project has the name %q too, and Magnetite keeps names unique in a project: rename one in Magnum and import again", other, name)
		return nil
	}
	if name != "" {
		if other, err := dst.GetCluster(ctx, store.Scope{ProjectID: c.ProjectID}, name); err == nil {
			row.Outcome, row.Reason = Refused, fmt.Sprintf("Magnetite has a cluster named %q in project %s already (%s)", name, c.ProjectID, other.UUID)
			return nil
		} else if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrAmbiguousName) {
			return err
		}
	}
	names[key] = c.UUID
	pc := &plannedCluster{row: row, cluster: clusterOf(c)}
	imported := &model.Imported{MagnumDriver: ct.Imported.MagnumDriver, At: at}
	if heatDriverName(imported.MagnumDriver) {
		imported.Unsupported = fmt.Sprintf("Imported from Magnum, read-only: Magnum's Heat driver %s built it (Heat stack %s), and Magnetite does not change Heat stacks.", imported.MagnumDriver, deref(c.StackID))
	} else if imported.Unsupported, err = p.foreignReason(ctx, c, src.NodeGroups[c.UUID], imported, opts); err != nil {
		return err
	}
	pc.cluster.Imported = imported
	reason := pc.cluster.Imported.Unsupported
	if a := pc.cluster.Adopted(); a != nil {
		reason = fmt.Sprintf("Adopted from %s: Magnetite observes, resizes and deletes its Cluster API objects (Cluster %s/%s) in place.", a.Driver, a.Namespace, a.Name)
		pc.adopt = true
	}
	if c.StatusReason != nil && *c.StatusReason != "" {
		reason += " Magnum's last status reason: " + *c.StatusReason
	}
	pc.cluster.StatusReason = &reason
	row.Outcome, row.Note = Import, pc.cluster.Imported.Unsupported
	if pc.adopt {
		row.Note = reason
	} else if pc.cluster.Status.InProgress() {
		// Nothing finishes the operation Magnum was running: Magnetite does
		// not change the cluster, and its conductor reports the status as
		// it finds it.
		row.Note += fmt.Sprintf(" Magnum's operation on it had not finished (%s): let Magnum finish it and import again.", pc.cluster.Status)
	}
	for _, g := range src.NodeGroups[c.UUID] {
		pc.nodeGroups = append(pc.nodeGroups, nodeGroupOf(g))
		pc.groupRows = append(pc.groupRows, p.add(&Row{Kind: "node group", ID: g.UUID, Name: g.Name, Project: g.ProjectID, Outcome: Import}))
	}
	if len(pc.nodeGroups) == 0 {
		row.Note += " Magnum kept no node groups for it, so it shows no node counts."
	}
	for _, ref := range caRefs(c) {
		cr := p.add(&Row{Kind: "certificate", ID: c.UUID + "/" + ref.purpose, Name: ref.what, Project: c.ProjectID})
		cert, err := caOf(src, c, ref, p.certDir)
		if err != nil {
			cr.Outcome, cr.Reason = Refused, err.Error()
			continue
		}
		cr.Outcome = Import
		pc.certs = append(pc.certs, cert)
		pc.certRows = append(pc.certRows, cr)
	}
	p.clusters = append(p.clusters, pc)
	return nil
}

// foreignReason is why a cluster a Magnum Cluster API driver built is
// read-only, after looking for its Cluster API objects where those drivers
// put them; a found Cluster is recorded for adoption.
func (p *plan) foreignReason(ctx context.Context, c *magnumCluster, groups []*magnumNodeGroup, imported *model.Imported, opts Options) (string, error) {
	stack := deref(c.StackID)
	if opts.Management == nil {
		return fmt.Sprintf("Imported from Magnum, read-only: a Magnum Cluster API driver made its Cluster API objects (%s); the import was not given the management cluster to find them ([management] kubeconfig).", stack), nil
	}
	found, looked, err := findForeignCluster(ctx, opts.Management, c, opts.CAPIHelmNamespacePrefix)
	if err != nil {
		return "", err
	}
	if found == nil {
		return fmt.Sprintf("Imported from Magnum, read-only: its Cluster API objects are not in the management cluster (no Cluster %s), so Magnetite cannot observe or change it.", strings.Join(looked, " or ")), nil
	}
	imported.ClusterAPI = found
	if imported.MagnumDriver == clusterAPIDriver {
		imported.MagnumDriver = found.Driver
	}
	problem, err := adoptionProblem(ctx, opts.Management, found, groups)
	if err != nil {
		return "", fmt.Errorf("read cluster %s's Cluster API objects: %w", c.UUID, err)
	}
	if problem != "" {
		found.NodeGroups = nil
		return fmt.Sprintf("Imported from Magnum, read-only: %s made its Cluster API objects (Cluster %s/%s in the management cluster), and Magnetite cannot change them safely: %s.", found.Driver, found.Namespace, found.Name, problem), nil
	}
	found.Adopted = true
	return "", nil
}

func heatDriverName(name string) bool {
	for _, d := range heatDrivers {
		if d == name {
			return true
		}
	}
	return false
}

// planMissingCerts adds the CAs of a cluster imported before that
// Magnetite does not hold yet and this run can read.
func (p *plan) planMissingCerts(ctx context.Context, src *magnumDB, dst Target, c *magnumCluster) {
	have := map[string]bool{}
	if held, err := dst.ClusterCertificates(ctx, c.UUID); err == nil {
		for _, h := range held {
			have[h.Purpose] = true
		}
	}
	for _, ref := range caRefs(c) {
		cr := p.add(&Row{Kind: "certificate", ID: c.UUID + "/" + ref.purpose, Name: ref.what, Project: c.ProjectID})
		if have[ref.purpose] {
			cr.Outcome = AlreadyImported
			continue
		}
		cert, err := caOf(src, c, ref, p.certDir)
		if err != nil {
			cr.Outcome, cr.Reason = Refused, err.Error()
			continue
		}
		cr.Outcome = Import
		p.addCerts = append(p.addCerts, cert)
		p.addCertRows = append(p.addCertRows, cr)
	}
}

func (p *plan) planQuota(ctx context.Context, dst Target, q *magnumQuota) error {
	row := p.add(&Row{Kind: "quota", ID: q.ProjectID + "/" + q.Resource, Name: fmt.Sprintf("hard limit %d", q.HardLimit), Project: q.ProjectID})
	if q.Resource != model.QuotaResourceCluster {
		row.Outcome, row.Reason = Refused, fmt.Sprintf("Magnetite has quotas for %s only", model.QuotaResourceCluster)
		return nil
	}
	existing, err := dst.GetQuota(ctx, q.ProjectID, q.Resource)
	switch {
	case err == nil && existing.HardLimit == q.HardLimit:
		row.Outcome = AlreadyImported
		return nil
	case err == nil:
		row.Outcome, row.Reason = Refused, fmt.Sprintf("Magnetite has its own quota for this project (hard limit %d) and keeps it", existing.HardLimit)
		return nil
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	row.Outcome = Import
	p.quotas = append(p.quotas, &model.Quota{ProjectID: q.ProjectID, Resource: q.Resource, HardLimit: q.HardLimit, CreatedAt: q.CreatedAt, UpdatedAt: q.UpdatedAt})
	p.quotaRows = append(p.quotaRows, row)
	return nil
}

// apply writes the plan in one transaction: templates, each cluster with
// its node groups, CAs and adoption, CAs of clusters imported before, then
// quotas (after the clusters, so a project Magnum let exceed its quota is
// imported whole). When the store refuses a row, nothing is written and
// every planned row is reported failed with the reason; the error names
// the row, and running the import again retries all of them.
func (p *plan) apply(ctx context.Context, dst Target) error {
	im := store.Import{Templates: p.templates, Certificates: p.addCerts, Quotas: p.quotas}
	for _, pc := range p.clusters {
		ch := store.ClusterChange{Cluster: pc.cluster, Create: true, QuotaLimit: math.MaxInt32,
			NodeGroups: pc.nodeGroups, Certificates: pc.certs}
		if pc.adopt {
			ch.Operation = &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterAdopt, ClusterID: pc.cluster.UUID,
				ProjectID: pc.cluster.ProjectID, State: model.OpPending}
		}
		im.Clusters = append(im.Clusters, ch)
	}
	err := dst.WriteImport(ctx, im)
	if err == nil {
		return nil
	}
	for _, r := range p.report.Rows {
		if r.Outcome == Import {
			r.Outcome, r.Reason = Failed, "not written: the store refused the import, see its error"
		}
	}
	return fmt.Errorf("nothing was imported: %w", err)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
