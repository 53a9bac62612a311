package ironic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
)

// hostFromNode is the inventory's view of an Ironic node.
func hostFromNode(n *nodes.Node) *baremetal.Host {
	h := &baremetal.Host{
		ID: n.UUID, Name: n.Name, HardwareType: n.Driver,
		HostSettings: baremetal.HostSettings{ResourceClass: n.ResourceClass}, BackendState: n.ProvisionState,
		BackendTargetState: n.TargetProvisionState, PowerState: powerState(n.PowerState),
		Detached: n.Maintenance, ErrorMessage: n.LastError, CreatedAt: n.CreatedAt,
		InspectedAt: n.InspectionFinishedAt, Hardware: hardwareOf(n.Properties), Consumer: n.InstanceUUID,
	}
	if !n.UpdatedAt.IsZero() {
		u := n.UpdatedAt
		h.UpdatedAt = &u
	}
	h.Deployed = nodes.ProvisionState(n.ProvisionState) == nodes.Active
	h.Free = nodes.ProvisionState(n.ProvisionState) == nodes.Available && !n.Maintenance && n.InstanceUUID == "" &&
		n.AllocationUUID == "" && !n.Retired && !deleteRequested(n)
	if n.Maintenance {
		h.DetachedReason = strings.TrimPrefix(n.MaintenanceReason, detachPrefix)
	}
	for k, v := range n.DriverInfo {
		if s, ok := v.(string); ok && strings.HasSuffix(k, "_username") && h.BMCUsername == "" {
			h.BMCUsername = s
		}
	}
	if n.AutomatedClean != nil {
		h.CleaningMode = baremetal.CleaningDisabled
		if *n.AutomatedClean {
			h.CleaningMode = baremetal.CleaningMetadata
		}
	}
	if m := metaOf(n); m != nil {
		h.Managed = true
		h.BMCAddress, h.BootMACAddress, h.BootMode = m.BMCAddress, m.BootMAC, m.BootMode
		h.RootDeviceHints, h.Labels, h.TargetState = m.RootDeviceHints, m.Labels, m.TargetState
		h.ErrorCount, h.DeleteRequested = m.ErrorCount, m.DeleteRequested
		if h.CleaningMode == "" {
			h.CleaningMode = m.CleaningMode
		}
		if a, err := bmc.Parse(m.BMCAddress); err == nil {
			h.BootMethod, h.NeedsProvisioningNetwork = a.BootMethod, a.NeedsProvisioningNetwork
		}
	}
	if h.Labels == nil {
		h.Labels = map[string]string{}
	}
	h.State, h.ErrorType = stateOf(n, h.DeleteRequested)
	switch {
	case h.ErrorType != "":
		h.OperationalStatus = baremetal.OperationalError
	case n.Maintenance:
		h.OperationalStatus = baremetal.OperationalDetached
	default:
		h.OperationalStatus = baremetal.OperationalOK
	}
	return h
}

func powerState(s string) string {
	switch s {
	case "power on":
		return "on"
	case "power off":
		return "off"
	}
	return "unknown"
}

// hostStates maps Ironic's provision states to the host state and, for a
// failed state, the error type. A state not listed is unknown.
var hostStates = map[nodes.ProvisionState]struct{ state, errType string }{
	nodes.Enroll: {baremetal.StateRegistering, ""}, nodes.Verifying: {baremetal.StateRegistering, ""},
	nodes.Manageable: {baremetal.StateManageable, ""},
	nodes.Inspecting: {baremetal.StateInspecting, ""}, nodes.InspectWait: {baremetal.StateInspecting, ""},
	nodes.InspectFail: {baremetal.StateInspecting, baremetal.ErrorInspection},
	nodes.Cleaning:    {baremetal.StatePreparing, ""}, nodes.CleanWait: {baremetal.StatePreparing, ""}, nodes.CleanHold: {baremetal.StatePreparing, ""},
	nodes.CleanFail: {baremetal.StatePreparing, baremetal.ErrorPreparation},
	nodes.Available: {baremetal.StateAvailable, ""},
	nodes.Deploying: {baremetal.StateProvisioning, ""}, nodes.DeployWait: {baremetal.StateProvisioning, ""},
	nodes.DeployHold: {baremetal.StateProvisioning, ""}, nodes.DeployDone: {baremetal.StateProvisioning, ""},
	nodes.DeployFail: {baremetal.StateProvisioning, baremetal.ErrorProvisioning},
	nodes.Active:     {baremetal.StateProvisioned, ""},
	nodes.Deleting:   {baremetal.StateDeprovisioning, ""}, nodes.Deleted: {baremetal.StateDeprovisioning, ""},
	nodes.Error: {baremetal.StateDeprovisioning, baremetal.ErrorDeprovisioning},
}

