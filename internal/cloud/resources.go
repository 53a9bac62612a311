package cloud

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/keypairs"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/flavor"
)

var (
	// ErrInvalid means a named resource does not exist or cannot be used;
	// the API answers 400 with the message.
	ErrInvalid = errors.New("cloud: invalid resource")
	// ErrUnavailable means a service could not be asked; the API answers
	// 503.
	ErrUnavailable = errors.New("cloud: service unavailable")
)

// Catalog finds a service's endpoint (Keystone's catalog, *auth.Keystone);
// for a service it does not list it returns an error wrapping
// auth.ErrNoEndpoint, and checks of that service are skipped.
type Catalog interface {
	Endpoint(ctx context.Context, serviceType, iface string) (string, error)
}

// Refs are the resources a template, or a cluster with its template, names.
// Empty fields are not checked.
type Refs struct {
	Image           string
	Flavors         []string
	ExternalNetwork string
	FixedNetwork    string
	FixedSubnet     string
	Keypair         string
}

// Empty reports whether refs name nothing to check.
func (r Refs) Empty() bool {
	for _, f := range r.Flavors {
		if f != "" {
			return false
		}
	}
	return r.Image == "" && r.ExternalNetwork == "" && r.FixedNetwork == "" && r.FixedSubnet == "" && r.Keypair == ""
}

// Found is what the checks learnt.
type Found struct {
	// OSDistro is the image's os_distro property ("" when Glance was not
	// asked or the image has none).
	OSDistro string
	// Facts hold the image with its properties and the flavors with their
	// extra specs, as far as the cloud could be asked: the facts the
	// cluster's shape is resolved with (driver.Resolve).
	Facts facts.Facts
}

// Resources checks Refs against the services in the catalog.
type Resources struct {
	Catalog Catalog
	// Timeout bounds each request (30s when zero).
	Timeout time.Duration
	Log     *slog.Logger

	skipped sync.Map // service type -> struct{}: logged once
}

// Check asks each service about the resources named: ErrInvalid names the
// first that is missing, ErrUnavailable a service that did not answer. A
// service the catalog does not list is not asked.
func (rs *Resources) Check(ctx context.Context, token string, refs Refs) (Found, error) {
	var found Found
	if refs.Image != "" {
		err := rs.with(ctx, token, "image", openstack.NewImageV2, func(sc *gophercloud.ServiceClient) error {
			img, err := findImage(ctx, sc, refs.Image)
			if err != nil {
				return err
			}
			found.Facts.Images = append(found.Facts.Images, imageFacts(img))
			found.OSDistro = found.Facts.Images[0].Properties["os_distro"]
			return nil
		})
		if err != nil {
			return found, err
		}
	}
	var flavorRefs []string
	for _, f := range refs.Flavors {
		// Once each: the facts find a flavor by a name only when it is
		// unique.
		if f != "" && !slices.Contains(flavorRefs, f) {
			flavorRefs = append(flavorRefs, f)
		}
	}
	if len(flavorRefs) > 0 || refs.Keypair != "" {
		err := rs.with(ctx, token, "compute", openstack.NewComputeV2, func(sc *gophercloud.ServiceClient) error {
			for _, ref := range flavorRefs {
				f, err := flavor.Find(ctx, sc, ref)
				switch {
				case err == nil:
					found.Facts.Flavors = append(found.Facts.Flavors, f)
				case errors.Is(err, flavor.ErrNoExtraSpecs):
					// Extra specs that cannot be read leave the flavor's kind
					// unknown: the conductor reads them again before rendering.
				case errors.Is(err, flavor.ErrNotFound):
					return fault.New(ErrInvalid, "Unable to find flavor %s.", ref)
				default:
					return unavailable(err, "Nova", "read flavor "+ref)
				}
			}
			if refs.Keypair == "" {
				return nil
			}
			err := keypairs.Get(ctx, sc, refs.Keypair, nil).Err
			if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
				return fault.New(ErrInvalid, "Unable to find keypair %s.", refs.Keypair)
			}
			return unavailable(err, "Nova", "read keypair "+refs.Keypair)
		})
		if err != nil {
			return found, err
		}
	}
	if refs.ExternalNetwork != "" || refs.FixedNetwork != "" || refs.FixedSubnet != "" {
		err := rs.with(ctx, token, "network", openstack.NewNetworkV2, func(sc *gophercloud.ServiceClient) error {
			if refs.ExternalNetwork != "" {
				if err := networkExists(ctx, sc, refs.ExternalNetwork, true); err != nil {
					return err
				}
			}
			if refs.FixedNetwork != "" {
				if err := networkExists(ctx, sc, refs.FixedNetwork, false); err != nil {
					return err
				}
			}
			if refs.FixedSubnet != "" {
				return subnetExists(ctx, sc, refs.FixedSubnet)
			}
			return nil
		})
		if err != nil {
			return found, err
		}
	}
	var nets []string
	for _, n := range []string{refs.FixedNetwork, refs.ExternalNetwork} {
		if n != "" {
			nets = append(nets, n)
		}
	}
	if err := rs.cloudFacts(ctx, token, &found.Facts, nets); err != nil {
		return found, err
	}
	return found, nil
}

type newClient func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error)

