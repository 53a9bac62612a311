package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/magnetite-io/magnetite/internal/apitypes"
)

// ListOptions are Magnum's pagination parameters. A zero Limit walks every
// page; a set Limit returns that one page.
type ListOptions struct {
	Limit   int
	SortKey string
	SortDir string
	// Extra carries further query parameters (role, all_tenants).
	Extra url.Values
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	for k, v := range o.Extra {
		q[k] = v
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.SortKey != "" {
		q.Set("sort_key", o.SortKey)
	}
	if o.SortDir != "" {
		q.Set("sort_dir", o.SortDir)
	}
	return q
}

// PatchOp is one operation of a JSON patch (RFC 6902) as Magnum takes it.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// listAll follows "next" links until the last page, or returns the first
// page when a limit was asked for.
func listAll[P any, T any](ctx context.Context, c *Client, path string, o ListOptions, items func(*P) []T, next func(*P) string) ([]T, error) {
	out := []T{} // an empty listing prints as [], not null
	target, q := path, o.query()
	for {
		var page P
		if err := c.do(ctx, "GET", target, q, nil, &page); err != nil {
			return nil, err
		}
		out = append(out, items(&page)...)
		n := next(&page)
		if o.Limit > 0 || n == "" || len(items(&page)) == 0 {
			return out, nil
		}
		target, q = n, nil
	}
}

func esc(s string) string { return url.PathEscape(s) }

// Cluster templates.

// ListTemplates lists the cluster templates the caller can see, in detail.
func (c *Client) ListTemplates(ctx context.Context, o ListOptions) ([]apitypes.ClusterTemplate, error) {
	return listAll(ctx, c, "/clustertemplates/detail", o,
		func(p *apitypes.ClusterTemplateList) []apitypes.ClusterTemplate { return p.ClusterTemplates },
		func(p *apitypes.ClusterTemplateList) string { return p.Next })
}

// GetTemplate finds a template by UUID or name.
func (c *Client) GetTemplate(ctx context.Context, ident string) (*apitypes.ClusterTemplate, error) {
	var t apitypes.ClusterTemplate
	return &t, c.do(ctx, "GET", "/clustertemplates/"+esc(ident), nil, nil, &t)
}

// CreateTemplate creates a template from the fields given.
func (c *Client) CreateTemplate(ctx context.Context, fields map[string]any) (*apitypes.ClusterTemplate, error) {
	var t apitypes.ClusterTemplate
	return &t, c.do(ctx, "POST", "/clustertemplates", nil, fields, &t)
}

// UpdateTemplate patches a template.
func (c *Client) UpdateTemplate(ctx context.Context, ident string, patch []PatchOp) (*apitypes.ClusterTemplate, error) {
	var t apitypes.ClusterTemplate
	return &t, c.do(ctx, "PATCH", "/clustertemplates/"+esc(ident), nil, patch, &t)
}

// DeleteTemplate deletes a template no cluster uses.
func (c *Client) DeleteTemplate(ctx context.Context, ident string) error {
	return c.do(ctx, "DELETE", "/clustertemplates/"+esc(ident), nil, nil, nil)
}

// Clusters.

// ListClusters lists clusters in their short form.
func (c *Client) ListClusters(ctx context.Context, o ListOptions) ([]apitypes.ClusterSummary, error) {
	return listAll(ctx, c, "/clusters", o,
		func(p *apitypes.ClusterList[apitypes.ClusterSummary]) []apitypes.ClusterSummary { return p.Clusters },
		func(p *apitypes.ClusterList[apitypes.ClusterSummary]) string { return p.Next })
}

// GetCluster finds a cluster by UUID or name.
func (c *Client) GetCluster(ctx context.Context, ident string) (*apitypes.Cluster, error) {
	var cl apitypes.Cluster
	return &cl, c.do(ctx, "GET", "/clusters/"+esc(ident), nil, nil, &cl)
}

// CreateCluster asks for a cluster and returns its UUID; the cluster is
// built in the background.
func (c *Client) CreateCluster(ctx context.Context, fields map[string]any) (string, error) {
	var id apitypes.ClusterID
	err := c.do(ctx, "POST", "/clusters", nil, fields, &id)
	return id.UUID, err
}

// UpdateCluster patches a cluster (node_count, health fields).
func (c *Client) UpdateCluster(ctx context.Context, ident string, patch []PatchOp) (string, error) {
	var id apitypes.ClusterID
	err := c.do(ctx, "PATCH", "/clusters/"+esc(ident), nil, patch, &id)
	return id.UUID, err
}

// ResizeRequest is the body of actions/resize.
type ResizeRequest struct {
	NodeCount     int      `json:"node_count"`
	NodesToRemove []string `json:"nodes_to_remove,omitempty"`
	NodeGroup     string   `json:"nodegroup,omitempty"`
}

// ResizeCluster changes the node count of a node group (default-worker
// unless named).
func (c *Client) ResizeCluster(ctx context.Context, ident string, req ResizeRequest) (string, error) {
	var id apitypes.ClusterID
	err := c.do(ctx, "POST", "/clusters/"+esc(ident)+"/actions/resize", nil, req, &id)
	return id.UUID, err
}

// UpgradeRequest is the body of actions/upgrade.
type UpgradeRequest struct {
	ClusterTemplate string `json:"cluster_template"`
	MaxBatchSize    int    `json:"max_batch_size,omitempty"`
	NodeGroup       string `json:"nodegroup,omitempty"`
}

// UpgradeCluster moves a cluster (or one node group) to another template.
func (c *Client) UpgradeCluster(ctx context.Context, ident string, req UpgradeRequest) (string, error) {
	var id apitypes.ClusterID
	err := c.do(ctx, "POST", "/clusters/"+esc(ident)+"/actions/upgrade", nil, req, &id)
	return id.UUID, err
}

// RebaseCluster moves a cluster adopted from magnum-cluster-api onto
// Magnetite's own ClusterClass (a Magnetite action).
func (c *Client) RebaseCluster(ctx context.Context, ident string) (string, error) {
	var id apitypes.ClusterID
	err := c.do(ctx, "POST", "/clusters/"+esc(ident)+"/actions/rebase", nil, struct{}{}, &id)
	return id.UUID, err
}

// RotateCredential gives a cluster a new application credential, made
// with the caller's token; the old one is deleted once the cluster uses the
// new one (PATCH /v1/credentials, 1.12).
func (c *Client) RotateCredential(ctx context.Context, ident string) (string, error) {
	var id apitypes.ClusterID
	err := c.do(ctx, "PATCH", "/credentials/"+esc(ident), nil, nil, &id)
	return id.UUID, err
}

// DeleteCluster asks for a cluster's deletion.
func (c *Client) DeleteCluster(ctx context.Context, ident string) error {
	return c.do(ctx, "DELETE", "/clusters/"+esc(ident), nil, nil, nil)
}

// EventQuery narrows ListEvents: events at or after Since (RFC 3339) and
// after the event with id Marker.
type EventQuery struct {
	Since  string
	Marker int64
}

// ListEvents returns a cluster's history, oldest first (a Magnetite
// extension of the v1 API).
func (c *Client) ListEvents(ctx context.Context, ident string, q EventQuery) ([]apitypes.ClusterEvent, error) {
	v := url.Values{}
	if q.Since != "" {
		v.Set("since", q.Since)
	}
	if q.Marker > 0 {
		v.Set("marker", strconv.FormatInt(q.Marker, 10))
	}
	return listAll(ctx, c, "/clusters/"+esc(ident)+"/events", ListOptions{Extra: v},
		func(p *apitypes.ClusterEventList) []apitypes.ClusterEvent { return p.Events },
		func(p *apitypes.ClusterEventList) string { return p.Next })
}

// ClusterCA returns the cluster's CA certificate.
func (c *Client) ClusterCA(ctx context.Context, ident string) (*apitypes.Certificate, error) {
	var cert apitypes.Certificate
	return &cert, c.do(ctx, "GET", "/certificates/"+esc(ident), nil, nil, &cert)
}

// SignCertificate has the cluster CA sign a CSR (PEM).
func (c *Client) SignCertificate(ctx context.Context, clusterUUID, csrPEM string) (*apitypes.Certificate, error) {
	var cert apitypes.Certificate
	body := map[string]string{"cluster_uuid": clusterUUID, "csr": csrPEM}
	return &cert, c.do(ctx, "POST", "/certificates", nil, body, &cert)
}

// Node groups.

// ListNodeGroups lists a cluster's node groups in their short form.
func (c *Client) ListNodeGroups(ctx context.Context, cluster string, o ListOptions) ([]apitypes.NodeGroupSummary, error) {
	return listAll(ctx, c, "/clusters/"+esc(cluster)+"/nodegroups", o,
		func(p *apitypes.NodeGroupList) []apitypes.NodeGroupSummary { return p.NodeGroups },
		func(p *apitypes.NodeGroupList) string { return p.Next })
}

// GetNodeGroup finds a node group by UUID, name or id.
func (c *Client) GetNodeGroup(ctx context.Context, cluster, ident string) (*apitypes.NodeGroup, error) {
	var ng apitypes.NodeGroup
	return &ng, c.do(ctx, "GET", "/clusters/"+esc(cluster)+"/nodegroups/"+esc(ident), nil, nil, &ng)
}

// CreateNodeGroup adds a node group to a cluster.
func (c *Client) CreateNodeGroup(ctx context.Context, cluster string, fields map[string]any) (*apitypes.NodeGroup, error) {
	var ng apitypes.NodeGroup
	return &ng, c.do(ctx, "POST", "/clusters/"+esc(cluster)+"/nodegroups", nil, fields, &ng)
}

// UpdateNodeGroup patches a node group.
func (c *Client) UpdateNodeGroup(ctx context.Context, cluster, ident string, patch []PatchOp) (*apitypes.NodeGroup, error) {
	var ng apitypes.NodeGroup
	return &ng, c.do(ctx, "PATCH", "/clusters/"+esc(cluster)+"/nodegroups/"+esc(ident), nil, patch, &ng)
}

// DeleteNodeGroup removes a node group.
func (c *Client) DeleteNodeGroup(ctx context.Context, cluster, ident string) error {
	return c.do(ctx, "DELETE", "/clusters/"+esc(cluster)+"/nodegroups/"+esc(ident), nil, nil, nil)
}

// Quotas, stats and services.

// ListQuotas lists quotas (every project's with allProjects, for admins).
func (c *Client) ListQuotas(ctx context.Context, o ListOptions, allProjects bool) ([]apitypes.Quota, error) {
	if allProjects {
		o.Extra = url.Values{"all_tenants": {"true"}}
	}
	return listAll(ctx, c, "/quotas", o,
		func(p *apitypes.QuotaList) []apitypes.Quota { return p.Quotas },
		func(p *apitypes.QuotaList) string { return p.Next })
}

// GetQuota returns a project's quota on a resource.
func (c *Client) GetQuota(ctx context.Context, project, resource string) (*apitypes.Quota, error) {
	var q apitypes.Quota
	return &q, c.do(ctx, "GET", "/quotas/"+esc(project)+"/"+esc(resource), nil, nil, &q)
}

// CreateQuota sets a project's hard limit on a resource.
func (c *Client) CreateQuota(ctx context.Context, project, resource string, hardLimit int) (*apitypes.Quota, error) {
	var q apitypes.Quota
	body := map[string]any{"project_id": project, "resource": resource, "hard_limit": hardLimit}
	return &q, c.do(ctx, "POST", "/quotas", nil, body, &q)
}

// UpdateQuota changes a project's hard limit on a resource.
func (c *Client) UpdateQuota(ctx context.Context, project, resource string, hardLimit int) (*apitypes.Quota, error) {
	var q apitypes.Quota
	body := map[string]any{"project_id": project, "resource": resource, "hard_limit": hardLimit}
	return &q, c.do(ctx, "PATCH", "/quotas/"+esc(project)+"/"+esc(resource), nil, body, &q)
}

// DeleteQuota removes a project's quota on a resource (the default applies
// again).
func (c *Client) DeleteQuota(ctx context.Context, project, resource string) error {
	return c.do(ctx, "DELETE", "/quotas/"+esc(project)+"/"+esc(resource), nil, nil, nil)
}

// Stats counts clusters and nodes, of one project when project is set.
func (c *Client) Stats(ctx context.Context, project string) (*apitypes.Stats, error) {
	var st apitypes.Stats
	q := url.Values{}
	if project != "" {
		q.Set("project_id", project)
	}
	return &st, c.do(ctx, "GET", "/stats", q, nil, &st)
}

// ListServices lists the Magnetite processes and whether they are up.
func (c *Client) ListServices(ctx context.Context) ([]apitypes.Service, error) {
	l := apitypes.ServiceList{MServices: []apitypes.Service{}}
	err := c.do(ctx, "GET", "/mservices", nil, nil, &l)
	return l.MServices, err
}
