package ironic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
	"github.com/magnetite-io/magnetite/internal/fault"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/httpbasic"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
)

// DefaultAPIVersion is the microversion sent when none is configured:
// Ironic 2023.1 (21.4), the oldest release Magnetite is tested against.
// Everything used (automated_clean 1.47, inspection timestamps, retired
// 1.61) is older than that.
const DefaultAPIVersion = "1.81"

// Config configures the Ironic backend.
type Config struct {
	// Endpoint is Ironic's API root, e.g. http://ironic:6385 (with or
	// without /v1).
	Endpoint string
	// APIVersion is the X-OpenStack-Ironic-API-Version sent on every call.
	APIVersion string
	// AuthType is noauth or http_basic.
	AuthType string
	Username string
	Password string
	Timeout  time.Duration
	// DeployInterface and InspectInterface override the address mapping's
	// choice; empty leaves them to Ironic's configured defaults.
	DeployInterface  string
	InspectInterface string
	// FakeHardware enrolls every host with Ironic's fake-hardware type and
	// fake interfaces, keeping the BMC address and driver_info for show.
	FakeHardware bool
	// DeployKernel and DeployRamdisk go into driver_info when set.
	DeployKernel         string
	DeployRamdisk        string
	DefaultResourceClass string
	Log                  *slog.Logger
}

// Backend is the baremetal.Backend over Ironic's bare-metal API.
type Backend struct {
	cfg    Config
	client *gophercloud.ServiceClient
	log    *slog.Logger
	now    func() time.Time
	// lockedWait is the first pause after a NodeLocked answer (doubling,
	// at most 4 s).
	lockedWait time.Duration

	// mu serialises the calls that read a node and then change it (its
	// metadata in extra, its state) between API requests and the periodic
	// pass. Ironic applies a PATCH to the node as it read it and saves the
	// whole extra field once it holds the node's lock, so two overlapping
	// PATCHes of different keys can lose one: a provide's target_state was
	// seen undone by the pass clearing inspect_requested, leaving the host
	// held at manageable for good. It also keeps the pass from acting on a
	// node list read before a request changed a node.
	mu sync.Mutex
}

// NewIronic builds the Ironic backend; it does not contact Ironic.
func New(cfg Config) (*Backend, error) {
	endpoint := strings.TrimRight(cfg.Endpoint, "/")
	if endpoint == "" {
		return nil, errors.New("baremetal: [baremetal] ironic_endpoint is required for the ironic backend")
	}
	if !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
		return nil, fmt.Errorf("baremetal: [baremetal] ironic_endpoint %q must be an http:// or https:// URL", cfg.Endpoint)
	}
	if !strings.HasSuffix(endpoint, "/v1") {
		endpoint += "/v1"
	}
	if cfg.APIVersion == "" {
		cfg.APIVersion = DefaultAPIVersion
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.DefaultResourceClass == "" {
		cfg.DefaultResourceClass = "baremetal"
	}
	var sc *gophercloud.ServiceClient
	var err error
	switch cfg.AuthType {
	case "", "noauth":
		sc, err = noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: endpoint})
	case "http_basic":
		sc, err = httpbasic.NewBareMetalHTTPBasic(httpbasic.EndpointOpts{IronicEndpoint: endpoint, IronicUser: cfg.Username, IronicUserPassword: cfg.Password})
	default:
		return nil, fmt.Errorf("baremetal: [baremetal] ironic_auth_type %q must be noauth or http_basic", cfg.AuthType)
	}
	if err != nil {
		return nil, fmt.Errorf("baremetal: Ironic client: %w", err)
	}
	sc.HTTPClient = http.Client{Timeout: cfg.Timeout}
	sc.Microversion = cfg.APIVersion
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Backend{cfg: cfg, client: sc, log: log.With("backend", "ironic"), now: time.Now, lockedWait: time.Second}, nil
}

// Name implements Backend.
func (b *Backend) Name() string { return "ironic" }

