package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// eventTimeLayout is how event times go on the wire: RFC 3339, UTC, with
// microseconds so a follower can order events of the same second.
const eventTimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// listClusterEvents serves GET /v1/clusters/{ident}/events, a Magnetite
// extension. Query parameters: since (RFC 3339: events at or after),
// marker (an event id: events after it) and limit.
func (s *Server) listClusterEvents(w http.ResponseWriter, r *http.Request) error {
	c, err := s.lookupCluster(r, "cluster:get")
	if err != nil {
		return err
	}
	q := store.EventQuery{Limit: s.opts.MaxLimit}
	v := r.URL.Query()
	if raw := v.Get("since"); raw != "" {
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			return badRequest("Invalid input for query parameter since. Value: %q. Expected an RFC 3339 time such as 2024-05-01T12:00:00Z.", raw)
		}
		q.Since = t
	}
	if raw := v.Get("marker"); raw != "" {
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || id < 0 {
			return badRequest("Invalid input for query parameter marker. Value: %q. Expected the id of an event.", raw)
		}
		q.AfterID = id
	}
	if raw := v.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n <= 0 {
			return badRequest("Invalid input for query parameter limit. Value: %q. Expected a positive whole number.", raw)
		}
		q.Limit = min(n, s.opts.MaxLimit)
	}
	events, err := s.st.ListEvents(r.Context(), c.UUID, q)
	if err != nil {
		return err
	}
	out := apitypes.ClusterEventList{Events: make([]apitypes.ClusterEvent, 0, len(events))}
	for _, ev := range events {
		out.Events = append(out.Events, apitypes.ClusterEvent{
			ID: ev.ID, ClusterID: ev.ClusterID, Time: ev.Time.UTC().Format(eventTimeLayout),
			Kind: string(ev.Kind), Status: string(ev.Status), Reason: ev.Reason, Message: ev.Message,
		})
	}
	if n := len(events); n > 0 && n == q.Limit {
		next := url.Values{"marker": {strconv.FormatInt(events[n-1].ID, 10)}, "limit": {strconv.Itoa(q.Limit)}}
		if !q.Since.IsZero() {
			next.Set("since", v.Get("since"))
		}
		out.Next = baseURL(r) + "/v1/clusters/" + url.PathEscape(c.UUID) + "/events?" + next.Encode()
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// applyClusterChange writes a change that queues work and records in the
// cluster's history what the request did: a status event when the cluster's
// status moved (before is the status it had, "" on create), an operation
// event otherwise. The history is written after the change commits; a
// failure to write it is logged and does not fail the request, whose work is
// already queued. cl, when not nil, is the request's claim on bare-metal
// hosts, reserved inside the change's transaction (planned again when node
// groups began to be built since its plan).
func (s *Server) applyClusterChange(r *http.Request, before model.Status, ch store.ClusterChange, cl *capacityClaim) error {
	if cl != nil {
		ch.Reserve = cl.reserve
	}
	for attempt := 1; ; attempt++ {
		err := s.st.ApplyClusterChange(r.Context(), ch)
		if err == nil {
			break
		}
		if !isReplan(err) || attempt == replans {
			return err
		}
		if err := cl.replan(); err != nil {
			return err
		}
		if cl.plan == nil {
			ch.Reserve = nil
		}
	}
	if ch.Cluster == nil || ch.Operation == nil {
		return nil
	}
	if s.opts.OnQueued != nil {
		s.opts.OnQueued()
	}
	c, op := ch.Cluster, ch.Operation
	ev := model.ClusterEvent{
		ClusterID: c.UUID, ProjectID: c.ProjectID, Kind: model.EventOperation, Status: c.Status,
		Reason: string(op.Type), Message: operationMessage(op),
	}
	if c.Status != before {
		ev.Kind = model.EventStatus
	}
	if err := s.st.RecordEvent(r.Context(), ev); err != nil {
		s.log.WarnContext(r.Context(), "cluster event not recorded", "cluster", c.UUID, "error", err.Error())
	}
	return nil
}

// operationMessage says in words what an operation asks for.
func operationMessage(op *model.Operation) string {
	var msg string
	switch p := op.Payload.(type) {
	case *model.ClusterCreatePayload:
		msg = fmt.Sprintf("Create requested: %d control plane and %d worker nodes", p.MasterCount, p.NodeCount)
	case *model.ClusterUpdatePayload:
		msg = fmt.Sprintf("Update requested: %s to %d nodes", model.DefaultWorkerNodeGroup, p.NodeCount)
	case *model.ClusterResizePayload:
		msg = fmt.Sprintf("Resize requested: node group %s to %d nodes", p.NodeGroup, p.NodeCount)
		if len(p.NodesToRemove) > 0 {
			msg += ", removing " + strings.Join(p.NodesToRemove, ", ")
		}
	case *model.ClusterUpgradePayload:
		msg = fmt.Sprintf("Upgrade requested: node group %s to cluster template %s", p.NodeGroup, p.ClusterTemplate)
	case *model.NodeGroupCreatePayload:
		msg = fmt.Sprintf("Node group %s create requested", p.NodeGroup)
	case *model.NodeGroupUpdatePayload:
		msg = fmt.Sprintf("Node group %s update requested", p.NodeGroup)
		if len(p.Changed) > 0 {
			msg += ": " + strings.Join(p.Changed, ", ")
		}
	case *model.NodeGroupDeletePayload:
		msg = fmt.Sprintf("Node group %s delete requested", p.NodeGroup)
	case *model.CredentialRotatePayload:
		msg = fmt.Sprintf("Credential rotation requested: new application credential %s", p.Credential)
	default:
		if op.Type == model.OpClusterDelete {
			msg = "Delete requested"
		} else {
			msg = string(op.Type) + " requested"
		}
	}
	if op.RequestID != "" {
		msg += " (request " + op.RequestID + ")"
	}
	return msg
}
