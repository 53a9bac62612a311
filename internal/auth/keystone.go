package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/magnetite-io/magnetite/internal/fault"
)

// Errors of token validation; the API answers 401 and 503 for them.
var (
	ErrUnauthenticated     = errors.New("auth: authentication required")
	ErrIdentityUnavailable = errors.New("auth: identity service unavailable")
	// ErrNoEndpoint means the catalog lists no such service (endpoint
	// type, interface and region).
	ErrNoEndpoint = errors.New("auth: the Keystone catalog has no such endpoint")
)

// KeystoneConfig is the [keystone_authtoken] section: Magnetite's own
// service credentials and how validated tokens are cached.
type KeystoneConfig struct {
	// AuthURL is Keystone's identity endpoint, with or without /v3.
	AuthURL string
	// WWWAuthenticateURI is announced to clients on 401; empty means AuthURL.
	WWWAuthenticateURI string
	Username           string
	Password           string
	ProjectName        string
	UserDomainName     string
	ProjectDomainName  string
	// RegionName selects catalog endpoints; empty accepts any region.
	RegionName string
	// CAFile verifies Keystone's certificate; empty uses the system roots.
	CAFile string
	// CacheSize bounds the number of tokens remembered.
	CacheSize int
	// CacheTime is how long a validated token is trusted before Keystone is
	// asked again, so a revoked token stops working within this long.
	CacheTime time.Duration
	// Timeout bounds each request to Keystone.
	Timeout time.Duration
	Log     *slog.Logger
	// Transport replaces the HTTP transport (tests count requests with it).
	Transport http.RoundTripper
	// Now replaces the clock (tests of expiry).
	Now func() time.Time
}

// Keystone validates X-Auth-Token headers against Keystone the way
// keystonemiddleware does: with a service token of Magnetite's own, by
// GET /v3/auth/tokens, remembering answers in a bounded cache that honours
// each token's expiry and re-validates after CacheTime.
type Keystone struct {
	cfg    KeystoneConfig
	base   string // .../v3
	client *http.Client
	log    *slog.Logger
	now    func() time.Time
	cache  *tokenCache

	svcMu sync.Mutex
	svc   *serviceToken

	flightMu sync.Mutex
	flights  map[string]*flight
}

type serviceToken struct {
	token   string
	renewAt time.Time
	catalog []catalogService
}

type flight struct {
	done chan struct{}
	id   Identity
	err  error
}

