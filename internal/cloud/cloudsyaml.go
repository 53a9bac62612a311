package cloud

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/fault"
)

// DriverCloud is the cloud of a clouds.yaml that another service wrote
// for a cluster (a Magnum Cluster API driver, for its Cluster's identity
// Secret): the Keystone, region and interface the cluster's
// infrastructure provider uses, and the application credential it acts
// with. Magnetite acts with it for a cluster it adopted, so that it sees
// what the cluster's provider sees.
type DriverCloud struct {
	AuthURL, Region, Interface     string
	CredentialID, CredentialSecret string
	// CACert, when set, is the only CA the cloud's endpoints are trusted
	// by; Insecure trusts any ("verify: false").
	CACert   []byte
	Insecure bool
}

// ParseCloudsYAML reads cloud cloudName of a clouds.yaml or, when that is
// "", its cloud named "default" or its only one; caCert is the CA that
// came with it, if any. Only an
// application credential is taken: that is what Cluster API's providers
// are given.
func ParseCloudsYAML(data, caCert []byte, cloudName string) (DriverCloud, error) {
	var doc struct {
		Clouds map[string]struct {
			Auth struct {
				AuthURL string `json:"auth_url"`
				ID      string `json:"application_credential_id"`
				Secret  string `json:"application_credential_secret"`
			} `json:"auth"`
			Region       string `json:"region_name"`
			Interface    string `json:"interface"`
			EndpointType string `json:"endpoint_type"`
			Verify       *bool  `json:"verify"`
		} `json:"clouds"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return DriverCloud{}, errors.New("its clouds.yaml is not YAML")
	}
	c, ok := doc.Clouds[cloudName]
	if cloudName == "" {
		c, ok = doc.Clouds["default"]
		if !ok && len(doc.Clouds) == 1 {
			for _, only := range doc.Clouds {
				c, ok = only, true
			}
		}
	}
	switch {
	case !ok && cloudName != "":
		return DriverCloud{}, fmt.Errorf("its clouds.yaml has no cloud named %q", cloudName)
	case !ok:
		return DriverCloud{}, errors.New(`its clouds.yaml has no cloud named "default" and more or less than one other`)
	}
	if c.Auth.AuthURL == "" || c.Auth.ID == "" || c.Auth.Secret == "" {
		return DriverCloud{}, errors.New("its clouds.yaml has no auth_url with an application credential")
	}
	out := DriverCloud{AuthURL: c.Auth.AuthURL, Region: c.Region, Interface: c.Interface,
		CredentialID: c.Auth.ID, CredentialSecret: c.Auth.Secret, CACert: caCert, Insecure: c.Verify != nil && !*c.Verify}
	if out.Interface == "" {
		out.Interface = c.EndpointType
	}
	if out.Interface == "" {
		out.Interface = "public"
	}
	return out, nil
}

// FindImage looks ref up in Glance with the cloud's credential: by ID,
// else by a unique name. found is false when the credential's project
// sees no such image.
func (dc DriverCloud) FindImage(ctx context.Context, ref string) (img facts.Image, found bool, err error) {
	sc, err := dc.serviceClient(ctx, openstack.NewImageV2)
	if err != nil {
		return facts.Image{}, false, err
	}
	got, err := findImage(ctx, sc, ref)
	if errors.Is(err, ErrInvalid) {
		return facts.Image{}, false, nil
	}
	if err != nil {
		return facts.Image{}, false, err
	}
	return imageFacts(got), true, nil
}

func (dc DriverCloud) serviceClient(ctx context.Context, client newClient) (*gophercloud.ServiceClient, error) {
	pc, err := openstack.NewClient(dc.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("auth_url %s: %w", dc.AuthURL, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	switch {
	case dc.Insecure:
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // the clouds.yaml says verify: false
	case len(dc.CACert) > 0:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(dc.CACert) {
			return nil, errors.New("the CA certificate that came with the clouds.yaml is not PEM")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	pc.HTTPClient = http.Client{Transport: tr, Timeout: 30 * time.Second}
	pc.UserAgent.Prepend("magnetite")
	err = openstack.Authenticate(ctx, pc, gophercloud.AuthOptions{IdentityEndpoint: dc.AuthURL,
		ApplicationCredentialID: dc.CredentialID, ApplicationCredentialSecret: dc.CredentialSecret})
	if err != nil {
		if gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
			return nil, fault.New(ErrInvalid, "Keystone refuses application credential %s: %v", dc.CredentialID, err)
		}
		return nil, unavailable(err, "Keystone", "log in with application credential "+dc.CredentialID)
	}
	sc, err := client(pc, gophercloud.EndpointOpts{Region: dc.Region, Availability: gophercloud.Availability(dc.Interface)})
	if err != nil {
		return nil, fault.New(ErrUnavailable, "the catalog of application credential %s: %v", dc.CredentialID, err)
	}
	return sc, nil
}
