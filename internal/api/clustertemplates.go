package api

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/jsonpatch"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// Supported values, as Magnum's Kubernetes validator lists them.
var (
	supportedCOEs           = []string{"kubernetes"}
	supportedServerTypes    = []string{"vm", "bm"}
	supportedNetworkDrivers = []string{"calico", "cilium", "flannel"}
	supportedVolumeDrivers  = []string{"cinder"}
)

var templateSchema = newSchema("cluster_template",
	str("name", 1, 255),
	field{name: "coe", kind: kEnum, enum: supportedCOEs},
	str("image_id", 1, 255),
	str("flavor_id", 1, 255),
	str("master_flavor_id", 1, 255),
	str("dns_nameserver", 1, 255),
	str("keypair_id", 1, 255),
	str("external_network_id", 1, 255),
	str("fixed_network", 1, 255),
	str("fixed_subnet", 1, 255),
	field{name: "network_driver", kind: kEnum, enum: supportedNetworkDrivers},
	field{name: "volume_driver", kind: kEnum, enum: supportedVolumeDrivers},
	integer("apiserver_port", 1024, 65535),
	integer("docker_volume_size", 1, 0),
	str("docker_storage_driver", 1, 255),
	str("cluster_distro", 1, 255),
	field{name: "labels", kind: kLabels},
	str("http_proxy", 1, 255),
	str("https_proxy", 1, 255),
	str("no_proxy", 1, 255),
	boolean("registry_enabled"),
	boolean("tls_disabled"),
	boolean("public"),
	boolean("hidden"),
	field{name: "server_type", kind: kEnum, enum: supportedServerTypes},
	str("insecure_registry", 1, 255),
	boolean("master_lb_enabled"),
	boolean("floating_ip_enabled"),
	str("tags", 0, 255),
	str("driver", 1, 255),
	readOnly("uuid"), readOnly("project_id"), readOnly("user_id"), readOnly("links"),
	readOnly("created_at"), readOnly("updated_at"),
)

// Patch rules for templates (Magnum's ClusterTemplatePatchType).
var (
	internalAttrs             = []string{"/created_at", "/id", "/links", "/updated_at", "/uuid", "/project_id", "/user_id"}
	templateNonRemovableAttrs = []string{"/coe", "/image_id", "/network_driver", "/external_network_id", "/tls_disabled",
		"/public", "/server_type", "/registry_enabled", "/cluster_distro", "/hidden"}
)

func timeString(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05-07:00") }

func timePtrString(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timeString(*t)
	return &s
}

// templateFields are the fields a template shows under both its names,
// linked under collection (clustertemplates or baymodels).
func templateFields(r *http.Request, ct *model.ClusterTemplate, collection string) apitypes.TemplateFields {
	spec := ct.TemplateSpec
	if spec.Labels == nil {
		spec.Labels = map[string]string{}
	}
	return apitypes.TemplateFields{
		UUID: ct.UUID, Name: ct.Name, TemplateSpec: spec,
		CreatedAt: timeString(ct.CreatedAt), UpdatedAt: timePtrString(ct.UpdatedAt),
		Links: toAPILinks(resourceLinks(baseURL(r), collection, ct.UUID)),
	}
}

func (s *Server) templateView(r *http.Request, ct *model.ClusterTemplate) apitypes.ClusterTemplate {
	return apitypes.ClusterTemplate{
		TemplateFields: templateFields(r, ct, "clustertemplates"),
		Driver:         ct.Driver, ProjectID: ct.ProjectID, UserID: ct.UserID,
	}
}

func toAPILinks(ls []Link) []apitypes.Link {
	out := make([]apitypes.Link, len(ls))
	for i, l := range ls {
		out[i] = apitypes.Link{Href: l.Href, Rel: l.Rel, Type: l.Type}
	}
	return out
}

func (s *Server) templateScope(r *http.Request) store.TemplateScope {
	id := identity(r)
	return store.TemplateScope{ProjectID: id.ProjectID, IsAdmin: s.isAdmin(r)}
}

func (s *Server) listClusterTemplates(detail bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.authorizeList(r, listAction("clustertemplate", detail))
		if err != nil {
			return err
		}
		sc := s.templateScope(r)
		view := store.Scope{ProjectID: sc.ProjectID, AllProjects: sc.IsAdmin}
		return s.servePage(w, r, view, "", templatePages, func(dst []byte) ([]byte, error) {
			rows, err := s.st.StoredClusterTemplates(r.Context(), sc, p.ListOptions)
			if err != nil {
				return nil, err
			}
			return appendCollectionPage(dst, r, familyOf(r).templates, detail, p, rows, newTemplateWriter(r).appendTo)
		})
	}
}

