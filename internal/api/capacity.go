package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/magnetite-io/magnetite/internal/capacity"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// CapacityPlanner plans a request's claim on bare-metal hosts before its
// transaction (capacity.Check).
type CapacityPlanner interface {
	Plan(ctx context.Context, req capacity.Request, building func(context.Context) ([]capacity.Building, error)) (*capacity.Plan, error)
}

// capacityClaim is a request's claim on bare-metal hosts: planned before
// the request's transaction (flavors and the inventory are read over the
// network), made inside it by applyClusterChange.
type capacityClaim struct {
	s    *Server
	r    *http.Request
	req  capacity.Request
	plan *capacity.Plan
	// warning is what a claim accepted in warn mode keeps in the cluster's
	// events.
	warning string
}

// checkCapacity plans the bare-metal hosts a create or resize adds; nil
// when the request adds none (or no inventory is configured), so that it
// takes no part in reservations. ct is loaded when nil.
func (s *Server) checkCapacity(r *http.Request, ct *model.ClusterTemplate, c *model.Cluster, growth ...capacity.Growth) (*capacityClaim, error) {
	if s.opts.Capacity == nil {
		return nil, nil
	}
	if ct == nil {
		var err error
		if ct, err = s.st.GetClusterTemplateByUUID(r.Context(), c.ClusterTemplateID); err != nil {
			return nil, err
		}
	}
	cl := &capacityClaim{s: s, r: r, req: capacity.Request{
		Template: ct, Cluster: c, Growth: growth, AuthToken: identity(r).AuthToken}}
	if err := cl.replan(); err != nil || cl.plan == nil {
		return nil, err
	}
	return cl, nil
}

func (cl *capacityClaim) replan() error {
	plan, err := cl.s.opts.Capacity.Plan(cl.r.Context(), cl.req, func(ctx context.Context) ([]capacity.Building, error) {
		bs, err := cl.s.st.BuildingClusters(ctx)
		return buildingNodeGroups(bs), err
	})
	cl.plan = plan
	return err
}

// reserve decides the claim inside the transaction (store.ClusterChange.Reserve).
func (cl *capacityClaim) reserve(building []store.Building) error {
	warning, err := cl.plan.Verify(buildingNodeGroups(building))
	cl.warning = warning
	return err
}

// buildingNodeGroups are the node groups of clusters being created or
// updated with how many of their nodes have no address yet: the hosts the
// capacity check counts as promised.
func buildingNodeGroups(building []store.Building) []capacity.Building {
	var out []capacity.Building
	for _, b := range building {
		for _, ng := range b.NodeGroups {
			if ng.Status == model.DeleteInProgress {
				continue
			}
			out = append(out, capacity.Building{Template: b.Template, Cluster: b.Cluster, NodeGroup: ng,
				Outstanding: ng.NodeCount - len(ng.NodeAddresses)})
		}
	}
	return out
}

// recordCapacityWarning keeps the warning of a request accepted in warn
// mode in the cluster's events, where `cluster events` shows it.
func (s *Server) recordCapacityWarning(r *http.Request, c *model.Cluster, cl *capacityClaim) {
	if cl == nil || cl.warning == "" {
		return
	}
	s.log.WarnContext(r.Context(), "request accepted without the bare-metal hosts it needs", "cluster", c.UUID, "warning", cl.warning)
	ev := model.ClusterEvent{ClusterID: c.UUID, ProjectID: c.ProjectID, Kind: model.EventCondition, Status: c.Status,
		Reason: "InsufficientBareMetalCapacity", Message: cl.warning}
	if err := s.st.RecordEvent(r.Context(), ev); err != nil {
		s.log.WarnContext(r.Context(), "cluster event not recorded", "cluster", c.UUID, "error", err.Error())
	}
}

// grows is a node group adding nodes; none when it shrinks.
func grows(ng *model.NodeGroup, nodes int) capacity.Growth {
	return capacity.Growth{NodeGroup: ng, Nodes: nodes}
}

// replans is how often a claim is planned again when node groups
// began to be built between its plan and its transaction.
const replans = 3

// isReplan reports a claim to plan again.
func isReplan(err error) bool { return errors.Is(err, capacity.ErrReplan) }
