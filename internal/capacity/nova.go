package capacity

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/flavor"
)

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
			return nil, fault.New(baremetal.ErrUnavailable, "no Nova endpoint: set [baremetal] compute_endpoint or use Keystone authentication")
		}
		var err error
		if ep, err = n.Catalog.Endpoint(ctx, "compute", "public"); err != nil {
			return nil, fault.New(baremetal.ErrUnavailable, "%v", err)
		}
	}
	return &gophercloud.ServiceClient{ProviderClient: cloud.ProviderClient(token, n.Timeout), Endpoint: strings.TrimRight(ep, "/") + "/", Type: "compute"}, nil
}

// Flavor implements FlavorSource: by ID, else by name, as Magnum resolves
// flavor_id.
func (n *NovaFlavors) Flavor(ctx context.Context, token, ref string) (facts.Flavor, error) {
	sc, err := n.client(ctx, token)
	if err != nil {
		return facts.Flavor{}, err
	}
	f, err := flavor.Find(ctx, sc, ref)
	if errors.Is(err, flavor.ErrNotFound) {
		return facts.Flavor{}, fault.New(ErrFlavorNotFound, "%s", ref)
	}
	if err != nil {
		return facts.Flavor{}, novaError(err, "read flavor "+ref)
	}
	return f, nil
}

func novaError(err error, doing string) error {
	var code gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &code) {
		return fault.New(baremetal.ErrUnavailable, "could not %s: Nova answered %d", doing, code.Actual)
	}
	return fault.New(baremetal.ErrUnavailable, "could not %s: %v", doing, err)
}
