package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/jsonpatch"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Magnum's bay-era resources: /v1/baymodels and /v1/bays are cluster templates
// and clusters under the names Magnum gave them first, which Magnum 15 still
// serves and older clients (and Magnum's own API tests) use. They are the
// same rows, checked by the same code and governed by the same policy rules
// (clustertemplate:* and cluster:*); only the wire format differs: the
// collection and link names, a few renamed fields (baymodel_id,
// bay_create_timeout, bay_faults), the fields bays and baymodels never had,
// and the answers of Magnum's bay controller (a synchronous create answered
// 201 with the bay at microversion 1.1).

// family is how a route names templates and clusters.
type family struct {
	templates, clusters string // collections under /v1
	bay                 bool
}

var (
	currentNames = &family{templates: "clustertemplates", clusters: "clusters"}
	bayEraNames  = &family{templates: "baymodels", clusters: "bays", bay: true}
)

type familyKey struct{}

// bayEra serves h under the bay-era names.
func bayEra(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		return h(w, r.WithContext(context.WithValue(r.Context(), familyKey{}, bayEraNames)))
	}
}

// familyOf is the names the request's route uses.
func familyOf(r *http.Request) *family {
	if f, ok := r.Context().Value(familyKey{}).(*family); ok {
		return f
	}
	return currentNames
}

func (s *Server) bayEraRoutes() {
	s.handleCollection(bayEraNames.templates, s.templateCollection(), bayEra)
	s.handleCollection(bayEraNames.clusters, s.clusterCollection(), bayEra)
}

// subSchema is the fields of from the names list, renamed by rename (a
// name it lacks is the same in both), for the resource called resource.
func subSchema(resource string, from schema, rename map[string]string, names ...string) schema {
	sch := newSchema(resource)
	for _, n := range names {
		orig, ok := rename[n]
		if !ok {
			orig = n
		}
		f, ok := from.fields[orig]
		if !ok {
			panic("api: " + from.resource + " has no field " + orig)
		}
		f.name = n
		sch.fields[n] = f
	}
	return sch
}

// A baymodel has every template field but driver, project_id and user_id.
var bayModelSchema = func() schema {
	var names []string
	for n := range templateSchema.fields {
		if n != "driver" && n != "project_id" && n != "user_id" {
			names = append(names, n)
		}
	}
	return subSchema("baymodel", templateSchema, nil, names...)
}()

// bayToCluster renames a bay's fields to the cluster's.
var bayToCluster = map[string]string{
	"baymodel_id": "cluster_template_id", "bay_create_timeout": "create_timeout", "bay_faults": "faults",
}

// A bay has the fields of Magnum's bay controller, and at least one node at
// every microversion.
var baySchema = func() schema {
	sch := subSchema("bay", clusterSchema, bayToCluster,
		"name", "baymodel_id", "node_count", "master_count", "docker_volume_size", "labels", "master_flavor_id",
		"flavor_id", "bay_create_timeout", "discovery_url", "fixed_network", "fixed_subnet", "floating_ip_enabled",
		"master_lb_enabled", "uuid", "links", "stack_id", "status", "status_reason", "api_address", "coe_version",
		"container_version", "node_addresses", "master_addresses", "bay_faults", "created_at", "updated_at")
	sch.fields["node_count"] = integer("node_count", 1, maxNodes)
	return sch
}()

// bayUpdatable is clusterUpdatable with a bay's node_count minimum.
var bayUpdatable = func() map[string]field {
	m := make(map[string]field, len(clusterUpdatable))
	for k, f := range clusterUpdatable {
		m[k] = f
	}
	m["node_count"] = baySchema.fields["node_count"]
	return m
}()

func (f *family) templateSchema() schema {
	if f.bay {
		return bayModelSchema
	}
	return templateSchema
}

// templateMandatory are the fields a new template must have; Magnum's
// baymodels also need keypair_id.
func (f *family) templateMandatory() []string {
	if f.bay {
		return []string{"coe", "image_id", "keypair_id"}
	}
	return []string{"coe", "image_id"}
}

// templateNonRemovable are the paths a template PATCH may not remove.
func (f *family) templateNonRemovable() []string {
	if f.bay {
		return append([]string{"/keypair_id"}, templateNonRemovableAttrs...)
	}
	return templateNonRemovableAttrs
}

