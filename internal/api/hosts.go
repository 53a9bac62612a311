package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// The host inventory is a Magnetite extension under /v1/hosts, for
// administrators only (policy rules host:*). Its backend (Ironic or Metal3) is
// configured with [baremetal] backend; without one every call answers 501.
//
// The API never calls the backend. Reads are served from the conductor's
// mirror of the backend's hosts in the store. Changes (enroll, the actions,
// delete) are checked here, then queued as operations that a conductor
// replica carries out under a lease (conductor.HostActions); the request
// waits for its operation, up to HostActionWait, and answers with its
// outcome as the backend gave it, or 202 with the operation while it is
// still under way (the backend did not answer and the action will be tried
// again, say).

func (s *Server) hostRoutes() {
	s.handle("GET /v1/hosts", s.hostsHandler("host:get_all", s.listHosts))
	s.handle("POST /v1/hosts", s.hostsHandler("host:create", s.enrollHost))
	s.handle("GET /v1/hosts/{ident}", s.hostsHandler("host:get", s.getHost))
	s.handle("DELETE /v1/hosts/{ident}", s.hostsHandler("host:delete", s.deleteHost))
	s.handle("POST /v1/hosts/{ident}/actions/{action}", s.hostsHandler("host:action", s.hostAction))
	s.handle("GET /v1/hosts/operations/{uuid}", s.hostsHandler("host:get", s.getHostOperation))
}

// hostsHandler asks the policy (administrators only by default) and checks
// an inventory is configured. A caller the policy lets in who is not an
// administrator sees only the hosts assigned to their project: any other
// is "not found".
func (s *Server) hostsHandler(action string, h func(w http.ResponseWriter, r *http.Request) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := s.authorize(r, action, nil); err != nil {
			return err
		}
		if s.opts.HostBackend == "" {
			return &apiError{Status: http.StatusNotImplemented, Title: "Not Implemented",
				Detail: "The bare-metal host inventory is not configured: set [baremetal] backend = ironic (or metal3) in Magnetite's configuration."}
		}
		if ident := r.PathValue("ident"); ident != "" && !s.isAdmin(r) {
			host, err := s.mirroredHost(r, ident)
			if err != nil {
				return err
			}
			if !s.hostVisible(r, host) {
				return notFound("Host %s could not be found.", ident)
			}
		}
		return h(w, r)
	}
}

// mirroredHost reads a host from the conductor's mirror.
func (s *Server) mirroredHost(r *http.Request, ident string) (*baremetal.Host, error) {
	h, err := s.st.MirroredHost(r.Context(), ident)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound("Host %s could not be found.", ident)
	}
	return h, err
}

// hostVisible: administrators see every host, others those of their project.
func (s *Server) hostVisible(r *http.Request, h *baremetal.Host) bool {
	return s.isAdmin(r) || (h.ProjectID != "" && h.ProjectID == identity(r).ProjectID)
}

// actionError maps an action's permanent failure to HTTP as the backend's
// errors were mapped, keeping the backend's explanation.
func actionError(res *baremetal.ActionResult) error {
	switch res.ErrorKind {
	case baremetal.ErrorKindNotFound:
		return notFound("%s", res.Error)
	case baremetal.ErrorKindInvalid:
		return badRequest("%s", res.Error)
	case baremetal.ErrorKindConflict:
		return conflict("%s", res.Error)
	}
	return &apiError{Status: http.StatusInternalServerError, Title: "Internal Server Error", Detail: res.Error}
}

func (s *Server) hostView(r *http.Request, h *baremetal.Host) apitypes.Host {
	return apitypes.Host{
		UUID: h.ID, Name: h.Name, ProjectID: h.ProjectID, BMCAddress: h.BMCAddress, BMCUsername: h.BMCUsername, HardwareType: h.HardwareType,
		BootMethod: h.BootMethod, NeedsProvisioningNetwork: h.NeedsProvisioningNetwork,
		BootMACAddress: h.BootMACAddress, BootMode: h.BootMode, Labels: h.Labels,
		AutomatedCleaningMode: h.CleaningMode, ResourceClass: h.ResourceClass, TargetState: h.TargetState,
		State: h.State, ProvisionState: h.BackendState, TargetProvisionState: h.BackendTargetState,
		PowerState: h.PowerState, OperationalStatus: h.OperationalStatus, Detached: h.Detached, DetachedReason: h.DetachedReason,
		InspectedAt: timePtrString(h.InspectedAt), ErrorType: h.ErrorType, ErrorMessage: h.ErrorMessage, ErrorCount: h.ErrorCount,
		Managed: h.Managed, DeleteRequested: h.DeleteRequested, Consumer: h.Consumer, Backend: s.opts.HostBackend,
		Hardware: h.Hardware, RootDeviceHints: h.RootDeviceHints,
		CreatedAt: timeString(h.CreatedAt), UpdatedAt: timePtrString(h.UpdatedAt),
		Links: toAPILinks(resourceLinks(baseURL(r), "hosts", h.ID)),
	}
}

