package inmemory

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/model"
)

// TestMachinesBootInTheConfiguredTime: the simulated machines take the
// realistic default unless [driver] inmemory_boot_time says otherwise, bare
// metal three times a VM, and the node, API server and etcd a fifth each.
func TestMachinesBootInTheConfiguredTime(t *testing.T) {
	for _, tc := range []struct {
		boot          time.Duration
		vm, bm, stage string
	}{
		{0, "10s", "30s", "2s"},
		{time.Second, "1s", "3s", "200ms"},
		{time.Minute, "1m0s", "3m0s", "12s"},
	} {
		ct := newInfrastructure(capi.Options{InMemoryBootTime: tc.boot}, Options{}).ClassTemplates(capi.OSProfile{}, capi.APIVersions{})
		for what, spec := range map[string]map[string]any{
			"control plane": ct.ControlPlaneMachineSpec,
			"vm worker":     ct.WorkerMachineSpecs[model.ServerTypeVM],
			"bm worker":     ct.WorkerMachineSpecs[model.ServerTypeBM],
		} {
			want := map[string]string{"vm": tc.vm, "node": tc.stage, "apiServer": tc.stage, "etcd": tc.stage}
			if what == "bm worker" {
				want["vm"] = tc.bm
			}
			for part, d := range want {
				got, _, _ := unstructured.NestedString(spec, "backend", "inMemory", part, "provisioning", "startupDuration")
				if got != d {
					t.Errorf("boot time %v: %s %s starts in %q, want %q", tc.boot, what, part, got, d)
				}
			}
		}
	}
}
