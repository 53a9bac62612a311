package baremetal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Sentinel errors of the backends; the API maps them to HTTP statuses.
var (
	ErrHostNotFound = errors.New("baremetal: host not found")
	// ErrInvalidHost is a request the backend cannot accept as written.
	ErrInvalidHost = errors.New("baremetal: invalid host")
	// ErrConflict is a request the host's current state does not allow, or
	// a name or MAC address already taken.
	ErrConflict = errors.New("baremetal: conflict")
	// ErrUnavailable means the backend (Ironic, the management cluster)
	// did not answer or answered with a server error.
	ErrUnavailable = errors.New("baremetal: backend unavailable")
	// ErrLocked means the backend is busy with the host (Ironic's
	// NodeLocked): trying again later succeeds.
	ErrLocked = errors.New("baremetal: host locked")
)

// Boot modes, as Metal3 names them.
const (
	BootModeUEFI       = "UEFI"
	BootModeUEFISecure = "UEFISecureBoot"
	BootModeLegacy     = "legacy"
)

// Automated cleaning modes, as Metal3 names them.
const (
	CleaningMetadata = "metadata"
	CleaningDisabled = "disabled"
)

// Target states a host is driven to after enrollment.
const (
	// TargetAvailable: verify, inspect, clean, then offer for deployment.
	TargetAvailable = "available"
	// TargetManageable: verify the BMC and hold the host; an operator
	// inspects or provides it later.
	TargetManageable = "manageable"
)

// Host states, Magnetite's summary of the backend's provisioning state.
const (
	StateRegistering    = "registering"
	StateManageable     = "manageable"
	StateInspecting     = "inspecting"
	StatePreparing      = "preparing"
	StateAvailable      = "available"
	StateProvisioning   = "provisioning"
	StateProvisioned    = "provisioned"
	StateDeprovisioning = "deprovisioning"
	StateDeleting       = "deleting"
	// StateUnmanaged: Metal3 knows the host but has no BMC details to
	// manage it with.
	StateUnmanaged = "unmanaged"
	StateUnknown   = "unknown"
)

// Operational status and error types follow BareMetalHost's status.
const (
	OperationalOK       = "OK"
	OperationalError    = "error"
	OperationalDetached = "detached"

	ErrorRegistration   = "registration error"
	ErrorInspection     = "inspection error"
	ErrorPreparation    = "preparation error"
	ErrorProvisioning   = "provisioning error"
	ErrorDeprovisioning = "deprovisioning error"
	ErrorPower          = "power management error"
)

// RootDeviceHints choose the disk the image is written to (model's type,
// which the API shows as it is).
type RootDeviceHints = model.RootDeviceHints

// HostSpec is what an operator enrolls.
type HostSpec struct {
	Name        string
	BMCAddress  string
	Credentials bmc.Credentials
	HostSettings
	// ProjectID is the project whose clusters may claim the host (Metal3);
	// empty leaves it in the shared inventory.
	ProjectID string
}

// HostSettings are what an operator chooses for a host beside its BMC: an
// enrollment asks for them and the inventory shows them back.
type HostSettings struct {
	// BootMACAddress is the MAC of the NIC the host boots from (not the
	// BMC's).
	BootMACAddress  string
	BootMode        string
	RootDeviceHints *RootDeviceHints
	// Labels select hosts for node groups.
	Labels        map[string]string
	CleaningMode  string
	ResourceClass string
	// TargetState is TargetAvailable (default) or TargetManageable.
	TargetState string
}

// HostHardware summarises what inspection found (model's type).
type HostHardware = model.HostHardware

// Host is a host as the inventory shows it. It never carries a password.
type Host struct {
	ID   string
	Name string
	// ProjectID is the project the host is assigned to, if any.
	ProjectID string
	// Namespace is where the backend keeps the host (Metal3's BareMetalHost
	// namespace); empty for Ironic.
	Namespace    string
	BMCAddress   string
	BMCUsername  string
	HardwareType string
	BootMethod   string
	// NeedsProvisioningNetwork is true for network-booted hosts.
	NeedsProvisioningNetwork bool
	HostSettings

	State string
	// BackendState is the backend's own state name (Ironic's
	// provision_state), for operators who know Ironic.
	BackendState       string
	BackendTargetState string
	PowerState         string // on, off or unknown
	OperationalStatus  string
	Detached           bool
	DetachedReason     string
	Hardware           *HostHardware
	InspectedAt        *time.Time
	ErrorType          string
	ErrorMessage       string
	ErrorCount         int
	// Managed is false for backend nodes Magnetite did not enroll; they are
	// shown and counted but not driven.
	Managed         bool
	DeleteRequested bool
	// Consumer is what deployed onto the host (Metal3's consumerRef, e.g.
	// Metal3Machine ns/name; Ironic's instance UUID), empty when free.
	Consumer string
	// Free and Deployed are how the backend counts the host for capacity,
	// by its own rules: a free host can take a deployment now, a deployed
	// one carries one. The mirror keeps them, so capacity is counted from
	// it without asking the backend.
	Free      bool
	Deployed  bool
	CreatedAt time.Time
	UpdatedAt *time.Time
}