// hostMeta is what Magnetite keeps on the node, under extra.magnetite.
type hostMeta struct {
	BMCAddress       string                     `json:"bmc_address"`
	BootMAC          string                     `json:"boot_mac_address,omitempty"`
	BootMode         string                     `json:"boot_mode,omitempty"`
	RootDeviceHints  *baremetal.RootDeviceHints `json:"root_device_hints,omitempty"`
	Labels           map[string]string          `json:"labels,omitempty"`
	CleaningMode     string                     `json:"cleaning_mode,omitempty"`
	TargetState      string                     `json:"target_state,omitempty"`
	InspectRequested bool                       `json:"inspect_requested,omitempty"`
	DeleteRequested  bool                       `json:"delete_requested,omitempty"`
	ErrorCount       int                        `json:"error_count,omitempty"`
	// ErrorSeen fingerprints the last error counted, so one failure is
	// counted once however often it is observed.
	ErrorSeen string `json:"error_seen,omitempty"`
}

const metaKey = "magnetite"

func metaOf(n *nodes.Node) *hostMeta {
	raw, ok := n.Extra[metaKey]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var m hostMeta
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return &m
}

// Enroll implements Backend: create the node and its boot port, then ask
// Ironic to verify the BMC (manage).
//
// It holds the backend's lock so the periodic pass does not start the
// verification of a node whose boot port is not made yet.
func (b *Backend) Enroll(ctx context.Context, spec baremetal.HostSpec) (*baremetal.Host, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	addr, err := baremetal.ValidateSpec(&spec, b.cfg.DefaultResourceClass)
	if err != nil {
		return nil, err
	}
	if spec.ProjectID != "" {
		return nil, fault.New(baremetal.ErrInvalidHost, "project_id assigns Metal3 hosts to a project's clusters; with Ironic, Nova places instances by flavor: give the node an owner or lessee in Ironic instead")
	}
	info := addr.DriverInfo(spec.Credentials)
	if b.cfg.DeployKernel != "" {
		info["deploy_kernel"] = b.cfg.DeployKernel
	}
	if b.cfg.DeployRamdisk != "" {
		info["deploy_ramdisk"] = b.cfg.DeployRamdisk
	}
	clean := spec.CleaningMode == baremetal.CleaningMetadata
	meta := hostMeta{BMCAddress: addr.String(), BootMAC: spec.BootMACAddress, BootMode: spec.BootMode,
		RootDeviceHints: spec.RootDeviceHints, Labels: spec.Labels, CleaningMode: spec.CleaningMode, TargetState: spec.TargetState}
	opts := nodes.CreateOpts{
		Name: spec.Name, Driver: addr.HardwareType, DriverInfo: info,
		Properties:     nodeProperties(spec),
		ResourceClass:  spec.ResourceClass,
		AutomatedClean: &clean,
		Extra:          map[string]any{metaKey: meta},
	}
	b.setInterfaces(&opts, addr)
	created, err := nodes.Create(ctx, b.client, opts).Extract()
	if err != nil {
		return nil, b.ironicError(err, "enroll host "+spec.Name, spec.Credentials.Password)
	}
	b.log.InfoContext(ctx, "host enrolled", "host", spec.Name, "node", created.UUID, "hardware_type", opts.Driver, "bmc", meta.BMCAddress)
	if spec.BootMACAddress != "" {
		pxe := true
		err := b.retryLocked(ctx, func() error {
			_, err := ports.Create(ctx, b.client, ports.CreateOpts{NodeUUID: created.UUID, Address: spec.BootMACAddress, PXEEnabled: &pxe}).Extract()
			return err
		})
		if err != nil {
			perr := b.ironicError(err, "create the boot port "+spec.BootMACAddress, spec.Credentials.Password)
			if derr := nodes.Delete(ctx, b.client, created.UUID).ExtractErr(); derr != nil {
				b.log.WarnContext(ctx, "could not remove the node of a failed enrollment", "node", created.UUID, "error", derr)
			}
			return nil, perr
		}
	}
	if err := b.changeState(ctx, created.UUID, nodes.TargetManage); err != nil {
		// The node exists; reconciling retries the verification.
		b.log.WarnContext(ctx, "could not start BMC verification", "node", created.UUID, "error", err)
	}
	return b.Get(ctx, created.UUID)
}