// lookupTemplate resolves a template the caller can see. Hidden templates of
// other projects are invisible to non-admins.
func (s *Server) lookupTemplate(r *http.Request, ident string) (*model.ClusterTemplate, error) {
	ct, err := s.st.GetClusterTemplate(r.Context(), s.templateScope(r), ident)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound("ClusterTemplate %s could not be found.", ident)
	}
	if err != nil {
		return nil, err
	}
	if !s.templateVisible(r, ct.ProjectID, ct.Hidden) {
		return nil, notFound("ClusterTemplate %s could not be found.", ident)
	}
	return ct, nil
}

// templateVisible hides other projects' hidden templates from non-admins.
func (s *Server) templateVisible(r *http.Request, projectID string, hidden bool) bool {
	return !hidden || s.isAdmin(r) || projectID == identity(r).ProjectID
}

func (s *Server) getClusterTemplate(w http.ResponseWriter, r *http.Request) error {
	ident := r.PathValue("ident")
	row, err := s.st.StoredClusterTemplate(r.Context(), s.templateScope(r), ident)
	if errors.Is(err, store.ErrNotFound) || err == nil && !s.templateVisible(r, row.ProjectID, row.Hidden) {
		return notFound("ClusterTemplate %s could not be found.", ident)
	}
	if err != nil {
		return err
	}
	if err := s.authorize(r, "clustertemplate:get", &auth.Target{ProjectID: row.ProjectID, Public: row.Public}); err != nil {
		return err
	}
	tw := newTemplateWriter(r)
	return writeBuilt(w, http.StatusOK, func(dst []byte) ([]byte, error) { return tw.appendTo(dst, row) })
}

func (s *Server) createClusterTemplate(w http.ResponseWriter, r *http.Request) error {
	if err := s.authorize(r, "clustertemplate:create", nil); err != nil {
		return err
	}
	fam := familyOf(r)
	vals, err := requestValues(r, fam.templateSchema(), fam.templateMandatory()...)
	if err != nil {
		return err
	}
	id := identity(r)
	t := time.Now().UTC()
	ct := &model.ClusterTemplate{
		TemplateSpec: model.TemplateSpec{ServerType: model.ServerTypeVM, FloatingIPEnabled: true, Labels: map[string]string{}},
	}
	if err := into(vals, ct); err != nil {
		return badRequest("The cluster template is invalid: %v", err)
	}
	ct.UUID = uuid.NewString()
	ct.ProjectID, ct.UserID = id.ProjectID, id.UserID
	ct.CreatedAt, ct.UpdatedAt = t, nil
	if ct.Name == "" {
		ct.Name = generateName("template")
	}
	if ct.Labels == nil {
		ct.Labels = map[string]string{}
	}
	if ct.Public || ct.Hidden {
		if err := s.authorize(r, "clustertemplate:publish", nil); err != nil {
			return forbidden("Not authorized to set public or hidden flag for cluster template.")
		}
	}
	if err := validateTemplate(ct); err != nil {
		return err
	}
	found, err := s.checkResources(r, templateRefs(ct))
	if err != nil {
		return err
	}
	if ct.ClusterDistro == nil && found.OSDistro != "" {
		ct.ClusterDistro = &found.OSDistro
	}
	if ct.ClusterDistro == nil {
		ct.ClusterDistro = distroFromImageName(ct.ImageID)
	}
	if err := s.checkTemplate(ct); err != nil {
		return err
	}
	if err := s.st.CreateClusterTemplate(r.Context(), ct); err != nil {
		return err
	}
	w.Header().Set("Location", baseURL(r)+"/v1/"+fam.templates+"/"+ct.UUID)
	writeJSON(w, http.StatusCreated, fam.templateView(s, r, ct))
	return nil
}

