package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/snapshots"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// How a workload cluster's OpenStack components mark what they make, with
// the cluster name they run with (the cloud controller manager's
// --cluster-name, the Cinder CSI plugin's --cluster):
//   - the cloud controller manager names a Service's Octavia load balancer
//     kube_service_<cluster>_<namespace>_<service> (its listeners, pools
//     and monitors hang below it and go with a cascade delete);
//   - it describes the floating IPs it allocates "Floating IP for
//     Kubernetes external service <ns>/<svc> from cluster <cluster>" (and
//     its ingress controller "Floating IP for Kubernetes ingress ... from
//     cluster <cluster>");
//   - with manage-security-groups on, it makes a security group per
//     Service, named lb-sg-<service uid>-<ns>-<service> and described
//     "Security Group for <ns>/<svc> Service LoadBalancer in cluster
//     <cluster>", and puts it on the member nodes' ports;
//   - the Cinder CSI plugin sets the property
//     cinder.csi.openstack.org/cluster=<cluster> on every volume and
//     snapshot it creates.
const (
	workloadLBPrefix       = "kube_service_"
	workloadFIPPrefix      = "Floating IP for Kubernetes "
	workloadSGPrefix       = "lb-sg-"
	workloadSGInfix        = " Service LoadBalancer in cluster "
	workloadVolumeProperty = "cinder.csi.openstack.org/cluster"
)

// IsWorkloadLoadBalancer reports whether a load balancer is one the cloud
// controller manager of cluster made for a Service.
func IsWorkloadLoadBalancer(name, cluster string) bool {
	return cluster != "" && strings.HasPrefix(name, workloadLBPrefix+cluster+"_")
}

// IsWorkloadFloatingIP reports whether a floating IP is one the cloud
// controller manager of cluster allocated.
func IsWorkloadFloatingIP(description, cluster string) bool {
	return cluster != "" && strings.HasPrefix(description, workloadFIPPrefix) &&
		strings.HasSuffix(description, " from cluster "+cluster)
}

// IsWorkloadSecurityGroup reports whether a security group is one the
// cloud controller manager of cluster made for a Service's load balancer.
func IsWorkloadSecurityGroup(name, description, cluster string) bool {
	return cluster != "" && strings.HasPrefix(name, workloadSGPrefix) &&
		strings.HasPrefix(description, "Security Group for ") && strings.HasSuffix(description, workloadSGInfix+cluster)
}

// IsWorkloadVolume reports whether a volume (or a volume snapshot) is one
// the Cinder CSI plugin of cluster created.
func IsWorkloadVolume(metadata map[string]string, cluster string) bool {
	return cluster != "" && metadata[workloadVolumeProperty] == cluster
}

// Leftover is a resource a workload cluster made in the cloud for itself.
type Leftover struct {
	// Kind is "load balancer", "floating IP", "security group",
	// "snapshot" or "volume".
	Kind   string
	ID     string
	Name   string
	Status string
}

func (l Leftover) String() string {
	s := l.Kind + " " + l.ID
	if l.Name != "" {
		s = l.Kind + " " + l.Name + " (" + l.ID + ")"
	}
	if l.Status != "" {
		s += " " + l.Status
	}
	return s
}

// Refusal is a leftover the cloud would not delete, with what it said.
type Refusal struct {
	Leftover
	Reason string
}

func (r Refusal) String() string { return r.Leftover.String() + ": " + r.Reason }

// Cleanup is what one pass over a cluster's leftovers found.
type Cleanup struct {
	// Deleted are the leftovers this pass asked the cloud to delete.
	Deleted []Leftover
	// Remaining are still there: being deleted, or in a state the service
	// accepts no delete in until it settles.
	Remaining []Leftover
	// Refused are those whose delete the service refused.
	Refused []Refusal
}

// Done reports whether nothing is left.
func (c Cleanup) Done() bool { return len(c.Remaining) == 0 && len(c.Refused) == 0 }

// LeftoverPolicy says what a cleanup deletes.
type LeftoverPolicy struct {
	KeepVolumes bool
}