func (b *Backend) setInterfaces(opts *nodes.CreateOpts, addr *bmc.Address) {
	if b.cfg.FakeHardware {
		opts.Driver = "fake-hardware"
		opts.BootInterface, opts.DeployInterface, opts.InspectInterface = "fake", "fake", "fake"
		opts.ManagementInterface, opts.PowerInterface, opts.RAIDInterface = "fake", "fake", "fake"
		opts.VendorInterface, opts.BIOSInterface = "fake", "fake"
		return
	}
	i := addr.Interfaces
	opts.BootInterface, opts.ManagementInterface, opts.PowerInterface = i.Boot, i.Management, i.Power
	opts.RAIDInterface, opts.VendorInterface, opts.BIOSInterface = i.RAID, i.Vendor, i.BIOS
	opts.DeployInterface, opts.InspectInterface = b.cfg.DeployInterface, b.cfg.InspectInterface
}

// nodeProperties carries the boot mode (capabilities) and root device
// hints in Ironic's own keys.
func nodeProperties(spec baremetal.HostSpec) map[string]any {
	props := map[string]any{}
	switch spec.BootMode {
	case baremetal.BootModeUEFI:
		props["capabilities"] = "boot_mode:uefi"
	case baremetal.BootModeUEFISecure:
		props["capabilities"] = "boot_mode:uefi,secure_boot:true"
	case baremetal.BootModeLegacy:
		props["capabilities"] = "boot_mode:bios"
	}
	if h := spec.RootDeviceHints; h != nil {
		rd := map[string]any{}
		set := func(k, v string) {
			if v != "" {
				rd[k] = v
			}
		}
		set("name", h.DeviceName)
		set("hctl", h.HCTL)
		set("model", h.Model)
		set("vendor", h.Vendor)
		set("serial", h.SerialNumber)
		set("wwn", h.WWN)
		set("wwn_with_extension", h.WWNWithExtension)
		set("wwn_vendor_extension", h.WWNVendorExtension)
		if h.MinSizeGigabytes > 0 {
			rd["size"] = fmt.Sprintf(">= %d", h.MinSizeGigabytes)
		}
		if h.Rotational != nil {
			rd["rotational"] = *h.Rotational
		}
		if len(rd) > 0 {
			props["root_device"] = rd
		}
	}
	return props
}

func (b *Backend) listNodes(ctx context.Context) ([]nodes.Node, error) {
	pages, err := nodes.ListDetail(b.client, nodes.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, b.ironicError(err, "list nodes", "")
	}
	ns, err := nodes.ExtractNodes(pages)
	if err != nil {
		return nil, fault.New(baremetal.ErrUnavailable, "Ironic's node list could not be read: %v", err)
	}
	return ns, nil
}

// List implements Backend.
func (b *Backend) List(ctx context.Context) ([]*baremetal.Host, error) {
	ns, err := b.listNodes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*baremetal.Host, 0, len(ns))
	for i := range ns {
		out = append(out, hostFromNode(&ns[i]))
	}
	return out, nil
}

func (b *Backend) node(ctx context.Context, ident string) (*nodes.Node, error) {
	if ident == "" || strings.ContainsAny(ident, "/?#") {
		return nil, fault.New(baremetal.ErrHostNotFound, "%q", ident)
	}
	n, err := nodes.Get(ctx, b.client, ident).Extract()
	if err != nil {
		return nil, b.ironicError(err, "find host "+ident, "")
	}
	return n, nil
}

// Get implements Backend.
func (b *Backend) Get(ctx context.Context, ident string) (*baremetal.Host, error) {
	n, err := b.node(ctx, ident)
	if err != nil {
		return nil, err
	}
	return hostFromNode(n), nil
}

var powerTargets = map[baremetal.PowerAction]nodes.TargetPowerState{
	baremetal.PowerOn: nodes.PowerOn, baremetal.PowerOff: nodes.PowerOff, baremetal.PowerSoftOff: nodes.SoftPowerOff,
	baremetal.RebootHard: nodes.Rebooting, baremetal.RebootSoft: nodes.SoftRebooting,
}

