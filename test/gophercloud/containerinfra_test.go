// Package gophercloud_test drives a real Magnetite API server with
// gophercloud's container-infra packages, calling them the way Terraform's
// OpenStack provider does, at the microversions that change behaviour.
package gophercloud_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/apiversions"
	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/v1/certificates"
	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/v1/clusters"
	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/v1/clustertemplates"
	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/v1/nodegroups"
	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/v1/quotas"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// The microversions Terraform's provider sends (none = 1.1, 1.8 upgrade,
// 1.9 node groups, 1.10 zero node counts) and the newest one.
var microversions = []string{"1.1", "1.9", "1.10", "latest"}

// minor is the microversion's minor number as the server resolves it.
func minor(mv string) int {
	if mv == "latest" {
		return api.MaxVersion.Minor
	}
	_, after, _ := strings.Cut(mv, ".")
	n, err := strconv.Atoi(after)
	if err != nil {
		panic("bad microversion " + mv)
	}
	return n
}

// env is one server and a gophercloud client pinned to a microversion.
type env struct {
	t   *testing.T
	ctx context.Context
	srv *testapi.Server
	c   *gophercloud.ServiceClient
	mv  string
}

func newEnv(t *testing.T, mv string) *env {
	t.Helper()
	srv := testapi.Start(t)
	pc := &gophercloud.ProviderClient{}
	pc.SetToken("any-token-noauth-accepts")
	c := &gophercloud.ServiceClient{
		ProviderClient: pc,
		Endpoint:       srv.URL + "/v1/",
		Type:           "container-infrastructure-management",
		Microversion:   mv,
	}
	return &env{t: t, ctx: t.Context(), srv: srv, c: c, mv: mv}
}

func (e *env) atLeast(n int) bool { return minor(e.mv) >= n }

// magnumError is Magnum's error document.
type magnumError struct {
	Errors []struct {
		RequestID  string `json:"request_id"`
		Code       string `json:"code"`
		Status     int    `json:"status"`
		Title      string `json:"title"`
		Detail     string `json:"detail"`
		MinVersion string `json:"min_version"`
		MaxVersion string `json:"max_version"`
	} `json:"errors"`
}

// requireMagnumError checks that err is gophercloud's unexpected-response
// error carrying status and a well-formed Magnum error body whose detail
// contains want.
func requireMagnumError(t *testing.T, err error, status int, want string) magnumError {
	t.Helper()
	var ue gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &ue) {
		t.Fatalf("want a %d error, got %T: %v", status, err, err)
	}
	if ue.Actual != status {
		t.Fatalf("want status %d, got %d: %s", status, ue.Actual, ue.Body)
	}
	if ct := ue.ResponseHeader.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	var body magnumError
	if err := json.Unmarshal(ue.Body, &body); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, ue.Body)
	}
	if len(body.Errors) != 1 {
		t.Fatalf("want exactly one error item, got %s", ue.Body)
	}
	it := body.Errors[0]
	if it.Status != status || it.Title == "" || it.Detail == "" || it.Code == "" {
		t.Errorf("error item incomplete: %s", ue.Body)
	}
	if rid := ue.ResponseHeader.Get("X-Openstack-Request-Id"); rid == "" || it.RequestID != rid {
		t.Errorf("error request_id %q does not match the response header %q", it.RequestID, rid)
	}
	if !strings.Contains(it.Detail, want) {
		t.Errorf("error detail %q does not contain %q", it.Detail, want)
	}
	return body
}

// requireVersionRefused checks Magnum's 406 for a call the microversion does
// not have: the error body names the supported range and the response says
// what the server would accept.
func requireVersionRefused(t *testing.T, err error) {
	t.Helper()
	body := requireMagnumError(t, err, http.StatusNotAcceptable, "not supported")
	it := body.Errors[0]
	if it.MinVersion != api.MinVersion.String() || it.MaxVersion != api.MaxVersion.String() {
		t.Errorf("406 body range = [%s, %s], want [%s, %s]", it.MinVersion, it.MaxVersion, api.MinVersion, api.MaxVersion)
	}
	var ue gophercloud.ErrUnexpectedResponseCode
	errors.As(err, &ue)
	if got := ue.ResponseHeader.Get("OpenStack-API-Maximum-Version"); got != "container-infra "+api.MaxVersion.String() {
		t.Errorf("OpenStack-API-Maximum-Version = %q", got)
	}
}

// requireRecent checks a timestamp gophercloud parsed is set and plausible.
func requireRecent(t *testing.T, what string, ts time.Time) {
	t.Helper()
	if ts.IsZero() {
		t.Fatalf("%s is not set", what)
	}
	if d := time.Since(ts); d < -time.Minute || d > time.Minute {
		t.Errorf("%s = %v, not within a minute of now", what, ts)
	}
}

func requireSelfLink(t *testing.T, srv *testapi.Server, links []gophercloud.Link, path string) {
	t.Helper()
	for _, l := range links {
		if l.Rel == "self" {
			if want := srv.URL + "/v1/" + path; l.Href != want {
				t.Errorf("self link = %q, want %q", l.Href, want)
			}
			return
		}
	}
	t.Errorf("no self link in %+v", links)
}

func requireLabels(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s[%q] = %q, want %q (all: %v)", what, k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s = %v, want exactly %v", what, got, want)
	}
}

func ptr[T any](v T) *T { return &v }

