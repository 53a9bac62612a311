package baremetal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"

	"github.com/magnetite-io/magnetite/internal/facts"
)

// novaExtraSpecsVersion is the first compute microversion that returns a
// flavor's extra specs with the flavor.
const novaExtraSpecsVersion = "2.61"

// Catalog finds OpenStack service endpoints (Keystone's catalog, as
// *auth.Keystone reads it with Magnetite's service credentials).
type Catalog interface {
	Endpoint(ctx context.Context, serviceType, iface string) (string, error)
}

// NovaFlavors reads flavors from Nova with the caller's token.
type NovaFlavors struct {
	// Endpoint is Nova's compute endpoint; Catalog finds it when empty.
	Endpoint string
	Catalog  Catalog
	Timeout  time.Duration
}

func (n *NovaFlavors) client(ctx context.Context, token string) (*gophercloud.ServiceClient, error) {
	ep := n.Endpoint
	if ep == "" {
		if n.Catalog == nil {
			return nil, fmt.Errorf("%w: no Nova endpoint: set [baremetal] compute_endpoint or use Keystone authentication", ErrUnavailable)
		}
		var err error
		if ep, err = n.Catalog.Endpoint(ctx, "compute", "public"); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	timeout := n.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	pc := &gophercloud.ProviderClient{HTTPClient: http.Client{Timeout: timeout}}
	pc.UserAgent.Prepend("magnetite")
	pc.SetToken(token)
	return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: strings.TrimRight(ep, "/") + "/", Microversion: novaExtraSpecsVersion}, nil
}

// Flavor implements FlavorSource: by ID, else by a unique name, as Magnum
// resolves flavor_id.
func (n *NovaFlavors) Flavor(ctx context.Context, token, ref string) (facts.Flavor, error) {
	sc, err := n.client(ctx, token)
	if err != nil {
		return facts.Flavor{}, err
	}
	f, err := flavors.Get(ctx, sc, ref).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		f, err = n.byName(ctx, sc, ref)
	}
	if err != nil {
		return facts.Flavor{}, novaError(err, "read flavor "+ref)
	}
	specs := f.ExtraSpecs
	if specs == nil {
		// A Nova older than 2.61 leaves them out.
		if specs, err = flavors.ListExtraSpecs(ctx, sc, f.ID).Extract(); err != nil {
			return facts.Flavor{}, novaError(err, "read the extra specs of flavor "+ref)
		}
	}
	return facts.Flavor{ID: f.ID, Name: f.Name, VCPUs: f.VCPUs, RAM: f.RAM, Disk: f.Disk, ExtraSpecs: specs}, nil
}

func (n *NovaFlavors) byName(ctx context.Context, sc *gophercloud.ServiceClient, name string) (*flavors.Flavor, error) {
	pages, err := flavors.ListDetail(sc, flavors.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	all, err := flavors.ExtractFlavors(pages)
	if err != nil {
		return nil, err
	}
	var match []flavors.Flavor
	for _, f := range all {
		if f.Name == name {
			match = append(match, f)
		}
	}
	switch len(match) {
	case 0:
		return nil, fmt.Errorf("%w: %s", ErrFlavorNotFound, name)
	case 1:
		return &match[0], nil
	}
	return nil, fmt.Errorf("%w: %d flavors are named %s; use the flavor's ID", ErrFlavorNotFound, len(match), name)
}

func novaError(err error, doing string) error {
	if errors.Is(err, ErrFlavorNotFound) {
		return err
	}
	var code gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &code) {
		return fmt.Errorf("%w: could not %s: Nova answered %d", ErrUnavailable, doing, code.Actual)
	}
	return fmt.Errorf("%w: could not %s: %v", ErrUnavailable, doing, err)
}