// CleanWorkloadLeftovers makes one pass over the load balancers, floating
// IPs, security groups, volume snapshots and volumes of the token's project that the workload cluster named
// cluster made for its Services and persistent volumes (found as those
// components name and mark them), and asks the cloud to delete each that
// can be deleted now. A service the catalog does not list is skipped, and
// so are floating IPs when Neutron lists no L3 extension; a service that
// does not answer is ErrUnavailable.
func (rs *Resources) CleanWorkloadLeftovers(ctx context.Context, token, cluster string, policy LeftoverPolicy) (Cleanup, error) {
	var out Cleanup
	if cluster == "" {
		return out, errors.New("cloud: no cluster name to find leftovers by")
	}
	// Floating IPs first: a load balancer's VIP port goes with it, its
	// floating IP does not. A Neutron without its L3 extension has none
	// (and answers 404 to the list, which is no reason to retry).
	err := rs.with(ctx, token, "network", openstack.NewNetworkV2, func(sc *gophercloud.ServiceClient) error {
		aliases, err := neutronExtensions(ctx, sc)
		if err != nil || !slices.Contains(aliases, l3Alias) {
			return err
		}
		return cleanFloatingIPs(ctx, sc, cluster, &out)
	})
	if err != nil {
		return out, err
	}
	err = rs.with(ctx, token, "load-balancer", openstack.NewLoadBalancerV2, func(sc *gophercloud.ServiceClient) error {
		return cleanLoadBalancers(ctx, sc, func(name string) bool { return IsWorkloadLoadBalancer(name, cluster) }, &out)
	})
	if err != nil {
		return out, err
	}
	// The load balancers' security groups were on the nodes' ports, gone
	// with the machines: Neutron refuses a group still on a port.
	err = rs.with(ctx, token, "network", openstack.NewNetworkV2, func(sc *gophercloud.ServiceClient) error {
		return cleanSecurityGroups(ctx, sc, cluster, &out)
	})
	if err != nil {
		return out, err
	}
	if policy.KeepVolumes {
		return out, nil
	}
	err = rs.with(ctx, token, rs.blockStorageService(ctx), newBlockStorage, func(sc *gophercloud.ServiceClient) error {
		// Cinder refuses to delete a volume that has snapshots: the
		// snapshots go first, the volumes once none is left.
		pending := len(out.Remaining) + len(out.Refused)
		if err := cleanSnapshots(ctx, sc, cluster, &out); err != nil {
			return err
		}
		if len(out.Remaining)+len(out.Refused) > pending {
			return nil
		}
		return cleanVolumes(ctx, sc, cluster, &out)
	})
	return out, err
}

// projectInPath is the project ID older Cinder endpoints carry; the
// catalog Magnetite reads has its own project's there, not the cluster's.
var projectInPath = regexp.MustCompile(`/v3/[0-9a-f]{32}/?$`)

// newBlockStorage addresses Cinder without a project in the path (API 3.67
// and later), so that the token's project is the one acted in.
func newBlockStorage(pc *gophercloud.ProviderClient, eo gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error) {
	sc, err := openstack.NewBlockStorageV3(pc, eo)
	if err != nil {
		return sc, err
	}
	if projectInPath.MatchString(sc.Endpoint) {
		sc.Endpoint = projectInPath.ReplaceAllString(sc.Endpoint, "/v3/")
		sc.ResourceBase = ""
		sc.Microversion = "3.67"
	}
	return sc, nil
}

// sweep is how one kind of leftover is found and deleted.
type sweep[T any] struct {
	// service answers for the kind ("Neutron"); plural names it in errors
	// ("floating IPs").
	service, plural string
	pages           pagination.Pager
	extract         func(pagination.Page) ([]T, error)
	// leftover is an item as a leftover, and whether the cluster made it.
	leftover func(T) (Leftover, bool)
	// settling reports a state the service leaves by itself and takes no
	// delete in meanwhile (nil: none).
	settling func(status string) bool
	// pending is the state a delete leaves an item in while the service
	// works ("" when the item goes at once).
	pending string
	del     func(id string) error
}