// pageSizes walks a pager and returns the size of every page, so a test can
// see the server's next links were followed.
func pageSizes[T any](t *testing.T, ctx context.Context, p pagination.Pager, extract func(pagination.Page) ([]T, error)) ([]int, []T) {
	t.Helper()
	var sizes []int
	var all []T
	err := p.EachPage(ctx, func(_ context.Context, page pagination.Page) (bool, error) {
		items, err := extract(page)
		if err != nil {
			return false, err
		}
		sizes = append(sizes, len(items))
		all = append(all, items...)
		return true, nil
	})
	if err != nil {
		t.Fatalf("walk pages: %v", err)
	}
	return sizes, all
}

func TestGophercloudDrivesEveryContainerInfraCall(t *testing.T) {
	for _, mv := range microversions {
		t.Run("microversion="+mv, func(t *testing.T) {
			e := newEnv(t, mv)
			e.apiVersions()
			tmpl, next := e.clusterTemplates()
			cl := e.clusters(tmpl, next)
			e.nodeGroups(cl, next)
			e.certificates(cl)
			e.quotas()
			e.deletes(tmpl, cl)
		})
	}
}

func (e *env) apiVersions() {
	t := e.t
	pages, err := apiversions.List(e.c).AllPages(e.ctx)
	if err != nil {
		t.Fatalf("list API versions: %v", err)
	}
	vs, err := apiversions.ExtractAPIVersions(pages)
	if err != nil {
		t.Fatalf("extract API versions: %v", err)
	}
	want := apiversions.APIVersion{ID: "v1", Status: "CURRENT", MinVersion: api.MinVersion.String(), Version: api.MaxVersion.String()}
	if len(vs) != 1 || vs[0] != want {
		t.Fatalf("API versions = %+v, want [%+v]", vs, want)
	}
	v1, err := apiversions.Get(e.ctx, e.c, "v1").Extract()
	if err != nil {
		t.Fatalf("get API version v1: %v", err)
	}
	if *v1 != want {
		t.Errorf("API version v1 = %+v, want %+v", *v1, want)
	}
}