// Power implements Backend.
func (b *Backend) Power(ctx context.Context, ident string, action baremetal.PowerAction) (*baremetal.Host, error) {
	target, ok := powerTargets[action]
	if !ok {
		return nil, fault.New(baremetal.ErrInvalidHost, "power action %q must be on, off, soft-off, reboot-hard or reboot-soft", action)
	}
	n, err := b.node(ctx, ident)
	if err != nil {
		return nil, err
	}
	err = b.retryLocked(ctx, func() error {
		return nodes.ChangePowerState(ctx, b.client, n.UUID, nodes.PowerStateOpts{Target: target}).ExtractErr()
	})
	if err != nil {
		return nil, b.ironicError(err, fmt.Sprintf("power %s host %s", action, n.Name), "")
	}
	b.log.InfoContext(ctx, "host power change requested", "host", n.Name, "node", n.UUID, "action", string(action))
	return b.Get(ctx, n.UUID)
}

// Inspect implements Backend.
func (b *Backend) Inspect(ctx context.Context, ident string) (*baremetal.Host, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.managedNodeIn(ctx, ident, "it can be inspected when manageable, available or after a failed inspection",
		nodes.Manageable, nodes.Available, nodes.InspectFail)
	if err != nil {
		return nil, err
	}
	if n.Maintenance {
		return nil, fault.New(baremetal.ErrConflict, "host %s is detached; attach it first", n.Name)
	}
	if err := b.patchMeta(ctx, n, map[string]any{"inspect_requested": true}); err != nil {
		return nil, err
	}
	return b.stepAndGet(ctx, n.UUID)
}

// Provide implements Backend.
func (b *Backend) Provide(ctx context.Context, ident string) (*baremetal.Host, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.managedNodeIn(ctx, ident, "only registered, held or failed hosts can be provided",
		nodes.Manageable, nodes.Available, nodes.Enroll, nodes.CleanFail, nodes.InspectFail)
	if err != nil {
		return nil, err
	}
	if err := b.patchMeta(ctx, n, map[string]any{"target_state": baremetal.TargetAvailable}); err != nil {
		return nil, err
	}
	if ps := nodes.ProvisionState(n.ProvisionState); ps == nodes.CleanFail || ps == nodes.InspectFail {
		// Failed hosts go back through manageable, then on to available.
		if err := b.changeState(ctx, n.UUID, nodes.TargetManage); err != nil {
			return nil, err
		}
	}
	return b.stepAndGet(ctx, n.UUID)
}

// detachPrefix marks maintenance set by a detach, as opposed to Ironic's
// own (power failures).
const detachPrefix = "detached: "

// Detach implements Backend.
func (b *Backend) Detach(ctx context.Context, ident, reason string) (*baremetal.Host, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.node(ctx, ident)
	if err != nil {
		return nil, err
	}
	if reason == "" {
		reason = "no reason given"
	}
	if err := nodes.SetMaintenance(ctx, b.client, n.UUID, nodes.MaintenanceOpts{Reason: detachPrefix + reason}).ExtractErr(); err != nil {
		return nil, b.ironicError(err, "detach host "+n.Name, "")
	}
	b.log.InfoContext(ctx, "host detached", "host", n.Name, "node", n.UUID, "reason", reason)
	return b.Get(ctx, n.UUID)
}

// Attach implements Backend.
func (b *Backend) Attach(ctx context.Context, ident string) (*baremetal.Host, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.node(ctx, ident)
	if err != nil {
		return nil, err
	}
	if err := nodes.UnsetMaintenance(ctx, b.client, n.UUID).ExtractErr(); err != nil {
		return nil, b.ironicError(err, "attach host "+n.Name, "")
	}
	b.log.InfoContext(ctx, "host attached", "host", n.Name, "node", n.UUID)
	return b.stepAndGet(ctx, n.UUID)
}

// SetCleaningMode implements Backend.
func (b *Backend) SetCleaningMode(ctx context.Context, ident, mode string) (*baremetal.Host, error) {
	if err := baremetal.ValidateCleaningMode(mode); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.node(ctx, ident)
	if err != nil {
		return nil, err
	}
	ops := nodes.UpdateOpts{nodes.UpdateOperation{Op: nodes.AddOp, Path: "/automated_clean", Value: mode == baremetal.CleaningMetadata}}
	if metaOf(n) != nil {
		ops = append(ops, nodes.UpdateOperation{Op: nodes.AddOp, Path: "/extra/" + metaKey + "/cleaning_mode", Value: mode})
	}
	if _, err := nodes.Update(ctx, b.client, n.UUID, ops).Extract(); err != nil {
		return nil, b.ironicError(err, "set the cleaning mode of host "+n.Name, "")
	}
	return b.Get(ctx, n.UUID)
}

