// Package flavor is Magnetite's one way of reading Nova flavors with their
// extra specs (which say whether Nova schedules a flavor onto Ironic
// nodes): the cloud facts of a template or cluster, the bare-metal
// capacity check and `magnetite doctor` all read flavors through it.
// Callers turn its errors into their own; ErrNotFound is a flavor that
// does not exist as the caller sees Nova.
package flavor

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"

	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/fault"
)

// ExtraSpecsMicroversion is the first compute microversion that returns a
// flavor's extra specs with the flavor.
const ExtraSpecsMicroversion = "2.61"

// ErrNotFound is wrapped by Find's error for a flavor that is neither an ID
// nor the name of a flavor the caller may see.
var ErrNotFound = errors.New("flavor not found")

// ErrNoExtraSpecs is wrapped by Find's error when the flavor exists but
// its extra specs could not be read; Find returns the flavor without them.
var ErrNoExtraSpecs = errors.New("extra specs not read")

// Find reads the flavor whose ID, else whose name, is ref, among every
// flavor the caller may see (public and private), as Magnum resolves a
// flavor_id, with its extra specs. A name that several flavors carry is
// the first Nova lists, as Magnum takes it.
func Find(ctx context.Context, compute *gophercloud.ServiceClient, ref string) (facts.Flavor, error) {
	sc := withExtraSpecs(compute)
	f, err := flavors.Get(ctx, sc, ref).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotAcceptable) {
		// A Nova older than 2.61 refuses the microversion.
		sc = compute
		f, err = flavors.Get(ctx, sc, ref).Extract()
	}
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		var all []facts.Flavor
		if all, err = list(ctx, sc, false); err != nil {
			return facts.Flavor{}, fmt.Errorf("list flavors: %w", err)
		}
		for _, f := range all {
			if f.Name == ref {
				return completed(ctx, sc, f)
			}
		}
		return facts.Flavor{}, fault.New(ErrNotFound, "%s", ref)
	}
	if err != nil {
		return facts.Flavor{}, fmt.Errorf("read flavor %s: %w", ref, err)
	}
	return completed(ctx, sc, of(f))
}

// List reads every flavor the caller may see with its extra specs: inline
// from microversion 2.61, one call per flavor from older Novas.
func List(ctx context.Context, compute *gophercloud.ServiceClient) ([]facts.Flavor, error) {
	all, err := list(ctx, withExtraSpecs(compute), true)
	if err != nil {
		// A Nova older than 2.61 refuses the microversion.
		all, err = list(ctx, compute, true)
	}
	return all, err
}

func list(ctx context.Context, sc *gophercloud.ServiceClient, specs bool) ([]facts.Flavor, error) {
	pages, err := flavors.ListDetail(sc, flavors.ListOpts{AccessType: flavors.AllAccess}).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	fs, err := flavors.ExtractFlavors(pages)
	if err != nil {
		return nil, err
	}
	out := make([]facts.Flavor, 0, len(fs))
	for i := range fs {
		f := of(&fs[i])
		if specs {
			if f, err = completed(ctx, sc, f); err != nil {
				return nil, err
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// completed reads the extra specs of a flavor whose Nova left them out.
func completed(ctx context.Context, sc *gophercloud.ServiceClient, f facts.Flavor) (facts.Flavor, error) {
	if f.ExtraSpecs != nil {
		return f, nil
	}
	specs, err := flavors.ListExtraSpecs(ctx, sc, f.ID).Extract()
	if err != nil {
		return f, fault.Wrap(ErrNoExtraSpecs, err, "read the extra specs of flavor %s: %v", f.Name, err)
	}
	f.ExtraSpecs = specs
	return f, nil
}

func of(f *flavors.Flavor) facts.Flavor {
	return facts.Flavor{ID: f.ID, Name: f.Name, VCPUs: f.VCPUs, RAM: f.RAM, Disk: f.Disk, ExtraSpecs: f.ExtraSpecs}
}

// withExtraSpecs is compute asking for microversion 2.61.
func withExtraSpecs(compute *gophercloud.ServiceClient) *gophercloud.ServiceClient {
	sc := *compute
	sc.Microversion = ExtraSpecsMicroversion
	return &sc
}
