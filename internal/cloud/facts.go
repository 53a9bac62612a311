package cloud

import (
	"context"
	"errors"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/flavor"
)

// FactRefs are the images, flavors and networks a cluster's rendering
// needs to know about, by ID or name.
type FactRefs struct {
	Images   []string
	Flavors  []string
	Networks []string
}

// Facts reads what the driver needs about refs: each flavor with its extra
// specs (bare-metal resource classes), each image with its properties
// (os_distro, kube_version) and each network with router:external and
// port_security_enabled. A resource that does not exist is left out (the
// driver names what is missing); a service that does not answer is
// ErrUnavailable, worth retrying.
func (rs *Resources) Facts(ctx context.Context, token string, refs FactRefs) (*facts.Facts, error) {
	out := &facts.Facts{}
	if len(refs.Images) > 0 {
		err := rs.with(ctx, token, "image", openstack.NewImageV2, func(sc *gophercloud.ServiceClient) error {
			for _, ref := range refs.Images {
				img, err := findImage(ctx, sc, ref)
				if errors.Is(err, ErrInvalid) {
					continue
				}
				if err != nil {
					return err
				}
				out.Images = append(out.Images, imageFacts(img))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(refs.Flavors) > 0 {
		err := rs.with(ctx, token, "compute", openstack.NewComputeV2, func(sc *gophercloud.ServiceClient) error {
			for _, ref := range refs.Flavors {
				f, err := flavor.Find(ctx, sc, ref)
				if errors.Is(err, flavor.ErrNotFound) {
					continue
				}
				if err != nil {
					return unavailable(err, "Nova", "read flavor "+ref)
				}
				out.Flavors = append(out.Flavors, f)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if err := rs.cloudFacts(ctx, token, out, refs.Networks); err != nil {
		return nil, err
	}
	return out, nil
}

// FactRefsOf lists what a cluster's template, cluster and node groups name.
func FactRefsOf(images, flavors, networks []*string) FactRefs {
	collect := func(ptrs []*string) []string {
		var out []string
		seen := map[string]bool{}
		for _, p := range ptrs {
			if p != nil && *p != "" && !seen[*p] {
				seen[*p] = true
				out = append(out, *p)
			}
		}
		return out
	}
	return FactRefs{Images: collect(images), Flavors: collect(flavors), Networks: collect(networks)}
}

// cloudFacts adds to out what a cluster's shape is checked against beyond
// its flavors and images: the optional services the cloud has, Nova's
// availability zones, and the networks named (with the external networks
// their routers reach).
func (rs *Resources) cloudFacts(ctx context.Context, token string, out *facts.Facts, networkRefs []string) error {
	services, err := rs.Services(ctx, token)
	if err != nil {
		return err
	}
	out.Services = &services
	err = rs.with(ctx, token, "compute", openstack.NewComputeV2, func(sc *gophercloud.ServiceClient) error {
		out.Zones, err = zones(ctx, sc)
		return err
	})
	if err != nil || len(networkRefs) == 0 {
		return err
	}
	return rs.with(ctx, token, "network", openstack.NewNetworkV2, func(sc *gophercloud.ServiceClient) error {
		// port_security_enabled is absent without Neutron's
		// port-security extension: unknown, not false.
		type network struct {
			ID                  string `json:"id"`
			Name                string `json:"name"`
			External            bool   `json:"router:external"`
			Shared              bool   `json:"shared"`
			PortSecurityEnabled *bool  `json:"port_security_enabled"`
		}
		all, err := listAll(ctx, networks.List(sc, networks.ListOpts{}), func(p pagination.Page) ([]network, error) {
			var all []network
			err := networks.ExtractNetworksInto(p, &all)
			return all, err
		})
		if err != nil {
			return unavailable(err, "Neutron", "list networks")
		}
		for _, ref := range networkRefs {
			for _, n := range all {
				if n.ID != ref && n.Name != ref {
					continue
				}
				fn := facts.Network{ID: n.ID, Name: n.Name, External: n.External, Shared: n.Shared,
					PortSecurityEnabled: n.PortSecurityEnabled}
				// A shared network's routers are usually another
				// project's, which the user cannot see: its routes stay
				// unknown rather than wrongly missing.
				if services.FloatingIPs && !n.External && !n.Shared {
					if fn.ExternalRoutes, fn.RoutesKnown, err = externalRoutes(ctx, sc, n.ID); err != nil {
						return err
					}
				}
				out.Networks = append(out.Networks, fn)
			}
		}
		return nil
	})
}
