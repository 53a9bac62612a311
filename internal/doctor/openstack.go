package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/facts"
)

// Cloud is how Magnetite reaches the OpenStack cloud: the service user of
// [keystone_authtoken].
type Cloud struct {
	AuthURL           string
	Username          string
	Password          string
	ProjectName       string
	UserDomainName    string
	ProjectDomainName string
	Region            string
	CAFile            string
	Timeout           time.Duration
}

// HTTPClient is the client every cloud check uses: the configured CA bundle
// and a timeout, so a black-holed endpoint fails the check instead of
// hanging the doctor.
func (c Cloud) HTTPClient() (*http.Client, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	tr, err := auth.CATransport(c.CAFile)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: tr, Timeout: timeout}, nil
}

// KeystoneReachable asks Keystone's identity endpoint for its version
// document, without credentials.
func KeystoneReachable(ctx context.Context, hc *http.Client, authURL string) Result {
	const check = "keystone reachable"
	if authURL == "" {
		return fail(check, "set [keystone_authtoken] auth_url, e.g. http://keystone.example.com:5000/v3",
			"[auth] strategy is keystone but [keystone_authtoken] auth_url is empty")
	}
	code, elapsed, err := probe(ctx, hc, authURL, "")
	if err != nil {
		return fail(check, "check [keystone_authtoken] auth_url and that Keystone listens there and is reachable from this host",
			"%s: %v", authURL, err)
	}
	if code >= 500 {
		return fail(check, "look at Keystone's own logs; it answers but fails",
			"%s answered HTTP %d", authURL, code)
	}
	return pass(check, "%s answered HTTP %d in %s", authURL, code, elapsed.Round(time.Millisecond))
}

// ServiceCredentials logs the service user in; on success it returns the
// authenticated provider, whose catalog the endpoint checks read.
func ServiceCredentials(ctx context.Context, hc *http.Client, c Cloud) (Result, *gophercloud.ProviderClient) {
	const check = "keystone service credentials"
	fix := "correct [keystone_authtoken] username, password, project_name, user_domain_name and project_domain_name"
	if c.Username == "" || c.Password == "" {
		return fail(check, fix, "[keystone_authtoken] username or password is empty"), nil
	}
	provider, err := openstack.NewClient(c.AuthURL)
	if err != nil {
		return fail(check, "set [keystone_authtoken] auth_url to the identity URL", "%v", err), nil
	}
	provider.HTTPClient = *hc
	opts := gophercloud.AuthOptions{
		IdentityEndpoint: c.AuthURL, Username: c.Username, Password: c.Password, DomainName: c.UserDomainName,
		Scope: &gophercloud.AuthScope{ProjectName: c.ProjectName, DomainName: c.ProjectDomainName},
	}
	if err := openstack.Authenticate(ctx, provider, opts); err != nil {
		if gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
			return fail(check, fix, "Keystone refused user %q (domain %q) for project %q (domain %q): wrong password, or no role on the project",
				c.Username, c.UserDomainName, c.ProjectName, c.ProjectDomainName), nil
		}
		return fail(check, fix, "logging in as %q failed: %v", c.Username, err), nil
	}
	return pass(check, "logged in as %q on project %q", c.Username, c.ProjectName), provider
}

// cloudService is an OpenStack service Magnetite talks to.
type cloudService struct {
	typ, name string
	// needed says what breaks without it; services without it are optional.
	needed string
	// absent says what an optional service's absence costs.
	absent string
}

var cloudServices = []cloudService{
	{typ: "compute", name: "Nova", needed: "nodes are Nova servers"},
	{typ: "image", name: "Glance", needed: "templates name Glance images"},
	{typ: "network", name: "Neutron", needed: "clusters need networks, ports and floating IPs"},
	{typ: "load-balancer", name: "Octavia", absent: "clusters cannot get an API load balancer"},
	{typ: "baremetal", name: "Ironic", absent: "bare-metal nodes through Nova are not available"},
}

// ServiceEndpoints finds Nova, Glance, Neutron, Octavia and Ironic in the
// catalog and asks each endpoint for its version document with the
// service token. Any answer below 500 means the service is up.
func ServiceEndpoints(ctx context.Context, hc *http.Client, provider *gophercloud.ProviderClient, region string) []Result {
	var out []Result
	for _, svc := range cloudServices {
		check := "endpoint " + svc.typ + " (" + svc.name + ")"
		endpoint, err := provider.EndpointLocator(gophercloud.EndpointOpts{Type: svc.typ, Region: region, Availability: gophercloud.AvailabilityPublic})
		if err != nil {
			where := "the catalog"
			if region != "" {
				where += " for region " + region
			}
			if svc.needed != "" {
				out = append(out, warn(check, fmt.Sprintf("register %s's public endpoint in Keystone (openstack endpoint create %s public URL)", svc.name, svc.typ),
					"no %s endpoint in %s; %s", svc.typ, where, svc.needed))
			} else {
				out = append(out, skip(check, "not in %s: %s", where, svc.absent))
			}
			continue
		}
		code, elapsed, err := probe(ctx, hc, endpoint, provider.Token())
		switch {
		case err != nil:
			out = append(out, fail(check, fmt.Sprintf("start %s or correct its catalog endpoint (openstack endpoint list --service %s)", svc.name, svc.typ),
				"%s: %v", endpoint, err))
		case code >= 500:
			out = append(out, fail(check, fmt.Sprintf("look at %s's logs; it answers but fails", svc.name),
				"%s answered HTTP %d", endpoint, code))
		default:
			out = append(out, pass(check, "%s answered HTTP %d in %s", endpoint, code, elapsed.Round(time.Millisecond)))
		}
	}
	return out
}