// NewKeystone checks the configuration; it does not contact Keystone, so the
// API starts even while Keystone is down (requests then get 503).
func NewKeystone(cfg KeystoneConfig) (*Keystone, error) {
	var missing []string
	for _, f := range []struct{ name, v string }{{"auth_url", cfg.AuthURL}, {"username", cfg.Username}, {"password", cfg.Password}, {"project_name", cfg.ProjectName}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("config: [auth] strategy = keystone needs [keystone_authtoken] %s", strings.Join(missing, ", "))
	}
	base, err := identityV3(cfg.AuthURL)
	if err != nil {
		return nil, err
	}
	if cfg.UserDomainName == "" {
		cfg.UserDomainName = "Default"
	}
	if cfg.ProjectDomainName == "" {
		cfg.ProjectDomainName = "Default"
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 10000
	}
	if cfg.CacheTime <= 0 {
		cfg.CacheTime = time.Minute
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.WWWAuthenticateURI == "" {
		cfg.WWWAuthenticateURI = cfg.AuthURL
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	transport := cfg.Transport
	if transport == nil {
		t, err := CATransport(cfg.CAFile)
		if err != nil {
			return nil, err
		}
		transport = t
	}
	return &Keystone{
		cfg: cfg, base: base, log: cfg.Log, now: cfg.Now,
		client:  &http.Client{Transport: transport, Timeout: cfg.Timeout},
		cache:   newTokenCache(cfg.CacheSize),
		flights: map[string]*flight{},
	}, nil
}

// identityV3 turns an auth_url into the v3 API base.
// CATransport is a default transport that verifies servers against the PEM
// bundle in caFile ([keystone_authtoken] cafile); empty means the system's
// trusted roots.
func CATransport(caFile string) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if caFile == "" {
		return t, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("config: [keystone_authtoken] cafile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("config: [keystone_authtoken] cafile %s holds no PEM certificate", caFile)
	}
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

func identityV3(authURL string) (string, error) {
	u := strings.TrimRight(authURL, "/")
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return "", fmt.Errorf("config: [keystone_authtoken] auth_url %q must be an http:// or https:// URL", authURL)
	}
	switch {
	case strings.HasSuffix(u, "/v3"):
		return u, nil
	case strings.HasSuffix(u, "/v2.0"):
		return "", fmt.Errorf("config: [keystone_authtoken] auth_url %q points at the identity v2.0 API; use the v3 endpoint", authURL)
	}
	return u + "/v3", nil
}

// Challenge is the WWW-Authenticate value of a 401 answer.
func (k *Keystone) Challenge() string {
	return fmt.Sprintf("Keystone uri=%q", k.cfg.WWWAuthenticateURI)
}

// Identify validates the request's X-Auth-Token.
func (k *Keystone) Identify(r *http.Request) (Identity, error) {
	tok := strings.TrimSpace(r.Header.Get("X-Auth-Token"))
	if tok == "" {
		return Identity{}, fault.New(ErrUnauthenticated, "the request carries no X-Auth-Token")
	}
	return k.Validate(r.Context(), tok)
}

// Validate returns the identity behind a user token.
func (k *Keystone) Validate(ctx context.Context, token string) (Identity, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	now := k.now()
	if e, ok := k.cache.get(key); ok {
		switch {
		case !now.Before(e.expires):
			k.cache.remove(key)
			if e.reason == "" {
				return Identity{}, fault.New(ErrUnauthenticated, "the token has expired")
			}
		case now.Sub(e.checked) < k.cfg.CacheTime:
			if e.reason != "" {
				return Identity{}, fault.New(ErrUnauthenticated, "%s", e.reason)
			}
			id := e.id
			id.AuthToken = token
			return id, nil
		}
	}
	id, err := k.validateOnce(ctx, key, token)
	if err != nil {
		return Identity{}, err
	}
	id.AuthToken = token
	return id, nil
}

// validateOnce asks Keystone, sharing one request among concurrent callers
// presenting the same token.
func (k *Keystone) validateOnce(ctx context.Context, key, token string) (Identity, error) {
	k.flightMu.Lock()
	if f, ok := k.flights[key]; ok {
		k.flightMu.Unlock()
		select {
		case <-f.done:
			return f.id, f.err
		case <-ctx.Done():
			return Identity{}, fault.New(ErrIdentityUnavailable, "%v", ctx.Err())
		}
	}
	f := &flight{done: make(chan struct{})}
	k.flights[key] = f
	k.flightMu.Unlock()

	f.id, f.err = k.validateRemote(context.WithoutCancel(ctx), key, token)
	k.flightMu.Lock()
	delete(k.flights, key)
	k.flightMu.Unlock()
	close(f.done)
	return f.id, f.err
}

func (k *Keystone) validateRemote(ctx context.Context, key, token string) (Identity, error) {
	for attempt := 0; ; attempt++ {
		svc, err := k.serviceToken(ctx)
		if err != nil {
			return Identity{}, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.base+"/auth/tokens?nocatalog", nil)
		if err != nil {
			return Identity{}, err
		}
		req.Header.Set("X-Auth-Token", svc.token)
		req.Header.Set("X-Subject-Token", token)
		req.Header.Set("Accept", "application/json")
		res, err := k.client.Do(req)
		if err != nil {
			k.log.Warn("keystone unreachable while validating a token", "error", scrubURLError(err))
			return Identity{}, fault.New(ErrIdentityUnavailable, "Keystone could not be reached")
		}
		body, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
		res.Body.Close()
		if err != nil {
			return Identity{}, fault.New(ErrIdentityUnavailable, "reading Keystone's answer: %v", err)
		}
		switch res.StatusCode {
		case http.StatusOK:
			return k.accept(key, body)
		case http.StatusNotFound:
			// Keystone's answer for tokens that are invalid, expired or revoked.
			return Identity{}, k.reject(key, "the token is invalid, expired or revoked")
		case http.StatusUnauthorized:
			// Our own service token was refused (expired or revoked early):
			// get a new one and ask again, once.
			k.dropServiceToken(svc)
			if attempt == 0 {
				continue
			}
			k.log.Error("keystone refuses Magnetite's service token", "status", res.StatusCode)
			return Identity{}, fault.New(ErrIdentityUnavailable, "Keystone refused Magnetite's service credentials")
		case http.StatusForbidden:
			k.log.Error("keystone does not let Magnetite's service user validate tokens; give it the service role",
				"user", k.cfg.Username, "project", k.cfg.ProjectName)
			return Identity{}, fault.New(ErrIdentityUnavailable, "Magnetite's service user may not validate tokens")
		default:
			k.log.Warn("keystone failed to validate a token", "status", res.StatusCode)
			return Identity{}, fault.New(ErrIdentityUnavailable, "Keystone answered %d", res.StatusCode)
		}
	}
}

// tokenBody is the part of Keystone's token document Magnetite reads.
type tokenBody struct {
	Token struct {
		ExpiresAt string `json:"expires_at"`
		User      struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"user"`
		Project *struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"project"`
		Roles []struct {
			Name string `json:"name"`
		} `json:"roles"`
		Catalog []catalogService `json:"catalog"`
	} `json:"token"`
}

type catalogService struct {
	Type      string `json:"type"`
	Name      string `json:"name"`
	Endpoints []struct {
		Interface string `json:"interface"`
		Region    string `json:"region"`
		RegionID  string `json:"region_id"`
		URL       string `json:"url"`
	} `json:"endpoints"`
}

func (k *Keystone) accept(key string, body []byte) (Identity, error) {
	var tb tokenBody
	if err := json.Unmarshal(body, &tb); err != nil {
		return Identity{}, fault.New(ErrIdentityUnavailable, "Keystone's token document is not JSON: %v", err)
	}
	expires, err := time.Parse(time.RFC3339Nano, tb.Token.ExpiresAt)
	if err != nil {
		return Identity{}, fault.New(ErrIdentityUnavailable, "Keystone's token has no valid expires_at")
	}
	now := k.now()
	if !now.Before(expires) {
		return Identity{}, k.reject(key, "the token has expired")
	}
	if tb.Token.Project == nil || tb.Token.Project.ID == "" {
		return Identity{}, k.reject(key, "the token is not scoped to a project; ask for a project-scoped token (openstack token issue with --os-project-name)")
	}
	id := Identity{ProjectID: tb.Token.Project.ID, UserID: tb.Token.User.ID}
	for _, r := range tb.Token.Roles {
		id.Roles = append(id.Roles, r.Name)
	}
	k.cache.put(key, cacheEntry{id: id, expires: expires, checked: now})
	return id, nil
}

// reject remembers a refused token for CacheTime so a client retrying a bad
// token does not reach Keystone on every request.
func (k *Keystone) reject(key, reason string) error {
	now := k.now()
	k.cache.put(key, cacheEntry{reason: reason, expires: now.Add(k.cfg.CacheTime), checked: now})
	return fault.New(ErrUnauthenticated, "%s", reason)
}

// serviceToken returns a valid service token, authenticating when there is
// none or the current one is close to expiry.
func (k *Keystone) serviceToken(ctx context.Context) (*serviceToken, error) {
	k.svcMu.Lock()
	defer k.svcMu.Unlock()
	if k.svc != nil && k.now().Before(k.svc.renewAt) {
		return k.svc, nil
	}
	svc, err := k.authenticate(ctx)
	if err != nil {
		return nil, err
	}
	k.svc = svc
	return svc, nil
}

func (k *Keystone) dropServiceToken(old *serviceToken) {
	k.svcMu.Lock()
	if k.svc == old {
		k.svc = nil
	}
	k.svcMu.Unlock()
}

type passwordAuth struct {
	Auth struct {
		Identity struct {
			Methods  []string `json:"methods"`
			Password struct {
				User struct {
					Name     string `json:"name"`
					Domain   named  `json:"domain"`
					Password string `json:"password"`
				} `json:"user"`
			} `json:"password"`
		} `json:"identity"`
		Scope struct {
			Project struct {
				Name   string `json:"name"`
				Domain named  `json:"domain"`
			} `json:"project"`
		} `json:"scope"`
	} `json:"auth"`
}

type named struct {
	Name string `json:"name"`
}

func (k *Keystone) authenticate(ctx context.Context) (*serviceToken, error) {
	var pa passwordAuth
	pa.Auth.Identity.Methods = []string{"password"}
	u := &pa.Auth.Identity.Password.User
	u.Name, u.Domain.Name, u.Password = k.cfg.Username, k.cfg.UserDomainName, k.cfg.Password
	pa.Auth.Scope.Project.Name, pa.Auth.Scope.Project.Domain.Name = k.cfg.ProjectName, k.cfg.ProjectDomainName
	ans, err := k.postLogin(ctx, "", pa, 16<<20, "authenticating Magnetite's service user")
	if err != nil {
		return nil, err
	}
	if ans.status != http.StatusCreated {
		k.log.Error("keystone refused Magnetite's service credentials; check [keystone_authtoken]",
			"status", ans.status, "user", k.cfg.Username, "user_domain", k.cfg.UserDomainName,
			"project", k.cfg.ProjectName, "project_domain", k.cfg.ProjectDomainName)
		return nil, fault.New(ErrIdentityUnavailable, "Keystone refused Magnetite's service credentials (status %d)", ans.status)
	}
	tb, renewAt, err := ans.parse("the service login", "service token")
	if err != nil {
		return nil, err
	}
	return &serviceToken{token: ans.token, renewAt: renewAt, catalog: tb.Token.Catalog}, nil
}

// loginAnswer is Keystone's answer to a login (POST /auth/tokens).
type loginAnswer struct {
	status int
	body   []byte
	token  string    // X-Subject-Token
	issued time.Time // when the login was sent
}

// postLogin posts payload to /auth/tokens (with query) and reads up to
// limit bytes of the answer. who says in the log what the login was for
// when Keystone cannot be reached.
func (k *Keystone) postLogin(ctx context.Context, query string, payload any, limit int64, who string) (*loginAnswer, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.base+"/auth/tokens"+query, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	issued := k.now()
	res, err := k.client.Do(req)
	if err != nil {
		k.log.Warn("keystone unreachable while "+who, "error", scrubURLError(err))
		return nil, fault.New(ErrIdentityUnavailable, "Keystone could not be reached")
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, limit))
	if err != nil {
		return nil, fault.New(ErrIdentityUnavailable, "reading Keystone's answer: %v", err)
	}
	return &loginAnswer{status: res.StatusCode, body: body, token: res.Header.Get("X-Subject-Token"), issued: issued}, nil
}

// parse reads the token of a successful login and when to renew it: once
// three quarters of its lifetime have passed, well before it expires under
// a request in flight. login ("the service login") and token ("service
// token") name them in the errors.
func (a *loginAnswer) parse(login, token string) (tokenBody, time.Time, error) {
	var tb tokenBody
	if err := json.Unmarshal(a.body, &tb); err != nil || a.token == "" {
		return tb, time.Time{}, fault.New(ErrIdentityUnavailable, "Keystone's answer to %s lacks a token", login)
	}
	expires, err := time.Parse(time.RFC3339Nano, tb.Token.ExpiresAt)
	if err != nil {
		return tb, time.Time{}, fault.New(ErrIdentityUnavailable, "Keystone's %s has no valid expires_at", token)
	}
	return tb, a.issued.Add(expires.Sub(a.issued) * 3 / 4), nil
}

// Endpoint looks up a service's URL in the catalog of Magnetite's service
// token, for the configured region (any region when none is configured).
func (k *Keystone) Endpoint(ctx context.Context, serviceType, iface string) (string, error) {
	svc, err := k.serviceToken(ctx)
	if err != nil {
		return "", err
	}
	for _, s := range svc.catalog {
		if s.Type != serviceType {
			continue
		}
		for _, e := range s.Endpoints {
			region := e.RegionID
			if region == "" {
				region = e.Region
			}
			if e.Interface == iface && (k.cfg.RegionName == "" || region == k.cfg.RegionName) {
				return e.URL, nil
			}
		}
	}
	where := "any region"
	if k.cfg.RegionName != "" {
		where = "region " + k.cfg.RegionName
	}
	return "", fault.New(ErrNoEndpoint, "no %s endpoint of type %s in %s", iface, serviceType, where)
}

// scrubURLError drops the URL from transport errors; it never holds a token,
// but query strings are not ours to log.
func scrubURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