// stateOf maps Ironic's provision state to the host state and, for
// failures, the error type: a failed state's, a registration that left an
// error behind, or a power fault.
func stateOf(n *nodes.Node, deleting bool) (state, errType string) {
	hs, ok := hostStates[nodes.ProvisionState(n.ProvisionState)]
	if !ok {
		hs.state = baremetal.StateUnknown
	}
	state, errType = hs.state, hs.errType
	if state == baremetal.StateRegistering && n.LastError != "" {
		errType = baremetal.ErrorRegistration
	}
	if errType == "" && n.Fault != "" {
		errType = baremetal.ErrorPower
	}
	if deleting {
		state = baremetal.StateDeleting
	}
	return state, errType
}

// hardwareOf reads the properties inspection fills in.
func hardwareOf(props map[string]any) *baremetal.HostHardware {
	hw := &baremetal.HostHardware{CPUArch: stringProp(props["cpu_arch"]), CPUCount: intProp(props["cpus"]),
		MemoryMiB: intProp(props["memory_mb"]), LocalDiskGiB: intProp(props["local_gb"])}
	if *hw == (baremetal.HostHardware{}) {
		return nil
	}
	return hw
}

func stringProp(v any) string {
	s, _ := v.(string)
	return s
}

func intProp(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case string:
		n, _ := strconv.Atoi(x)
		return n
	}
	return 0
}