func (s *Server) listHosts(w http.ResponseWriter, r *http.Request) error {
	selector, err := labelSelector(r.URL.Query()["label"])
	if err != nil {
		return err
	}
	hosts, err := s.st.MirroredHosts(r.Context())
	if err != nil {
		return err
	}
	out := apitypes.HostList{Hosts: []apitypes.Host{}}
	for _, h := range hosts {
		if h.MatchesLabels(selector) && s.hostVisible(r, h) {
			out.Hosts = append(out.Hosts, s.hostView(r, h))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// labelSelector reads ?label=key=value (repeatable): hosts must carry all.
func labelSelector(params []string) (map[string]string, error) {
	sel := map[string]string{}
	for _, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, badRequest("Invalid label filter %q: write label=key=value.", p)
		}
		sel[k] = v
	}
	return sel, nil
}

func (s *Server) getHost(w http.ResponseWriter, r *http.Request) error {
	h, err := s.mirroredHost(r, r.PathValue("ident"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.hostView(r, h))
	return nil
}

// decodeStrict reads a JSON object into v, refusing unknown fields so a
// misspelt option is not silently ignored.
func decodeStrict(r *http.Request, v any, what string) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("The %s body is not valid: %s.", what, strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return badRequest("The %s body has data after the JSON object.", what)
	}
	return nil
}

func (s *Server) enrollHost(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.HostEnroll
	if err := decodeStrict(r, &req, "host enrollment"); err != nil {
		return err
	}
	spec := baremetal.HostSpec{
		Name: req.Name, BMCAddress: req.BMCAddress,
		Credentials: bmc.Credentials{Username: req.BMCUsername, Password: req.BMCPassword,
			DisableCertificateVerification: req.DisableCertificateVerification},
		HostSettings: baremetal.HostSettings{BootMACAddress: req.BootMACAddress, BootMode: req.BootMode,
			Labels: req.Labels, CleaningMode: req.AutomatedCleaningMode, ResourceClass: req.ResourceClass,
			TargetState: req.TargetState}, ProjectID: req.ProjectID,
	}
	if len(req.ProjectID) > 255 || strings.IndexFunc(req.ProjectID, unicode.IsControl) >= 0 {
		return badRequest("Invalid input for field/attribute project_id: a project id of at most 255 characters, without control characters.")
	}
	if req.RootDeviceHints != nil {
		h := baremetal.RootDeviceHints(*req.RootDeviceHints)
		spec.RootDeviceHints = &h
	}
	// Everything, the BMC address first, is checked before the backend is
	// called; the backend fills its own default resource class.
	if _, err := baremetal.ValidateSpec(&spec, ""); err != nil {
		return badRequest("%s", fault.Reason(err))
	}
	return s.runHostAction(w, r, spec.Name, baremetal.Action{Kind: baremetal.ActEnroll, Enroll: &spec}, http.StatusCreated)
}

func (s *Server) deleteHost(w http.ResponseWriter, r *http.Request) error {
	force := false
	if v := r.URL.Query().Get("force"); v != "" {
		f, err := toBool(v)
		if err != nil {
			return badRequest("Invalid input for query parameter force: expected true or false.")
		}
		force = f
	}
	return s.runHostAction(w, r, r.PathValue("ident"), baremetal.Action{Kind: baremetal.ActDelete, Force: force}, http.StatusAccepted)
}

func (s *Server) hostAction(w http.ResponseWriter, r *http.Request) error {
	ident, action := r.PathValue("ident"), r.PathValue("action")
	var a baremetal.Action
	switch action {
	case "power":
		var req apitypes.HostPower
		if err := decodeStrict(r, &req, "power action"); err != nil {
			return err
		}
		a.Kind = baremetal.ActPower
		switch {
		case req.Target == "on" && (req.Mode == "" || req.Mode == "hard"):
			a.Power = baremetal.PowerOn
		case req.Target == "off" && (req.Mode == "" || req.Mode == "hard"):
			a.Power = baremetal.PowerOff
		case req.Target == "off" && req.Mode == "soft":
			a.Power = baremetal.PowerSoftOff
		default:
			return badRequest("Invalid power request: target must be on or off, and mode hard (default) or, for off, soft.")
		}
	case "reboot":
		var req apitypes.HostReboot
		if err := decodeStrict(r, &req, "reboot action"); err != nil {
			return err
		}
		a.Kind = baremetal.ActPower
		switch req.Mode {
		case "", "hard":
			a.Power = baremetal.RebootHard
		case "soft":
			a.Power = baremetal.RebootSoft
		default:
			return badRequest("Invalid reboot mode %q: use hard (default) or soft.", req.Mode)
		}
	case "inspect":
		a.Kind = baremetal.ActInspect
	case "provide":
		a.Kind = baremetal.ActProvide
	case "detach":
		var req apitypes.HostDetach
		if err := decodeStrict(r, &req, "detach action"); err != nil {
			return err
		}
		a.Kind, a.Reason = baremetal.ActDetach, req.Reason
	case "attach":
		a.Kind = baremetal.ActAttach
	case "cleaning_mode":
		var req apitypes.HostCleaningMode
		if err := decodeStrict(r, &req, "cleaning mode action"); err != nil {
			return err
		}
		if err := baremetal.ValidateCleaningMode(req.AutomatedCleaningMode); err != nil {
			return badRequest("%s", fault.Reason(err))
		}
		a.Kind, a.CleaningMode = baremetal.ActCleaningMode, req.AutomatedCleaningMode
	default:
		return notFound("Unknown host action %q; actions are power, reboot, inspect, provide, detach, attach and cleaning_mode.", action)
	}
	return s.runHostAction(w, r, ident, a, http.StatusAccepted)
}

// runHostAction queues action on host ident for the conductor, waits for
// it, and answers with its outcome: status and the host as the backend
// showed it (204 for a finished delete), the backend's refusal mapped as
// its errors always were, or 202 with the operation when it did not end in
// time.
func (s *Server) runHostAction(w http.ResponseWriter, r *http.Request, ident string, action baremetal.Action, status int) error {
	op := &store.HostOperation{Operation: model.Operation{UUID: uuid.NewString(), ProjectID: identity(r).ProjectID,
		RequestID: requestID(r.Context())}, Host: ident, Action: action}
	if err := s.st.QueueHostOperation(r.Context(), op); err != nil {
		return err
	}
	if s.opts.OnQueued != nil {
		s.opts.OnQueued()
	}
	done, err := s.awaitHostOperation(r, op.UUID)
	if err != nil {
		return err
	}
	switch {
	case done.Result == nil:
		writeJSON(w, http.StatusAccepted, apitypes.HostOperationAccepted{Operation: hostOperationView(done)})
	case done.Result.ErrorKind != "":
		return actionError(done.Result)
	case done.Result.Deleted:
		w.WriteHeader(http.StatusNoContent)
	default:
		writeJSON(w, status, s.hostView(r, done.Result.Host))
	}
	return nil
}

// awaitHostOperation polls the store until the operation ends, an attempt
// at it failed transiently (it waits for its retry: the caller learns why
// at once), the wait (HostActionWait, or the request's own deadline if
// sooner) runs out or the caller goes away, and returns the operation as
// it last was.
func (s *Server) awaitHostOperation(r *http.Request, uuid string) (*store.HostOperation, error) {
	wait := s.opts.HostActionWait
	if wait <= 0 {
		wait = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	poll := 10 * time.Millisecond
	for {
		// The last read does not use ctx: its end is why we read.
		op, err := s.st.GetHostOperation(context.WithoutCancel(ctx), uuid)
		retrying := op != nil && op.State == model.OpPending && op.LastError != ""
		if err != nil || op.State == model.OpSucceeded || op.State == model.OpFailed || retrying || ctx.Err() != nil {
			return op, err
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		poll = min(2*poll, 250*time.Millisecond)
	}
}

func (s *Server) getHostOperation(w http.ResponseWriter, r *http.Request) error {
	op, err := s.st.GetHostOperation(r.Context(), r.PathValue("uuid"))
	if errors.Is(err, store.ErrNotFound) || (err == nil && !s.isAdmin(r) && op.ProjectID != identity(r).ProjectID) {
		return notFound("Host operation %s could not be found.", r.PathValue("uuid"))
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, hostOperationView(op))
	return nil
}

func hostOperationView(op *store.HostOperation) apitypes.HostOperation {
	v := apitypes.HostOperation{UUID: op.UUID, Type: string(op.Type), Host: op.Host, State: string(op.State),
		Attempts: op.Attempts, LastError: op.LastError, NextAttemptAt: timePtrString(op.NextAttemptAt),
		CreatedAt: timeString(op.CreatedAt), UpdatedAt: timeString(op.UpdatedAt)}
	if op.Result != nil && op.Result.Host != nil {
		v.HostUUID = op.Result.Host.ID
	}
	return v
}
