package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/domains"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/endpoints"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/regions"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/services"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/client"
	"github.com/magnetite-io/magnetite/internal/config"
)

// registration is what `magnetite keystone register` makes sure Keystone
// holds: Magnetite's service user with its roles on the service project,
// and the container-infra service with one endpoint per interface.
type registration struct {
	user, password            string
	project                   string
	userDomain, projectDomain string
	roles                     []string
	serviceName, serviceType  string
	description               string
	region                    string
	endpoints                 map[gophercloud.Availability]string // interface -> URL
	out                       io.Writer
	identity                  *gophercloud.ServiceClient
}

func keystoneCommand(g *globalFlags) *cobra.Command {
	return group("keystone", "Register Magnetite in Keystone", keystoneRegisterCommand(g))
}

func keystoneRegisterCommand(g *globalFlags) *cobra.Command {
	r := &registration{}
	var publicURL, internalURL, adminURL string
	cmd := &cobra.Command{
		Use:   "register --public-url URL [flags]",
		Short: "Create Magnetite's service user, roles, catalog service and endpoints in Keystone, or bring them in line; running it again changes nothing",
		Long: `Makes Keystone hold what Magnetite needs, creating only what is missing and
correcting what differs, so it is safe to run on every deployment:

  - the service project and Magnetite's service user in it (password from
    [keystone_authtoken] password, MAGNETITE_KEYSTONE_AUTHTOKEN_PASSWORD or
    --password-file; reset only when it no longer logs in),
  - the user's roles on the project (default: service, to validate tokens,
    and admin, to delete clusters' application credentials),
  - the container-infra service and its public (and optional internal and
    admin) endpoints in the region.

It runs as a Keystone administrator, from OS_CLOUD (clouds.yaml) or the
OS_* variables. User, project, domains and region default to the
[keystone_authtoken] options of Magnetite's configuration.`,
		Args: cobra.NoArgs,
		RunE: g.configured(func(cmd *cobra.Command, cfg *config.Config, _ []string) error {
			fromConfig := func(flag, option string, v *string) {
				if !cmd.Flags().Changed(flag) && cfg.String("keystone_authtoken", option) != "" {
					*v = cfg.String("keystone_authtoken", option)
				}
			}
			fromConfig("user", "username", &r.user)
			fromConfig("project", "project_name", &r.project)
			fromConfig("user-domain", "user_domain_name", &r.userDomain)
			fromConfig("project-domain", "project_domain_name", &r.projectDomain)
			fromConfig("region", "region_name", &r.region)
			if r.password == "" {
				r.password = cfg.String("keystone_authtoken", "password")
			} else {
				b, err := os.ReadFile(r.password)
				if err != nil {
					return fmt.Errorf("--password-file: %w", err)
				}
				r.password = strings.TrimRight(string(b), "\r\n")
			}
			if r.password == "" {
				return errors.New("no password for the service user: set [keystone_authtoken] password, MAGNETITE_KEYSTONE_AUTHTOKEN_PASSWORD or --password-file")
			}
			r.endpoints = map[gophercloud.Availability]string{}
			for iface, u := range map[gophercloud.Availability]string{
				gophercloud.AvailabilityPublic: publicURL, gophercloud.AvailabilityInternal: internalURL, gophercloud.AvailabilityAdmin: adminURL,
			} {
				if u == "" {
					continue
				}
				if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
					return fmt.Errorf("--%s-url %q is not an http(s) URL", iface, u)
				}
				r.endpoints[iface] = strings.TrimRight(u, "/")
			}
			if r.endpoints[gophercloud.AvailabilityPublic] == "" {
				return errors.New("--public-url is needed: the address clients reach Magnetite at, ending in /v1 as Magnum's endpoint does")
			}
			r.out = cmd.OutOrStdout()
			ctx := cmd.Context()
			var err error
			r.identity, err = client.Identity(ctx, client.SettingsFromEnv(os.Getenv))
			if err != nil {
				return err
			}
			return r.run(ctx)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&publicURL, "public-url", "", "public endpoint, e.g. https://magnum.example.net:9511/v1 (required)")
	f.StringVar(&internalURL, "internal-url", "", "internal endpoint (default: none)")
	f.StringVar(&adminURL, "admin-url", "", "admin endpoint (default: none)")
	f.StringVar(&r.region, "region", "RegionOne", "region of the endpoints (default: [keystone_authtoken] region_name, else RegionOne); created when missing")
	f.StringVar(&r.user, "user", "magnetite", "service user (default: [keystone_authtoken] username)")
	f.StringVar(&r.password, "password-file", "", "file holding the service user's password (default: [keystone_authtoken] password)")
	f.StringVar(&r.project, "project", "service", "project of the service user (default: [keystone_authtoken] project_name)")
	f.StringVar(&r.userDomain, "user-domain", "Default", "domain of the user (default: [keystone_authtoken] user_domain_name)")
	f.StringVar(&r.projectDomain, "project-domain", "Default", "domain of the project (default: [keystone_authtoken] project_domain_name)")
	f.StringSliceVar(&r.roles, "role", []string{"service", "admin"}, "roles of the user on the project (repeat; service validates tokens, admin deletes clusters' application credentials)")
	f.StringVar(&r.serviceName, "service-name", "magnetite", "name of the catalog service")
	f.StringVar(&r.serviceType, "service-type", "container-infra", "type of the catalog service; clients of Magnum look for container-infra")
	f.StringVar(&r.description, "description", "Kubernetes clusters (OpenStack Magnum v1 API)", "description of the catalog service")
	return cmd
}

// report prints one line per object: created, updated or unchanged.
func (r *registration) report(what, outcome string) {
	fmt.Fprintf(r.out, "%-9s %s\n", outcome, what)
}

func (r *registration) run(ctx context.Context) error {
	userDomain, err := r.domainID(ctx, r.userDomain)
	if err != nil {
		return err
	}
	projectDomain, err := r.domainID(ctx, r.projectDomain)
	if err != nil {
		return err
	}
	projectID, err := r.ensureProject(ctx, projectDomain)
	if err != nil {
		return err
	}
	userID, err := r.ensureUser(ctx, userDomain, projectID)
	if err != nil {
		return err
	}
	for _, role := range r.roles {
		if err := r.ensureRole(ctx, role, userID, projectID); err != nil {
			return err
		}
	}
	if err := r.ensureRegion(ctx); err != nil {
		return err
	}
	serviceID, err := r.ensureService(ctx)
	if err != nil {
		return err
	}
	for _, iface := range []gophercloud.Availability{gophercloud.AvailabilityPublic, gophercloud.AvailabilityInternal, gophercloud.AvailabilityAdmin} {
		if u := r.endpoints[iface]; u != "" {
			if err := r.ensureEndpoint(ctx, serviceID, iface, u); err != nil {
				return err
			}
		}
	}
	return nil
}

// keystoneList fetches every page of a Keystone listing and extracts its
// items; what names the listing in the error.
func keystoneList[T any](ctx context.Context, p pagination.Pager, extract func(pagination.Page) ([]T, error), what string) ([]T, error) {
	pages, err := p.AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("keystone: find %s: %w", what, err)
	}
	return extract(pages)
}

