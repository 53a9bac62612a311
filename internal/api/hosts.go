package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"unicode"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
)

// The host inventory is a Magnetite extension under /v1/hosts, for
// administrators only (policy rules host:*). Its backend (Ironic or Metal3) is configured with
// [baremetal] backend; without one every call answers 501.

func (s *Server) hostRoutes() {
	s.handle("GET /v1/hosts", s.hostsHandler("host:get_all", s.listHosts))
	s.handle("POST /v1/hosts", s.hostsHandler("host:create", s.enrollHost))
	s.handle("GET /v1/hosts/{ident}", s.hostsHandler("host:get", s.getHost))
	s.handle("DELETE /v1/hosts/{ident}", s.hostsHandler("host:delete", s.deleteHost))
	s.handle("POST /v1/hosts/{ident}/actions/{action}", s.hostsHandler("host:action", s.hostAction))
}

// hostsHandler asks the policy (administrators only by default) and checks a
// backend is configured; the error table (errors.go) answers the backend's
// errors. A caller the policy
// lets in who is not an administrator sees only the hosts assigned to their
// project: any other is "not found".
func (s *Server) hostsHandler(action string, h func(w http.ResponseWriter, r *http.Request, b baremetal.Backend) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := s.authorize(r, action, nil); err != nil {
			return err
		}
		b := s.opts.Hosts
		if b == nil {
			return &apiError{Status: http.StatusNotImplemented, Title: "Not Implemented",
				Detail: "The bare-metal host inventory is not configured: set [baremetal] backend = ironic (or metal3) in Magnetite's configuration."}
		}
		if ident := r.PathValue("ident"); ident != "" && !s.isAdmin(r) {
			host, err := b.Get(r.Context(), ident)
			if err != nil {
				return err
			}
			if !s.hostVisible(r, host) {
				return notFound("Host %s could not be found.", ident)
			}
		}
		return h(w, r, b)
	}
}

// hostVisible: administrators see every host, others those of their project.
func (s *Server) hostVisible(r *http.Request, h *baremetal.Host) bool {
	return s.isAdmin(r) || (h.ProjectID != "" && h.ProjectID == identity(r).ProjectID)
}

func (s *Server) hostView(r *http.Request, b baremetal.Backend, h *baremetal.Host) apitypes.Host {
	out := apitypes.Host{
		UUID: h.ID, Name: h.Name, ProjectID: h.ProjectID, BMCAddress: h.BMCAddress, BMCUsername: h.BMCUsername, HardwareType: h.HardwareType,
		BootMethod: h.BootMethod, NeedsProvisioningNetwork: h.NeedsProvisioningNetwork,
		BootMACAddress: h.BootMACAddress, BootMode: h.BootMode, Labels: h.Labels,
		AutomatedCleaningMode: h.CleaningMode, ResourceClass: h.ResourceClass, TargetState: h.TargetState,
		State: h.State, ProvisionState: h.BackendState, TargetProvisionState: h.BackendTargetState,
		PowerState: h.PowerState, OperationalStatus: h.OperationalStatus, Detached: h.Detached, DetachedReason: h.DetachedReason,
		InspectedAt: timePtrString(h.InspectedAt), ErrorType: h.ErrorType, ErrorMessage: h.ErrorMessage, ErrorCount: h.ErrorCount,
		Managed: h.Managed, DeleteRequested: h.DeleteRequested, Consumer: h.Consumer, Backend: b.Name(),
		CreatedAt: timeString(h.CreatedAt), UpdatedAt: timePtrString(h.UpdatedAt),
		Links: toAPILinks(resourceLinks(baseURL(r), "hosts", h.ID)),
	}
	if hw := h.Hardware; hw != nil {
		out.Hardware = &apitypes.HostHardware{CPUArch: hw.CPUArch, CPUCount: hw.CPUCount, MemoryMiB: hw.MemoryMiB, LocalDiskGiB: hw.LocalDiskGiB}
	}
	if d := h.RootDeviceHints; d != nil {
		v := apitypes.HostRootDeviceHints(*d)
		out.RootDeviceHints = &v
	}
	return out
}