// clusterTemplates covers create, get, paged list, Terraform-style updates
// and delete. It returns a template for clusters and one to upgrade to.
func (e *env) clusterTemplates() (*clustertemplates.ClusterTemplate, *clustertemplates.ClusterTemplate) {
	t := e.t
	create := func(name, image, kubeTag string) *clustertemplates.ClusterTemplate {
		r := clustertemplates.Create(e.ctx, e.c, clustertemplates.CreateOpts{
			Name: name, COE: "kubernetes", ImageID: image, FlavorID: "m1.medium", MasterFlavorID: "m1.large",
			KeyPairID: "ops", ExternalNetworkID: "public", DNSNameServer: "8.8.8.8", NetworkDriver: "calico",
			DockerVolumeSize: ptr(20), APIServerPort: ptr(6443), ServerType: "vm",
			MasterLBEnabled: ptr(true), FloatingIPEnabled: ptr(false),
			Public: ptr(false), Hidden: ptr(false), RegistryEnabled: ptr(false), TLSDisabled: ptr(false),
			Labels: map[string]string{"kube_tag": kubeTag, "auto_healing_enabled": "true"},
		})
		ct, err := r.Extract()
		if err != nil {
			t.Fatalf("create template %s: %v", name, err)
		}
		if loc := r.Header.Get("Location"); loc != e.srv.URL+"/v1/clustertemplates/"+ct.UUID {
			t.Errorf("Location = %q", loc)
		}
		return ct
	}
	tmpl := create("k8s-v1.30", "ubuntu-2204-kube-v1.30.4", "v1.30.4")
	next := create("k8s-v1.31", "ubuntu-2204-kube-v1.31.1", "v1.31.1")
	spare := create("spare", "ubuntu-2204-kube-v1.29.8", "v1.29.8")

	got, err := clustertemplates.Get(e.ctx, e.c, tmpl.Name).Extract()
	if err != nil {
		t.Fatalf("get template by name: %v", err)
	}
	if got.UUID != tmpl.UUID || got.COE != "kubernetes" || got.ImageID != "ubuntu-2204-kube-v1.30.4" ||
		got.FlavorID != "m1.medium" || got.MasterFlavorID != "m1.large" || got.KeyPairID != "ops" ||
		got.ExternalNetworkID != "public" || got.DNSNameServer != "8.8.8.8" || got.NetworkDriver != "calico" ||
		got.DockerVolumeSize != 20 || got.APIServerPort != 6443 || got.ServerType != "vm" || !got.MasterLBEnabled ||
		got.FloatingIPEnabled || got.ClusterDistro != "ubuntu" || got.ProjectID != "default" || got.UserID != "admin" {
		t.Errorf("template as read back: %+v", got)
	}
	requireLabels(t, "template labels", got.Labels, map[string]string{"kube_tag": "v1.30.4", "auto_healing_enabled": "true"})
	requireRecent(t, "template created_at", got.CreatedAt)
	if !got.UpdatedAt.IsZero() {
		t.Errorf("new template has updated_at %v", got.UpdatedAt)
	}
	requireSelfLink(t, e.srv, got.Links, "clustertemplates/"+tmpl.UUID)

	// A limit smaller than the collection makes the server send next links;
	// the pager must follow them to the end without repeats.
	sizes, all := pageSizes(t, e.ctx, clustertemplates.List(e.c, clustertemplates.ListOpts{Limit: 2}), clustertemplates.ExtractClusterTemplates)
	if !slices.Equal(sizes, []int{2, 1}) {
		t.Errorf("template page sizes = %v, want [2 1]", sizes)
	}
	var names []string
	for _, ct := range all {
		names = append(names, ct.Name)
	}
	if !slices.Equal(names, []string{"k8s-v1.30", "k8s-v1.31", "spare"}) {
		t.Errorf("templates listed = %v", names)
	}
	page, err := e.firstPage(clustertemplates.List(e.c, clustertemplates.ListOpts{Limit: 2, SortKey: "name", SortDir: "desc"}))
	if err != nil {
		t.Fatalf("first template page: %v", err)
	}
	nextURL, err := page.(clustertemplates.ClusterTemplatePage).NextPageURL()
	if err != nil || !strings.HasPrefix(nextURL, e.srv.URL+"/v1/clustertemplates?") ||
		!strings.Contains(nextURL, "limit=2") || !strings.Contains(nextURL, "sort_key=name") || !strings.Contains(nextURL, "sort_dir=desc") {
		t.Errorf("next link = %q (%v)", nextURL, err)
	}

	// Terraform sends every changed attribute as replace, booleans as the
	// strings "true"/"false", labels as a dict literal string, and remove for
	// attributes emptied in the configuration.
	upd, err := clustertemplates.Update(e.ctx, e.c, spare.UUID, []clustertemplates.UpdateOptsBuilder{
		clustertemplates.UpdateOpts{Op: clustertemplates.ReplaceOp, Path: "/name", Value: "spare-renamed"},
		clustertemplates.UpdateOpts{Op: clustertemplates.ReplaceOp, Path: "/labels", Value: "{'kube_tag':'v1.29.9','monitoring_enabled':'true'}"},
		clustertemplates.UpdateOpts{Op: clustertemplates.ReplaceOp, Path: "/public", Value: "true"},
		clustertemplates.UpdateOpts{Op: clustertemplates.ReplaceOp, Path: "/master_lb_enabled", Value: "false"},
		clustertemplates.UpdateOpts{Op: clustertemplates.ReplaceOp, Path: "/apiserver_port", Value: 8443},
		clustertemplates.UpdateOpts{Op: clustertemplates.ReplaceOp, Path: "/docker_volume_size", Value: 50},
		clustertemplates.UpdateOpts{Op: clustertemplates.RemoveOp, Path: "/dns_nameserver"},
		clustertemplates.UpdateOpts{Op: clustertemplates.AddOp, Path: "/http_proxy", Value: "http://proxy.example.com:3128"},
	}).Extract()
	if err != nil {
		t.Fatalf("update template: %v", err)
	}
	if upd.Name != "spare-renamed" || !upd.Public || upd.MasterLBEnabled || upd.APIServerPort != 8443 ||
		upd.DockerVolumeSize != 50 || upd.DNSNameServer != "" || upd.HTTPProxy != "http://proxy.example.com:3128" {
		t.Errorf("updated template: %+v", upd)
	}
	requireLabels(t, "updated template labels", upd.Labels, map[string]string{"kube_tag": "v1.29.9", "monitoring_enabled": "true"})
	requireRecent(t, "template updated_at", upd.UpdatedAt)
	if upd.UpdatedAt.Before(upd.CreatedAt) {
		t.Errorf("updated_at %v before created_at %v", upd.UpdatedAt, upd.CreatedAt)
	}
	// A label added with a number value comes back as a string.
	upd, err = clustertemplates.Update(e.ctx, e.c, spare.UUID, []clustertemplates.UpdateOpts{
		{Op: clustertemplates.AddOp, Path: "/labels/max_pods", Value: 110},
	}).Extract()
	if err != nil {
		t.Fatalf("add a label: %v", err)
	}
	if upd.Labels["max_pods"] != "110" || upd.Labels["kube_tag"] != "v1.29.9" {
		t.Errorf("labels after add = %v", upd.Labels)
	}
	_, err = clustertemplates.Update(e.ctx, e.c, spare.UUID, []clustertemplates.UpdateOpts{
		{Op: clustertemplates.RemoveOp, Path: "/image_id"},
	}).Extract()
	requireMagnumError(t, err, http.StatusBadRequest, "/image_id")

	if err := clustertemplates.Delete(e.ctx, e.c, spare.UUID).ExtractErr(); err != nil {
		t.Fatalf("delete template: %v", err)
	}
	_, err = clustertemplates.Get(e.ctx, e.c, spare.UUID).Extract()
	requireMagnumError(t, err, http.StatusNotFound, spare.UUID)
	return tmpl, next
}

func (e *env) firstPage(p pagination.Pager) (pagination.Page, error) {
	var first pagination.Page
	err := p.EachPage(e.ctx, func(_ context.Context, page pagination.Page) (bool, error) {
		first = page
		return false, nil
	})
	return first, err
}

// getCluster reads a cluster and also returns the raw document, for fields
// gophercloud's struct does not have.
func (e *env) getCluster(id string) (*clusters.Cluster, map[string]any) {
	e.t.Helper()
	r := clusters.Get(e.ctx, e.c, id)
	c, err := r.Extract()
	if err != nil {
		e.t.Fatalf("get cluster %s: %v", id, err)
	}
	if got := r.Header.Get("OpenStack-API-Version"); got != "container-infra "+versionString(e.mv) {
		e.t.Errorf("OpenStack-API-Version = %q for microversion %s", got, e.mv)
	}
	raw, _ := r.Body.(map[string]any)
	return c, raw
}