func (r *registration) domainID(ctx context.Context, name string) (string, error) {
	list, err := keystoneList(ctx, domains.List(r.identity, domains.ListOpts{Name: name}), domains.ExtractDomains, "domain "+name)
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", fmt.Errorf("keystone: there is no domain %q; create it or name another with --user-domain/--project-domain", name)
	}
	return list[0].ID, nil
}

func (r *registration) ensureProject(ctx context.Context, domainID string) (string, error) {
	what := fmt.Sprintf("project %s (domain %s)", r.project, r.projectDomain)
	list, err := keystoneList(ctx, projects.List(r.identity, projects.ListOpts{Name: r.project, DomainID: domainID}), projects.ExtractProjects, what)
	if err != nil {
		return "", err
	}
	if len(list) > 0 {
		r.report(what, "unchanged")
		return list[0].ID, nil
	}
	p, err := projects.Create(ctx, r.identity, projects.CreateOpts{Name: r.project, DomainID: domainID,
		Description: "Service users of OpenStack services"}).Extract()
	if err != nil {
		return "", fmt.Errorf("keystone: create %s: %w", what, err)
	}
	r.report(what, "created")
	return p.ID, nil
}

func (r *registration) ensureUser(ctx context.Context, domainID, projectID string) (string, error) {
	what := fmt.Sprintf("user %s (domain %s)", r.user, r.userDomain)
	list, err := keystoneList(ctx, users.List(r.identity, users.ListOpts{Name: r.user, DomainID: domainID}), users.ExtractUsers, what)
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		u, err := users.Create(ctx, r.identity, users.CreateOpts{Name: r.user, DomainID: domainID, Password: r.password,
			DefaultProjectID: projectID, Description: "Magnetite service user"}).Extract()
		if err != nil {
			return "", fmt.Errorf("keystone: create %s: %w", what, err)
		}
		r.report(what, "created")
		return u.ID, nil
	}
	u := list[0]
	// The password is set again only when it does not log in: Keystone
	// keeps password history, and a needless reset would count in it.
	if r.passwordWorks(ctx, u.ID) {
		r.report(what, "unchanged")
		return u.ID, nil
	}
	if _, err := users.Update(ctx, r.identity, u.ID, users.UpdateOpts{Password: r.password}).Extract(); err != nil {
		return "", fmt.Errorf("keystone: set the password of %s: %w", what, err)
	}
	r.report(what+": password", "updated")
	return u.ID, nil
}

