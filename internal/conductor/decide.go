package conductor

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
)

// Decision is how a cluster's stored status should change after looking at
// the management cluster.
type Decision struct {
	Cluster    *model.Cluster
	NodeGroups []*model.NodeGroup
	// Changed is false when nothing needs writing (status is written only
	// when something changed, so objects in error do not hot-loop).
	Changed bool
}

// Decide applies a snapshot to a cluster and its node groups. pending says
// whether operations of the cluster are still queued or running: a cluster
// is only COMPLETE when no work remains and Cluster API has converged.
func Decide(c *model.Cluster, ngs []*model.NodeGroup, s Snapshot, pending bool, now time.Time) Decision {
	nc := *c
	d := Decision{Cluster: &nc}
	if c.ReadOnlyReason() != "" {
		// A cluster imported from Magnum that Magnetite may not change keeps
		// the status it came with (and the reason it is read-only): nothing
		// Magnetite watches describes it, so no absence of objects may time
		// it out or rewrite its reason.
		return d
	}
	if s.Exists {
		if s.APIAddress != "" {
			nc.APIAddress = strPtr(s.APIAddress)
		}
		if s.Version != "" {
			nc.COEVersion = strPtr(s.Version)
		}
		h := s.Health
		nc.HealthStatus = &h
		nc.HealthStatusReason = s.HealthReasons
	}
	converged := s.Converged() && s.ObservedGeneration >= c.AppliedGeneration && sizesMatch(ngs, s)
	var reason string
	switch nc.Status {
	case model.CreateInProgress, model.UpdateInProgress:
		switch {
		case !pending && converged:
			if nc.Status == model.CreateInProgress {
				nc.Status, reason = model.CreateComplete, "Cluster API reports the cluster available with every node ready"
			} else {
				nc.Status, reason = model.UpdateComplete, "Cluster API reports every change rolled out"
			}
		case nc.Status == model.CreateInProgress && nc.CreateTimeout > 0 && now.Sub(nc.CreatedAt) > time.Duration(nc.CreateTimeout)*time.Minute:
			nc.Status = model.CreateFailed
			reason = fmt.Sprintf("Timed out after %d minutes", nc.CreateTimeout)
			if s.Problem != "" {
				reason += "; last reported problem: " + s.Problem
			} else {
				reason += "; " + progress(s)
			}
		case s.Problem != "":
			reason = s.Problem
		case s.Exists:
			reason = progress(s)
		default:
			reason = derefOr(nc.StatusReason, "")
		}
	default:
		// A settled cluster keeps its status; health reports new problems.
		reason = derefOr(nc.StatusReason, "")
	}
	if reason != "" {
		nc.StatusReason = strPtr(reason)
	}
	for _, ng := range ngs {
		g := *ng
		st, present := s.NodeGroups[ng.Name]
		if ng.Role == model.RoleMaster {
			st, present = s.ControlPlane, s.ControlPlane.Present
		}
		if present {
			g.NodeAddresses = nonNil(st.Addresses)
		}
		if g.Status.InProgress() && g.Status != model.DeleteInProgress && present && st.Settled() && !pending && converged {
			if g.Status == model.CreateInProgress {
				g.Status = model.CreateComplete
			} else {
				g.Status = model.UpdateComplete
			}
			g.StatusReason = strPtr(fmt.Sprintf("%d/%d nodes ready", st.Ready, st.Desired))
		} else if present && st.Problem != "" {
			g.StatusReason = strPtr(st.Problem)
		} else if present {
			g.StatusReason = strPtr(fmt.Sprintf("%d/%d nodes ready", st.Ready, st.Desired))
		}
		if nc.Status == model.CreateFailed && g.Status == model.CreateInProgress {
			g.Status = model.CreateFailed
		}
		if s.Version != "" && ng.Role == model.RoleMaster {
			g.Version = strPtr(s.Version)
		}
		if !reflect.DeepEqual(&g, ng) {
			d.NodeGroups = append(d.NodeGroups, &g)
		}
	}
	d.Changed = len(d.NodeGroups) > 0 || !sameClusterStatus(c, &nc)
	return d
}

func progress(s Snapshot) string {
	if !s.Exists {
		return "Waiting for Cluster API to create the cluster"
	}
	msg := fmt.Sprintf("control plane %d/%d ready", s.ControlPlane.Ready, s.ControlPlane.Desired)
	for _, ng := range slices.Sorted(maps.Keys(s.NodeGroups)) {
		g := s.NodeGroups[ng]
		msg += fmt.Sprintf(", %s %d/%d ready", ng, g.Ready, g.Desired)
	}
	return msg
}

func sameClusterStatus(a, b *model.Cluster) bool {
	return a.Status == b.Status && derefOr(a.StatusReason, "") == derefOr(b.StatusReason, "") &&
		derefOr(a.APIAddress, "") == derefOr(b.APIAddress, "") && derefOr(a.COEVersion, "") == derefOr(b.COEVersion, "") &&
		healthOf(a) == healthOf(b) && reflect.DeepEqual(a.HealthStatusReason, b.HealthStatusReason)
}

func healthOf(c *model.Cluster) model.Health {
	if c.HealthStatus == nil {
		return ""
	}
	return *c.HealthStatus
}

func strPtr(s string) *string { return &s }

func derefOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// sizesMatch reports whether Cluster API's desired sizes are the stored
// ones; right after an apply the watch cache may still hold the old
// objects. Autoscaled groups are sized by the autoscaler.
func sizesMatch(ngs []*model.NodeGroup, s Snapshot) bool {
	for _, ng := range ngs {
		if ng.Status == model.DeleteInProgress || ng.Labels["auto_scaling_enabled"] == "true" {
			continue
		}
		st, ok := s.NodeGroups[ng.Name]
		if ng.Role == model.RoleMaster {
			st, ok = s.ControlPlane, s.ControlPlane.Present
		}
		if !ok || st.Desired != ng.NodeCount {
			return false
		}
	}
	return true
}
