package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

var quotaSchema = newSchema("quota",
	str("project_id", 1, 255),
	field{name: "resource", kind: kEnum, enum: []string{model.QuotaResourceCluster}},
	integer("hard_limit", 0, 0),
	readOnly("id"), readOnly("created_at"), readOnly("updated_at"),
)

func quotaView(q *model.Quota) apitypes.Quota {
	out := apitypes.Quota{ID: q.ID, ProjectID: q.ProjectID, Resource: q.Resource, HardLimit: q.HardLimit,
		UpdatedAt: timePtrString(q.UpdatedAt)}
	if !q.CreatedAt.IsZero() {
		c := timeString(q.CreatedAt)
		out.CreatedAt = &c
	}
	return out
}

func (s *Server) listQuotas(w http.ResponseWriter, r *http.Request) error {
	p, err := s.authorizeList(r, "quota:get_all")
	if err != nil {
		return err
	}
	id := identity(r)
	project := id.ProjectID
	if v := r.URL.Query().Get("all_tenants"); v != "" {
		all, err := toBool(v)
		if err != nil {
			return badRequest("Invalid input for query parameter all_tenants: expected true or false.")
		}
		if all && s.isAdmin(r) {
			project = ""
		}
	}
	qs, err := s.st.ListQuotas(r.Context(), project, p.ListOptions)
	if err != nil {
		return err
	}
	out := apitypes.QuotaList{Quotas: make([]apitypes.Quota, 0, len(qs))}
	for _, q := range qs {
		out.Quotas = append(out.Quotas, quotaView(q))
	}
	if len(qs) > 0 {
		out.Next = nextLink(r, "quotas", p, len(qs), strconv.FormatInt(qs[len(qs)-1].ID, 10))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getQuota(w http.ResponseWriter, r *http.Request) error {
	project, resource := r.PathValue("project"), r.PathValue("resource")
	if err := s.authorize(r, "quota:get", &auth.Target{ProjectID: project}); err != nil {
		return forbidden("Not authorized to read the quotas of project %s (policy quota:get).", project)
	}
	q, err := s.st.GetQuota(r.Context(), project, resource)
	if errors.Is(err, store.ErrNotFound) {
		if resource != model.QuotaResourceCluster {
			return notFound("Quota %s could not be found for project %s; the only quota resource is Cluster.", resource, project)
		}
		writeJSON(w, http.StatusOK, apitypes.Quota{ProjectID: project, Resource: model.QuotaResourceCluster, HardLimit: s.opts.DefaultClusterQuota})
		return nil
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, quotaView(q))
	return nil
}

// quotaRequest asks the policy for action and reads the quota in the body.
func (s *Server) quotaRequest(r *http.Request, action string) (map[string]any, error) {
	if err := s.authorize(r, action, nil); err != nil {
		return nil, err
	}
	return requestValues(r, quotaSchema)
}

func (s *Server) createQuota(w http.ResponseWriter, r *http.Request) error {
	vals, err := s.quotaRequest(r, "quota:create")
	if err != nil {
		return err
	}
	project, _ := vals["project_id"].(string)
	if project == "" {
		return badRequest("Must provide a valid project ID.")
	}
	q := &model.Quota{ProjectID: project, Resource: model.QuotaResourceCluster, HardLimit: 1, CreatedAt: time.Now().UTC()}
	if res, ok := vals["resource"].(string); ok {
		q.Resource = res
	}
	if hl, ok := vals["hard_limit"].(int); ok {
		q.HardLimit = hl
	}
	if err := s.st.CreateQuota(r.Context(), q); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, quotaView(q))
	return nil
}

func (s *Server) updateQuota(w http.ResponseWriter, r *http.Request) error {
	vals, err := s.quotaRequest(r, "quota:update")
	if err != nil {
		return err
	}
	project, resource := r.PathValue("project"), r.PathValue("resource")
	q, err := s.st.GetQuota(r.Context(), project, resource)
	if err != nil {
		return err
	}
	hl, ok := vals["hard_limit"].(int)
	if !ok {
		return badRequest("Invalid input for field/attribute hard_limit. Value: null. Mandatory field missing.")
	}
	t := time.Now().UTC()
	q.HardLimit, q.UpdatedAt = hl, &t
	if err := s.st.UpdateQuota(r.Context(), q); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, quotaView(q))
	return nil
}

func (s *Server) deleteQuota(w http.ResponseWriter, r *http.Request) error {
	if err := s.authorize(r, "quota:delete", nil); err != nil {
		return err
	}
	if err := s.st.DeleteQuota(r.Context(), r.PathValue("project"), r.PathValue("resource")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getStats(w http.ResponseWriter, r *http.Request) error {
	if err := s.authorize(r, "stats:get_all", nil); err != nil {
		return err
	}
	q := r.URL.Query()
	if typ := q.Get("type"); typ != "" && typ != "cluster" {
		return badRequest("Invalid stats type. Allowed values are 'cluster'")
	}
	id := identity(r)
	project := q.Get("project_id")
	sc := store.Scope{ProjectID: project}
	switch {
	case !s.isAdmin(r):
		if project == "" {
			sc.ProjectID = id.ProjectID
		} else if project != id.ProjectID {
			return s.opts.Policy.Authorize(id, "stats:get_all", &auth.Target{ProjectID: project})
		}
	case project == "":
		sc.AllProjects = true
	}
	st, err := s.st.ClusterStats(r.Context(), sc)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Stats{Clusters: st.Clusters, Nodes: st.Nodes})
	return nil
}

func (s *Server) listServices(w http.ResponseWriter, r *http.Request) error {
	if err := s.authorize(r, "magnum-service:get_all", nil); err != nil {
		return err
	}
	svcs, err := s.st.ListServices(r.Context())
	if err != nil {
		return err
	}
	out := apitypes.ServiceList{MServices: make([]apitypes.Service, 0, len(svcs))}
	for _, sv := range svcs {
		state := "down"
		if store.ServiceUp(sv, s.opts.ServiceDownAfter) {
			state = "up"
		}
		out.MServices = append(out.MServices, apitypes.Service{
			ID: sv.ID, Host: sv.Host, Binary: sv.Binary, State: state, ReportCount: sv.ReportCount,
			Disabled: sv.Disabled, DisabledReason: sv.DisabledReason, CreatedAt: timeString(sv.CreatedAt), UpdatedAt: timePtrString(sv.UpdatedAt),
		})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