// Delete implements Backend.
func (b *Backend) Delete(ctx context.Context, ident string, force bool) (baremetal.DeleteOutcome, *baremetal.Host, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.node(ctx, ident)
	if err != nil {
		return baremetal.Deleted, nil, err
	}
	if force {
		if !n.Maintenance {
			err := nodes.SetMaintenance(ctx, b.client, n.UUID, nodes.MaintenanceOpts{Reason: "deleting without deprovisioning or cleaning"}).ExtractErr()
			if err != nil {
				return baremetal.Deleted, nil, b.ironicError(err, "delete host "+n.Name, "")
			}
		}
		if err := nodes.Delete(ctx, b.client, n.UUID).ExtractErr(); err != nil {
			return baremetal.Deleted, nil, b.ironicError(err, "delete host "+n.Name, "")
		}
		b.log.InfoContext(ctx, "host deleted without deprovisioning", "host", n.Name, "node", n.UUID)
		return baremetal.Deleted, nil, nil
	}
	if err := b.patchMeta(ctx, n, map[string]any{"delete_requested": true}); err != nil {
		return baremetal.Deleted, nil, err
	}
	h, err := b.stepAndGet(ctx, n.UUID)
	if errors.Is(err, baremetal.ErrHostNotFound) {
		return baremetal.Deleted, nil, nil
	}
	if err != nil {
		return baremetal.Deleted, nil, err
	}
	return baremetal.DeleteStarted, h, nil
}

// Capacity implements Backend. Resource classes compare in placement form,
// so "baremetal-gold" and CUSTOM_BAREMETAL_GOLD are the same class.
func (b *Backend) Capacity(ctx context.Context, resourceClass string) (baremetal.Capacity, error) {
	hosts, err := b.List(ctx)
	if err != nil {
		return baremetal.Capacity{ResourceClass: resourceClass}, err
	}
	c := baremetal.Count(hosts, baremetal.OfResourceClass(resourceClass))
	c.ResourceClass = resourceClass
	return c, nil
}

func deleteRequested(n *nodes.Node) bool {
	m := metaOf(n)
	return m != nil && m.DeleteRequested
}

// managedNode finds a node Magnetite enrolled; others are shown but not
// driven through Magnetite's state machine.
func (b *Backend) managedNode(ctx context.Context, ident string) (*nodes.Node, error) {
	n, err := b.node(ctx, ident)
	if err != nil {
		return nil, err
	}
	if metaOf(n) == nil {
		return nil, fault.New(baremetal.ErrConflict, "node %s was not enrolled through Magnetite; drive it with Ironic's own tools", n.UUID)
	}
	return n, nil
}

// managedNodeIn finds a node Magnetite enrolled that is in one of the
// allowed provision states; in another it is a conflict, and why says
// which states the action takes.
func (b *Backend) managedNodeIn(ctx context.Context, ident, why string, allowed ...nodes.ProvisionState) (*nodes.Node, error) {
	n, err := b.managedNode(ctx, ident)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(allowed, nodes.ProvisionState(n.ProvisionState)) {
		return nil, fault.New(baremetal.ErrConflict, "host %s is %s; %s", n.Name, n.ProvisionState, why)
	}
	return n, nil
}

// patchMeta sets fields of extra.magnetite one by one, so a concurrent
// change of another field is not lost.
func (b *Backend) patchMeta(ctx context.Context, n *nodes.Node, fields map[string]any) error {
	var ops nodes.UpdateOpts
	if metaOf(n) == nil {
		ops = append(ops, nodes.UpdateOperation{Op: nodes.AddOp, Path: "/extra/" + metaKey, Value: fields})
	} else {
		for k, v := range fields {
			ops = append(ops, nodes.UpdateOperation{Op: nodes.AddOp, Path: "/extra/" + metaKey + "/" + k, Value: v})
		}
	}
	err := b.retryLocked(ctx, func() error {
		_, err := nodes.Update(ctx, b.client, n.UUID, ops).Extract()
		return err
	})
	if err != nil {
		return b.ironicError(err, "update host "+n.Name, "")
	}
	return nil
}