// with runs check with a client of the service, acting as the caller; a
// service missing from the catalog is skipped (and said once in the log).
func (rs *Resources) with(ctx context.Context, token, serviceType string, client newClient, check func(*gophercloud.ServiceClient) error) error {
	ep, err := rs.Catalog.Endpoint(ctx, serviceType, "public")
	if errors.Is(err, auth.ErrNoEndpoint) {
		if _, seen := rs.skipped.LoadOrStore(serviceType, struct{}{}); !seen && rs.Log != nil {
			rs.Log.Warn("the catalog lists no service of this type: resources it holds are not checked", "service_type", serviceType)
		}
		return nil
	}
	if err != nil {
		return fault.New(ErrUnavailable, "cannot find the %s service: %v", serviceType, err)
	}
	pc := ProviderClient(token, rs.Timeout)
	pc.EndpointLocator = func(gophercloud.EndpointOpts) (string, error) { return gophercloud.NormalizeURL(ep), nil }
	sc, err := client(pc, gophercloud.EndpointOpts{})
	if err != nil {
		return fault.New(ErrUnavailable, "%s endpoint %s: %v", serviceType, ep, err)
	}
	return check(sc)
}

// ProviderClient acts with token, as Magnetite (its user agent), each
// request bounded by timeout (30s when zero).
func ProviderClient(token string, timeout time.Duration) *gophercloud.ProviderClient {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	pc := &gophercloud.ProviderClient{HTTPClient: http.Client{Timeout: timeout}}
	pc.UserAgent.Prepend("magnetite")
	pc.SetToken(token)
	return pc
}

// unavailable wraps a failed request (nil stays nil).
func unavailable(err error, service, doing string) error {
	if err == nil {
		return nil
	}
	var code gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &code) {
		return fault.New(ErrUnavailable, "could not %s: %s answered %d", doing, service, code.Actual)
	}
	return fault.New(ErrUnavailable, "could not %s: %v", doing, err)
}

// refused reports a 4xx a service answered that the caller's request
// caused and should read (not 401 or 429, which asking again may cure),
// with the service's answer.
func refused(err error) (gophercloud.ErrUnexpectedResponseCode, bool) {
	var code gophercloud.ErrUnexpectedResponseCode
	ok := errors.As(err, &code) && code.Actual >= 400 && code.Actual < 500 && code.Actual != 401 && code.Actual != 429
	return code, ok
}

// listAll reads every page of a list.
func listAll[T any](ctx context.Context, pager pagination.Pager, extract func(pagination.Page) ([]T, error)) ([]T, error) {
	pages, err := pager.AllPages(ctx)
	if err != nil {
		return nil, err
	}
	return extract(pages)
}

// imageFacts is what the renderer reads of an image: its string
// properties (os_distro, kube_version, ...), os_distro trimmed.
func imageFacts(img *images.Image) facts.Image {
	props := map[string]string{}
	for k, v := range img.Properties {
		if s, ok := v.(string); ok {
			props[k] = s
		}
	}
	if d, ok := props["os_distro"]; ok {
		props["os_distro"] = strings.TrimSpace(d)
	}
	return facts.Image{ID: img.ID, Name: img.Name, Properties: props}
}

// findImage finds an image by ID, else by a unique name.
func findImage(ctx context.Context, sc *gophercloud.ServiceClient, ref string) (*images.Image, error) {
	img, err := images.Get(ctx, sc, ref).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) || gophercloud.ResponseCodeIs(err, http.StatusBadRequest) {
		// Not an image ID (Glance refuses what is not a UUID): a name.
		var pages []images.Image
		pages, err = listAll(ctx, images.List(sc, images.ListOpts{Name: ref}), images.ExtractImages)
		switch {
		case err != nil:
		case len(pages) == 0:
			return nil, fault.New(ErrInvalid, "Image %s could not be found.", ref)
		case len(pages) > 1:
			return nil, fault.New(ErrInvalid, "Multiple images exist with same name %q. Please use the image ID instead.", ref)
		default:
			img = &pages[0]
		}
	}
	if err != nil {
		return nil, unavailable(err, "Glance", "read image "+ref)
	}
	return img, nil
}

// networkExists finds exactly one network whose ID or name is ref
// (external ones only when external is set).
func networkExists(ctx context.Context, sc *gophercloud.ServiceClient, ref string, externalOnly bool) error {
	what := "fixed network"
	var opts networks.ListOptsBuilder = networks.ListOpts{}
	if externalOnly {
		what = "external network"
		yes := true
		opts = external.ListOptsExt{ListOptsBuilder: opts, External: &yes}
	}
	all, err := listAll(ctx, networks.List(sc, opts), networks.ExtractNetworks)
	if err != nil {
		return unavailable(err, "Neutron", "list networks")
	}
	return exactlyOne(all, ref, func(n networks.Network) (string, string) { return n.ID, n.Name }, what, what+"s", "network")
}

// subnetExists finds exactly one subnet whose ID or name is ref.
func subnetExists(ctx context.Context, sc *gophercloud.ServiceClient, ref string) error {
	all, err := listAll(ctx, subnets.List(sc, subnets.ListOpts{}), subnets.ExtractSubnets)
	if err != nil {
		return unavailable(err, "Neutron", "list subnets")
	}
	return exactlyOne(all, ref, func(s subnets.Subnet) (string, string) { return s.ID, s.Name }, "fixed subnet", "subnets", "subnet")
}

// exactlyOne refuses a ref that is the ID or name of none of all, or the
// name of several, as Magnum words it: what names the kind of one, many
// of several, and idOf the kind whose ID to use instead.
func exactlyOne[T any](all []T, ref string, key func(T) (id, name string), what, many, idOf string) error {
	n := 0
	for _, it := range all {
		if id, name := key(it); id == ref || name == ref {
			n++
		}
	}
	switch {
	case n == 0:
		return fault.New(ErrInvalid, "Unable to find %s %s.", what, ref)
	case n > 1:
		return fault.New(ErrInvalid, "Multiple %s exist with same name %q. Please use the %s ID instead.", many, ref, idOf)
	}
	return nil
}