// PowerAction is a power or reboot request.
type PowerAction string

// Power actions.
const (
	PowerOn      PowerAction = "on"
	PowerOff     PowerAction = "off"
	PowerSoftOff PowerAction = "soft-off"
	RebootHard   PowerAction = "reboot-hard"
	RebootSoft   PowerAction = "reboot-soft"
)

// Capacity is what a resource class offers.
type Capacity struct {
	ResourceClass string `json:"resource_class"`
	// Free hosts can take a deployment now: available, not in maintenance,
	// not claimed by an instance.
	Free int `json:"free"`
	// Total is every host of the class, whatever its state.
	Total         int `json:"total"`
	Deployed      int `json:"deployed"`
	InMaintenance int `json:"in_maintenance"`
}

// Count adds up the capacity of the hosts match accepts.
func Count(hosts []*Host, match func(*Host) bool) Capacity {
	var c Capacity
	for _, h := range hosts {
		if !match(h) {
			continue
		}
		c.Total++
		if h.Detached {
			c.InMaintenance++
		}
		if h.Deployed {
			c.Deployed++
		}
		if h.Free {
			c.Free++
		}
	}
	return c
}

// OfResourceClass matches hosts of a resource class, named either way
// ("baremetal-gold" or CUSTOM_BAREMETAL_GOLD).
func OfResourceClass(rc string) func(*Host) bool {
	want := NormalizeResourceClass(rc)
	return func(h *Host) bool { return h.ResourceClass != "" && NormalizeResourceClass(h.ResourceClass) == want }
}

// DeleteOutcome says whether a delete finished or is under way.
type DeleteOutcome int

// Delete outcomes.
const (
	Deleted DeleteOutcome = iota
	// DeleteStarted: the host is being deprovisioned and cleaned first.
	DeleteStarted
)

// Backend manages hosts in Ironic or, through BareMetalHost objects, in
// Metal3. Every call that changes a host returns once the request is
// accepted; the host's state shows the progress.
type Backend interface {
	// Name is the backend's config name, e.g. "ironic".
	Name() string
	// Enroll registers a host. The spec must have passed ValidateSpec.
	Enroll(ctx context.Context, spec HostSpec) (*Host, error)
	List(ctx context.Context) ([]*Host, error)
	// Get finds a host by id or name.
	Get(ctx context.Context, ident string) (*Host, error)
	Power(ctx context.Context, ident string, action PowerAction) (*Host, error)
	// Inspect re-inspects a host; an available host is taken out of
	// service for it and returned afterwards.
	Inspect(ctx context.Context, ident string) (*Host, error)
	// Provide offers a held or failed host for deployment again.
	Provide(ctx context.Context, ident string) (*Host, error)
	// Detach stops managing the host without deleting it (Ironic's
	// maintenance); Attach resumes.
	Detach(ctx context.Context, ident, reason string) (*Host, error)
	Attach(ctx context.Context, ident string) (*Host, error)
	SetCleaningMode(ctx context.Context, ident, mode string) (*Host, error)
	// Delete removes a host after deprovisioning and cleaning it as its
	// cleaning mode says; force skips both.
	Delete(ctx context.Context, ident string, force bool) (DeleteOutcome, *Host, error)
	// Capacity counts the hosts of a resource class.
	Capacity(ctx context.Context, resourceClass string) (Capacity, error)
	// Reconcile advances every managed host one step towards its target
	// and finishes pending deletes. It is called periodically and after
	// each change.
	Reconcile(ctx context.Context) error
}

// SelectorCapacity is a backend that picks hosts by labels (Metal3) among
// those a project's clusters may claim.
type SelectorCapacity interface {
	CapacityMatching(ctx context.Context, projectID string, selector map[string]string) (Capacity, error)
}

var (
	hostName        = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._~-]{0,61}[A-Za-z0-9])?$`)
	labelKey        = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?/)?[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)
	labelValue      = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$`)
	resourceClassRe = regexp.MustCompile(`^[A-Za-z0-9._-]{1,80}$`)
	hctlRe          = regexp.MustCompile(`^\d+:\d+:\d+:\d+$`)
)

