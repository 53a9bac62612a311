package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/certs"
	"github.com/magnetite-io/magnetite/internal/logging"
	"github.com/magnetite-io/magnetite/internal/metrics"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// Authenticator identifies the caller of a request.
type Authenticator interface {
	Identify(r *http.Request) (auth.Identity, error)
}

// Options configure the API server.
type Options struct {
	Store  *store.DB
	Auth   Authenticator
	Policy auth.Policy
	Log    *slog.Logger
	// MaxLimit caps page sizes (Magnum's [api] max_limit, 1000).
	MaxLimit int
	// DefaultClusterQuota is the per-project cluster limit when a project has
	// no quota row (Magnum's [quotas] max_clusters_per_project).
	DefaultClusterQuota int
	// ServiceDownAfter marks an mservice "down" when it has not reported for
	// this long.
	ServiceDownAfter time.Duration
	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes int64
	// Metrics receives request observations and is served on /metrics; nil
	// means a registry of the API's own over Store.
	Metrics *metrics.Registry
	// MergeLabelsByDefault lays a new cluster's or node group's labels over
	// its parent's when merge_labels is not sent. Off is Magnum's behaviour,
	// which declarative clients compare against: the OpenStack provider for
	// OpenTofu reads inherited labels back as drift.
	MergeLabelsByDefault bool
	// DefaultCreateTimeout and DefaultBareMetalCreateTimeout (minutes) apply
	// when a cluster create does not set create_timeout.
	DefaultCreateTimeout          int
	DefaultBareMetalCreateTimeout int
	// IronicComputeHosts is [driver] ironic_compute_hosts: how many
	// nova-compute hosts the cloud's Ironic nodes sit behind.
	IronicComputeHosts int
	// OnQueued is called after a request queued an operation, to wake a
	// conductor running in the same process.
	OnQueued func()
	// ValidateLabels checks a cluster's merged labels against the typed label
	// schema; nil accepts any labels.
	ValidateLabels func(ct *model.ClusterTemplate, labels map[string]string) error
	// HostBackend names the bare-metal host inventory's backend ("ironic",
	// "metal3"); empty turns /v1/hosts off (501). The API never calls it:
	// the conductor's HostActions carries out the actions the API queues
	// and mirrors the hosts into the store, which the API reads.
	HostBackend string
	// HostActionWait bounds how long a host action's request waits for the
	// conductor before answering 202 with the operation (30s when 0).
	HostActionWait time.Duration
	// Capacity plans the bare-metal hosts a create or resize adds
	// (capacity.Check); the hosts are reserved in the request's
	// transaction, so replicas sharing the database never both take the
	// last free ones. A refusal is a 409, a warning (warn mode) is logged
	// and kept in the cluster's events. nil checks nothing.
	Capacity CapacityPlanner
	// Resources checks the Glance image, Nova flavors and keypair and
	// Neutron networks a new template or cluster (or a template's changed
	// fields) names, with the caller's token. nil checks nothing.
	Resources ResourceChecker
	// Credentials makes each new cluster a Keystone application credential
	// with the caller's token and serves PATCH /v1/credentials; nil (noauth)
	// makes none.
	Credentials CredentialIssuer
	// Management reports the conductor's view of the management cluster
	// for /healthcheck; nil (no conductor in this process) reports nothing.
	Management func() ManagementHealth
	// PageCacheBytes bounds the encoded list pages kept in memory (see
	// servePage); 0 means 16 MiB, a negative value keeps none.
	PageCacheBytes int
	// KeyPool supplies the RSA keys of new clusters' certificate
	// authorities, made ahead of time; nil makes every key when the
	// cluster is created.
	KeyPool *certs.KeyPool
	// Drivers finds a template's driver; templates and clusters whose
	// (server_type, os_distro, coe) no driver provides are refused with a
	// 400. nil accepts every template.
	Drivers DriverFinder
}

// Server is the Magnum v1 API.
type Server struct {
	opts    Options
	st      *store.DB
	log     *slog.Logger
	mux     *http.ServeMux
	metrics *metrics.Registry
	pages   *pageCache
	// patterns is every route registered on mux, in order.
	patterns []string
}

