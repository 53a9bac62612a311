package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/model"
)

// checkCapacity asks the bare-metal inventory whether the hosts a create or
// resize adds exist: 409 when they do not, 503 when that cannot be told,
// and a warning to keep when the check only warns. ct is loaded when nil.
func (s *Server) checkCapacity(r *http.Request, ct *model.ClusterTemplate, c *model.Cluster, growth ...baremetal.Growth) (string, error) {
	if s.opts.CheckCapacity == nil {
		return "", nil
	}
	if ct == nil {
		var err error
		if ct, err = s.st.GetClusterTemplateByUUID(r.Context(), c.ClusterTemplateID); err != nil {
			return "", err
		}
	}
	s.holdCapacityLock(r)
	warning, err := s.opts.CheckCapacity(r.Context(), baremetal.CapacityRequest{
		Template: ct, Cluster: c, Growth: growth, AuthToken: identity(r).AuthToken})
	if err != nil {
		msg := err.Error()
		for _, p := range []string{baremetal.ErrInsufficientCapacity.Error() + ": ", baremetal.ErrUnavailable.Error() + ": "} {
			msg = strings.TrimPrefix(msg, p)
		}
		switch {
		case errors.Is(err, baremetal.ErrInsufficientCapacity):
			return "", conflict("%s", msg)
		case errors.Is(err, baremetal.ErrUnavailable):
			return "", &apiError{Status: http.StatusServiceUnavailable, Title: "Service Unavailable", Detail: msg}
		}
		return "", err
	}
	if warning != "" {
		s.log.WarnContext(r.Context(), "request accepted without the bare-metal hosts it needs", "cluster", c.UUID, "warning", warning)
	}
	return warning, nil
}

// recordCapacityWarning keeps the warning of a request accepted in warn
// mode in the cluster's events, where `cluster events` shows it.
func (s *Server) recordCapacityWarning(r *http.Request, c *model.Cluster, warning string) {
	if warning == "" {
		return
	}
	ev := model.ClusterEvent{ClusterID: c.UUID, ProjectID: c.ProjectID, Kind: model.EventCondition, Status: c.Status,
		Reason: "InsufficientBareMetalCapacity", Message: warning}
	if err := s.st.RecordEvent(r.Context(), ev); err != nil {
		s.log.WarnContext(r.Context(), "cluster event not recorded", "cluster", c.UUID, "error", err.Error())
	}
}

// grows is a node group adding nodes; none when it shrinks.
func grows(ng *model.NodeGroup, nodes int) baremetal.Growth {
	return baremetal.Growth{NodeGroup: ng, Nodes: nodes}
}
