package api

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/model"
)

// ResourceChecker asks the cloud whether the image, flavors, networks and
// keypair a request names exist (*cloud.Resources).
type ResourceChecker interface {
	Check(ctx context.Context, token string, refs cloud.Refs) (cloud.Found, error)
}

// checkResources checks refs with the caller's token, as Magnum does
// before it accepts a template or a cluster: a missing resource is a 400
// that names it, a service that cannot be asked a 503.
func (s *Server) checkResources(r *http.Request, refs cloud.Refs) (cloud.Found, error) {
	if s.opts.Resources == nil || refs.Empty() {
		return cloud.Found{}, nil
	}
	// cloud.ErrInvalid answers 400, cloud.ErrUnavailable 503 (errorTable).
	found, err := s.opts.Resources.Check(r.Context(), identity(r).AuthToken, refs)
	return found, err
}

// resolveShape resolves a cluster's shape (driver.Resolve) with what the
// cloud told checkResources about its flavors and images.
// The template's driver adds what its infrastructure cannot build
// (driver.ShapeChecker), as its renderer does.
func (s *Server) resolveShape(ct *model.ClusterTemplate, c *model.Cluster, ngs []*model.NodeGroup, found cloud.Found) *driver.Shape {
	in := driver.ShapeInput{Template: ct, Cluster: c, NodeGroups: ngs, Facts: &found.Facts,
		Defaults: driver.ShapeDefaults{CreateTimeout: s.opts.DefaultCreateTimeout, BareMetalCreateTimeout: s.opts.DefaultBareMetalCreateTimeout,
			IronicComputeHosts: s.opts.IronicComputeHosts}}
	shape := driver.Resolve(in)
	if s.opts.Drivers == nil {
		return shape
	}
	d, err := s.opts.Drivers.ForTemplate(ct, shape.OSDistro)
	if err != nil {
		return shape // checkDriver answers for a template no driver builds
	}
	if sc, ok := d.(driver.ShapeChecker); ok {
		shape.Problems = append(shape.Problems, sc.CheckShape(in, shape)...)
	}
	return shape
}

// refuseUnbuildable answers 400 with what the renderer would refuse of a
// request, when the cloud was asked about it. Without a cloud to ask the
// request is accepted, and the conductor's render failure is the
// cluster's status_reason.
func (s *Server) refuseUnbuildable(what string, problems []string) error {
	if s.opts.Resources == nil || len(problems) == 0 {
		return nil
	}
	return badRequest("%s cannot be built as asked: %s.", what, strings.Join(problems, "; "))
}

// templateRefs are the resources a template names; with only set, just
// those fields (the ones a PATCH changed).
func templateRefs(ct *model.ClusterTemplate, only ...string) cloud.Refs {
	pick := func(field string, v *string) string {
		if v == nil || (len(only) > 0 && !slices.Contains(only, field)) {
			return ""
		}
		return *v
	}
	image := ct.ImageID
	return cloud.Refs{
		Image:           pick("image_id", &image),
		Flavors:         []string{pick("flavor_id", ct.FlavorID), pick("master_flavor_id", ct.MasterFlavorID)},
		ExternalNetwork: pick("external_network_id", ct.ExternalNetworkID),
		FixedNetwork:    pick("fixed_network", ct.FixedNetwork),
		FixedSubnet:     pick("fixed_subnet", ct.FixedSubnet),
	}
}

// clusterRefs are the resources a new cluster uses: its own flavors,
// networks and keypair (already defaulted from the template) and the
// template's image and external network.
func clusterRefs(ct *model.ClusterTemplate, c *model.Cluster) cloud.Refs {
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return cloud.Refs{
		Image:           ct.ImageID,
		Flavors:         []string{deref(c.FlavorID), deref(c.MasterFlavorID)},
		ExternalNetwork: deref(ct.ExternalNetworkID),
		FixedNetwork:    deref(c.FixedNetwork),
		FixedSubnet:     deref(c.FixedSubnet),
		Keypair:         deref(c.Keypair),
	}
}