// ValidateSpec checks a spec and its BMC address before any backend is
// called, filling defaults (an empty defaultResourceClass leaves the
// resource class to the backend). The error names the field and what it
// accepts.
func ValidateSpec(spec *HostSpec, defaultResourceClass string) (*bmc.Address, error) {
	invalid := func(format string, args ...any) error {
		return fault.New(ErrInvalidHost, format, args...)
	}
	if !hostName.MatchString(spec.Name) {
		return nil, invalid("name %q must be 1 to 63 letters, digits, '.', '_', '~' or '-', starting and ending with a letter or digit", spec.Name)
	}
	addr, err := bmc.Parse(spec.BMCAddress)
	if err != nil {
		return nil, err
	}
	if spec.Credentials.Username == "" || spec.Credentials.Password == "" {
		if addr.Scheme != "libvirt" {
			return nil, invalid("bmc_username and bmc_password are required for %s BMCs", addr.Scheme)
		}
	}
	if spec.BootMACAddress != "" {
		mac, err := net.ParseMAC(spec.BootMACAddress)
		if err != nil || len(mac) != 6 {
			return nil, invalid("boot_mac_address %q is not a MAC address such as 52:54:00:12:34:56", spec.BootMACAddress)
		}
		spec.BootMACAddress = mac.String()
	} else if addr.NeedsBootMAC {
		return nil, invalid("a %s BMC needs boot_mac_address: Ironic cannot discover the boot NIC of such hosts", addr.Scheme)
	}
	switch spec.BootMode {
	case "":
		spec.BootMode = BootModeUEFI
	case BootModeUEFI, BootModeLegacy:
	case BootModeUEFISecure:
		if !addr.SupportsSecureBoot {
			return nil, invalid("boot_mode UEFISecureBoot is not supported by %s BMCs; use UEFI or a Redfish, iDRAC, iLO or iRMC address", addr.Scheme)
		}
	default:
		return nil, invalid("boot_mode %q must be UEFI, UEFISecureBoot or legacy", spec.BootMode)
	}
	if err := choice("automated_cleaning_mode", &spec.CleaningMode, cleaningModes...); err != nil {
		return nil, err
	}
	if err := choice("target_state", &spec.TargetState, TargetAvailable, TargetManageable); err != nil {
		return nil, err
	}
	if spec.ResourceClass == "" {
		spec.ResourceClass = defaultResourceClass
	}
	if spec.ResourceClass != "" && !resourceClassRe.MatchString(spec.ResourceClass) {
		return nil, invalid("resource_class %q must be 1 to 80 letters, digits, '.', '_' or '-'", spec.ResourceClass)
	}
	if err := validateLabels(spec.Labels); err != nil {
		return nil, invalid("%s", err)
	}
	if err := validateHints(spec.RootDeviceHints); err != nil {
		return nil, invalid("%s", err)
	}
	return addr, nil
}

// ValidResourceClass reports whether rc is an Ironic resource class name.
func ValidResourceClass(rc string) bool { return resourceClassRe.MatchString(rc) }

// cleaningModes are the automated cleaning modes, the default first.
var cleaningModes = []string{CleaningMetadata, CleaningDisabled}

// ValidateCleaningMode checks an automated cleaning mode.
func ValidateCleaningMode(mode string) error {
	return oneOf("automated_cleaning_mode", mode, cleaningModes...)
}

// choice sets an empty *v to allowed[0], the default, and refuses a value
// allowed lacks (see oneOf).
func choice(field string, v *string, allowed ...string) error {
	if *v == "" {
		*v = allowed[0]
	}
	return oneOf(field, *v, allowed...)
}

// oneOf refuses v unless allowed holds it, naming field and its values.
func oneOf(field, v string, allowed ...string) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	last := len(allowed) - 1
	return fault.New(ErrInvalidHost, "%s %q must be %s or %s", field, v, strings.Join(allowed[:last], ", "), allowed[last])
}

func validateLabels(labels map[string]string) error {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !labelKey.MatchString(k) {
			return fmt.Errorf("label key %q is not a Kubernetes label key (optional DNS prefix/, then up to 63 letters, digits, '-', '_' or '.')", k)
		}
		if !labelValue.MatchString(labels[k]) {
			return fmt.Errorf("label %s=%q: values are up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", k, labels[k])
		}
	}
	return nil
}

func validateHints(h *RootDeviceHints) error {
	if h == nil {
		return nil
	}
	if h.DeviceName != "" && !strings.HasPrefix(h.DeviceName, "/dev/") {
		return fmt.Errorf("root_device_hints.device_name %q must be a path under /dev/", h.DeviceName)
	}
	if h.HCTL != "" && !hctlRe.MatchString(h.HCTL) {
		return fmt.Errorf("root_device_hints.hctl %q must look like 0:0:0:0", h.HCTL)
	}
	if h.MinSizeGigabytes < 0 {
		return fmt.Errorf("root_device_hints.min_size_gigabytes must not be negative")
	}
	return nil
}

// NormalizeResourceClass is the placement form of an Ironic resource class,
// as Nova flavors name it: "baremetal-gold" is CUSTOM_BAREMETAL_GOLD.
func NormalizeResourceClass(rc string) string {
	rc = strings.TrimPrefix(strings.ToUpper(rc), "CUSTOM_")
	var b strings.Builder
	b.WriteString("CUSTOM_")
	for _, r := range rc {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// MatchesLabels reports whether a host carries every selector label.
func (h *Host) MatchesLabels(selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := h.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