// validateTemplate applies the cross-field rules of a whole template.
func validateTemplate(ct *model.ClusterTemplate) error {
	if ct.DNSNameserver != nil {
		for _, part := range strings.Split(*ct.DNSNameserver, ",") {
			if net.ParseIP(strings.TrimSpace(part)) == nil {
				return badRequest("Invalid input for field/attribute dns_nameserver. Value: %q. Expected a comma-separated list of IP addresses.", *ct.DNSNameserver)
			}
		}
	}
	if ct.DockerStorageDriver != nil && *ct.DockerStorageDriver == "devicemapper" {
		if ct.DockerVolumeSize == nil || *ct.DockerVolumeSize < 3 {
			size := "null"
			if ct.DockerVolumeSize != nil {
				size = fmt.Sprint(*ct.DockerVolumeSize)
			}
			return badRequest("docker volume size %s GB is not valid, expecting minimum value 3GB for devicemapper storage", size)
		}
	}
	for _, p := range []struct {
		name string
		v    *string
	}{{"http_proxy", ct.HTTPProxy}, {"https_proxy", ct.HTTPSProxy}} {
		if p.v != nil && !proxyRE.MatchString(*p.v) {
			return badRequest("Invalid input for field/attribute %s. Value: %q. Expected a URL such as http://proxy.example.com:3128.", p.name, *p.v)
		}
	}
	return nil
}

var proxyRE = regexp.MustCompile(`^(https?|socks5h?)://[^\s/]+(:\d+)?(/\S*)?$`)

// distroFromImageName guesses os_distro from a well-known image naming
// habit ("ubuntu-2204-kube-v1.30.4") when no Glance facts are available.
// Only an unambiguous match counts.
func distroFromImageName(image string) *string {
	lower := strings.ToLower(image)
	var found []string
	for _, d := range []string{"ubuntu", "flatcar", "rockylinux", "debian", "fedora-coreos", "fedora-atomic"} {
		if strings.Contains(lower, d) {
			found = append(found, d)
		}
	}
	if len(found) == 1 {
		return &found[0]
	}
	return nil
}

func (s *Server) updateClusterTemplate(w http.ResponseWriter, r *http.Request) error {
	// A body that is no JSON patch is refused before the template is looked
	// up, as Magnum validates the request body first.
	fam := familyOf(r)
	ops, err := requestPatch(r, internalAttrs, fam.templateNonRemovable())
	if err != nil {
		return err
	}
	ct, err := s.lookupTemplate(r, r.PathValue("ident"))
	if err != nil {
		return err
	}
	if err := s.authorize(r, "clustertemplate:update", &auth.Target{ProjectID: ct.ProjectID, Public: ct.Public}); err != nil {
		return err
	}
	updated := &model.ClusterTemplate{}
	changed, err := applyPatch(ct, ops, fam.templateSchema(), versionOf(r.Context()), updated)
	if err != nil {
		return err
	}
	if len(changed) == 0 {
		writeJSON(w, http.StatusOK, fam.templateView(s, r, ct))
		return nil
	}
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	if updated.ServerType == "" {
		updated.ServerType = model.ServerTypeVM
	}
	if updated.Name == "" {
		return badRequest("'/name' can not be empty.")
	}
	if ct.Public != updated.Public || ct.Hidden != updated.Hidden {
		if err := s.authorize(r, "clustertemplate:publish", nil); err != nil {
			return forbidden("Not authorized to set public or hidden flag for cluster template.")
		}
	}
	if err := validateTemplate(updated); err != nil {
		return err
	}
	if _, err := s.checkResources(r, templateRefs(updated, changed...)); err != nil {
		return err
	}
	if touchesDriver(changed) {
		if err := s.checkTemplate(updated); err != nil {
			return err
		}
	}
	t := time.Now().UTC()
	updated.ID, updated.UUID, updated.ProjectID, updated.UserID, updated.CreatedAt = ct.ID, ct.UUID, ct.ProjectID, ct.UserID, ct.CreatedAt
	updated.UpdatedAt = &t
	if err := s.st.UpdateClusterTemplate(r.Context(), updated, changed); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fam.templateView(s, r, updated))
	return nil
}