func (s *Server) listHosts(w http.ResponseWriter, r *http.Request, b baremetal.Backend) error {
	selector, err := labelSelector(r.URL.Query()["label"])
	if err != nil {
		return err
	}
	hosts, err := b.List(r.Context())
	if err != nil {
		return err
	}
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].Name < hosts[j].Name })
	out := apitypes.HostList{Hosts: []apitypes.Host{}}
	for _, h := range hosts {
		if h.MatchesLabels(selector) && s.hostVisible(r, h) {
			out.Hosts = append(out.Hosts, s.hostView(r, b, h))
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

func (s *Server) getHost(w http.ResponseWriter, r *http.Request, b baremetal.Backend) error {
	h, err := b.Get(r.Context(), r.PathValue("ident"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.hostView(r, b, h))
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

func (s *Server) enrollHost(w http.ResponseWriter, r *http.Request, b baremetal.Backend) error {
	var req apitypes.HostEnroll
	if err := decodeStrict(r, &req, "host enrollment"); err != nil {
		return err
	}
	spec := baremetal.HostSpec{
		Name: req.Name, BMCAddress: req.BMCAddress,
		Credentials: bmc.Credentials{Username: req.BMCUsername, Password: req.BMCPassword,
			DisableCertificateVerification: req.DisableCertificateVerification},
		BootMACAddress: req.BootMACAddress, BootMode: req.BootMode, Labels: req.Labels,
		CleaningMode: req.AutomatedCleaningMode, ResourceClass: req.ResourceClass, TargetState: req.TargetState,
		ProjectID: req.ProjectID,
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
		return err
	}
	h, err := b.Enroll(r.Context(), spec)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.hostView(r, b, h))
	return nil
}

func (s *Server) deleteHost(w http.ResponseWriter, r *http.Request, b baremetal.Backend) error {
	force := false
	if v := r.URL.Query().Get("force"); v != "" {
		f, err := toBool(v)
		if err != nil {
			return badRequest("Invalid input for query parameter force: expected true or false.")
		}
		force = f
	}
	outcome, h, err := b.Delete(r.Context(), r.PathValue("ident"), force)
	if err != nil {
		return err
	}
	if outcome == baremetal.Deleted {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	writeJSON(w, http.StatusAccepted, s.hostView(r, b, h))
	return nil
}

func (s *Server) hostAction(w http.ResponseWriter, r *http.Request, b baremetal.Backend) error {
	ctx, ident, action := r.Context(), r.PathValue("ident"), r.PathValue("action")
	var h *baremetal.Host
	var err error
	switch action {
	case "power":
		var req apitypes.HostPower
		if err := decodeStrict(r, &req, "power action"); err != nil {
			return err
		}
		var pa baremetal.PowerAction
		switch {
		case req.Target == "on" && (req.Mode == "" || req.Mode == "hard"):
			pa = baremetal.PowerOn
		case req.Target == "off" && (req.Mode == "" || req.Mode == "hard"):
			pa = baremetal.PowerOff
		case req.Target == "off" && req.Mode == "soft":
			pa = baremetal.PowerSoftOff
		default:
			return badRequest("Invalid power request: target must be on or off, and mode hard (default) or, for off, soft.")
		}
		h, err = b.Power(ctx, ident, pa)
	case "reboot":
		var req apitypes.HostReboot
		if err := decodeStrict(r, &req, "reboot action"); err != nil {
			return err
		}
		switch req.Mode {
		case "", "hard":
			h, err = b.Power(ctx, ident, baremetal.RebootHard)
		case "soft":
			h, err = b.Power(ctx, ident, baremetal.RebootSoft)
		default:
			return badRequest("Invalid reboot mode %q: use hard (default) or soft.", req.Mode)
		}
	case "inspect":
		h, err = b.Inspect(ctx, ident)
	case "provide":
		h, err = b.Provide(ctx, ident)
	case "detach":
		var req apitypes.HostDetach
		if err := decodeStrict(r, &req, "detach action"); err != nil {
			return err
		}
		h, err = b.Detach(ctx, ident, req.Reason)
	case "attach":
		h, err = b.Attach(ctx, ident)
	case "cleaning_mode":
		var req apitypes.HostCleaningMode
		if err := decodeStrict(r, &req, "cleaning mode action"); err != nil {
			return err
		}
		h, err = b.SetCleaningMode(ctx, ident, req.AutomatedCleaningMode)
	default:
		return notFound("Unknown host action %q; actions are power, reboot, inspect, provide, detach, attach and cleaning_mode.", action)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, s.hostView(r, b, h))
	return nil
}
