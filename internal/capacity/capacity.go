package capacity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
)

// ErrInsufficient means a request needs more bare-metal hosts than
// are free; the API answers 409.
var ErrInsufficient = errors.New("baremetal: not enough free hosts")

// ErrUnbuildable means a request's node group contradicts its flavor as
// Nova describes it (a virtual flavor under server_type=bm, an Ironic one
// under server_type=vm): the renderer would refuse the cluster, so the API
// answers 400 instead of counting hosts for it.
var ErrUnbuildable = errors.New("baremetal: the cluster cannot be built as asked")

// ErrFlavorNotFound is what a FlavorSource returns for a flavor that does
// not exist.
var ErrFlavorNotFound = errors.New("baremetal: flavor not found")

// Capacity check modes, [baremetal] capacity_check.
const (
	CheckRefuse = "refuse"
	CheckWarn   = "warn"
	CheckOff    = "off"
)

// Metal3DriverName is the driver a template names to build its clusters on
// Metal3 hosts (capi-metal3): every node group is bare metal, and hosts are
// picked by the node group's host_selector label.
const Metal3DriverName = "capi-metal3"

// Growth is a node group that is created or grows, and by how many nodes.
type Growth struct {
	NodeGroup *model.NodeGroup
	Nodes     int
}

// Request is a create or resize that adds nodes to a cluster.
type Request struct {
	Template *model.ClusterTemplate
	Cluster  *model.Cluster
	Growth   []Growth
	// AuthToken is the caller's token: flavors are read as the caller sees
	// them, as Magnum does.
	AuthToken string
}

// FlavorSource finds a Nova flavor by ID or name with its extra specs.
type FlavorSource interface {
	Flavor(ctx context.Context, token, ref string) (facts.Flavor, error)
}

// HostCounter is the part of a Backend the capacity check reads.
type HostCounter interface {
	Name() string
	// Capacity counts the hosts of a resource class.
	Capacity(ctx context.Context, resourceClass string) (baremetal.Capacity, error)
}

// Check keeps clusters from being accepted for bare-metal hosts
// that do not exist: a create or resize whose bare-metal node groups need
// more nodes than are free is refused (or, in warn mode, accepted with a
// warning). Hosts are counted per resource class, the one a node group's
// flavor asks for with resources:CUSTOM_<CLASS>=1; node groups of a Metal3
// template are counted per host selector instead.
//
// Hosts promised to node groups still being built (their nodes that have
// no address yet) are subtracted from the free ones, so a request cannot
// count hosts an earlier request was accepted for. A check is made in two
// steps so that replicas sharing a database cannot both take the last free
// hosts: Plan reads what needs the network (flavors, the inventory) before
// the request's transaction, and Verify decides inside it, from the node
// groups being built as the transaction sees them.
type Check struct {
	Mode  string
	Hosts HostCounter
	// Flavors reads node groups' flavors; nil (no Nova) decides by
	// server_type alone and counts DefaultResourceClass.
	Flavors              FlavorSource
	DefaultResourceClass string
	Log                  *slog.Logger
}

// Building is a node group whose nodes are still being provisioned: the
// hosts it still needs are promised to it.
type Building struct {
	Template  *model.ClusterTemplate
	Cluster   *model.Cluster
	NodeGroup *model.NodeGroup
	// Outstanding is how many of its nodes have no host yet.
	Outstanding int
}

// ErrReplan means node groups began to be built after a plan was made, so
// the plan cannot tell which hosts they are promised: plan again.
var ErrReplan = errors.New("baremetal: node groups being built changed since the capacity was planned")

// demand is what a request asks of one kind of host.
type demand struct {
	resourceClass string
	selector      map[string]string
	// project is whose Metal3 hosts a selector counts.
	project string
	nodes   int
	groups  []string
	hosts   baremetal.Capacity
}

func (d *demand) name() string {
	if d.selector != nil {
		of := ""
		if d.project != "" {
			of = " of project " + d.project
		}
		if len(d.selector) == 0 {
			return "Metal3 hosts" + of + " (no host_selector)"
		}
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(d.selector)) {
			kv = append(kv, k+"="+d.selector[k])
		}
		return "Metal3 hosts" + of + " labelled " + strings.Join(kv, ",")
	}
	return "resource class " + d.resourceClass
}

