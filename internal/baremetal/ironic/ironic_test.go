package ironic_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
	"github.com/magnetite-io/magnetite/internal/baremetal/ironic"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"
)

// bmcPassword must never appear in a host or a log line.
const bmcPassword = testironic.BMCPassword

// backendFixture is the Ironic backend over a real Ironic, stepped by its
// periodic pass as the conductor steps it.
type backendFixture struct {
	t    *testing.T
	b    *ironic.Backend
	logs *testironic.LogBuffer
	// seen keeps every host the backend returned, for the password check.
	seen []string
}

func (f *backendFixture) keep(h *baremetal.Host) *baremetal.Host {
	out, _ := json.Marshal(h)
	f.seen = append(f.seen, string(out))
	return h
}

func (f *backendFixture) enroll(name, address, password string, mac, target string) *baremetal.Host {
	f.t.Helper()
	spec := baremetal.HostSpec{Name: name, BMCAddress: address,
		HostSettings: baremetal.HostSettings{BootMACAddress: mac, TargetState: target},
		Credentials:  bmc.Credentials{Username: "admin", Password: password}}
	if _, err := baremetal.ValidateSpec(&spec, ""); err != nil {
		f.t.Fatal(err)
	}
	h, err := f.b.Enroll(context.Background(), spec)
	if err != nil {
		f.t.Fatalf("enroll %s: %v", name, err)
	}
	return f.keep(h)
}

// waitHost runs passes until the host satisfies cond.
func (f *backendFixture) waitHost(ident, what string, cond func(*baremetal.Host) bool) *baremetal.Host {
	f.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if err := f.b.Reconcile(ctx); err != nil {
			f.t.Logf("pass: %v", err)
		}
		h, err := f.b.Get(ctx, ident)
		if err != nil {
			f.t.Fatalf("host %s: %v", ident, err)
		}
		if cond(f.keep(h)) {
			return h
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("host %s never became %s: %+v", ident, what, h)
		}
		time.Sleep(250 * time.Millisecond) // the pass interval of the API tests
	}
}

// remove deletes a host and runs passes until it is gone.
func (f *backendFixture) remove(ident string) {
	f.t.Helper()
	ctx := context.Background()
	if _, _, err := f.b.Delete(ctx, ident, false); err != nil {
		f.t.Fatalf("delete %s: %v", ident, err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if err := f.b.Reconcile(ctx); err != nil {
			f.t.Logf("pass: %v", err)
		}
		if _, err := f.b.Get(ctx, ident); errors.Is(err, baremetal.ErrHostNotFound) {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("host %s was never removed", ident)
		}
		time.Sleep(250 * time.Millisecond) // the pass interval of the API tests
	}
}

func (f *backendFixture) assertNoPassword(password string) {
	f.t.Helper()
	for _, s := range append(f.seen, f.logs.String()) {
		if strings.Contains(s, password) {
			f.t.Fatalf("the BMC password leaked: %s", s)
		}
	}
}

// newBackendFixture is a backend of the given configuration over irc.
func newBackendFixture(t *testing.T, irc *testironic.Ironic, cfg ironic.Config) *backendFixture {
	t.Helper()
	logs := &testironic.LogBuffer{}
	cfg.Endpoint, cfg.Log = irc.URL, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := ironic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &backendFixture{t: t, b: b, logs: logs}
}

// TestIronicBackendAgainstRealIronic drives the backend against one real
// Ironic from Debian's packages.
func TestIronicBackendAgainstRealIronic(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real Ironic and ipmi_sim (Debian python3-ironic, openipmi); runs in the full suite only")
	}
	irc := testironic.StartIronic(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Ironic log:\n%s", irc.Log())
		}
	})
	sc, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: irc.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	sc.Microversion = ironic.DefaultAPIVersion
	t.Run("IPMI power reaches the simulated chassis", func(t *testing.T) { testIPMIPower(t, irc, sc) })
	t.Run("capacity follows hosts as they become available and are deployed", func(t *testing.T) { testCapacity(t, irc, sc) })
}

