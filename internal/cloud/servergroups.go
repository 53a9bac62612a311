package cloud

import (
	"context"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servergroups"

	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/fault"
)

// serverGroupMicroversion is the first Nova API version whose server groups
// take one policy (and the soft policies, from 2.15, with it).
const serverGroupMicroversion = "2.64"

// EnsureServerGroups finds each named server group of the token's project,
// creating those that do not exist with their policy, and returns their IDs
// by name. A group that exists with another policy is refused: Nova cannot
// change a group's policy, and its members were placed by the old one.
// When several groups carry one name (two conductors raced to create it),
// the oldest by ID is kept and the empty others are deleted, so every
// conductor settles on the same group.
func (rs *Resources) EnsureServerGroups(ctx context.Context, token string, want []facts.ServerGroup) (map[string]string, error) {
	ids := map[string]string{}
	if len(want) == 0 {
		return ids, nil
	}
	err := rs.with(ctx, token, "compute", openstack.NewComputeV2, func(sc *gophercloud.ServiceClient) error {
		sc.Microversion = serverGroupMicroversion
		have, err := listServerGroups(ctx, sc)
		if err != nil {
			return err
		}
		for _, g := range want {
			id, err := ensureServerGroup(ctx, sc, have[g.Name], g)
			if err != nil {
				return err
			}
			ids[g.Name] = id
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(ids) < len(want) {
		return nil, fault.New(ErrUnavailable, "the catalog lists no compute service to create the cluster's server groups in")
	}
	return ids, nil
}

func ensureServerGroup(ctx context.Context, sc *gophercloud.ServiceClient, same []servergroups.ServerGroup, g facts.ServerGroup) (string, error) {
	if len(same) == 0 {
		created, err := servergroups.Create(ctx, sc, servergroups.CreateOpts{Name: g.Name, Policy: g.Policy}).Extract()
		if err != nil {
			return "", novaError(err, "create server group "+g.Name)
		}
		same = []servergroups.ServerGroup{*created}
		// Another conductor may have created one too: settle on the
		// oldest, as it will.
		again, err := listServerGroups(ctx, sc)
		if err != nil {
			return "", err
		}
		if len(again[g.Name]) > 0 {
			same = again[g.Name]
		}
	}
	slices.SortFunc(same, func(a, b servergroups.ServerGroup) int { return strings.Compare(a.ID, b.ID) })
	keep := same[0]
	if p := policyOf(keep); p != g.Policy {
		return "", fault.New(ErrInvalid, "server group %s (%s) has policy %s, but the node group asks for %s; Nova cannot change a group's policy: delete the group or set server_group_policies back to %s", keep.Name, keep.ID, p, g.Policy, p)
	}
	for _, dup := range same[1:] {
		if len(dup.Members) > 0 {
			continue
		}
		if err := deleteServerGroup(ctx, sc, dup.ID, "delete duplicate server group "); err != nil {
			return "", err
		}
	}
	return keep.ID, nil
}

// DeleteServerGroups deletes server groups by ID; groups already gone are
// no error.
func (rs *Resources) DeleteServerGroups(ctx context.Context, token string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return rs.with(ctx, token, "compute", openstack.NewComputeV2, func(sc *gophercloud.ServiceClient) error {
		sc.Microversion = serverGroupMicroversion
		for _, id := range ids {
			if err := deleteServerGroup(ctx, sc, id, "delete server group "); err != nil {
				return err
			}
		}
		return nil
	})
}

// deleteServerGroup deletes a server group; one already gone is no error.
// doing says what for, before the group's ID, in Nova's refusal.
func deleteServerGroup(ctx context.Context, sc *gophercloud.ServiceClient, id, doing string) error {
	if err := servergroups.Delete(ctx, sc, id).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
		return novaError(err, doing+id)
	}
	return nil
}

// listServerGroups reads the project's server groups by name.
func listServerGroups(ctx context.Context, sc *gophercloud.ServiceClient) (map[string][]servergroups.ServerGroup, error) {
	all, err := listAll(ctx, servergroups.List(sc, nil), servergroups.ExtractServerGroups)
	if err != nil {
		return nil, novaError(err, "list server groups")
	}
	out := map[string][]servergroups.ServerGroup{}
	for _, g := range all {
		out[g.Name] = append(out[g.Name], g)
	}
	return out, nil
}

func policyOf(g servergroups.ServerGroup) string {
	if g.Policy != nil {
		return *g.Policy
	}
	if len(g.Policies) > 0 {
		return g.Policies[0]
	}
	return ""
}

// novaError keeps what Nova said about a refused request: a 4xx is a
// refusal to show the user (ErrInvalid), anything else worth retrying.
func novaError(err error, doing string) error {
	if code, ok := refused(err); ok {
		return fault.New(ErrInvalid, "Nova refused to %s: %s", doing, strings.TrimSpace(string(code.Body)))
	}
	return unavailable(err, "Nova", doing)
}