// Reconcile implements Backend: one step for every managed node.
func (b *Backend) Reconcile(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	ns, err := b.listNodes(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for i := range ns {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := b.step(ctx, &ns[i]); err != nil && !errors.Is(err, baremetal.ErrConflict) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stepAndGet advances one node right away, so an API call shows the next
// state without waiting for the periodic pass, and returns the host.
func (b *Backend) stepAndGet(ctx context.Context, uuid string) (*baremetal.Host, error) {
	n, err := b.node(ctx, uuid)
	if err != nil {
		return nil, err
	}
	if err := b.step(ctx, n); err != nil && !errors.Is(err, baremetal.ErrConflict) {
		b.log.WarnContext(ctx, "host step failed; the periodic pass retries", "host", n.Name, "error", err)
	}
	return b.Get(ctx, uuid)
}

// retryDelay spaces automatic retries of a failed BMC verification:
// 30 s doubling per counted error, at most 30 min.
func retryDelay(errorCount int) time.Duration {
	d := 30 * time.Second * time.Duration(math.Pow(2, float64(max(errorCount-1, 0))))
	return min(d, 30*time.Minute)
}

// step moves a managed node one transition towards its target. Locked
// nodes (an Ironic conductor is working on them) are left alone.
func (b *Backend) step(ctx context.Context, n *nodes.Node) error {
	m := metaOf(n)
	if m == nil || n.Reservation != "" {
		return nil
	}
	if err := b.countErrors(ctx, n, m); err != nil {
		return err
	}
	ps := nodes.ProvisionState(n.ProvisionState)
	if m.DeleteRequested {
		return b.stepDelete(ctx, n, ps)
	}
	if n.Maintenance {
		return nil // detached: Magnetite does not act on it
	}
	switch ps {
	case nodes.Enroll:
		if n.LastError == "" || b.now().After(n.ProvisionUpdatedAt.Add(retryDelay(m.ErrorCount))) {
			return b.changeState(ctx, n.UUID, nodes.TargetManage)
		}
	case nodes.Manageable:
		switch {
		case m.InspectRequested:
			return b.inspect(ctx, n)
		case m.TargetState == baremetal.TargetAvailable && n.InspectionFinishedAt == nil:
			return b.changeState(ctx, n.UUID, nodes.TargetInspect)
		case m.TargetState == baremetal.TargetAvailable:
			return b.changeState(ctx, n.UUID, nodes.TargetProvide)
		}
	case nodes.InspectFail:
		if m.InspectRequested {
			return b.inspect(ctx, n)
		}
	case nodes.Available:
		if m.InspectRequested || m.TargetState == baremetal.TargetManageable {
			// Inspection and holding both start from manageable.
			return b.changeState(ctx, n.UUID, nodes.TargetManage)
		}
	}
	return nil
}

// inspect starts a requested inspection. The request is cleared first:
// Ironic refuses every update of a node while it inspects, and a fake or
// quick inspection can still be running when the clearing PATCH arrives,
// which left the request standing and inspected the host a second time.
// If Ironic then refuses to start, the request is put back for the next
// pass.
func (b *Backend) inspect(ctx context.Context, n *nodes.Node) error {
	if err := b.patchMeta(ctx, n, map[string]any{"inspect_requested": false}); err != nil {
		return err
	}
	err := b.changeState(ctx, n.UUID, nodes.TargetInspect)
	if err == nil {
		return nil
	}
	if perr := b.patchMeta(ctx, n, map[string]any{"inspect_requested": true}); perr != nil {
		return errors.Join(err, fmt.Errorf("the inspection request of host %s is lost; request it again: %w", n.Name, perr))
	}
	return err
}

// stepDelete deprovisions (Ironic cleans on the way when automated
// cleaning is on), returns the host to manageable and deletes it. A host
// whose cleaning failed stays: deleting it would lose the only record that
// its disks were not wiped.
func (b *Backend) stepDelete(ctx context.Context, n *nodes.Node, ps nodes.ProvisionState) error {
	if n.Maintenance {
		return b.deleteNode(ctx, n) // Ironic deletes nodes in maintenance in any state
	}
	switch ps {
	case nodes.Manageable, nodes.Enroll, nodes.AdoptFail:
		return b.deleteNode(ctx, n)
	case nodes.Available, nodes.InspectFail:
		return b.changeState(ctx, n.UUID, nodes.TargetManage)
	case nodes.Active, nodes.DeployFail, nodes.Error:
		b.log.InfoContext(ctx, "deprovisioning host before deleting it", "host", n.Name, "node", n.UUID)
		return b.changeState(ctx, n.UUID, nodes.TargetDeleted)
	}
	return nil
}

func (b *Backend) deleteNode(ctx context.Context, n *nodes.Node) error {
	if err := nodes.Delete(ctx, b.client, n.UUID).ExtractErr(); err != nil {
		return b.ironicError(err, "delete host "+n.Name, "")
	}
	b.log.InfoContext(ctx, "host deleted", "host", n.Name, "node", n.UUID)
	return nil
}

// countErrors counts each distinct failure once and resets the count when
// the host reaches a resting state without error, as BareMetalHost does.
func (b *Backend) countErrors(ctx context.Context, n *nodes.Node, m *hostMeta) error {
	if n.LastError != "" {
		fp := n.ProvisionState + "|" + n.ProvisionUpdatedAt.UTC().Format(time.RFC3339Nano) + "|" + n.LastError
		if fp == m.ErrorSeen {
			return nil
		}
		m.ErrorCount++
		m.ErrorSeen = fp
		b.log.WarnContext(ctx, "host error", "host", n.Name, "node", n.UUID, "state", n.ProvisionState, "error", n.LastError, "error_count", m.ErrorCount)
		return b.patchMeta(ctx, n, map[string]any{"error_count": m.ErrorCount, "error_seen": fp})
	}
	switch nodes.ProvisionState(n.ProvisionState) {
	case nodes.Available, nodes.Active, nodes.Manageable:
		if m.ErrorCount > 0 {
			m.ErrorCount, m.ErrorSeen = 0, ""
			return b.patchMeta(ctx, n, map[string]any{"error_count": 0, "error_seen": ""})
		}
	}
	return nil
}