// run asks the service to delete each of the cluster's items that can be
// deleted now, recording the outcomes in out.
func (s sweep[T]) run(ctx context.Context, out *Cleanup) error {
	all, err := listAll(ctx, s.pages, s.extract)
	if err != nil {
		return unavailable(err, s.service, "list "+s.plural)
	}
	for _, it := range all {
		l, ours := s.leftover(it)
		if !ours {
			continue
		}
		if s.settling != nil && s.settling(l.Status) {
			out.Remaining = append(out.Remaining, l)
			continue
		}
		if err := out.record(l, s.pending, s.del(l.ID), s.service); err != nil {
			return err
		}
	}
	return nil
}

// errSettling is a delete the service turned down because the item's state
// moved on meanwhile: it remains, to be asked again once it settles.
var errSettling = errors.New("cloud: the item is settling")

func cleanFloatingIPs(ctx context.Context, sc *gophercloud.ServiceClient, cluster string, out *Cleanup) error {
	return sweep[floatingips.FloatingIP]{service: "Neutron", plural: "floating IPs",
		pages: floatingips.List(sc, floatingips.ListOpts{}), extract: floatingips.ExtractFloatingIPs,
		leftover: func(f floatingips.FloatingIP) (Leftover, bool) {
			return Leftover{Kind: "floating IP", ID: f.ID, Name: f.FloatingIP}, IsWorkloadFloatingIP(f.Description, cluster)
		},
		// Neutron deletes at once: nothing remains to wait for.
		del: func(id string) error { return floatingips.Delete(ctx, sc, id).ExtractErr() },
	}.run(ctx, out)
}

// ReleaseAPILoadBalancer deletes, as the token's project, the load
// balancer CAPO made for a cluster's API (named name) when the cloud's
// Neutron has no L3 extension, and does nothing elsewhere. Released CAPO
// deletes it only after asking Neutron for the floating IPs on its VIP
// port (DeleteLoadBalancer, pkg/cloud/services/loadbalancer/loadbalancer.go,
// v0.14.7 and v0.15.0-beta.0), which such a Neutron answers with 404, so
// the cluster's delete would wait for ever; with the load balancer gone,
// CAPO finds none to delete and goes on.
func (rs *Resources) ReleaseAPILoadBalancer(ctx context.Context, token, name string) (Cleanup, error) {
	var out Cleanup
	withoutL3 := false
	err := rs.with(ctx, token, "network", openstack.NewNetworkV2, func(sc *gophercloud.ServiceClient) error {
		aliases, err := neutronExtensions(ctx, sc)
		withoutL3 = err == nil && !slices.Contains(aliases, l3Alias)
		return err
	})
	if err != nil || !withoutL3 {
		return out, err
	}
	err = rs.with(ctx, token, "load-balancer", openstack.NewLoadBalancerV2, func(sc *gophercloud.ServiceClient) error {
		return cleanLoadBalancers(ctx, sc, func(lb string) bool { return lb == name }, &out)
	})
	return out, err
}

