package cloud

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/availabilityzones"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/facts"
)

// l3Alias is the alias Neutron lists its L3 extension under (routers and
// floating IPs) in GET /v2.0/extensions; a Neutron without the L3 service
// plugin does not list it and answers 404 for /v2.0/floatingips
// (neutron/extensions/l3.py, neutron-lib api/definitions/l3.py).
const l3Alias = "router"

// routerInterfaceOwners are the device owners of the ports by which a
// router attaches to a subnet: a legacy or HA router's, and a distributed
// one's (neutron-lib constants.ROUTER_INTERFACE_OWNERS).
var routerInterfaceOwners = []string{"network:router_interface", "network:router_interface_distributed",
	"network:ha_router_replicated_interface"}

// Services reads which optional services the cloud has: Octavia and
// Cinder from the catalog, routers and floating IPs from Neutron's
// extension list. A service the catalog lists but that does not answer is
// ErrUnavailable, worth retrying; one it does not list has nothing to ask.
func (rs *Resources) Services(ctx context.Context, token string) (facts.Services, error) {
	var s facts.Services
	listed := func(types ...string) (bool, error) {
		for _, t := range types {
			_, err := rs.Catalog.Endpoint(ctx, t, "public")
			if err == nil {
				return true, nil
			}
			if !errors.Is(err, auth.ErrNoEndpoint) {
				return false, unavailable(err, "Keystone", "read the service catalog")
			}
		}
		return false, nil
	}
	var err error
	if s.LoadBalancers, err = listed("load-balancer"); err != nil {
		return s, err
	}
	if s.BlockStorage, err = listed("block-storage", "volumev3"); err != nil {
		return s, err
	}
	err = rs.with(ctx, token, "network", openstack.NewNetworkV2, func(sc *gophercloud.ServiceClient) error {
		aliases, err := neutronExtensions(ctx, sc)
		s.FloatingIPs = slices.Contains(aliases, l3Alias)
		return err
	})
	return s, err
}

// neutronExtensions lists the aliases of the extensions Neutron loaded.
func neutronExtensions(ctx context.Context, sc *gophercloud.ServiceClient) ([]string, error) {
	var body struct {
		Extensions []struct {
			Alias string `json:"alias"`
		} `json:"extensions"`
	}
	_, err := sc.Get(ctx, sc.ServiceURL("extensions"), &body, nil)
	if err != nil {
		return nil, unavailable(err, "Neutron", "list its extensions")
	}
	var out []string
	for _, e := range body.Extensions {
		out = append(out, e.Alias)
	}
	return out, nil
}

// zones lists the Nova availability zones that are available. A Nova whose
// policy keeps the list from the user leaves the zones unknown (nil).
func zones(ctx context.Context, sc *gophercloud.ServiceClient) ([]string, error) {
	all, err := listAll(ctx, availabilityzones.List(sc), availabilityzones.ExtractAvailabilityZones)
	if gophercloud.ResponseCodeIs(err, http.StatusForbidden) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable(err, "Nova", "list availability zones")
	}
	out := []string{}
	for _, z := range all {
		if z.ZoneState.Available {
			out = append(out, z.ZoneName)
		}
	}
	return out, nil
}

// externalRoutes lists the external networks that routers the user can
// see connect network's subnets to: their interface ports on the network,
// and each router's gateway. known is false when a router interface is on
// the network but its router cannot be read: Neutron shows a network's
// owner every port on it, also those of another project's router (an
// operator's), whose gateway the user may not see, so the route may well
// exist.
func externalRoutes(ctx context.Context, sc *gophercloud.ServiceClient, network string) (routes []string, known bool, err error) {
	all, err := listAll(ctx, ports.List(sc, ports.ListOpts{NetworkID: network}), ports.ExtractPorts)
	if err != nil {
		return nil, false, unavailable(err, "Neutron", "list the ports of network "+network)
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range all {
		if p.NetworkID != network || !slices.Contains(routerInterfaceOwners, p.DeviceOwner) || seen[p.DeviceID] {
			continue
		}
		seen[p.DeviceID] = true
		rt, err := routers.Get(ctx, sc, p.DeviceID).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			// Another project's router, or one deleted meanwhile.
			return nil, false, nil
		}
		if err != nil {
			return nil, false, unavailable(err, "Neutron", "read router "+p.DeviceID)
		}
		if gw := rt.GatewayInfo.NetworkID; gw != "" && !slices.Contains(out, gw) {
			out = append(out, gw)
		}
	}
	return out, true, nil
}