func versionString(mv string) string {
	if mv == "latest" {
		return api.MaxVersion.String()
	}
	return mv
}

func (e *env) createCluster(opts clusters.CreateOpts) string {
	e.t.Helper()
	id, err := clusters.Create(e.ctx, e.c, opts).Extract()
	if err != nil {
		e.t.Fatalf("create cluster %s: %v", opts.Name, err)
	}
	if len(id) != 36 {
		e.t.Fatalf("create cluster returned uuid %q", id)
	}
	return id
}

// clusters covers create, get, list, detail list, update, resize and
// upgrade, and returns the id of the cluster the node group steps use.
func (e *env) clusters(tmpl, next *clustertemplates.ClusterTemplate) string {
	t := e.t
	id := e.createCluster(clusters.CreateOpts{
		Name: "prod", ClusterTemplateID: tmpl.UUID, MasterCount: ptr(1), NodeCount: ptr(2),
		CreateTimeout: ptr(90), MergeLabels: ptr(true),
		Labels: map[string]string{"kube_tag": "v1.30.5", "team": "platform"},
	})
	c, raw := e.getCluster(id)
	if c.UUID != id || c.Name != "prod" || c.Status != "CREATE_IN_PROGRESS" || c.NodeCount != 2 || c.MasterCount != 1 ||
		c.ClusterTemplateID != tmpl.UUID || c.KeyPair != "ops" || c.FlavorID != "m1.medium" || c.MasterFlavorID != "m1.large" ||
		c.CreateTimeout != 90 || c.DockerVolumeSize != 20 || !c.MasterLBEnabled || c.FloatingIPEnabled ||
		c.ProjectID != "default" || c.UserID != "admin" || c.StatusReason == "" || c.HealthStatus != "" {
		t.Errorf("new cluster: %+v", c)
	}
	requireLabels(t, "cluster labels", c.Labels, map[string]string{"kube_tag": "v1.30.5", "auto_healing_enabled": "true", "team": "platform"})
	requireLabels(t, "labels_overridden", c.LabelsOverridden, map[string]string{"kube_tag": "v1.30.4"})
	requireLabels(t, "labels_added", c.LabelsAdded, map[string]string{"team": "platform"})
	requireLabels(t, "labels_skipped", c.LabelsSkipped, map[string]string{})
	if c.HealthStatusReason == nil || len(c.HealthStatusReason) != 0 {
		t.Errorf("health_status_reason = %#v, want {}", c.HealthStatusReason)
	}
	if c.NodeAddresses == nil || c.MasterAddresses == nil {
		t.Errorf("addresses should be empty lists, not null: %v %v", c.NodeAddresses, c.MasterAddresses)
	}
	requireRecent(t, "cluster created_at", c.CreatedAt)
	if !c.UpdatedAt.IsZero() {
		t.Errorf("new cluster has updated_at %v", c.UpdatedAt)
	}
	requireSelfLink(t, e.srv, c.Links, "clusters/"+id)
	// stack_id up to 1.12, cluster_id from 1.13: gophercloud only knows
	// stack_id, so the raw document says which one was sent.
	_, hasStack := raw["stack_id"]
	clusterID, hasClusterID := raw["cluster_id"]
	if e.atLeast(13) {
		if hasStack || !hasClusterID || clusterID == "" || c.StackID != "" {
			t.Errorf("at %s want cluster_id only: stack_id present=%v cluster_id=%v", e.mv, hasStack, clusterID)
		}
	} else if !hasStack || hasClusterID || c.StackID == "" {
		t.Errorf("at %s want stack_id only: stack_id=%q cluster_id present=%v", e.mv, c.StackID, hasClusterID)
	}

	// node_count 0 needs 1.10 (Terraform raises the microversion for it).
	zero := clusters.CreateOpts{Name: "empty", ClusterTemplateID: tmpl.Name, NodeCount: ptr(0)}
	if e.atLeast(10) {
		zid := e.createCluster(zero)
		if z, _ := e.getCluster(zid); z.NodeCount != 0 || z.MasterCount != 1 {
			t.Errorf("zero-node cluster counts = %d/%d", z.NodeCount, z.MasterCount)
		}
	} else {
		_, err := clusters.Create(e.ctx, e.c, zero).Extract()
		requireMagnumError(t, err, http.StatusBadRequest, "1.10")
		zero.NodeCount = nil
		e.createCluster(zero)
	}
	e.createCluster(clusters.CreateOpts{Name: "staging", ClusterTemplateID: tmpl.UUID})

	sizes, summaries := pageSizes(t, e.ctx, clusters.List(e.c, clusters.ListOpts{Limit: 2}), clusters.ExtractClusters)
	if !slices.Equal(sizes, []int{2, 1}) || len(summaries) != 3 || summaries[0].UUID != id {
		t.Errorf("cluster pages = %v, %d clusters listed", sizes, len(summaries))
	}
	if s := summaries[0]; s.NodeCount != 2 || s.MasterCount != 1 || s.Status != "CREATE_IN_PROGRESS" ||
		s.Labels["team"] != "platform" || s.CreateTimeout != 90 || s.KeyPair != "ops" {
		t.Errorf("cluster summary: %+v", s)
	}
	_, after := pageSizes(t, e.ctx, clusters.List(e.c, clusters.ListOpts{Marker: id, SortDir: "asc"}), clusters.ExtractClusters)
	if len(after) != 2 || after[0].Name != "empty" || after[1].Name != "staging" {
		t.Errorf("clusters after marker: %+v", after)
	}
	sizes, details := pageSizes(t, e.ctx, clusters.ListDetail(e.c, clusters.ListOpts{Limit: 2}), clusters.ExtractClusters)
	if !slices.Equal(sizes, []int{2, 1}) || len(details) != 3 {
		t.Errorf("cluster detail pages = %v", sizes)
	}
	if d := details[0]; d.UUID != id || d.ProjectID != "default" || d.LabelsAdded["team"] != "platform" ||
		d.LabelsOverridden["kube_tag"] != "v1.30.4" || d.CreatedAt.IsZero() {
		t.Errorf("cluster detail: %+v", d)
	}

	// Terraform resizes the default worker with a node_count replace.
	uid, err := clusters.Update(e.ctx, e.c, id, []clusters.UpdateOpts{
		{Op: clusters.ReplaceOp, Path: "/node_count", Value: 3},
	}).Extract()
	if err != nil || uid != id {
		t.Fatalf("update node_count: %q %v", uid, err)
	}
	c, _ = e.getCluster(id)
	if c.NodeCount != 3 || c.Status != "CREATE_IN_PROGRESS" {
		t.Errorf("after node_count update: count %d status %s", c.NodeCount, c.Status)
	}
	requireRecent(t, "cluster updated_at", c.UpdatedAt)
	_, err = clusters.Update(e.ctx, e.c, id, []clusters.UpdateOpts{
		{Op: clusters.ReplaceOp, Path: "/node_count", Value: 0},
	}).Extract()
	if e.atLeast(10) {
		if err != nil {
			t.Errorf("node_count 0 at %s: %v", e.mv, err)
		}
		if c, _ = e.getCluster(id); c.NodeCount != 0 {
			t.Errorf("node_count after update to 0 = %d", c.NodeCount)
		}
	} else {
		requireMagnumError(t, err, http.StatusBadRequest, "1.10")
	}
	_, err = clusters.Update(e.ctx, e.c, id, []clusters.UpdateOpts{
		{Op: clusters.ReplaceOp, Path: "/master_count", Value: 3},
	}).Extract()
	requireMagnumError(t, err, http.StatusBadRequest, "master_count")

	// Health is reported through the same PATCH (what the conductor's
	// health monitor does in Magnum).
	_, err = clusters.Update(e.ctx, e.c, id, []clusters.UpdateOpts{
		{Op: clusters.ReplaceOp, Path: "/health_status", Value: "UNHEALTHY"},
		{Op: clusters.ReplaceOp, Path: "/health_status_reason", Value: map[string]string{"api": "ok", "default-worker": "2 of 3 nodes ready"}},
	}).Extract()
	if err != nil {
		t.Fatalf("update health: %v", err)
	}
	c, _ = e.getCluster(id)
	if c.HealthStatus != "UNHEALTHY" || c.HealthStatusReason["api"] != "ok" || c.HealthStatusReason["default-worker"] != "2 of 3 nodes ready" {
		t.Errorf("health after update: %q %v", c.HealthStatus, c.HealthStatusReason)
	}
	_, err = clusters.Update(e.ctx, e.c, id, []clusters.UpdateOpts{
		{Op: clusters.ReplaceOp, Path: "/health_status", Value: "GREEN"},
	}).Extract()
	requireMagnumError(t, err, http.StatusBadRequest, "health_status")

	// Resize and upgrade are actions from 1.7 and 1.8.
	_, rerr := clusters.Resize(e.ctx, e.c, id, clusters.ResizeOpts{NodeCount: ptr(4)}).Extract()
	_, uerr := clusters.Upgrade(e.ctx, e.c, id, clusters.UpgradeOpts{ClusterTemplate: next.UUID}).Extract()
	if !e.atLeast(8) {
		requireVersionRefused(t, rerr)
		requireVersionRefused(t, uerr)
		return id
	}
	if rerr != nil {
		t.Fatalf("resize: %v", rerr)
	}
	if uerr != nil {
		t.Fatalf("upgrade: %v", uerr)
	}
	c, _ = e.getCluster(id)
	if c.NodeCount != 4 || c.ClusterTemplateID != next.UUID {
		t.Errorf("after resize and upgrade: node_count %d template %s", c.NodeCount, c.ClusterTemplateID)
	}
	_, err = clusters.Upgrade(e.ctx, e.c, id, clusters.UpgradeOpts{ClusterTemplate: "no-such-template"}).Extract()
	requireMagnumError(t, err, http.StatusNotFound, "no-such-template")
	_, err = clusters.Resize(e.ctx, e.c, id, clusters.ResizeOpts{NodeCount: ptr(1), NodeGroup: "no-such-group"}).Extract()
	requireMagnumError(t, err, http.StatusNotFound, "no-such-group")
	return id
}