// New builds the API handler.
func New(opts Options) *Server {
	if opts.MaxLimit <= 0 {
		opts.MaxLimit = 1000
	}
	if opts.DefaultClusterQuota <= 0 {
		opts.DefaultClusterQuota = 20
	}
	if opts.ServiceDownAfter <= 0 {
		opts.ServiceDownAfter = 60 * time.Second
	}
	if opts.DefaultCreateTimeout <= 0 {
		opts.DefaultCreateTimeout = 60
	}
	if opts.DefaultBareMetalCreateTimeout <= 0 {
		opts.DefaultBareMetalCreateTimeout = 180
	}
	if opts.PageCacheBytes == 0 {
		opts.PageCacheBytes = 16 << 20
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	opts.Log = logging.Contextual(opts.Log)
	if opts.Metrics == nil {
		opts.Metrics = metrics.New(opts.Store, opts.Store.SQL(), opts.Log)
	}
	if opts.Auth == nil {
		opts.Auth = auth.NoAuth{DefaultProject: "default", DefaultUser: "admin", DefaultRoles: []string{"admin"}}
	}
	s := &Server{opts: opts, st: opts.Store, log: opts.Log, mux: http.NewServeMux(), metrics: opts.Metrics,
		pages: newPageCache(opts.PageCacheBytes)}
	s.routes()
	return s
}

// handlerFunc is an API handler that returns an error instead of writing one.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) handle(pattern string, h handlerFunc) {
	s.register(pattern, func(w http.ResponseWriter, r *http.Request) {
		if rec, ok := w.(*statusRecorder); ok {
			rec.route = r.Pattern
		}
		if err := s.redoStale(h)(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// staleAttempts is how many times a write request is made before a 409
// says that others kept changing the object under it.
const staleAttempts = 5

// redoStale makes a write request again, from the start, when the store
// refused its write because the cluster or node group it read was changed
// meanwhile (store.ErrStale): the handler reads the object anew and
// applies the request to what it is now, so the request either takes
// effect over the other change or is refused for what the object has
// become (a cluster being deleted is 409). The body is replayed to each
// attempt. Handlers write nothing before their change commits.
func (s *Server) redoStale(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Body == nil {
			return h(w, r)
		}
		orig := r.Body
		defer func() { r.Body = orig }()
		var seen bytes.Buffer
		for attempt := 1; ; attempt++ {
			// What earlier attempts read, then the rest, kept in turn.
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(seen.Bytes()), io.TeeReader(orig, &seen)))
			err := h(w, r)
			if !errors.Is(err, store.ErrStale) || attempt == staleAttempts || r.Context().Err() != nil {
				return err
			}
			s.log.InfoContext(r.Context(), "request made again from a new read", "attempt", attempt+1, "reason", err.Error())
		}
	}
}

// register is the one place a route reaches the mux, so patterns lists
// them all.
func (s *Server) register(pattern string, h http.HandlerFunc) {
	s.patterns = append(s.patterns, pattern)
	s.mux.HandleFunc(pattern, h)
}

// collection is the handlers of a cluster-template or cluster collection:
// list (and its detail), show, create, update and delete.
type collection struct {
	list                        func(detail bool) handlerFunc
	get, create, update, delete handlerFunc
}

// handleCollection registers c's six routes under /v1/name, each handler
// passed through wrap.
func (s *Server) handleCollection(name string, c collection, wrap func(handlerFunc) handlerFunc) {
	base := "/v1/" + name
	s.handle("GET "+base, wrap(c.list(false)))
	s.handle("GET "+base+"/detail", wrap(c.list(true)))
	s.handle("GET "+base+"/{ident}", wrap(c.get))
	s.handle("POST "+base, wrap(c.create))
	s.handle("PATCH "+base+"/{ident}", wrap(c.update))
	s.handle("DELETE "+base+"/{ident}", wrap(c.delete))
}

func (s *Server) templateCollection() collection {
	return collection{list: s.listClusterTemplates, get: s.getClusterTemplate, create: s.createClusterTemplate,
		update: s.updateClusterTemplate, delete: s.deleteClusterTemplate}
}

func (s *Server) clusterCollection() collection {
	return collection{list: s.listClusters, get: s.getCluster, create: s.createCluster,
		update: s.updateCluster, delete: s.deleteCluster}
}

// currentEra serves h under the current names.
func currentEra(h handlerFunc) handlerFunc { return h }

func (s *Server) routes() {
	s.register("GET /{$}", s.rootVersions)
	s.handle("GET /v1", s.v1Root)
	s.handle("GET /v1/{$}", s.v1Root)

	s.handleCollection(currentNames.templates, s.templateCollection(), currentEra)
	s.handleCollection(currentNames.clusters, s.clusterCollection(), currentEra)
	s.handle("POST /v1/clusters/{ident}/actions/resize", s.resizeCluster)
	s.handle("POST /v1/clusters/{ident}/actions/upgrade", s.upgradeCluster)
	s.handle("POST /v1/clusters/{ident}/actions/rebase", s.rebaseCluster)
	s.handle("GET /v1/clusters/{ident}/events", s.listClusterEvents)

	s.handle("GET /v1/clusters/{ident}/nodegroups", s.listNodeGroups)
	s.handle("GET /v1/clusters/{ident}/nodegroups/{ng}", s.getNodeGroup)
	s.handle("POST /v1/clusters/{ident}/nodegroups", s.createNodeGroup)
	s.handle("PATCH /v1/clusters/{ident}/nodegroups/{ng}", s.updateNodeGroup)
	s.handle("DELETE /v1/clusters/{ident}/nodegroups/{ng}", s.deleteNodeGroup)

	s.handle("GET /v1/quotas", s.listQuotas)
	s.handle("GET /v1/quotas/detail", s.listQuotas)
	s.handle("GET /v1/quotas/{project}/{resource}", s.getQuota)
	s.handle("POST /v1/quotas", s.createQuota)
	s.handle("PATCH /v1/quotas/{project}/{resource}", s.updateQuota)
	s.handle("DELETE /v1/quotas/{project}/{resource}", s.deleteQuota)

	s.handle("GET /v1/certificates/{ident}", s.getCertificate)
	s.handle("POST /v1/certificates", s.signCertificate)
	s.handle("PATCH /v1/certificates/{ident}", s.rotateCertificate)
	s.handle("PATCH /v1/credentials/{ident}", s.rotateCredential)

	s.handle("GET /v1/stats", s.getStats)
	s.handle("GET /v1/mservices", s.listServices)
	s.hostRoutes()
	s.bayEraRoutes()

	// Anything else under the API is a Magnum-format 404 (or 405).
	s.handle("/", func(w http.ResponseWriter, r *http.Request) error {
		return notFound("The resource could not be found: %s %s", r.Method, r.URL.Path)
	})
}

// ServeHTTP runs the middleware chain: request id, version headers, body
// limit, authentication, panic recovery, access log, request metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rid := "req-" + uuid.NewString()
	ctx := logging.WithRequestID(r.Context(), rid)
	w.Header().Set("X-Openstack-Request-Id", rid)
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	r = r.WithContext(ctx)
	defer func() {
		if p := recover(); p != nil {
			s.log.ErrorContext(ctx, "panic serving request", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !rec.wrote {
				s.writeError(rec, r, fmt.Errorf("panic: %v", p))
			}
		}
		d := time.Since(start)
		s.log.InfoContext(ctx, "request", "method", r.Method, "path", r.URL.Path,
			"status", rec.status, "duration_ms", float64(d.Microseconds())/1000)
		s.observeRequest(r, rec, d)
	}()

	if r.Body != nil {
		r.Body = http.MaxBytesReader(rec, r.Body, s.opts.MaxBodyBytes)
	}
	if !cleanPath(r.URL.Path) {
		s.writeError(rec, r, notFound("The resource could not be found: %s (empty, . or .. path segments)", r.URL.Path))
		return
	}
	if s.serveOperator(rec, r) {
		return
	}
	if r.URL.Path != "/" && !strings.HasPrefix(r.URL.Path, "/v1") {
		s.writeError(rec, r, notFound("The resource could not be found: %s", r.URL.Path))
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v1") {
		v, verr := negotiateVersion(r.Header)
		h := rec.Header()
		h.Set(minVersionHeader, serviceType+" "+MinVersion.String())
		h.Set(maxVersionHeader, serviceType+" "+MaxVersion.String())
		h.Add("Vary", versionHeader)
		if verr != nil {
			s.writeError(rec, r, verr)
			return
		}
		h.Set(versionHeader, serviceType+" "+v.String())
		if err := requireJSON(r); err != nil {
			s.writeError(rec, r, err)
			return
		}
		ctx = withVersion(ctx, v)
		if !publicRoute(r.URL.Path) {
			id, err := s.opts.Auth.Identify(r)
			if err != nil {
				s.refuseCaller(rec, r, err)
				return
			}
			ctx = auth.WithIdentity(ctx, id)
		}
		r = r.WithContext(ctx)
	}
	s.mux.ServeHTTP(rec, withoutTrailingSlash(r))
}

// publicRoute reports the paths served without authentication, as Magnum's
// public_api_routes: the version documents.
func publicRoute(p string) bool { return p == "/v1" || p == "/v1/" }

// refuseCaller answers a request whose caller could not be identified: 401
// with the authenticator's challenge, or 503 when the identity service could
// not be asked.
func (s *Server) refuseCaller(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		s.writeError(w, r, ae)
		return
	}
	if errors.Is(err, auth.ErrIdentityUnavailable) {
		s.writeError(w, r, err)
		return
	}
	challenge := "Keystone uri='keystone'"
	if c, ok := s.opts.Auth.(interface{ Challenge() string }); ok {
		challenge = c.Challenge()
	}
	w.Header().Set("WWW-Authenticate", challenge)
	if errors.Is(err, auth.ErrUnauthenticated) {
		s.writeError(w, r, err)
		return
	}
	s.writeError(w, r, &apiError{Status: http.StatusUnauthorized, Title: "Unauthorized",
		Detail: "The request you have made requires authentication: " + err.Error()})
}

