package mgmt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/kinds"
)

// ErrKindNotServed means the management cluster serves no version of a kind
// Magnetite needs: its provider's CRDs are not installed.
var ErrKindNotServed = errors.New("mgmt: kind not served by the management cluster")

// rediscoverAfter bounds how often a lookup of an unserved kind may trigger a
// new discovery (CRDs installed after Magnetite started are then found), and
// how old the versions a render is given may be (a provider upgraded while
// Magnetite runs is then written at the version it now serves).
const rediscoverAfter = 10 * time.Second

// Discover reads the API groups and resources the management cluster serves
// and resolves every kind of the client's table, applying the configured overrides. It
// keeps partial results when some API groups fail to answer.
//
// Callers that find discovery stale at once (every worker rendering in a
// burst) share one: discovery is a request per API group.
func (c *Client) Discover(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err, _ := c.discovering.Do("discover", func() (any, error) { return nil, c.discover() })
	return err
}

func (c *Client) discover() error {
	groups, lists, err := c.disc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return fmt.Errorf("mgmt: discover served API versions: %w", err)
	}
	if err != nil {
		c.log.Warn("management cluster: some API groups failed discovery", "err", err)
	}
	resolved, findings := resolveKinds(groups, lists, c.kinds, c.overrides)
	c.mu.RLock()
	known := c.discoveryFindings
	c.mu.RUnlock()
	for _, f := range findings {
		// Discovery runs every few seconds: say each finding once.
		if !slices.Contains(known, f) {
			c.log.Warn("management cluster: "+f.Message, "check", f.Check)
		}
	}
	c.mu.Lock()
	c.resources = resolved
	c.discoveredAt = time.Now()
	c.discoveryFindings = findings
	c.mu.Unlock()
	return nil
}

// Resource returns where the management cluster serves kind. A kind not
// found triggers a new discovery, at most once per rediscoverAfter.
func (c *Client) Resource(ctx context.Context, kind string) (Resource, error) {
	k, known := c.kinds[kind]
	if !known {
		return Resource{}, fmt.Errorf("mgmt: kind %q is not one Magnetite uses", kind)
	}
	c.mu.RLock()
	r, ok := c.resources[kind]
	stale := time.Since(c.discoveredAt) > rediscoverAfter
	c.mu.RUnlock()
	if ok {
		return r, nil
	}
	if stale {
		if err := c.Discover(ctx); err != nil {
			return Resource{}, err
		}
		c.mu.RLock()
		r, ok = c.resources[kind]
		c.mu.RUnlock()
		if ok {
			return r, nil
		}
	}
	return Resource{}, fault.New(ErrKindNotServed, "no version of %s (API group %s) is served; install its provider's CRDs or set [management] api_resources", kind, k.Group)
}

// APIVersions maps every served kind to the apiVersion its objects must
// carry, for the renderer to stamp on what it produces. A discovery older
// than rediscoverAfter is made again first: a kind Magnetite already finds
// served keeps being served when its provider is upgraded (CAPO v0.15 serves
// v1beta1 beside v1beta2), so only this tells Magnetite to write the version
// it prefers. When that discovery fails, the last one is used.
func (c *Client) APIVersions(ctx context.Context) (map[string]string, error) {
	c.mu.RLock()
	empty := c.discoveredAt.IsZero()
	stale := time.Since(c.discoveredAt) > rediscoverAfter
	c.mu.RUnlock()
	if stale {
		if err := c.Discover(ctx); err != nil {
			if empty {
				return nil, err
			}
			c.log.Warn("management cluster: discovery failed; rendering at the versions found before", "err", err)
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string]string, len(c.resources))
	for k, r := range c.resources {
		out[k] = r.APIVersion()
	}
	return out, nil
}

// servedKind is one kind at one served version, as discovery lists it.
type servedKind struct {
	resource   string
	namespaced bool
}

// resolveKinds picks a version for every kind Magnetite uses: the first of
// the kind's own Versions (those Magnetite writes it at) that is served,
// else the group's preferred version when it serves the kind, else the
// first version in the group's priority order that does. This matters for groups several
// providers share (infrastructure.cluster.x-k8s.io): the group may prefer
// v1beta2 because one provider serves it while another provider's kinds are
// only served at v1beta1.
func resolveKinds(groups []*metav1.APIGroup, lists []*metav1.APIResourceList, table kinds.Table, overrides map[string]schema.GroupVersion) (map[string]Resource, []Finding) {
	served := map[schema.GroupKind]map[string]servedKind{}
	for _, l := range lists {
		if l == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource such as clusters/status
			}
			gk := schema.GroupKind{Group: gv.Group, Kind: r.Kind}
			if served[gk] == nil {
				served[gk] = map[string]servedKind{}
			}
			served[gk][gv.Version] = servedKind{resource: r.Name, namespaced: r.Namespaced}
		}
	}
	order := map[string][]string{}
	for _, g := range groups {
		if g == nil {
			continue
		}
		var vs []string
		if g.PreferredVersion.Version != "" {
			vs = append(vs, g.PreferredVersion.Version)
		}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				vs = append(vs, v.Version)
			}
		}
		order[g.Name] = vs
	}

	out := map[string]Resource{}
	var findings []Finding
	for kind, k := range table {
		group := k.Group
		versions := served[schema.GroupKind{Group: group, Kind: kind}]
		if gv, ok := overrides[kind]; ok {
			r := Resource{Kind: kind, GroupVersion: gv, Resource: strings.ToLower(kind) + "s", Namespaced: kind != "Namespace", Source: "override"}
			// The plural and scope do not change between versions.
			for _, sk := range versions {
				r.Resource, r.Namespaced = sk.resource, sk.namespaced
				break
			}
			if _, ok := versions[gv.Version]; !ok {
				findings = append(findings, Finding{Severity: SeverityWarning, Check: "api-resources", Message: fmt.Sprintf(
					"[management] api_resources sets %s to %s, which the management cluster does not serve (it serves %s)",
					kind, gv, describeVersions(group, versions))})
			}
			out[kind] = r
			continue
		}
		// The versions Magnetite writes the kind at come first, so that a
		// provider serving both v1beta1 and v1beta2 gets v1beta2 whatever
		// the group prefers; a kind served at none of them resolves at the
		// group's order, for doctor to name and refuse.
		for _, v := range append(slices.Clone(k.Versions), order[group]...) {
			if sk, ok := versions[v]; ok {
				out[kind] = Resource{Kind: kind, GroupVersion: schema.GroupVersion{Group: group, Version: v},
					Resource: sk.resource, Namespaced: sk.namespaced, Source: "discovery"}
				break
			}
		}
	}
	sort.Slice(findings, func(i, j int) bool { return findings[i].Message < findings[j].Message })
	return out, findings
}

func describeVersions(group string, versions map[string]servedKind) string {
	if len(versions) == 0 {
		return "no version"
	}
	var vs []string
	for v := range versions {
		vs = append(vs, schema.GroupVersion{Group: group, Version: v}.String())
	}
	sort.Strings(vs)
	return strings.Join(vs, ", ")
}