// cleanLoadBalancers deletes the load balancers whose names ours accepts.
func cleanLoadBalancers(ctx context.Context, sc *gophercloud.ServiceClient, ours func(name string) bool, out *Cleanup) error {
	return sweep[loadbalancers.LoadBalancer]{service: "Octavia", plural: "load balancers",
		pages: loadbalancers.List(sc, loadbalancers.ListOpts{}), extract: loadbalancers.ExtractLoadBalancers,
		leftover: func(lb loadbalancers.LoadBalancer) (Leftover, bool) {
			return Leftover{Kind: "load balancer", ID: lb.ID, Name: lb.Name, Status: lb.ProvisioningStatus}, ours(lb.Name)
		},
		// Octavia takes no delete until it settles (a delete already under
		// way shows as PENDING_DELETE).
		settling: func(status string) bool { return strings.HasPrefix(status, "PENDING_") },
		pending:  "PENDING_DELETE",
		del: func(id string) error {
			// Cascade: the listeners, pools and monitors the cloud
			// controller manager made go with it.
			err := loadbalancers.Delete(ctx, sc, id, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
			if gophercloud.ResponseCodeIs(err, http.StatusConflict) {
				return errSettling // its state moved on meanwhile
			}
			return err
		},
	}.run(ctx, out)
}

func cleanSecurityGroups(ctx context.Context, sc *gophercloud.ServiceClient, cluster string, out *Cleanup) error {
	return sweep[groups.SecGroup]{service: "Neutron", plural: "security groups",
		pages: groups.List(sc, groups.ListOpts{}), extract: groups.ExtractGroups,
		leftover: func(g groups.SecGroup) (Leftover, bool) {
			return Leftover{Kind: "security group", ID: g.ID, Name: g.Name}, IsWorkloadSecurityGroup(g.Name, g.Description, cluster)
		},
		// A group still on a port is refused (409 SecurityGroupInUse): the
		// refusal names it for the user.
		del: func(id string) error { return groups.Delete(ctx, sc, id).ExtractErr() },
	}.run(ctx, out)
}

// snapshotSettling are the states a Cinder snapshot leaves by itself.
var snapshotSettling = map[string]bool{"creating": true, "deleting": true, "backing-up": true, "restoring": true, "unmanaging": true}

func cleanSnapshots(ctx context.Context, sc *gophercloud.ServiceClient, cluster string, out *Cleanup) error {
	return sweep[snapshots.Snapshot]{service: "Cinder", plural: "snapshots",
		pages: snapshots.ListDetail(sc, snapshots.ListOpts{}), extract: snapshots.ExtractSnapshots,
		leftover: func(s snapshots.Snapshot) (Leftover, bool) {
			return Leftover{Kind: "snapshot", ID: s.ID, Name: s.Name, Status: s.Status}, IsWorkloadVolume(s.Metadata, cluster)
		},
		settling: func(status string) bool { return snapshotSettling[status] },
		pending:  "deleting",
		del:      func(id string) error { return snapshots.Delete(ctx, sc, id).ExtractErr() },
	}.run(ctx, out)
}

// volumeSettling are the Cinder states a volume leaves by itself; a delete
// asked meanwhile would be refused for a reason that is about to go away.
var volumeSettling = map[string]bool{"creating": true, "attaching": true, "detaching": true, "extending": true,
	"downloading": true, "uploading": true, "retyping": true, "backing-up": true, "restoring-backup": true,
	"deleting": true, "reserved": true}

func cleanVolumes(ctx context.Context, sc *gophercloud.ServiceClient, cluster string, out *Cleanup) error {
	return sweep[volumes.Volume]{service: "Cinder", plural: "volumes",
		pages: volumes.List(sc, volumes.ListOpts{}), extract: volumes.ExtractVolumes,
		leftover: func(v volumes.Volume) (Leftover, bool) {
			return Leftover{Kind: "volume", ID: v.ID, Name: v.Name, Status: v.Status}, IsWorkloadVolume(v.Metadata, cluster)
		},
		settling: func(status string) bool { return volumeSettling[status] },
		pending:  "deleting",
		// An in-use volume is asked too: Cinder's refusal says why, and
		// the user needs to read it.
		del: func(id string) error { return volumes.Delete(ctx, sc, id, nil).ExtractErr() },
	}.run(ctx, out)
}

// record sorts a delete's outcome: asked (then, with a pending status, still
// there in it), already gone, turned down while the item settles (still
// there), refused by the service (with its message), or failed in a way
// worth retrying (the error returned).
func (c *Cleanup) record(l Leftover, pending string, err error, service string) error {
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil
	}
	if errors.Is(err, errSettling) {
		c.Remaining = append(c.Remaining, l)
		return nil
	}
	if code, ok := refused(err); ok {
		c.Refused = append(c.Refused, Refusal{Leftover: l, Reason: fmt.Sprintf("%s answered %d: %s", service, code.Actual, ServiceMessage(code.Body))})
		return nil
	}
	if err != nil {
		return unavailable(err, service, "delete "+l.Kind+" "+l.ID)
	}
	c.Deleted = append(c.Deleted, l)
	if pending != "" {
		l.Status = pending
		c.Remaining = append(c.Remaining, l)
	}
	return nil
}