// testIPMIPower enrolls a host whose BMC is OpenIPMI's simulator: the node
// gets the IPMI interfaces, power actions reach the simulated chassis, and
// wrong credentials show as a registration error on the host.
func testIPMIPower(t *testing.T, irc *testironic.Ironic, sc *gophercloud.ServiceClient) {
	sim := testironic.StartIPMISim(t, "admin", bmcPassword)
	// Ironic 2023.1 has no agent inspect interface: leave inspection to its
	// default (no-inspect here).
	f := newBackendFixture(t, irc, ironic.Config{InspectInterface: ""})
	b, ctx := f.b, context.Background()

	h := f.enroll("ipmi-0", sim.Address(), bmcPassword, "52:54:00:12:34:56", baremetal.TargetManageable)
	if h.HardwareType != "ipmi" {
		t.Fatalf("hardware type %q", h.HardwareType)
	}
	n, err := nodes.Get(ctx, sc, h.ID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if n.BootInterface != "ipxe" || n.PowerInterface != "ipmitool" || n.ManagementInterface != "ipmitool" || n.DeployInterface != "direct" ||
		n.DriverInfo["ipmi_cipher_suite"] != float64(3) || n.DriverInfo["ipmi_port"] != float64(sim.Port) {
		t.Errorf("node interfaces %s/%s/%s/%s, driver_info %v", n.BootInterface, n.PowerInterface, n.ManagementInterface, n.DeployInterface, n.DriverInfo)
	}
	// Verification reads the power state through the simulator.
	f.waitHost("ipmi-0", "manageable", func(h *baremetal.Host) bool {
		return h.State == baremetal.StateManageable && h.PowerState == "off"
	})

	start := time.Now()
	if _, err := b.Power(ctx, "ipmi-0", baremetal.PowerOn); err != nil {
		t.Fatal(err)
	}
	f.waitHost("ipmi-0", "powered on", func(h *baremetal.Host) bool { return h.PowerState == "on" })
	if !sim.PowerOn() {
		t.Errorf("Ironic reports power on, the simulated chassis is off")
	}
	on := time.Since(start)
	start = time.Now()
	if _, err := b.Power(ctx, "ipmi-0", baremetal.PowerOff); err != nil {
		t.Fatal(err)
	}
	f.waitHost("ipmi-0", "powered off", func(h *baremetal.Host) bool { return h.PowerState == "off" })
	if sim.PowerOn() {
		t.Errorf("Ironic reports power off, the simulated chassis is on")
	}
	t.Logf("IPMI power on %s, off %s", on.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// Wrong credentials: verification fails and the host shows a
	// registration error with its count.
	f.enroll("ipmi-bad", sim.Address(), "not-the-password", "", "")
	bad := f.waitHost("ipmi-bad", "a registration error", func(h *baremetal.Host) bool { return h.ErrorCount >= 1 })
	if bad.ErrorType != baremetal.ErrorRegistration || bad.OperationalStatus != baremetal.OperationalError || bad.ErrorMessage == "" ||
		bad.State != baremetal.StateRegistering {
		t.Errorf("host with wrong credentials = %+v", bad)
	}
	f.remove("ipmi-bad")
	f.remove("ipmi-0")
	f.assertNoPassword(bmcPassword)
	f.assertNoPassword("not-the-password")
}

// capacityOf counts rc after a pass.
func (f *backendFixture) capacityOf(rc string) baremetal.Capacity {
	f.t.Helper()
	ctx := context.Background()
	if err := f.b.Reconcile(ctx); err != nil {
		f.t.Logf("pass: %v", err)
	}
	c, err := f.b.Capacity(ctx, rc)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// waitCapacity runs passes until the free count of rc is want.
func (f *backendFixture) waitCapacity(rc string, want int) baremetal.Capacity {
	f.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		c := f.capacityOf(rc)
		if c.Free == want {
			return c
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("capacity of %s never reached %d free: %+v", rc, want, c)
		}
		time.Sleep(250 * time.Millisecond) // the pass interval of the API tests
	}
}

// testCapacity counts a resource class's hosts as they are enrolled, made
// available, deployed (as Nova deploys them), detached and attached.
func testCapacity(t *testing.T, irc *testironic.Ironic, sc *gophercloud.ServiceClient) {
	f := newBackendFixture(t, irc, ironic.Config{FakeHardware: true})
	ctx := context.Background()
	const rc = "CUSTOM_BAREMETAL_GOLD" // the class as a flavor names it
	gold := func(name, address, target string) {
		spec := baremetal.HostSpec{Name: name, BMCAddress: address,
			HostSettings: baremetal.HostSettings{TargetState: target, ResourceClass: "baremetal-gold"},
			Credentials:  bmc.Credentials{Username: "admin", Password: bmcPassword}}
		if _, err := baremetal.ValidateSpec(&spec, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := f.b.Enroll(ctx, spec); err != nil {
			t.Fatalf("enroll %s: %v", name, err)
		}
	}
	gold("gold-0", "10.0.0.10", "")
	if c := f.waitCapacity(rc, 1); c.Total != 1 {
		t.Errorf("capacity = %+v", c)
	}
	gold("gold-1", "10.0.0.11", "")
	gold("gold-2", "10.0.0.12", baremetal.TargetManageable)
	if c := f.capacityOf(rc); c.Total != 3 || c.Free > 2 {
		t.Errorf("capacity while enrolling = %+v", c)
	}
	f.waitCapacity(rc, 2) // gold-1 becomes available; gold-2 is held
	f.waitHost("gold-2", "manageable", func(h *baremetal.Host) bool { return h.State == baremetal.StateManageable })
	if _, err := f.b.Provide(ctx, "gold-2"); err != nil {
		t.Fatal(err)
	}
	f.waitCapacity(rc, 3)

	// Nova deploys gold-1: fake hardware deploys without an image.
	if err := nodes.ChangeProvisionState(ctx, sc, "gold-1", nodes.ProvisionStateOpts{Target: nodes.TargetActive}).ExtractErr(); err != nil {
		t.Fatalf("deploy gold-1: %v", err)
	}
	f.waitHost("gold-1", "provisioned", func(h *baremetal.Host) bool { return h.State == baremetal.StateProvisioned })
	if c := f.capacityOf(rc); c.Free != 2 || c.Deployed != 1 || c.Total != 3 {
		t.Errorf("after a deployment: %+v", c)
	}
	if _, err := f.b.Detach(ctx, "gold-2", ""); err != nil {
		t.Fatal(err)
	}
	if c := f.capacityOf(rc); c.Free != 1 || c.InMaintenance != 1 {
		t.Errorf("after a detach: %+v", c)
	}
	if _, err := f.b.Attach(ctx, "gold-2"); err != nil {
		t.Fatal(err)
	}
	if c := f.capacityOf("baremetal-gold"); c.Free != 2 {
		t.Errorf("after attach (class named as Ironic does): %+v", c)
	}
	if c := f.capacityOf("CUSTOM_BAREMETAL_SILVER"); c.Total != 0 || c.Free != 0 {
		t.Errorf("a class without hosts: %+v", c)
	}
	f.assertNoPassword(bmcPassword)
}
