package metal3

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/labels"
)

// poolEntry is one contiguous range of an IPPool.
type poolEntry struct {
	start, end netip.Addr
	// subnet is set for entries given as a subnet (and the pieces left of
	// one once the API address is taken out).
	subnet netip.Prefix
}

func (e poolEntry) contains(a netip.Addr) bool {
	return e.start.Compare(a) <= 0 && a.Compare(e.end) <= 0
}

// pool is a cluster's IPPool as its labels describe it.
type pool struct {
	entries  []poolEntry
	v4       bool
	prefix   int // the ranges' prefix; subnets have their own
	gateway  netip.Addr
	prealloc map[string]netip.Addr // IPClaim name -> address
}

func poolName(p *capi.Plan) string { return p.Name + "-nodes" }

// parsePool reads the ip_pool_* labels; nil without ip_pool_ranges.
func parsePool(p *capi.Plan) (*pool, []string) {
	ranges := p.Labels.List(labels.IPPoolRanges)
	if len(ranges) == 0 {
		for _, l := range []string{labels.IPPoolPrefix, labels.IPPoolGateway, labels.IPPoolPreallocations} {
			if p.Labels.IsSet(l) {
				return nil, []string{fmt.Sprintf("label %s is set but ip_pool_ranges is not: say which addresses the pool holds", l)}
			}
		}
		return nil, nil
	}
	var problems []string
	pl := &pool{prealloc: map[string]netip.Addr{}}
	subnetsOnly := true
	for i, r := range ranges {
		var e poolEntry
		if pfx, err := netip.ParsePrefix(r); err == nil {
			pfx = pfx.Masked()
			e = poolEntry{start: pfx.Addr().Next(), end: lastAddr(pfx), subnet: pfx}
			if pfx.Addr().Is4() {
				e.end = e.end.Prev() // the broadcast address
			}
			if !e.start.IsValid() || e.end.Less(e.start) {
				problems = append(problems, fmt.Sprintf("ip_pool_ranges: subnet %s holds no host address", r))
				continue
			}
		} else {
			a, b, _ := strings.Cut(r, "-")
			e.start, _ = netip.ParseAddr(a)
			e.end, _ = netip.ParseAddr(b)
			subnetsOnly = false
		}
		if i == 0 {
			pl.v4 = e.start.Is4()
		} else if e.start.Is4() != pl.v4 {
			problems = append(problems, fmt.Sprintf("ip_pool_ranges mixes IPv4 and IPv6 (%s); a pool holds one family", r))
			continue
		}
		pl.entries = append(pl.entries, e)
	}
	if p.Labels.IsSet(labels.IPPoolPrefix) {
		pl.prefix = p.Labels.Int(labels.IPPoolPrefix)
		if pl.v4 && pl.prefix > 32 {
			problems = append(problems, fmt.Sprintf("ip_pool_prefix %d is longer than an IPv4 address", pl.prefix))
		}
	} else if !subnetsOnly {
		problems = append(problems, "ip_pool_prefix is needed with START-END ranges in ip_pool_ranges (the subnet's prefix length, e.g. 24)")
	}
	if g := p.Labels.String(labels.IPPoolGateway); g != "" {
		pl.gateway, _ = netip.ParseAddr(g)
		if pl.gateway.Is4() != pl.v4 {
			problems = append(problems, fmt.Sprintf("ip_pool_gateway %s is not of the pool's address family", g))
		}
		// The router's address is never a node's.
		pl.exclude(pl.gateway)
	}
	for _, item := range p.Labels.List(labels.IPPoolPreallocations) {
		key, ip, _ := strings.Cut(item, "=")
		group, index, _ := strings.Cut(key, ":")
		addr, _ := netip.ParseAddr(ip)
		g := groupNamed(p, group)
		switch {
		case g == nil:
			problems = append(problems, fmt.Sprintf("ip_pool_preallocations: the cluster has no node group %s", group))
		case !pl.holds(addr):
			problems = append(problems, fmt.Sprintf("ip_pool_preallocations: %s is outside ip_pool_ranges", ip))
		default:
			// CAPM3 names a node's IPClaim <data template>-<index>-<pool>.
			pl.prealloc[dataTemplateName(p, g)+"-"+index+"-"+poolName(p)] = addr
		}
	}
	return pl, problems
}

func groupNamed(p *capi.Plan, name string) *capi.Group {
	for _, g := range p.Groups() {
		if g.NodeGroup.Name == name {
			return g
		}
	}
	return nil
}

// lastAddr is the highest address of a prefix.
func lastAddr(pfx netip.Prefix) netip.Addr {
	b := pfx.Addr().AsSlice()
	for i := pfx.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func (pl *pool) holds(a netip.Addr) bool {
	for _, e := range pl.entries {
		if e.contains(a) {
			return true
		}
	}
	return false
}

func (pl *pool) preallocated(a netip.Addr) bool {
	for _, x := range pl.prealloc {
		if x == a {
			return true
		}
	}
	return false
}

// firstFree is the first address of the pool not pre-allocated to a node.
func (pl *pool) firstFree() netip.Addr {
	for _, e := range pl.entries {
		for a := e.start; a.IsValid() && a.Compare(e.end) <= 0; a = a.Next() {
			if !pl.preallocated(a) {
				return a
			}
		}
	}
	return netip.Addr{}
}

// exclude keeps an address (the API's) out of the pool, splitting the
// entry that holds it, so IPAM never gives it to a node.
func (pl *pool) exclude(a netip.Addr) {
	var out []poolEntry
	for _, e := range pl.entries {
		if !e.contains(a) {
			out = append(out, e)
			continue
		}
		if a != e.start {
			out = append(out, poolEntry{start: e.start, end: a.Prev(), subnet: e.subnet})
		}
		if a != e.end {
			out = append(out, poolEntry{start: a.Next(), end: e.end, subnet: e.subnet})
		}
	}
	pl.entries = out
}

// spec is the IPPool's spec.
func (pl *pool) spec(p *capi.Plan, name string) map[string]any {
	var pools []any
	for _, e := range pl.entries {
		m := map[string]any{"start": e.start.String(), "end": e.end.String()}
		if e.subnet.IsValid() {
			m["subnet"] = e.subnet.String()
			m["prefix"] = int64(e.subnet.Bits())
		}
		pools = append(pools, m)
	}
	spec := map[string]any{"clusterName": p.Name, "namePrefix": name, "pools": pools}
	if pl.prefix > 0 {
		spec["prefix"] = int64(pl.prefix)
	}
	if pl.gateway.IsValid() {
		spec["gateway"] = pl.gateway.String()
	}
	if dns := p.Network.DNSNameservers; len(dns) > 0 {
		var d []any
		for _, s := range dns {
			d = append(d, s)
		}
		spec["dnsServers"] = d
	}
	if len(pl.prealloc) > 0 {
		m := map[string]any{}
		for claim, a := range pl.prealloc {
			m[claim] = a.String()
		}
		spec["preAllocations"] = m
	}
	return spec
}
