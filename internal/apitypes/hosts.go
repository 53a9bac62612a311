package apitypes

import "github.com/magnetite-io/magnetite/internal/model"

// HostRootDeviceHints choose the disk an image is written to.
type HostRootDeviceHints = model.RootDeviceHints

// HostEnroll is POST /v1/hosts. bmc_password is write-only: no response
// ever carries it.
type HostEnroll struct {
	Name                           string               `json:"name"`
	BMCAddress                     string               `json:"bmc_address"`
	BMCUsername                    string               `json:"bmc_username"`
	BMCPassword                    string               `json:"bmc_password"`
	DisableCertificateVerification bool                 `json:"disable_certificate_verification,omitempty"`
	BootMACAddress                 string               `json:"boot_mac_address,omitempty"`
	BootMode                       string               `json:"boot_mode,omitempty"`
	RootDeviceHints                *HostRootDeviceHints `json:"root_device_hints,omitempty"`
	Labels                         map[string]string    `json:"labels,omitempty"`
	AutomatedCleaningMode          string               `json:"automated_cleaning_mode,omitempty"`
	ResourceClass                  string               `json:"resource_class,omitempty"`
	TargetState                    string               `json:"target_state,omitempty"`
	// ProjectID assigns the host to a project: with the Metal3 backend it
	// lives in the project's namespace, where that project's clusters (and
	// only theirs) can claim it.
	ProjectID string `json:"project_id,omitempty"`
}

// HostHardware is what inspection found.
type HostHardware = model.HostHardware

// Host is a bare-metal host of the inventory.
type Host struct {
	UUID                     string               `json:"uuid"`
	Name                     string               `json:"name"`
	ProjectID                string               `json:"project_id,omitempty"`
	BMCAddress               string               `json:"bmc_address"`
	BMCUsername              string               `json:"bmc_username"`
	HardwareType             string               `json:"hardware_type"`
	BootMethod               string               `json:"boot_method,omitempty"`
	NeedsProvisioningNetwork bool                 `json:"needs_provisioning_network"`
	BootMACAddress           string               `json:"boot_mac_address"`
	BootMode                 string               `json:"boot_mode"`
	RootDeviceHints          *HostRootDeviceHints `json:"root_device_hints"`
	Labels                   map[string]string    `json:"labels"`
	AutomatedCleaningMode    string               `json:"automated_cleaning_mode"`
	ResourceClass            string               `json:"resource_class"`
	TargetState              string               `json:"target_state"`
	State                    string               `json:"state"`
	ProvisionState           string               `json:"provision_state"`
	TargetProvisionState     string               `json:"target_provision_state"`
	PowerState               string               `json:"power_state"`
	OperationalStatus        string               `json:"operational_status"`
	Detached                 bool                 `json:"detached"`
	DetachedReason           string               `json:"detached_reason"`
	Hardware                 *HostHardware        `json:"hardware"`
	InspectedAt              *string              `json:"inspected_at"`
	ErrorType                string               `json:"error_type"`
	ErrorMessage             string               `json:"error_message"`
	ErrorCount               int                  `json:"error_count"`
	Managed                  bool                 `json:"managed"`
	DeleteRequested          bool                 `json:"delete_requested"`
	Consumer                 string               `json:"consumer"`
	Backend                  string               `json:"backend"`
	CreatedAt                string               `json:"created_at"`
	UpdatedAt                *string              `json:"updated_at"`
	Links                    []Link               `json:"links"`
}

// HostList is GET /v1/hosts.
type HostList struct {
	Hosts []Host `json:"hosts"`
}

// HostPower is POST /v1/hosts/{ident}/actions/power: target on or off,
// mode hard (default) or soft for off.
type HostPower struct {
	Target string `json:"target"`
	Mode   string `json:"mode,omitempty"`
}

// HostReboot is POST /v1/hosts/{ident}/actions/reboot: mode hard (default)
// or soft.
type HostReboot struct {
	Mode string `json:"mode,omitempty"`
}

// HostDetach is POST /v1/hosts/{ident}/actions/detach.
type HostDetach struct {
	Reason string `json:"reason,omitempty"`
}

// HostCleaningMode is POST /v1/hosts/{ident}/actions/cleaning_mode.
type HostCleaningMode struct {
	AutomatedCleaningMode string `json:"automated_cleaning_mode"`
}

// HostOperation is a host action the conductor has not finished within the
// request's wait: a 202 answers {"operation": HostOperation}, and
// GET /v1/hosts/operations/{uuid} shows it until and after it ends. state
// is pending (queued, or waiting for its next attempt after last_error),
// running, succeeded or failed.
type HostOperation struct {
	UUID          string  `json:"uuid"`
	Type          string  `json:"type"`
	Host          string  `json:"host"`
	State         string  `json:"state"`
	Attempts      int     `json:"attempts"`
	LastError     string  `json:"last_error,omitempty"`
	NextAttemptAt *string `json:"next_attempt_at,omitempty"`
	CreatedAt     string  `json:"created_at"`
	UpdatedAt     string  `json:"updated_at"`
	// HostUUID is the host the operation left (when it succeeded and the
	// host still exists).
	HostUUID string `json:"host_uuid,omitempty"`
}

// HostOperationAccepted is a 202's body for a host action still under way.
type HostOperationAccepted struct {
	Operation HostOperation `json:"operation"`
}
