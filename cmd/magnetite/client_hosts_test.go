package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/config"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"
)

// hostsCLI runs `magnetite host ...` against one serve and keeps every
// output, for the check that no BMC password is ever printed.
type hostsCLI struct {
	t        *testing.T
	endpoint string
	outputs  []string
}

// args completes `host ...` arguments: the serve, and a brisk poll for the
// commands that follow operations (all but show and list).
func (h *hostsCLI) args(args []string) []string {
	args = append(args, "--os-endpoint", h.endpoint, "--os-token", "test-token")
	if args[1] != "show" && args[1] != "list" {
		args = append(args, "--poll-interval", "100ms")
	}
	return args
}

// run runs a host command in this process.
func (h *hostsCLI) run(args ...string) clientRun {
	h.t.Helper()
	var out, errb lockedBuffer
	root := rootCommand()
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(h.args(append([]string{"host"}, args...)))
	err := root.ExecuteContext(context.Background())
	r := clientRun{out.String(), errb.String(), err}
	h.outputs = append(h.outputs, r.stdout, r.stderr)
	return r
}

func (h *hostsCLI) must(args ...string) string {
	h.t.Helper()
	r := h.run(args...)
	if r.err != nil {
		h.t.Fatalf("magnetite host %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r.stdout
}

// host shows a host as JSON.
func (h *hostsCLI) host(name string) apitypes.Host {
	h.t.Helper()
	var host apitypes.Host
	if out := h.must("show", name, "-o", "json"); json.Unmarshal([]byte(out), &host) != nil {
		h.t.Fatalf("host show -o json printed no host:\n%s", out)
	}
	return host
}

// waitHost polls host show until cond holds.
func (h *hostsCLI) waitHost(name, what string, cond func(apitypes.Host) bool) {
	h.t.Helper()
	testenv.WaitFor(h.t, "host "+name+" to be "+what, 3*time.Minute, func() (bool, string) {
		host := h.host(name)
		return cond(host), fmt.Sprintf("state %s, power %s, error %q", host.State, host.PowerState, host.ErrorMessage)
	})
}

// exitStatus runs a host command as its own process (main, as a user runs
// it) and returns its exit status and standard error.
func (h *hostsCLI) exitStatus(args ...string) (int, string) {
	h.t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperMagnetiteProcess$", "--"}, h.args(append([]string{"host"}, args...))...)...)
	cmd.Env = append(os.Environ(), "MAGNETITE_TEST_HELPER=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	h.outputs = append(h.outputs, string(out), stderr.String())
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		h.t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// TestHostCommandsAgainstIronic drives the host inventory with `magnetite
// host` through a real serve whose backend is a real Ironic, the host's BMC
// OpenIPMI's simulator. The serve answers every change with its operation
// at once ([baremetal] action_wait = 1ms), so the commands follow
// operations to their end.
func TestHostCommandsAgainstIronic(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("needs a real Ironic (Debian python3-ironic) and ipmi_sim; runs in the full suite only")
	}
	const password = testironic.BMCPassword
	irc := testironic.StartIronic(t)
	sim := testironic.StartIPMISim(t, "admin", password)
	dir := t.TempDir()
	cfg, err := config.Load("", "", []string{
		"MAGNETITE_DEFAULT_STATE_DIR=" + dir, "MAGNETITE_API_LISTEN=127.0.0.1:0", "MAGNETITE_AUTH_NOAUTH_ROLES=admin",
		"MAGNETITE_LOG_LEVEL=error", "MAGNETITE_BAREMETAL_BACKEND=ironic", "MAGNETITE_BAREMETAL_IRONIC_ENDPOINT=" + irc.URL,
		// Ironic 2023.1 has no agent inspect interface: its default then.
		"MAGNETITE_BAREMETAL_IRONIC_INSPECT_INTERFACE=",
		"MAGNETITE_BAREMETAL_RECONCILE_INTERVAL=1s", "MAGNETITE_BAREMETAL_ACTION_WAIT=1ms",
	})
	if err != nil {
		t.Fatal(err)
	}
	log, err := newLogger(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serveUntil(t, cfg, log)
	h := &hostsCLI{t: t, endpoint: "http://" + addr + "/v1"}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Ironic log:\n%s", irc.Log())
		}
	})
	passwordFile := filepath.Join(dir, "bmc-password")
	if err := os.WriteFile(passwordFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("enroll follows the operation and prints the host", func(t *testing.T) {
		h.t = t
		out := h.must("enroll", "ipmi-0", "--bmc-address", sim.Address(), "--bmc-username", "admin", "--bmc-password-file", passwordFile,
			"--boot-mac-address", "52:54:00:12:34:56", "--labels", "rack=r1", "--target-state", "manageable", "-o", "json")
		var host apitypes.Host
		if err := json.Unmarshal([]byte(out), &host); err != nil || host.Name != "ipmi-0" || host.BMCAddress != sim.Address() ||
			host.HardwareType != "ipmi" || host.Labels["rack"] != "r1" || host.UUID == "" {
			t.Fatalf("enroll printed %v:\n%s", err, out)
		}
		// Verification reads the power state through the simulator.
		h.waitHost("ipmi-0", "manageable", func(host apitypes.Host) bool { return host.State == "manageable" && host.PowerState == "off" })
	})

	t.Run("list filters by label, show prints the host", func(t *testing.T) {
		h.t = t
		rows := listed(t, "table", h.must("list", "--label", "rack=r1"), "uuid", "name", "state", "power_state")
		if len(rows) != 1 || rows[0]["name"] != "ipmi-0" || rows[0]["state"] != "manageable" || rows[0]["power_state"] != "off" {
			t.Errorf("list --label rack=r1: %v", rows)
		}
		if rows := listed(t, "table", h.must("list", "--label", "rack=r9"), "uuid", "name"); len(rows) != 0 {
			t.Errorf("list --label rack=r9: %v", rows)
		}
		fields := shown(t, "table", h.must("show", "ipmi-0"))
		if fields["name"] != "ipmi-0" || fields["bmc_username"] != "admin" || fields["backend"] != "ironic" {
			t.Errorf("show: %v", fields)
		}
		if r := h.run("show", "no-such-host"); r.err == nil || !strings.Contains(r.err.Error(), "Host no-such-host could not be found") {
			t.Errorf("show of a missing host: %v", r.err)
		}
	})

	t.Run("power on and off reach the BMC", func(t *testing.T) {
		h.t = t
		if fields := shown(t, "table", h.must("power", "ipmi-0", "on")); fields["name"] != "ipmi-0" {
			t.Errorf("power on printed %v", fields)
		}
		h.waitHost("ipmi-0", "on", func(host apitypes.Host) bool { return host.PowerState == "on" })
		if !sim.PowerOn() {
			t.Errorf("the host shows power on, the simulated chassis is off")
		}
		h.must("power", "ipmi-0", "off")
		h.waitHost("ipmi-0", "off", func(host apitypes.Host) bool { return host.PowerState == "off" })
		if sim.PowerOn() {
			t.Errorf("the host shows power off, the simulated chassis is on")
		}
		if r := h.run("power", "ipmi-0", "sideways"); r.err == nil || !strings.Contains(r.err.Error(), "choose on or off") {
			t.Errorf("power sideways: %v", r.err)
		}
	})

	t.Run("a failed operation exits non-zero with the backend's reason", func(t *testing.T) {
		h.t = t
		var host apitypes.Host
		if err := json.Unmarshal([]byte(h.must("detach", "ipmi-0", "--reason", "moving racks", "-o", "json")), &host); err != nil ||
			!host.Detached || host.DetachedReason != "moving racks" {
			t.Fatalf("detach printed %+v (%v)", host, err)
		}
		status, stderr := h.exitStatus("inspect", "ipmi-0")
		if status != 1 || !strings.Contains(stderr, "magnetite: inspect of host ipmi-0 failed: ") || !strings.Contains(stderr, "is detached; attach it first") {
			t.Errorf("inspect of a detached host: exit status %d, stderr %q", status, stderr)
		}
		if host := h.host("ipmi-0"); !host.Detached {
			t.Errorf("the failed inspect changed the host: %+v", host)
		}
		h.must("attach", "ipmi-0")
		if host := h.host("ipmi-0"); host.Detached {
			t.Errorf("attach left the host detached: %+v", host)
		}
	})

	t.Run("--no-wait prints the operation; host operation --wait follows it", func(t *testing.T) {
		h.t = t
		var op apitypes.HostOperation
		out := h.must("reboot", "ipmi-0", "--no-wait", "-o", "json")
		if err := json.Unmarshal([]byte(out), &op); err != nil || op.UUID == "" || op.Type != "host_power" || op.Host != "ipmi-0" {
			t.Fatalf("reboot --no-wait printed %v:\n%s", err, out)
		}
		if fields := shown(t, "table", h.must("operation", op.UUID)); fields["uuid"] != op.UUID || fields["host"] != "ipmi-0" {
			t.Errorf("operation printed %v", fields)
		}
		if fields := shown(t, "yaml", h.must("operation", op.UUID, "--wait", "-o", "yaml")); fields["name"] != "ipmi-0" {
			t.Errorf("operation --wait printed %v", fields)
		}
		h.waitHost("ipmi-0", "on after the reboot", func(host apitypes.Host) bool { return host.PowerState == "on" })
		if !sim.PowerOn() {
			t.Errorf("the rebooted host's simulated chassis is off")
		}
	})

	t.Run("delete removes the host", func(t *testing.T) {
		h.t = t
		out := h.must("delete", "ipmi-0")
		if out != "Host ipmi-0 deleted.\n" {
			// A host Ironic was still busy with is shown deleting and
			// removed by the periodic pass.
			if fields := shown(t, "table", out); fields["state"] != "deleting" {
				t.Errorf("delete printed:\n%s", out)
			}
		}
		testenv.WaitFor(t, "the deleted host to be gone", 3*time.Minute, func() (bool, string) {
			r := h.run("show", "ipmi-0")
			return r.err != nil && strings.Contains(r.err.Error(), "could not be found"), fmt.Sprint(r.err, r.stdout)
		})
		if rows := listed(t, "table", h.must("list"), "uuid", "name"); len(rows) != 0 {
			t.Errorf("list after delete: %v", rows)
		}
	})

	t.Run("no output carries the BMC password", func(t *testing.T) {
		for _, out := range h.outputs {
			if strings.Contains(out, password) {
				t.Errorf("an output carries the BMC password:\n%s", out)
			}
		}
	})
}