// passwordWorks logs in as the user, unscoped (roles are not granted yet on
// a first run).
func (r *registration) passwordWorks(ctx context.Context, userID string) bool {
	p, err := openstack.NewClient(r.identity.IdentityEndpoint)
	if err != nil {
		return false
	}
	p.HTTPClient = r.identity.HTTPClient
	return openstack.Authenticate(ctx, p, gophercloud.AuthOptions{
		IdentityEndpoint: r.identity.IdentityEndpoint, UserID: userID, Password: r.password,
	}) == nil
}

func (r *registration) ensureRole(ctx context.Context, name, userID, projectID string) error {
	list, err := keystoneList(ctx, roles.List(r.identity, roles.ListOpts{Name: name}), roles.ExtractRoles, "role "+name)
	if err != nil {
		return err
	}
	var roleID string
	for _, role := range list {
		if role.DomainID == "" { // a global role, not a domain-specific one
			roleID = role.ID
		}
	}
	if roleID == "" {
		// Keystone releases before 2023.2 do not create the service role.
		role, err := roles.Create(ctx, r.identity, roles.CreateOpts{Name: name}).Extract()
		if err != nil {
			return fmt.Errorf("keystone: create role %s: %w", name, err)
		}
		r.report("role "+name, "created")
		roleID = role.ID
	}
	what := fmt.Sprintf("role %s of user %s on project %s", name, r.user, r.project)
	err = roles.Validate(ctx, r.identity, roleID, roles.ValidateOpts{UserID: userID, ProjectID: projectID}).ExtractErr()
	if err == nil {
		r.report(what, "unchanged")
		return nil
	}
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return fmt.Errorf("keystone: check %s: %w", what, err)
	}
	if err := roles.Assign(ctx, r.identity, roleID, roles.AssignOpts{UserID: userID, ProjectID: projectID}).ExtractErr(); err != nil {
		return fmt.Errorf("keystone: grant %s: %w", what, err)
	}
	r.report(what, "created")
	return nil
}

func (r *registration) ensureRegion(ctx context.Context) error {
	_, err := regions.Get(ctx, r.identity, r.region).Extract()
	if err == nil {
		return nil
	}
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return fmt.Errorf("keystone: find region %s: %w", r.region, err)
	}
	if _, err := regions.Create(ctx, r.identity, regions.CreateOpts{ID: r.region}).Extract(); err != nil {
		return fmt.Errorf("keystone: create region %s: %w", r.region, err)
	}
	r.report("region "+r.region, "created")
	return nil
}