// withoutTrailingSlash lets /v1/clusters/X/nodegroups/ reach the same
// handler as /v1/clusters/X/nodegroups: magnumclient addresses node group
// collections with the slash, and Magnum's router accepts both forms.
func withoutTrailingSlash(r *http.Request) *http.Request {
	p := r.URL.Path
	if len(p) <= len("/v1/") || !strings.HasSuffix(p, "/") {
		return r
	}
	r2 := new(http.Request)
	*r2 = *r
	r2.URL = new(url.URL)
	*r2.URL = *r.URL
	r2.URL.Path = strings.TrimSuffix(p, "/")
	r2.URL.RawPath = strings.TrimSuffix(r.URL.RawPath, "/")
	return r2
}

func requestID(ctx context.Context) string { return logging.RequestID(ctx) }

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
	route  string // the pattern of the handler that answered, if any
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// readBody reads a bounded request body.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if ok := asMaxBytes(err, &mbe); ok {
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Title: "Request Entity Too Large",
				Detail: fmt.Sprintf("The request body is larger than %d bytes.", mbe.Limit)}
		}
		return nil, badRequest("The request body could not be read: %v", err)
	}
	if k, dup := duplicateKey(b); dup {
		return nil, badRequest("The request body has the key %q twice in one object; send each key once.", k)
	}
	return b, nil
}

func identity(r *http.Request) auth.Identity {
	id, _ := auth.FromContext(r.Context())
	return id
}

// authorize asks the one policy decision point.
func (s *Server) authorize(r *http.Request, action string, target *auth.Target) error {
	return s.opts.Policy.Authorize(identity(r), action, target)
}

// isAdmin asks the policy whether the caller is an administrator.
func (s *Server) isAdmin(r *http.Request) bool {
	return s.opts.Policy.IsAdmin(identity(r))
}

// scope is the project filter for the caller: admins see every project.
func (s *Server) scope(r *http.Request) store.Scope {
	id := identity(r)
	return store.Scope{ProjectID: id.ProjectID, AllProjects: s.isAdmin(r)}
}