func (s *Server) deleteClusterTemplate(w http.ResponseWriter, r *http.Request) error {
	ct, err := s.lookupTemplate(r, r.PathValue("ident"))
	if err != nil {
		return err
	}
	if err := s.authorize(r, "clustertemplate:delete", &auth.Target{ProjectID: ct.ProjectID, Public: ct.Public}); err != nil {
		return err
	}
	if err := s.st.DeleteClusterTemplate(r.Context(), ct.UUID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// requestPatch is every PATCH handler's opening: read the bounded body,
// parse it as a JSON patch and apply Magnum's path rules.
func requestPatch(r *http.Request, internal, nonRemovable []string) ([]jsonpatch.Operation, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatch.Parse(body)
	if err != nil {
		return nil, err // jsonpatch.ErrInvalid: 400 (errorTable)
	}
	for _, o := range ops {
		top := "/" + strings.SplitN(o.Path[1:], "/", 2)[0]
		for _, a := range internal {
			if top == a {
				return nil, badRequest("'%s' is an internal attribute and can not be updated", top)
			}
		}
		if o.Op == "remove" && o.Path == top {
			for _, a := range nonRemovable {
				if top == a {
					return nil, badRequest("'%s' is a mandatory attribute and can not be removed", top)
				}
			}
		}
	}
	return ops, nil
}

// applyPatch applies ops to cur, validates the result against sch and
// decodes it into dst. It returns the names of the fields that changed.
func applyPatch(cur any, ops []jsonpatch.Operation, sch schema, v APIVersion, dst any) ([]string, error) {
	doc, err := jsonpatch.ToDoc(cur)
	if err != nil {
		return nil, err
	}
	for _, o := range ops {
		top := strings.SplitN(o.Path[1:], "/", 2)[0]
		f, ok := sch.fields[top]
		if !ok || f.readOnly || !f.servedAt(v) {
			if ok && f.readOnly {
				return nil, badRequest("'/%s' is an internal attribute and can not be updated", top)
			}
			return nil, badRequest("Couldn't apply patch: the resource has no attribute '/%s' that can be updated.", top)
		}
	}
	patched, err := jsonpatch.Apply(doc, ops)
	if err != nil {
		return nil, err // jsonpatch.ErrNotApplicable: 400 (errorTable)
	}
	// Only fields the patch touched are re-validated; others are as stored.
	touched := map[string]bool{}
	for _, o := range ops {
		touched[strings.SplitN(o.Path[1:], "/", 2)[0]] = true
	}
	vals := make(map[string]any, len(patched))
	for k, x := range patched {
		if !touched[k] {
			vals[k] = x
			continue
		}
		coerced, aerr := sch.coerceAll(map[string]any{k: x}, v, false)
		if aerr != nil {
			return nil, aerr
		}
		vals[k] = coerced[k]
	}
	for k := range touched {
		if _, still := patched[k]; !still {
			vals[k] = nil // removed: back to unset
		}
	}
	if err := into(vals, dst); err != nil {
		return nil, badRequest("Couldn't apply patch: %v", err)
	}
	// Report what changed by comparing the documents field by field.
	after, err := jsonpatch.ToDoc(dst)
	if err != nil {
		return nil, err
	}
	var changed []string
	for k := range touched {
		if !reflect.DeepEqual(normalizeEmpty(doc[k]), normalizeEmpty(after[k])) {
			changed = append(changed, k)
		}
	}
	sort.Strings(changed)
	return changed, nil
}

func normalizeEmpty(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil
	}
	return v
}