// BareMetalFlavors lists the Nova flavors that schedule onto Ironic nodes
// (resources:CUSTOM_<CLASS>=1, or the older baremetal=true) and the resource
// class each asks for.
func BareMetalFlavors(ctx context.Context, provider *gophercloud.ProviderClient, region string) Result {
	const check = "bare-metal flavors"
	compute, err := openstack.NewComputeV2(provider, gophercloud.EndpointOpts{Region: region, Availability: gophercloud.AvailabilityPublic})
	if err != nil {
		return skip(check, "no compute endpoint to list flavors from")
	}
	fs, err := listFlavors(ctx, compute)
	if err != nil {
		return fail(check, "give the service user a role that may list flavors (admin lists private flavors too)",
			"listing Nova flavors failed: %v", err)
	}
	var found []string
	for _, f := range fs {
		df := facts.Flavor{ID: f.ID, Name: f.Name, ExtraSpecs: f.ExtraSpecs}
		if spec, ok := df.BareMetal(); ok {
			found = append(found, fmt.Sprintf("%s (%s)", f.Name, spec))
		}
	}
	sort.Strings(found)
	if len(found) == 0 {
		return warn(check, "openstack flavor set --property resources:CUSTOM_BAREMETAL=1 --property resources:VCPU=0 --property resources:MEMORY_MB=0 --property resources:DISK_GB=0 FLAVOR",
			"none of %d flavors asks for an Ironic resource class: templates with server_type bm will be refused", len(fs))
	}
	return pass(check, "%d of %d flavors: %s", len(found), len(fs), strings.Join(found, ", "))
}

// listFlavors lists every flavor with its extra specs: inline from Nova
// microversion 2.61, one call per flavor on older clouds.
func listFlavors(ctx context.Context, compute *gophercloud.ServiceClient) ([]flavors.Flavor, error) {
	compute.Microversion = "2.61"
	pages, err := flavors.ListDetail(compute, flavors.ListOpts{AccessType: flavors.AllAccess}).AllPages(ctx)
	inline := err == nil
	if err != nil {
		compute.Microversion = ""
		if pages, err = flavors.ListDetail(compute, flavors.ListOpts{AccessType: flavors.AllAccess}).AllPages(ctx); err != nil {
			return nil, err
		}
	}
	fs, err := flavors.ExtractFlavors(pages)
	if err != nil {
		return nil, err
	}
	if !inline {
		for i := range fs {
			if fs[i].ExtraSpecs, err = flavors.ListExtraSpecs(ctx, compute, fs[i].ID).Extract(); err != nil {
				return nil, fmt.Errorf("extra specs of flavor %s: %w", fs[i].Name, err)
			}
		}
	}
	return fs, nil
}

// IronicEndpoint checks the standalone Ironic of [baremetal] ironic_endpoint
// (the host inventory's backend), which answers its root without a token.
func IronicEndpoint(ctx context.Context, hc *http.Client, endpoint string) Result {
	const check = "ironic endpoint"
	code, elapsed, err := probe(ctx, hc, endpoint, "")
	if err != nil {
		return fail(check, "start Ironic or correct [baremetal] ironic_endpoint", "%s: %v", endpoint, err)
	}
	if code >= 500 {
		return fail(check, "look at Ironic's logs; it answers but fails", "%s answered HTTP %d", endpoint, code)
	}
	return pass(check, "%s answered HTTP %d in %s", endpoint, code, elapsed.Round(time.Millisecond))
}

// probe GETs url (with token when set) and reports the status code.
func probe(ctx context.Context, hc *http.Client, endpoint, token string) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("X-Auth-Token", token)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, unwrapURLError(err)
	}
	resp.Body.Close()
	return resp.StatusCode, time.Since(start), nil
}

// unwrapURLError drops the "Get URL:" prefix the caller prints already.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// CredentialCleanup checks that Magnetite's service user may delete the
// application credentials it makes for clusters (on cluster delete and
// rotation): Keystone's default policy lets only the owner or the admin
// role delete another user's application credential.
func CredentialCleanup(provider *gophercloud.ProviderClient, username string) Result {
	const check = "keystone credential clean-up"
	var roles []tokens.Role
	var err error
	switch res := provider.GetAuthResult().(type) {
	case tokens.CreateResult:
		roles, err = res.ExtractRoles()
	case tokens.GetResult:
		roles, err = res.ExtractRoles()
	default:
		return warn(check, "log in again with [keystone_authtoken]", "the service token's roles are unknown")
	}
	if err != nil {
		return warn(check, "log in again with [keystone_authtoken]", "the service token's roles cannot be read: %v", err)
	}
	var names []string
	for _, r := range roles {
		if strings.EqualFold(r.Name, "admin") {
			return pass(check, "the service user holds the admin role: it can delete clusters' application credentials")
		}
		names = append(names, r.Name)
	}
	return warn(check, fmt.Sprintf("openstack role add --project <service project> --user %s admin, or set [cluster_credentials] enabled = false", username),
		"the service user holds %s but not admin: clusters' application credentials will be left in Keystone when clusters are deleted or their credentials rotated",
		strings.Join(names, ", "))
}