func (r *registration) ensureService(ctx context.Context) (string, error) {
	what := fmt.Sprintf("service %s (%s)", r.serviceName, r.serviceType)
	list, err := keystoneList(ctx, services.List(r.identity, services.ListOpts{ServiceType: r.serviceType}), services.ExtractServices, what)
	if err != nil {
		return "", err
	}
	var found []services.Service
	for _, s := range list {
		if serviceName(s) == r.serviceName {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		for _, s := range list {
			// Clients take the first container-infra service of the
			// catalog: a second one (Magnum's) would make them pick either.
			fmt.Fprintf(r.out, "warning   the catalog already has a %s service %q (%s); clients may find it instead of %s\n",
				r.serviceType, serviceName(s), s.ID, r.serviceName)
		}
		s, err := services.Create(ctx, r.identity, services.CreateOpts{Type: r.serviceType, Enabled: ptrTo(true),
			Name: r.serviceName, Description: r.description}).Extract()
		if err != nil {
			return "", fmt.Errorf("keystone: create %s: %w", what, err)
		}
		r.report(what, "created")
		return s.ID, nil
	case 1:
	default:
		return "", fmt.Errorf("keystone: the catalog has %d %s services named %s; delete all but one (openstack service list) and run this again", len(found), r.serviceType, r.serviceName)
	}
	s := found[0]
	if s.Enabled && serviceDescription(s) == r.description {
		r.report(what, "unchanged")
		return s.ID, nil
	}
	if _, err := services.Update(ctx, r.identity, s.ID, services.UpdateOpts{Type: r.serviceType, Enabled: ptrTo(true),
		Description: ptrTo(r.description)}).Extract(); err != nil {
		return "", fmt.Errorf("keystone: update %s: %w", what, err)
	}
	r.report(what, "updated")
	return s.ID, nil
}

func serviceName(s services.Service) string {
	if s.Name != "" {
		return s.Name
	}
	n, _ := s.Extra["name"].(string)
	return n
}

func serviceDescription(s services.Service) string {
	if s.Description != "" {
		return s.Description
	}
	d, _ := s.Extra["description"].(string)
	return d
}

func (r *registration) ensureEndpoint(ctx context.Context, serviceID string, iface gophercloud.Availability, url string) error {
	what := fmt.Sprintf("endpoint %s %s %s", r.region, iface, url)
	list, err := keystoneList(ctx, endpoints.List(r.identity, endpoints.ListOpts{ServiceID: serviceID, Availability: iface, RegionID: r.region}), endpoints.ExtractEndpoints, what)
	if err != nil {
		return err
	}
	switch {
	case len(list) == 0:
		if _, err := endpoints.Create(ctx, r.identity, endpoints.CreateOpts{ServiceID: serviceID, Availability: iface,
			Region: r.region, URL: url, Enabled: ptrTo(true)}).Extract(); err != nil {
			return fmt.Errorf("keystone: create %s: %w", what, err)
		}
		r.report(what, "created")
		return nil
	case len(list) > 1:
		return fmt.Errorf("keystone: service %s has %d %s endpoints in %s; delete all but one (openstack endpoint list --service %s) and run this again",
			r.serviceName, len(list), iface, r.region, serviceID)
	}
	e := list[0]
	if e.URL == url && e.Enabled {
		r.report(what, "unchanged")
		return nil
	}
	if _, err := endpoints.Update(ctx, r.identity, e.ID, endpoints.UpdateOpts{URL: url, Enabled: ptrTo(true)}).Extract(); err != nil {
		return fmt.Errorf("keystone: update %s: %w", what, err)
	}
	r.report(what+" (was "+e.URL+")", "updated")
	return nil
}

func ptrTo[T any](v T) *T { return &v }