// Plan is a request's demand for bare-metal hosts with what the
// inventory holds, read before the request's transaction.
type Plan struct {
	mode    string
	demands []*demand
	// kinds names, for each node group being built when the plan was made,
	// the kind of host it waits for ("" when it is not bare metal).
	kinds map[string]string
	// warning is set when, in warn mode, the capacity could not be read.
	warning string
}

// Plan reads what a request needs of the inventory: nil when the request
// adds no bare-metal nodes (or the check is off), so that it reserves
// nothing. building reads the node groups being built as the database
// holds them now (only when the request adds bare-metal nodes). The error is ErrUnavailable when flavors or the inventory could
// not be read in refuse mode.
func (cc *Check) Plan(ctx context.Context, req Request, building func(context.Context) ([]Building, error)) (*Plan, error) {
	if cc == nil || cc.Mode == CheckOff || cc.Hosts == nil || req.Template == nil {
		return nil, nil
	}
	flavors := flavorMemo{}
	demands, err := cc.demands(ctx, req, flavors)
	if errors.Is(err, ErrUnbuildable) {
		return nil, err
	}
	if err != nil {
		return cc.cannotCheck(err)
	}
	if len(demands) == 0 {
		return nil, nil
	}
	now, err := building(ctx)
	if err != nil {
		return cc.cannotCheck(fault.New(baremetal.ErrUnavailable, "the node groups being built could not be read: %v", err))
	}
	p := &Plan{mode: cc.Mode, demands: demands, kinds: map[string]string{}}
	for _, b := range now {
		if b.NodeGroup == nil || b.Template == nil {
			continue
		}
		d, _, err := cc.demandOf(ctx, Request{Template: b.Template, Cluster: b.Cluster, AuthToken: req.AuthToken}, b.NodeGroup, flavors)
		if err != nil {
			return cc.cannotCheck(err)
		}
		p.kinds[b.NodeGroup.UUID] = ""
		if d != nil {
			p.kinds[b.NodeGroup.UUID] = d.name()
		}
	}
	for _, d := range demands {
		if d.hosts, err = cc.count(ctx, d); err != nil {
			return cc.cannotCheck(err)
		}
	}
	return p, nil
}

// Verify decides a planned request against the node groups being built as
// the request's transaction sees them: a warning to keep with the request
// (warn mode), ErrInsufficient (refuse mode), or ErrReplan when a
// node group began to be built after the plan.
func (p *Plan) Verify(building []Building) (string, error) {
	if p == nil {
		return "", nil
	}
	if p.warning != "" {
		return p.warning, nil
	}
	promised := map[string]int{}
	for _, b := range building {
		if b.NodeGroup == nil || b.Template == nil || b.Outstanding <= 0 {
			continue
		}
		kind, ok := p.kinds[b.NodeGroup.UUID]
		if !ok {
			return "", ErrReplan
		}
		if kind != "" {
			promised[kind] += b.Outstanding
		}
	}
	var short []string
	for _, d := range p.demands {
		c, n := d.hosts, promised[d.name()]
		if free := max(0, c.Free-n); d.nodes > free {
			short = append(short, fmt.Sprintf("%s: %d needed (%s), %d free of %d (%d deployed, %d detached, %d promised to node groups being built)",
				d.name(), d.nodes, strings.Join(d.groups, ", "), free, c.Total, c.Deployed, c.InMaintenance, n))
		}
	}
	if len(short) == 0 {
		return "", nil
	}
	msg := "Not enough free bare-metal hosts for this request: " + strings.Join(short, "; ") +
		". Enroll or free hosts, or ask for fewer nodes."
	if p.mode == CheckWarn {
		return msg, nil
	}
	return "", fault.New(ErrInsufficient, "%s", msg)
}

// cannotCheck is the plan of a request whose capacity could not be read:
// in warn mode one that only warns, otherwise ErrUnavailable.
func (cc *Check) cannotCheck(err error) (*Plan, error) {
	msg := strings.TrimPrefix(err.Error(), baremetal.ErrUnavailable.Error()+": ")
	if cc.Mode == CheckWarn {
		return &Plan{mode: cc.Mode, warning: "The bare-metal capacity could not be checked: " + msg}, nil
	}
	return nil, fault.New(baremetal.ErrUnavailable, "the bare-metal capacity could not be checked: %s; set [baremetal] capacity_check = warn to accept such requests unchecked", msg)
}

// flavorMemo remembers the flavors one check read.
type flavorMemo map[string]flavorAnswer

type flavorAnswer struct {
	f   facts.Flavor
	err error
}

