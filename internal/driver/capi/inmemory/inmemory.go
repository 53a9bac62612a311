// Package inmemory renders the infrastructure of Magnetite clusters with
// the in-memory backend of Cluster API's development provider (CAPD's
// DevCluster and DevMachine kinds): machines, nodes, etcd and API servers
// are simulated inside the provider, so Magnetite runs end to end without a
// cloud. Everything but the infrastructure kinds is shared with the real
// providers.
package inmemory

import (
	"time"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/kinds"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Infrastructure is CAPD's in-memory backend.
type Infrastructure struct {
	opts Options
	// bootTime is how long a simulated virtual machine takes to boot.
	bootTime time.Duration
}

// Options are the in-memory infrastructure's own.
type Options struct {
	// Addons gives clusters the addons a cloud's clusters get: rendered
	// from the conductor's chart source and written, with their
	// ClusterResourceSet, to the management cluster, where they can be
	// read and tested without a cloud ([conductor] inmemory_addons). The
	// simulated workload API server serves only a few core kinds, so the
	// ClusterResourceSet cannot apply them there.
	Addons bool
}

// DefaultBootTime is how long a simulated virtual machine boots when
// [driver] inmemory_boot_time is not set: long enough that a demo shows
// clusters building as a cloud's do, and that the conductor's waits see
// the order of events a real cloud gives.
const DefaultBootTime = 10 * time.Second

// New returns the in-memory Cluster API driver ("capi-inmemory"). Register
// it with driver.Registry.RegisterExplicit: only templates that name it in
// their driver field should get simulated machines. Its machines boot in
// opts.InMemoryBootTime (DefaultBootTime when zero).
func New(opts capi.Options, m Options) *capi.Driver {
	return capi.New(newInfrastructure(opts, m), opts)
}

func newInfrastructure(opts capi.Options, m Options) Infrastructure {
	boot := opts.InMemoryBootTime
	if boot <= 0 {
		boot = DefaultBootTime
	}
	return Infrastructure{opts: m, bootTime: boot}
}

func (Infrastructure) Name() string { return "inmemory" }

// Kinds are CAPD's DevCluster and DevMachine kinds and their templates.
func (Infrastructure) Kinds() []kinds.Kind { return capi.ContractKinds("Dev") }

// NeedsCloud is false: flavors and images are used when the facts have
// them (to tell bare metal from VMs) and ignored otherwise.
func (Infrastructure) NeedsCloud() bool                    { return false }
func (i Infrastructure) Addons() bool                      { return i.opts.Addons }
func (Infrastructure) Validate(*capi.Plan) []string        { return nil }
func (Infrastructure) Variables() []capi.Variable          { return nil }
func (Infrastructure) Patches(capi.ClassRefs) []capi.Patch { return nil }

func (Infrastructure) ClusterVariables(*capi.Plan) map[string]any              { return nil }
func (Infrastructure) MachineVariables(*capi.Plan, *capi.Group) map[string]any { return nil }

// provisioning simulates a machine's start: the machine boots in vm, then
// its node, API server and etcd each take a fifth of a virtual machine's
// boot (2s of the default 10s).
func (i Infrastructure) provisioning(vm time.Duration) map[string]any {
	step := func(d time.Duration) map[string]any {
		return map[string]any{"provisioning": map[string]any{"startupDuration": d.String(), "startupJitter": "0.2"}}
	}
	part := step(i.bootTime / 5)
	return map[string]any{"backend": map[string]any{"inMemory": map[string]any{
		"vm": step(vm), "node": part, "apiServer": part, "etcd": part,
	}}}
}

// ClassTemplates: bare-metal machines take three times as long as virtual
// ones, as a physical boot does, so timeouts see realistic ordering.
func (i Infrastructure) ClassTemplates(capi.OSProfile, capi.APIVersions) capi.ClassTemplates {
	return capi.ClassTemplates{
		ClusterKind:             "DevClusterTemplate",
		ClusterSpec:             map[string]any{"backend": map[string]any{"inMemory": map[string]any{}}},
		MachineKind:             "DevMachineTemplate",
		ControlPlaneMachineSpec: i.provisioning(i.bootTime),
		WorkerMachineSpecs: map[model.ServerType]map[string]any{
			model.ServerTypeVM: i.provisioning(i.bootTime),
			model.ServerTypeBM: i.provisioning(3 * i.bootTime),
		},
	}
}

// NodeRegistration: the simulated kubelet has no disk to run out of.
func (Infrastructure) NodeRegistration(*capi.Plan, *capi.Group) capi.NodeRegistration {
	return capi.NodeRegistration{
		CRISocket: "unix:///var/run/containerd/containerd.sock",
		KubeletExtraArg: [][2]string{
			{"eviction-hard", "nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%"},
		},
	}
}

func (Infrastructure) PreKubeadmCommands(capi.OSProfile) []string { return nil }
func (Infrastructure) IgnitionConfig(capi.OSProfile) string       { return "" }
func (Infrastructure) CloudControllerManager() bool               { return false }
func (Infrastructure) Secrets(*capi.Plan) []driver.SecretRef      { return nil }