// nodeGroups covers the node group calls Terraform's nodegroup resource
// makes at 1.9 (and 1.10 for zero nodes), and their refusal before 1.9.
func (e *env) nodeGroups(clusterID string, next *clustertemplates.ClusterTemplate) {
	t := e.t
	create := nodegroups.CreateOpts{
		Name: "gpu-pool", Role: "gpu", NodeCount: ptr(2), MinNodeCount: 1, MaxNodeCount: ptr(5),
		FlavorID: "g1.large", DockerVolumeSize: ptr(80), MergeLabels: ptr(true),
		Labels: map[string]string{"gpu": "true"},
	}
	if !e.atLeast(9) {
		_, err := nodegroups.List(e.c, clusterID, nil).AllPages(e.ctx)
		requireVersionRefused(t, err)
		_, err = nodegroups.Get(e.ctx, e.c, clusterID, "default-worker").Extract()
		requireVersionRefused(t, err)
		_, err = nodegroups.Create(e.ctx, e.c, clusterID, create).Extract()
		requireVersionRefused(t, err)
		_, err = nodegroups.Update(e.ctx, e.c, clusterID, "default-worker", []nodegroups.UpdateOpts{
			{Op: nodegroups.ReplaceOp, Path: "/min_node_count", Value: 1},
		}).Extract()
		requireVersionRefused(t, err)
		requireVersionRefused(t, nodegroups.Delete(e.ctx, e.c, clusterID, "default-worker").ExtractErr())
		return
	}

	pages, err := nodegroups.List(e.c, clusterID, nil).AllPages(e.ctx)
	if err != nil {
		t.Fatalf("list node groups: %v", err)
	}
	defaults, err := nodegroups.ExtractNodeGroups(pages)
	if err != nil {
		t.Fatalf("extract node groups: %v", err)
	}
	// Terraform reads node_count from the default worker this way.
	var worker *nodegroups.NodeGroup
	for i, ng := range defaults {
		if ng.IsDefault && ng.Role != "master" {
			worker = &defaults[i]
		}
	}
	if len(defaults) != 2 || worker == nil || worker.Name != "default-worker" || worker.NodeCount != 4 ||
		worker.ImageID != next.ImageID || worker.Status != "CREATE_IN_PROGRESS" {
		t.Fatalf("default node groups: %+v", defaults)
	}

	r := nodegroups.Create(e.ctx, e.c, clusterID, create)
	ng, err := r.Extract()
	if err != nil {
		t.Fatalf("create node group: %v", err)
	}
	if ng.ID <= 0 || len(ng.UUID) != 36 || ng.Name != "gpu-pool" || ng.ClusterID != clusterID || ng.ProjectID != "default" ||
		ng.Role != "gpu" || ng.NodeCount != 2 || ng.MinNodeCount != 1 || ng.MaxNodeCount == nil || *ng.MaxNodeCount != 5 ||
		ng.FlavorID != "g1.large" || ng.ImageID != next.ImageID || ng.DockerVolumeSize == nil || *ng.DockerVolumeSize != 80 ||
		ng.IsDefault || ng.Status != "CREATE_IN_PROGRESS" || ng.NodeAddresses == nil {
		t.Errorf("created node group: %+v", ng)
	}
	// The cluster was upgraded to next, which moved its kube_tag to next's.
	requireLabels(t, "node group labels", ng.Labels, map[string]string{
		"kube_tag": "v1.31.1", "auto_healing_enabled": "true", "team": "platform", "gpu": "true"})
	requireLabels(t, "node group labels_added", ng.LabelsAdded, map[string]string{"gpu": "true"})
	requireRecent(t, "node group created_at", ng.CreatedAt)
	requireSelfLink(t, e.srv, ng.Links, "clusters/"+clusterID+"/nodegroups/"+ng.UUID)
	_, err = nodegroups.Create(e.ctx, e.c, clusterID, create).Extract()
	requireMagnumError(t, err, http.StatusConflict, "gpu-pool")
	spare := nodegroups.CreateOpts{Name: "spare", NodeCount: ptr(0)}
	if e.atLeast(10) {
		if sp, err := nodegroups.Create(e.ctx, e.c, clusterID, spare).Extract(); err != nil || sp.NodeCount != 0 || sp.Role != "worker" {
			t.Errorf("zero-node node group: %+v %v", sp, err)
		}
	} else {
		_, err = nodegroups.Create(e.ctx, e.c, clusterID, spare).Extract()
		requireMagnumError(t, err, http.StatusBadRequest, "1.10")
		spare.NodeCount = nil
		if _, err := nodegroups.Create(e.ctx, e.c, clusterID, spare).Extract(); err != nil {
			t.Errorf("create spare node group: %v", err)
		}
	}

	for _, ident := range []string{ng.UUID, ng.Name} {
		got, err := nodegroups.Get(e.ctx, e.c, clusterID, ident).Extract()
		if err != nil || got.UUID != ng.UUID || !got.CreatedAt.Equal(ng.CreatedAt) {
			t.Errorf("get node group %s: %+v %v", ident, got, err)
		}
	}
	_, err = nodegroups.Get(e.ctx, e.c, clusterID, "no-such-group").Extract()
	requireMagnumError(t, err, http.StatusNotFound, "no-such-group")

	// The role filter, paged one at a time so the next link must keep it.
	sizes, workers := pageSizes(t, e.ctx, nodegroups.List(e.c, clusterID, nodegroups.ListOpts{Role: "worker", Limit: 1}), nodegroups.ExtractNodeGroups)
	if len(workers) != 2 || workers[0].Name != "default-worker" || workers[1].Name != "spare" || slices.Max(sizes) != 1 {
		t.Errorf("worker node groups by page %v: %+v", sizes, workers)
	}
	_, gpus := pageSizes(t, e.ctx, nodegroups.List(e.c, clusterID, nodegroups.ListOpts{Role: "gpu"}), nodegroups.ExtractNodeGroups)
	if len(gpus) != 1 || gpus[0].UUID != ng.UUID {
		t.Errorf("gpu node groups: %+v", gpus)
	}
	// gophercloud's node group marker is the numeric id (Magnum also takes
	// a UUID or name).
	master, err := nodegroups.Get(e.ctx, e.c, clusterID, "default-master").Extract()
	if err != nil || master.ID <= 0 {
		t.Fatalf("get default-master: %+v %v", master, err)
	}
	for _, opts := range []nodegroups.ListOpts{{Marker: master.ID}, {Marker: master.ID, Limit: 2}} {
		_, after := pageSizes(t, e.ctx, nodegroups.List(e.c, clusterID, opts), nodegroups.ExtractNodeGroups)
		var names []string
		for _, a := range after {
			names = append(names, a.Name)
		}
		if !slices.Equal(names, []string{"default-worker", "gpu-pool", "spare"}) {
			t.Errorf("node groups after marker %d (limit %d) = %v", master.ID, opts.Limit, names)
		}
	}
	_, err = nodegroups.List(e.c, clusterID, nodegroups.ListOpts{Marker: 999999}).AllPages(e.ctx)
	requireMagnumError(t, err, http.StatusBadRequest, "999999")

	// Terraform's nodegroup update: replace the bounds, remove
	// max_node_count when it is set to 0, resize through the cluster action.
	upd, err := nodegroups.Update(e.ctx, e.c, clusterID, ng.UUID, []nodegroups.UpdateOpts{
		{Op: nodegroups.ReplaceOp, Path: "/min_node_count", Value: 2},
		{Op: nodegroups.ReplaceOp, Path: "/max_node_count", Value: 6},
	}).Extract()
	if err != nil || upd.MinNodeCount != 2 || upd.MaxNodeCount == nil || *upd.MaxNodeCount != 6 || upd.UpdatedAt.IsZero() {
		t.Errorf("update node group bounds: %+v %v", upd, err)
	}
	upd, err = nodegroups.Update(e.ctx, e.c, clusterID, ng.UUID, []nodegroups.UpdateOpts{
		{Op: nodegroups.RemoveOp, Path: "/max_node_count"},
	}).Extract()
	if err != nil || upd.MaxNodeCount != nil {
		t.Errorf("remove max_node_count: %+v %v", upd, err)
	}
	_, err = nodegroups.Update(e.ctx, e.c, clusterID, ng.UUID, []nodegroups.UpdateOpts{
		{Op: nodegroups.ReplaceOp, Path: "/min_node_count", Value: 3},
	}).Extract()
	requireMagnumError(t, err, http.StatusConflict, "min_node_count")
	_, err = nodegroups.Update(e.ctx, e.c, clusterID, ng.UUID, []nodegroups.UpdateOpts{
		{Op: nodegroups.ReplaceOp, Path: "/node_count", Value: 3},
	}).Extract()
	requireMagnumError(t, err, http.StatusBadRequest, "node_count")
	if _, err := clusters.Resize(e.ctx, e.c, clusterID, clusters.ResizeOpts{NodeCount: ptr(3), NodeGroup: ng.UUID}).Extract(); err != nil {
		t.Fatalf("resize node group: %v", err)
	}
	if got, err := nodegroups.Get(e.ctx, e.c, clusterID, ng.UUID).Extract(); err != nil || got.NodeCount != 3 {
		t.Errorf("node group after resize: %+v %v", got, err)
	}

	requireMagnumError(t, nodegroups.Delete(e.ctx, e.c, clusterID, "default-worker").ExtractErr(), http.StatusBadRequest, "default")
	if err := nodegroups.Delete(e.ctx, e.c, clusterID, ng.UUID).ExtractErr(); err != nil {
		t.Fatalf("delete node group: %v", err)
	}
	if got, err := nodegroups.Get(e.ctx, e.c, clusterID, ng.UUID).Extract(); err != nil || got.Status != "DELETE_IN_PROGRESS" {
		t.Errorf("node group after delete: %+v %v", got, err)
	}
}