func (cc *Check) flavor(ctx context.Context, token, ref string, memo flavorMemo) (facts.Flavor, error) {
	if a, ok := memo[ref]; ok {
		return a.f, a.err
	}
	f, err := cc.Flavors.Flavor(ctx, token, ref)
	memo[ref] = flavorAnswer{f, err}
	return f, err
}

func (cc *Check) demands(ctx context.Context, req Request, flavors flavorMemo) ([]*demand, error) {
	byKey := map[string]*demand{}
	for _, g := range req.Growth {
		if g.Nodes <= 0 || g.NodeGroup == nil {
			continue
		}
		d, problems, err := cc.demandOf(ctx, req, g.NodeGroup, flavors)
		if err != nil {
			return nil, err
		}
		if len(problems) > 0 {
			return nil, fault.New(ErrUnbuildable, "%s", strings.Join(problems, "; "))
		}
		if d == nil {
			continue
		}
		key := d.name()
		if prev, ok := byKey[key]; ok {
			d = prev
		} else {
			byKey[key] = d
		}
		d.nodes += g.Nodes
		d.groups = append(d.groups, fmt.Sprintf("%s %d", g.NodeGroup.Name, g.Nodes))
	}
	out := make([]*demand, 0, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		out = append(out, byKey[k])
	}
	return out, nil
}

// demandOf decides whether a node group's nodes are bare-metal hosts and
// which; nil means they are not. Whether they are is the cluster's shape
// (driver.Resolve) as the renderer sees it, from the flavor Nova reports;
// problems are what the renderer would refuse of the node group given
// that flavor.
func (cc *Check) demandOf(ctx context.Context, req Request, ng *model.NodeGroup, flavors flavorMemo) (*demand, []string, error) {
	ct, c := req.Template, req.Cluster
	metal3 := ct.Driver != nil && *ct.Driver == Metal3DriverName
	facts := &facts.Facts{}
	if !metal3 && cc.Flavors != nil {
		if ref := driver.FlavorOf(ct, clusterOrNone(c), ng); ref != "" {
			f, err := cc.flavor(ctx, req.AuthToken, ref, flavors)
			switch {
			case err == nil:
				facts.Flavors = append(facts.Flavors, f)
			case !errors.Is(err, ErrFlavorNotFound):
				return nil, nil, err
			}
		}
	}
	shape := driver.Resolve(driver.ShapeInput{Template: ct, Cluster: c, NodeGroups: []*model.NodeGroup{ng}, Facts: facts})
	g := shape.Groups[0]
	var problems []string
	if g.HasFlavor {
		problems = g.Problems
	}
	switch {
	case !g.BareMetal():
		return nil, problems, nil
	case metal3:
		d := &demand{selector: parseSelector(g.Labels.String(labels.HostSelector))}
		if c != nil {
			d.project = c.ProjectID
		}
		return d, problems, nil
	}
	if spec, ironic := g.Flavor.BareMetal(); g.HasFlavor && ironic {
		return &demand{resourceClass: resourceClassOfSpec(spec, cc.DefaultResourceClass)}, problems, nil
	}
	return &demand{resourceClass: baremetal.NormalizeResourceClass(cc.DefaultResourceClass)}, problems, nil
}

func clusterOrNone(c *model.Cluster) *model.Cluster {
	if c == nil {
		return &model.Cluster{}
	}
	return c
}

func (cc *Check) count(ctx context.Context, d *demand) (baremetal.Capacity, error) {
	if d.selector == nil {
		return cc.Hosts.Capacity(ctx, d.resourceClass)
	}
	sc, ok := cc.Hosts.(baremetal.SelectorCapacity)
	if !ok {
		return baremetal.Capacity{}, fault.New(baremetal.ErrUnavailable, "the %s backend does not know Metal3 hosts; set [baremetal] backend = metal3", cc.Hosts.Name())
	}
	return sc.CapacityMatching(ctx, d.project, d.selector)
}

// resourceClassOfSpec reads CUSTOM_X out of "resources:CUSTOM_X=1"; an
// older baremetal=true flavor names no class, so the default counts.
func resourceClassOfSpec(spec, def string) string {
	if rc, ok := strings.CutPrefix(spec, "resources:"); ok {
		return strings.TrimSuffix(rc, "=1")
	}
	return baremetal.NormalizeResourceClass(def)
}

// parseSelector reads key=value,key=value; the label schema has checked
// the form.
func parseSelector(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if ok && k != "" {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}