func (b *Backend) changeState(ctx context.Context, uuid string, target nodes.TargetProvisionState) error {
	err := b.retryLocked(ctx, func() error {
		return nodes.ChangeProvisionState(ctx, b.client, uuid, nodes.ProvisionStateOpts{Target: target}).ExtractErr()
	})
	if err != nil {
		return b.ironicError(err, fmt.Sprintf("move node %s to %s", uuid, target), "")
	}
	return nil
}

// Ironic answers 409 NodeLocked while one of its conductors holds the node
// (verifying a BMC, changing power): a state the caller cannot see and that
// ends by itself. Like Ironic's own clients, wait and try again a few times
// before passing the refusal on.
const lockedRetries = 6

func (b *Backend) retryLocked(ctx context.Context, call func() error) error {
	wait := b.lockedWait
	for attempt := 1; ; attempt++ {
		err := call()
		if err == nil || attempt == lockedRetries || !nodeLocked(err) {
			return err
		}
		b.log.DebugContext(ctx, "Ironic node locked; retrying", "attempt", attempt, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 4*time.Second)
	}
}

// nodeLocked tells Ironic's NodeLocked apart from the other conflicts
// (a MAC address taken, a state that does not allow the change), which
// do not end by waiting. Ironic gives it no code of its own; its message
// is fixed: "Node %(node)s is locked by host %(host)s, please retry ...".
func nodeLocked(err error) bool {
	var code gophercloud.ErrUnexpectedResponseCode
	return errors.As(err, &code) && code.Actual == http.StatusConflict &&
		strings.Contains(ironicFault(code.Body), " is locked by host ")
}

// ironicError turns a gophercloud error into a sentinel-wrapped error with
// Ironic's own explanation, with any password scrubbed.
func (b *Backend) ironicError(err error, doing, password string) error {
	var code gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &code) {
		msg := err.Error()
		if password != "" {
			msg = strings.ReplaceAll(msg, password, bmc.PasswordMask)
		}
		return fault.New(baremetal.ErrUnavailable, "could not %s: Ironic at %s did not answer: %s", doing, b.client.Endpoint, msg)
	}
	detail := ironicFault(code.Body)
	if password != "" {
		detail = strings.ReplaceAll(detail, password, bmc.PasswordMask)
	}
	switch {
	case code.Actual == http.StatusNotFound:
		return fault.New(baremetal.ErrHostNotFound, "could not %s: %s", doing, detail)
	case nodeLocked(err):
		return fault.New(baremetal.ErrLocked, "could not %s: %s", doing, detail)
	case code.Actual == http.StatusConflict:
		return fault.New(baremetal.ErrConflict, "could not %s: %s", doing, detail)
	case code.Actual == http.StatusNotAcceptable:
		return fault.New(baremetal.ErrUnavailable, "could not %s: Ironic does not serve API version %s: %s", doing, b.cfg.APIVersion, detail)
	case code.Actual >= 400 && code.Actual < 500:
		return fault.New(baremetal.ErrInvalidHost, "could not %s: Ironic refused it: %s", doing, detail)
	}
	return fault.New(baremetal.ErrUnavailable, "could not %s: Ironic answered %d: %s", doing, code.Actual, detail)
}

// ironicFault extracts faultstring from Ironic's error body, whose
// error_message is itself a JSON document.
func ironicFault(body []byte) string {
	var outer struct {
		ErrorMessage string `json:"error_message"`
	}
	if json.Unmarshal(body, &outer) == nil && outer.ErrorMessage != "" {
		var inner struct {
			Faultstring string `json:"faultstring"`
		}
		if json.Unmarshal([]byte(outer.ErrorMessage), &inner) == nil && inner.Faultstring != "" {
			return inner.Faultstring
		}
		return outer.ErrorMessage
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