func bayModelView(r *http.Request, ct *model.ClusterTemplate) apitypes.BayModel {
	return apitypes.BayModel{TemplateFields: templateFields(r, ct, "baymodels")}
}

func (f *family) templateView(s *Server, r *http.Request, ct *model.ClusterTemplate) any {
	if f.bay {
		return bayModelView(r, ct)
	}
	return s.templateView(r, ct)
}

func (s *Server) baySummary(r *http.Request, c *model.Cluster, sh clusterShape) apitypes.BaySummary {
	return apitypes.BaySummary{
		ClusterFields: clusterFields(c, sh), BayModelID: c.ClusterTemplateID, BayCreateTimeout: c.CreateTimeout,
		StackID: c.StackID, Links: toAPILinks(resourceLinks(baseURL(r), "bays", c.UUID)),
	}
}

func (s *Server) bayDetail(r *http.Request, c *model.Cluster, sh clusterShape) apitypes.Bay {
	return apitypes.Bay{BaySummary: s.baySummary(r, c, sh), ClusterDetailFields: clusterDetailFields(c, sh), BayFaults: faultsOf(c, sh)}
}

func (f *family) clusterSummary(s *Server, r *http.Request, c *model.Cluster, sh clusterShape) any {
	if f.bay {
		return s.baySummary(r, c, sh)
	}
	return s.clusterSummary(r, c, sh)
}

func (f *family) clusterDetail(s *Server, r *http.Request, c *model.Cluster, sh clusterShape, parentLabels map[string]string) any {
	if f.bay {
		return s.bayDetail(r, c, sh)
	}
	return s.clusterDetail(r, c, sh, parentLabels)
}

// clusterValues validates a cluster create body and returns its values
// under the cluster's names. A bay's baymodel_id is resolved here, as
// Magnum's bay controller resolves it while reading the body: a baymodel
// that does not exist is a 400 at every microversion.
func (f *family) clusterValues(s *Server, r *http.Request) (map[string]any, error) {
	if !f.bay {
		return requestValues(r, clusterSchema, "cluster_template_id")
	}
	vals, err := requestValues(r, baySchema, "baymodel_id")
	if err != nil {
		return nil, err
	}
	ident := vals["baymodel_id"].(string)
	ct, err := s.lookupTemplate(r, ident)
	if isNotFound(err) {
		return nil, badRequest("ClusterTemplate %s could not be found.", ident)
	}
	if err != nil {
		return nil, err
	}
	vals["baymodel_id"] = ct.UUID
	out := make(map[string]any, len(vals))
	for k, x := range vals {
		if c, ok := bayToCluster[k]; ok {
			k = c
		}
		out[k] = x
	}
	return out, nil
}

// clusterPatch renames a bay PATCH's paths to the cluster's fields.
func (f *family) clusterPatch(ops []jsonpatch.Operation) []jsonpatch.Operation {
	if !f.bay {
		return ops
	}
	for i, o := range ops {
		top, rest, _ := strings.Cut(o.Path[1:], "/")
		if c, ok := bayToCluster[top]; ok {
			ops[i].Path = "/" + c
			if rest != "" {
				ops[i].Path += "/" + rest
			}
		}
	}
	return ops
}

func (f *family) updatable() map[string]field {
	if f.bay {
		return bayUpdatable
	}
	return clusterUpdatable
}

// writeQueued answers a create (status 201) or an update (200) of cluster
// c, whose work has been queued. Clusters and bays from microversion 1.2
// get 202 and the uuid; a bay at 1.1, as Magnum created it synchronously,
// gets the bay itself.
func (f *family) writeQueued(s *Server, w http.ResponseWriter, r *http.Request, c *model.Cluster, status int) error {
	if !f.bay || versionOf(r.Context()).AtLeast(2) {
		writeJSON(w, http.StatusAccepted, apitypes.ClusterID{UUID: c.UUID})
		return nil
	}
	ngs, err := s.st.NodeGroupsOf(r.Context(), []string{c.UUID})
	if err != nil {
		return err
	}
	if status == http.StatusCreated {
		w.Header().Set("Location", baseURL(r)+"/v1/bays/"+c.UUID)
	}
	writeJSON(w, status, s.bayDetail(r, c, shapeOf(ngs[c.UUID])))
	return nil
}