// certificates are what Terraform's cluster resource reads and signs to
// build a kubeconfig. The routes come with the conductor; until then the
// server must answer with a Magnum-format 404 that gophercloud reports
// cleanly.
func (e *env) certificates(clusterID string) {
	t := e.t
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))

	ca, err := certificates.Get(e.ctx, e.c, clusterID).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		requireMagnumError(t, err, http.StatusNotFound, "certificates")
		_, err = certificates.Create(e.ctx, e.c, certificates.CreateOpts{ClusterUUID: clusterID, CSR: csr}).Extract()
		requireMagnumError(t, err, http.StatusNotFound, "certificates")
		requireMagnumError(t, certificates.Update(e.ctx, e.c, clusterID).ExtractErr(), http.StatusNotFound, "certificates")
		return
	}
	if err != nil {
		t.Fatalf("get CA certificate: %v", err)
	}
	if ca.ClusterUUID != clusterID || !strings.Contains(ca.PEM, "BEGIN CERTIFICATE") {
		t.Errorf("CA certificate: %+v", ca)
	}
	signed, err := certificates.Create(e.ctx, e.c, certificates.CreateOpts{ClusterUUID: clusterID, CSR: csr}).Extract()
	if err != nil {
		t.Fatalf("sign CSR: %v", err)
	}
	block, _ := pem.Decode([]byte(signed.PEM))
	if block == nil {
		t.Fatalf("signed certificate is not PEM: %q", signed.PEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("signed certificate: %v", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) || signed.ClusterUUID != clusterID {
		t.Errorf("signed certificate is not for the CSR's key or cluster: %+v", signed)
	}
	// Rotation is refused with Magnum's error body, as Magnum refuses it
	// for drivers that cannot roll a cluster onto a new CA.
	requireMagnumError(t, certificates.Update(e.ctx, e.c, clusterID).ExtractErr(), http.StatusBadRequest, "Rotating the CA certificate is not supported")
}

// quotas: gophercloud has Create only; get, update, list and delete go
// through the same client with gophercloud's Quotas type decoding them.
func (e *env) quotas() {
	t := e.t
	q, err := quotas.Create(e.ctx, e.c, quotas.CreateOpts{ProjectID: "tenant-a", Resource: "Cluster", HardLimit: 3}).Extract()
	if err != nil {
		t.Fatalf("create quota: %v", err)
	}
	if q.ID == "" || q.ProjectID != "tenant-a" || q.Resource != "Cluster" || q.HardLimit != 3 || !q.UpdatedAt.IsZero() {
		t.Errorf("created quota: %+v", q)
	}
	requireRecent(t, "quota created_at", q.CreatedAt)
	_, err = quotas.Create(e.ctx, e.c, quotas.CreateOpts{ProjectID: "tenant-a", Resource: "Cluster", HardLimit: 4}).Extract()
	requireMagnumError(t, err, http.StatusConflict, "tenant-a")

	quotaURL := e.c.ServiceURL("quotas", "tenant-a", "Cluster")
	get := func() *quotas.Quotas {
		t.Helper()
		var r gophercloud.Result
		resp, err := e.c.Get(e.ctx, quotaURL, &r.Body, nil)
		_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
		var got quotas.Quotas
		if err := r.ExtractInto(&got); err != nil {
			t.Fatalf("get quota: %v", err)
		}
		return &got
	}
	if got := get(); got.ID != q.ID || got.HardLimit != 3 || !got.CreatedAt.Equal(q.CreatedAt) {
		t.Errorf("quota read back: %+v", got)
	}

	var r gophercloud.Result
	resp, err := e.c.Patch(e.ctx, quotaURL, map[string]any{"project_id": "tenant-a", "resource": "Cluster", "hard_limit": 5},
		&r.Body, &gophercloud.RequestOpts{OkCodes: []int{202}})
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
	var upd quotas.Quotas
	if err := r.ExtractInto(&upd); err != nil || upd.HardLimit != 5 {
		t.Fatalf("update quota: %+v %v", upd, err)
	}
	requireRecent(t, "quota updated_at", upd.UpdatedAt)

	var list struct {
		Quotas []quotas.Quotas `json:"quotas"`
	}
	lr := gophercloud.Result{}
	resp, err = e.c.Get(e.ctx, e.c.ServiceURL("quotas")+"?all_tenants=True", &lr.Body, nil)
	_, lr.Header, lr.Err = gophercloud.ParseResponse(resp, err)
	if err := lr.ExtractInto(&list); err != nil || len(list.Quotas) != 1 || list.Quotas[0].HardLimit != 5 || list.Quotas[0].ID != q.ID {
		t.Errorf("list quotas: %+v %v", list, err)
	}

	resp, err = e.c.Delete(e.ctx, quotaURL, nil)
	if _, _, err := gophercloud.ParseResponse(resp, err); err != nil {
		t.Fatalf("delete quota: %v", err)
	}
	// Without a row the project is back on the default limit.
	if got := get(); got.ID != "" || got.HardLimit != 20 || !got.CreatedAt.IsZero() {
		t.Errorf("quota after delete: %+v", got)
	}
}

// deletes removes a cluster and checks a template in use cannot go.
func (e *env) deletes(tmpl *clustertemplates.ClusterTemplate, clusterID string) {
	t := e.t
	if err := clusters.Delete(e.ctx, e.c, clusterID).ExtractErr(); err != nil {
		t.Fatalf("delete cluster: %v", err)
	}
	if c, _ := e.getCluster(clusterID); c.Status != "DELETE_IN_PROGRESS" {
		t.Errorf("cluster after delete: %s", c.Status)
	}
	_, err := clusters.Update(e.ctx, e.c, clusterID, []clusters.UpdateOpts{
		{Op: clusters.ReplaceOp, Path: "/node_count", Value: 2},
	}).Extract()
	requireMagnumError(t, err, http.StatusConflict, "DELETE_IN_PROGRESS")
	requireMagnumError(t, clustertemplates.Delete(e.ctx, e.c, tmpl.UUID).ExtractErr(), http.StatusBadRequest, tmpl.UUID)
	_, err = clusters.Get(e.ctx, e.c, "no-such-cluster").Extract()
	requireMagnumError(t, err, http.StatusNotFound, "no-such-cluster")
}
