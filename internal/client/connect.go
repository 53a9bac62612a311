package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
)

// Settings say how to reach and authenticate to the API, as the OpenStack
// clients take them from flags and OS_* variables.
type Settings struct {
	// Endpoint is the v1 URL (OS_ENDPOINT). With Keystone it overrides the
	// catalog's endpoint.
	Endpoint string
	// Token is sent as X-Auth-Token (OS_TOKEN). With Endpoint set it is used
	// as is, without Keystone.
	Token string
	// Cloud names an entry of clouds.yaml (OS_CLOUD).
	Cloud string

	AuthURL           string
	Username          string
	UserID            string
	Password          string
	ProjectName       string
	ProjectID         string
	UserDomainName    string
	UserDomainID      string
	ProjectDomainName string
	ProjectDomainID   string
	AppCredentialID   string
	AppCredentialName string
	AppCredentialKey  string
	Region            string
	Interface         string
}

// SettingsFromEnv reads the usual OS_* variables.
func SettingsFromEnv(getenv func(string) string) Settings {
	first := func(names ...string) string {
		for _, n := range names {
			if v := getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	return Settings{
		Endpoint:          getenv("OS_ENDPOINT"),
		Token:             getenv("OS_TOKEN"),
		Cloud:             getenv("OS_CLOUD"),
		AuthURL:           getenv("OS_AUTH_URL"),
		Username:          getenv("OS_USERNAME"),
		UserID:            getenv("OS_USER_ID"),
		Password:          getenv("OS_PASSWORD"),
		ProjectName:       first("OS_PROJECT_NAME", "OS_TENANT_NAME"),
		ProjectID:         first("OS_PROJECT_ID", "OS_TENANT_ID"),
		UserDomainName:    first("OS_USER_DOMAIN_NAME", "OS_DOMAIN_NAME"),
		UserDomainID:      first("OS_USER_DOMAIN_ID", "OS_DOMAIN_ID"),
		ProjectDomainName: first("OS_PROJECT_DOMAIN_NAME", "OS_DOMAIN_NAME"),
		ProjectDomainID:   first("OS_PROJECT_DOMAIN_ID", "OS_DOMAIN_ID"),
		AppCredentialID:   getenv("OS_APPLICATION_CREDENTIAL_ID"),
		AppCredentialName: getenv("OS_APPLICATION_CREDENTIAL_NAME"),
		AppCredentialKey:  getenv("OS_APPLICATION_CREDENTIAL_SECRET"),
		Region:            getenv("OS_REGION_NAME"),
		Interface:         getenv("OS_INTERFACE"),
	}
}

// Mode says how Connect will authenticate.
type Mode string

const (
	// ModeToken sends the given token (or none) to the given endpoint:
	// noauth deployments and tokens issued elsewhere.
	ModeToken Mode = "token"
	// ModeCloud authenticates with a clouds.yaml entry.
	ModeCloud Mode = "clouds.yaml"
	// ModeKeystone authenticates with OS_AUTH_URL and friends.
	ModeKeystone Mode = "keystone"
)

// Mode picks the authentication: an explicit endpoint with a token (or
// with no Keystone settings at all) goes straight to the API; otherwise a
// named cloud, then OS_AUTH_URL.
func (s Settings) Mode() Mode {
	switch {
	case s.Endpoint != "" && s.Token != "":
		return ModeToken
	case s.Cloud != "":
		return ModeCloud
	case s.AuthURL != "":
		return ModeKeystone
	}
	return ModeToken
}

// Connect returns a client for the settings, authenticating to Keystone
// first when they name a cloud or an identity endpoint.
func Connect(ctx context.Context, s Settings) (*Client, error) {
	if m := s.Mode(); m == ModeCloud || m == ModeKeystone {
		ao, eo, tlsConfig, err := s.keystoneOptions()
		if err != nil {
			return nil, err
		}
		return keystoneClient(ctx, s, ao, eo, tlsConfig)
	}
	endpoint := s.Endpoint
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	return New(endpoint, StaticToken(s.Token), nil)
}

// keystoneOptions are the authentication, endpoint and TLS settings of a
// clouds.yaml cloud (OS_CLOUD) or of the OS_* variables.
func (s Settings) keystoneOptions() (gophercloud.AuthOptions, gophercloud.EndpointOpts, *tls.Config, error) {
	if s.Mode() == ModeCloud {
		opts := []clouds.ParseOption{clouds.WithCloudName(s.Cloud)}
		if s.Region != "" {
			opts = append(opts, clouds.WithRegion(s.Region))
		}
		if s.Interface != "" {
			opts = append(opts, clouds.WithEndpointType(s.Interface))
		}
		ao, eo, tlsConfig, err := clouds.Parse(opts...)
		if err != nil {
			return ao, eo, nil, fmt.Errorf("client: cloud %q: %w", s.Cloud, err)
		}
		return ao, eo, tlsConfig, nil
	}
	return s.authOptions(), gophercloud.EndpointOpts{Region: s.Region, Availability: availability(s.Interface)}, nil, nil
}

func (s Settings) authOptions() gophercloud.AuthOptions {
	ao := gophercloud.AuthOptions{
		IdentityEndpoint: s.AuthURL, Username: s.Username, UserID: s.UserID, Password: s.Password,
		DomainName: s.UserDomainName, DomainID: s.UserDomainID, TokenID: s.Token,
		ApplicationCredentialID: s.AppCredentialID, ApplicationCredentialName: s.AppCredentialName,
		ApplicationCredentialSecret: s.AppCredentialKey,
	}
	switch {
	case s.ProjectID != "":
		ao.Scope = &gophercloud.AuthScope{ProjectID: s.ProjectID}
	case s.ProjectName != "":
		ao.Scope = &gophercloud.AuthScope{ProjectName: s.ProjectName, DomainName: s.ProjectDomainName, DomainID: s.ProjectDomainID}
	}
	return ao
}

func availability(iface string) gophercloud.Availability {
	switch strings.TrimSuffix(strings.ToLower(iface), "url") {
	case "internal":
		return gophercloud.AvailabilityInternal
	case "admin":
		return gophercloud.AvailabilityAdmin
	}
	return gophercloud.AvailabilityPublic
}

// keystoneClient authenticates and finds the container-infra endpoint in the
// catalog (unless the settings name one).
func keystoneClient(ctx context.Context, s Settings, ao gophercloud.AuthOptions, eo gophercloud.EndpointOpts, tlsConfig *tls.Config) (*Client, error) {
	if ao.IdentityEndpoint == "" {
		return nil, fmt.Errorf("client: no identity endpoint: set OS_AUTH_URL or auth_url in clouds.yaml")
	}
	provider, hc, err := authenticate(ctx, ao, tlsConfig)
	if err != nil {
		return nil, err
	}
	endpoint := s.Endpoint
	if endpoint == "" {
		sc, err := openstack.NewContainerInfraV1(provider, eo)
		if err != nil {
			return nil, fmt.Errorf("client: find the container-infra endpoint in the service catalog: %w", err)
		}
		endpoint = sc.Endpoint
	}
	return New(endpoint, keystoneCredentials{provider}, hc)
}

// authenticate logs in to Keystone; hc is nil unless tlsConfig asks for a
// client of its own.
func authenticate(ctx context.Context, ao gophercloud.AuthOptions, tlsConfig *tls.Config) (*gophercloud.ProviderClient, *http.Client, error) {
	if ao.IdentityEndpoint == "" {
		return nil, nil, fmt.Errorf("client: no identity endpoint: set OS_AUTH_URL or auth_url in clouds.yaml")
	}
	// Long waits outlive a token; the password may be used again.
	ao.AllowReauth = ao.TokenID == ""
	var hc *http.Client
	var provider *gophercloud.ProviderClient
	var err error
	if tlsConfig == nil {
		provider, err = openstack.AuthenticatedClient(ctx, ao)
	} else {
		// clouds.yaml's cacert/insecure: the HTTP client must be in place
		// before the first request to Keystone.
		hc = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment}}
		if provider, err = openstack.NewClient(ao.IdentityEndpoint); err == nil {
			provider.HTTPClient = *hc
			err = openstack.Authenticate(ctx, provider, ao)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("client: authenticate to %s: %w", ao.IdentityEndpoint, err)
	}
	return provider, hc, nil
}

// Identity logs in with the settings (clouds.yaml or OS_* variables, never
// a bare OS_TOKEN endpoint) and returns a client of Keystone's v3 API, for
// administrative commands such as `magnetite keystone register`.
func Identity(ctx context.Context, s Settings) (*gophercloud.ServiceClient, error) {
	if s.Mode() == ModeToken {
		return nil, fmt.Errorf("client: Keystone administration needs Keystone credentials: set OS_CLOUD (clouds.yaml) or OS_AUTH_URL, OS_USERNAME, OS_PASSWORD and OS_PROJECT_NAME of an administrator")
	}
	ao, eo, tlsConfig, err := s.keystoneOptions()
	if err != nil {
		return nil, err
	}
	provider, _, err := authenticate(ctx, ao, tlsConfig)
	if err != nil {
		return nil, err
	}
	return openstack.NewIdentityV3(provider, eo)
}

// keystoneCredentials renew the token through the provider client.
type keystoneCredentials struct{ p *gophercloud.ProviderClient }

func (k keystoneCredentials) Token() string { return k.p.Token() }

func (k keystoneCredentials) Reauthenticate(ctx context.Context, refused string) error {
	return k.p.Reauthenticate(ctx, refused)
}
