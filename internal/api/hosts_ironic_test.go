package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/ironic"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"
)

// bmcPassword must never appear in a response or a log line.
const bmcPassword = testironic.BMCPassword

// hostsFixture is Magnetite's API over a real Ironic, with the conductor's
// periodic host pass running as `magnetite serve` runs it.
type hostsFixture struct {
	t       *testing.T
	c       *client
	backend baremetal.Backend
	ironic  *gophercloud.ServiceClient
	logs    *testironic.LogBuffer
	mu      sync.Mutex
	bodies  []string
	// mirror, when set, runs before every GET: the conductor's pass
	// mirroring the backend's hosts into the store, for fixtures whose pass
	// does not run on its own.
	mirror func()
}

func newHostsFixture(t *testing.T, irc *testironic.Ironic, cfg ironic.Config) *hostsFixture {
	t.Helper()
	logs := &testironic.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Endpoint, cfg.Log = irc.URL, log
	b, err := ironic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := testapi.StartWithHosts(t, b, 250*time.Millisecond, func(o *api.Options) { o.Log = log })
	t.Cleanup(func() {
		if t.Failed() {
			lines := strings.Split(logs.String(), "\n")
			t.Logf("Magnetite log:\n%s", strings.Join(lines[max(0, len(lines)-80):], "\n"))
		}
	})
	sc, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: irc.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	sc.Microversion = ironic.DefaultAPIVersion
	return &hostsFixture{t: t, c: newClient(t, srv), backend: b, ironic: sc, logs: logs}
}

// call sends a request, keeps the response body for the password check and
// fails unless the status matches.
func (f *hostsFixture) call(status int, method, path string, body any) *response {
	f.t.Helper()
	if method == "GET" && f.mirror != nil {
		f.mirror()
	}
	r := f.c.do(method, path, body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(r.Body))
	f.mu.Unlock()
	if r.Status != status {
		f.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Body)
	}
	return r
}

func (f *hostsFixture) host(ident string) apitypes.Host {
	f.t.Helper()
	var h apitypes.Host
	f.call(http.StatusOK, "GET", "/v1/hosts/"+ident, nil).decode(f.t, &h)
	return h
}

// waitHost polls the host through the API until cond holds.
func (f *hostsFixture) waitHost(ident, what string, cond func(apitypes.Host) bool) apitypes.Host {
	f.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		h := f.host(ident)
		if cond(h) {
			return h
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("host %s never became %s; last seen: state %s (%s), power %s, error %q", ident, what, h.State, h.ProvisionState, h.PowerState, h.ErrorMessage)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}

func (f *hostsFixture) waitGone(ident string) {
	f.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		r := f.c.do("GET", "/v1/hosts/"+ident, nil)
		if r.Status == http.StatusNotFound {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("host %s was never deleted: %d %s", ident, r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}

// remove deletes a host that is not deployed: at once (204), or after the
// periodic pass when Ironic was busy with it (202).
func (f *hostsFixture) remove(ident string) {
	f.t.Helper()
	r := f.c.do("DELETE", "/v1/hosts/"+ident, nil)
	if r.Status != http.StatusNoContent && r.Status != http.StatusAccepted {
		f.t.Fatalf("DELETE %s: %d %s", ident, r.Status, r.Body)
	}
	f.waitGone(ident)
}

func (f *hostsFixture) enroll(body map[string]any) apitypes.Host {
	f.t.Helper()
	var h apitypes.Host
	f.call(http.StatusCreated, "POST", "/v1/hosts", body).decode(f.t, &h)
	return h
}

func (f *hostsFixture) node(ident string) *nodes.Node {
	f.t.Helper()
	n, err := nodes.Get(context.Background(), f.ironic, ident).Extract()
	if err != nil {
		f.t.Fatalf("Ironic node %s: %v", ident, err)
	}
	return n
}

func (f *hostsFixture) nodeCount() int {
	f.t.Helper()
	pages, err := nodes.List(f.ironic, nil).AllPages(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	ns, err := nodes.ExtractNodes(pages)
	if err != nil {
		f.t.Fatal(err)
	}
	return len(ns)
}

// deploy plays Nova's part: fake-hardware deploys without an image.
func (f *hostsFixture) deploy(ident string) {
	f.t.Helper()
	err := nodes.ChangeProvisionState(context.Background(), f.ironic, ident, nodes.ProvisionStateOpts{Target: nodes.TargetActive}).ExtractErr()
	if err != nil {
		f.t.Fatalf("deploy %s: %v", ident, err)
	}
	f.waitHost(ident, "provisioned", func(h apitypes.Host) bool { return h.State == baremetal.StateProvisioned })
}

func (f *hostsFixture) capacity(rc string) baremetal.Capacity {
	f.t.Helper()
	c, err := f.backend.Capacity(context.Background(), rc)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// waitCapacity polls until the free count of rc is want.
func (f *hostsFixture) waitCapacity(rc string, want int) baremetal.Capacity {
	f.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		c := f.capacity(rc)
		if c.Free == want {
			return c
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("capacity of %s never reached %d free: %+v", rc, want, c)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}

// assertNoPassword checks every response body and log line.
func (f *hostsFixture) assertNoPassword(password string) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.bodies {
		if strings.Contains(b, password) {
			f.t.Errorf("a response carries the BMC password: %s", b)
		}
	}
	if logs := f.logs.String(); strings.Contains(logs, password) {
		f.t.Errorf("the log carries the BMC password")
	} else if !strings.Contains(logs, "host enrolled") {
		f.t.Errorf("the captured log has no enrollment line; the check would prove nothing:\n%s", logs)
	}
}

func enrollBody(name, address string, extra map[string]any) map[string]any {
	return merged(map[string]any{"name": name, "bmc_address": address, "bmc_username": "admin", "bmc_password": bmcPassword}, extra)
}

func TestHostInventoryAgainstIronic(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("needs a real Ironic (Debian python3-ironic); runs in the full suite only")
	}
	irc := testironic.StartIronic(t)
	t.Logf("Ironic answered %s after launch", irc.StartupTime.Round(time.Millisecond))
	f := newHostsFixture(t, irc, ironic.Config{FakeHardware: true})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Ironic log:\n%s", irc.Log())
		}
	})

	t.Run("enroll holds at manageable, inspect, provide to available", func(t *testing.T) {
		f.t = t
		rotational := false
		start := time.Now()
		h := f.enroll(enrollBody("node-0", "redfish-virtualmedia+http://192.168.222.1:8000/redfish/v1/Systems/bmh-vm-01", map[string]any{
			"boot_mac_address": "00:5A:91:3F:9A:BD", "boot_mode": "UEFISecureBoot", "target_state": "manageable",
			"labels":            map[string]any{"rack": "r1", "role": "worker"},
			"root_device_hints": map[string]any{"device_name": "/dev/sda", "min_size_gigabytes": 100, "rotational": rotational},
			"resource_class":    "baremetal-gold",
		}))
		if h.BMCAddress != "redfish-virtualmedia+http://192.168.222.1:8000/redfish/v1/Systems/bmh-vm-01" || h.BootMACAddress != "00:5a:91:3f:9a:bd" ||
			h.BootMode != "UEFISecureBoot" || h.Labels["rack"] != "r1" || h.NeedsProvisioningNetwork || h.BootMethod != "virtual-media" ||
			h.AutomatedCleaningMode != "metadata" || !h.Managed || h.BMCUsername != "admin" || h.Backend != "ironic" {
			t.Errorf("enrolled host does not show what was enrolled: %+v", h)
		}
		h = f.waitHost("node-0", "manageable", func(h apitypes.Host) bool { return h.State == baremetal.StateManageable })
		enrolled := time.Since(start)
		if h.InspectedAt != nil {
			t.Errorf("a host held at manageable was inspected: %+v", h)
		}

		// What reached Ironic: the mapped driver_info, boot mode and root
		// device hints in Ironic's own keys, the boot port.
		n := f.node(h.UUID)
		if n.DriverInfo["redfish_address"] != "http://192.168.222.1:8000" || n.DriverInfo["redfish_system_id"] != "/redfish/v1/Systems/bmh-vm-01" ||
			n.DriverInfo["redfish_username"] != "admin" || n.DriverInfo["redfish_password"] != "******" {
			t.Errorf("driver_info = %v", n.DriverInfo)
		}
		if n.Properties["capabilities"] != "boot_mode:uefi,secure_boot:true" {
			t.Errorf("capabilities = %v", n.Properties["capabilities"])
		}
		rd, _ := n.Properties["root_device"].(map[string]any)
		if rd["name"] != "/dev/sda" || rd["size"] != ">= 100" || rd["rotational"] != false {
			t.Errorf("root_device = %v", n.Properties["root_device"])
		}
		if n.ResourceClass != "baremetal-gold" || n.AutomatedClean == nil || !*n.AutomatedClean {
			t.Errorf("resource_class %q, automated_clean %v", n.ResourceClass, n.AutomatedClean)
		}
		pp, err := ports.List(f.ironic, ports.ListOpts{NodeUUID: h.UUID}).AllPages(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ps, _ := ports.ExtractPorts(pp)
		if len(ps) != 1 || ps[0].Address != "00:5a:91:3f:9a:bd" {
			t.Errorf("boot ports = %+v", ps)
		}

		inspectStart := time.Now()
		f.call(http.StatusAccepted, "POST", "/v1/hosts/node-0/actions/inspect", nil)
		h = f.waitHost("node-0", "inspected", func(h apitypes.Host) bool { return h.InspectedAt != nil && h.State == baremetal.StateManageable })
		inspected := time.Since(inspectStart)
		// The request is taken when the inspection starts, so no pass
		// inspects the host a second time (Ironic refuses node updates
		// while it inspects; a request cleared after the start stood).
		if meta, _ := f.node(h.UUID).Extra["magnetite"].(map[string]any); meta["inspect_requested"] == true {
			t.Errorf("the inspection ran and its request still stands: %v", meta)
		}

		// Ironic's fake inspection finds nothing; write what an inspection
		// reports into the node's properties and see it summarised. Ironic
		// records the inspection's end a moment before the node leaves
		// "inspecting", and refuses updates until it has.
		testenv.WaitFor(t, "Ironic to end the inspection", time.Minute, func() (bool, string) {
			n, err := nodes.Get(context.Background(), f.ironic, h.UUID).Extract()
			if err != nil {
				return false, err.Error()
			}
			return n.ProvisionState == "manageable", "provision state " + n.ProvisionState
		})
		_, err = nodes.Update(context.Background(), f.ironic, h.UUID, nodes.UpdateOpts{
			nodes.UpdateOperation{Op: nodes.AddOp, Path: "/properties/cpus", Value: 32},
			nodes.UpdateOperation{Op: nodes.AddOp, Path: "/properties/cpu_arch", Value: "x86_64"},
			nodes.UpdateOperation{Op: nodes.AddOp, Path: "/properties/memory_mb", Value: 262144},
			nodes.UpdateOperation{Op: nodes.AddOp, Path: "/properties/local_gb", Value: 1800},
		}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		// The conductor's next pass mirrors it.
		want := apitypes.HostHardware{CPUArch: "x86_64", CPUCount: 32, MemoryMiB: 262144, LocalDiskGiB: 1800}
		f.waitHost("node-0", "summarised", func(h apitypes.Host) bool { return h.Hardware != nil && *h.Hardware == want })

		provideStart := time.Now()
		f.call(http.StatusAccepted, "POST", "/v1/hosts/node-0/actions/provide", nil)
		h = f.waitHost("node-0", "available", func(h apitypes.Host) bool { return h.State == baremetal.StateAvailable })
		t.Logf("lifecycle: enroll to manageable %s, inspect %s, provide (cleaning) to available %s",
			enrolled.Round(time.Millisecond), inspected.Round(time.Millisecond), time.Since(provideStart).Round(time.Millisecond))
		if h.OperationalStatus != "OK" || h.ErrorCount != 0 || h.ErrorType != "" {
			t.Errorf("available host reports trouble: %+v", h)
		}
	})

	t.Run("enroll with defaults verifies, inspects and cleans on its own", func(t *testing.T) {
		f.t = t
		start := time.Now()
		h := f.enroll(enrollBody("node-1", "192.168.111.1:6230", map[string]any{"labels": map[string]any{"rack": "r2"}}))
		if h.HardwareType != "fake-hardware" || h.BMCAddress != "ipmi://192.168.111.1:6230" || !h.NeedsProvisioningNetwork || h.BootMode != "UEFI" {
			t.Errorf("enrolled host = %+v", h)
		}
		h = f.waitHost("node-1", "available", func(h apitypes.Host) bool { return h.State == baremetal.StateAvailable })
		if h.InspectedAt == nil {
			t.Errorf("host reached available without inspection: %+v", h)
		}
		t.Logf("enroll to available (verify, inspect, clean): %s", time.Since(start).Round(time.Millisecond))
		if h.ResourceClass != "baremetal" {
			t.Errorf("default resource class = %q", h.ResourceClass)
		}
	})

	t.Run("list filters by labels", func(t *testing.T) {
		f.t = t
		var l apitypes.HostList
		f.call(http.StatusOK, "GET", "/v1/hosts", nil).decode(t, &l)
		if len(l.Hosts) != 2 || l.Hosts[0].Name != "node-0" || l.Hosts[1].Name != "node-1" {
			t.Fatalf("list = %+v", l.Hosts)
		}
		f.call(http.StatusOK, "GET", "/v1/hosts?label=rack=r2", nil).decode(t, &l)
		if len(l.Hosts) != 1 || l.Hosts[0].Name != "node-1" {
			t.Errorf("rack=r2 lists %+v", l.Hosts)
		}
		f.call(http.StatusOK, "GET", "/v1/hosts?label=rack=r1&label=role=worker", nil).decode(t, &l)
		if len(l.Hosts) != 1 || l.Hosts[0].Name != "node-0" {
			t.Errorf("rack=r1,role=worker lists %+v", l.Hosts)
		}
	})

	t.Run("power off, on and reboot", func(t *testing.T) {
		f.t = t
		f.call(http.StatusAccepted, "POST", "/v1/hosts/node-1/actions/power", map[string]any{"target": "off"})
		f.waitHost("node-1", "off", func(h apitypes.Host) bool { return h.PowerState == "off" })
		f.call(http.StatusAccepted, "POST", "/v1/hosts/node-1/actions/power", map[string]any{"target": "on"})
		f.waitHost("node-1", "on", func(h apitypes.Host) bool { return h.PowerState == "on" })
		f.call(http.StatusAccepted, "POST", "/v1/hosts/node-1/actions/reboot", map[string]any{"mode": "hard"})
		f.waitHost("node-1", "on after reboot", func(h apitypes.Host) bool { return h.PowerState == "on" && h.ErrorMessage == "" })
		if n := f.node("node-1"); n.PowerState != "power on" {
			t.Errorf("Ironic power state %q", n.PowerState)
		}
	})

	t.Run("detach and attach", func(t *testing.T) {
		f.t = t
		var h apitypes.Host
		f.call(http.StatusAccepted, "POST", "/v1/hosts/node-1/actions/detach", map[string]any{"reason": "moving racks"}).decode(t, &h)
		if !h.Detached || h.DetachedReason != "moving racks" || h.OperationalStatus != "detached" {
			t.Errorf("detached host = %+v", h)
		}
		if n := f.node("node-1"); !n.Maintenance || n.MaintenanceReason != "detached: moving racks" {
			t.Errorf("Ironic maintenance %v %q", n.Maintenance, n.MaintenanceReason)
		}
		r := f.call(http.StatusConflict, "POST", "/v1/hosts/node-1/actions/inspect", nil)
		if !strings.Contains(string(r.Body), "attach it first") {
			t.Errorf("inspect of a detached host: %s", r.Body)
		}
		f.call(http.StatusAccepted, "POST", "/v1/hosts/node-1/actions/attach", nil).decode(t, &h)
		if h.Detached || h.OperationalStatus != "OK" || f.node("node-1").Maintenance {
			t.Errorf("attached host = %+v", h)
		}
	})

	t.Run("cleaning mode", func(t *testing.T) {
		f.t = t
		var h apitypes.Host
		f.call(http.StatusAccepted, "POST", "/v1/hosts/node-1/actions/cleaning_mode", map[string]any{"automated_cleaning_mode": "disabled"}).decode(t, &h)
		if n := f.node("node-1"); h.AutomatedCleaningMode != "disabled" || n.AutomatedClean == nil || *n.AutomatedClean {
			t.Errorf("cleaning mode %q, Ironic automated_clean %v", h.AutomatedCleaningMode, n.AutomatedClean)
		}
		f.call(http.StatusBadRequest, "POST", "/v1/hosts/node-1/actions/cleaning_mode", map[string]any{"automated_cleaning_mode": "full"})
		f.call(http.StatusAccepted, "POST", "/v1/hosts/node-1/actions/cleaning_mode", map[string]any{"automated_cleaning_mode": "metadata"}).decode(t, &h)
		if n := f.node("node-1"); h.AutomatedCleaningMode != "metadata" || n.AutomatedClean == nil || !*n.AutomatedClean {
			t.Errorf("cleaning mode %q, Ironic automated_clean %v", h.AutomatedCleaningMode, n.AutomatedClean)
		}
	})

	t.Run("a wrong BMC address is refused before Ironic is called", func(t *testing.T) {
		f.t = t
		before := f.nodeCount()
		r := f.call(http.StatusBadRequest, "POST", "/v1/hosts", enrollBody("node-x", "idrac://10.0.0.1", nil))
		if !strings.Contains(string(r.Body), "use idrac-redfish:// or idrac-virtualmedia://") {
			t.Errorf("400 does not carry the parser's message: %s", r.Body)
		}
		if after := f.nodeCount(); after != before {
			t.Errorf("Ironic has %d nodes after a refused enrollment, %d before", after, before)
		}
		f.call(http.StatusConflict, "POST", "/v1/hosts", enrollBody("node-1", "10.0.0.9", nil)) // name taken, said by Ironic
		f.call(http.StatusNotFound, "GET", "/v1/hosts/no-such-host", nil)
	})

	// How capacity follows these hosts is the backend's behaviour, tested
	// next to it (internal/baremetal/ironic).
	t.Run("a host deployed by Nova and a held one provided", func(t *testing.T) {
		f.t = t
		f.enroll(enrollBody("gold-1", "10.0.0.11", map[string]any{"resource_class": "baremetal-gold"}))
		f.enroll(enrollBody("gold-2", "10.0.0.12", map[string]any{"resource_class": "baremetal-gold", "target_state": "manageable"}))
		f.waitHost("gold-2", "manageable", func(h apitypes.Host) bool { return h.State == baremetal.StateManageable })
		f.call(http.StatusAccepted, "POST", "/v1/hosts/gold-2/actions/provide", nil)
		f.waitCapacity("CUSTOM_BAREMETAL_GOLD", 3)
		f.deploy("gold-1")
	})

	t.Run("delete deprovisions, cleans and removes", func(t *testing.T) {
		f.t = t
		start := time.Now()
		var h apitypes.Host
		f.call(http.StatusAccepted, "DELETE", "/v1/hosts/gold-1", nil).decode(t, &h)
		if h.State != baremetal.StateDeleting || !h.DeleteRequested {
			t.Errorf("deleting host = %+v", h)
		}
		if c := f.capacity("CUSTOM_BAREMETAL_GOLD"); c.Free != 2 {
			t.Errorf("capacity while gold-1 is deleted: %+v", c)
		}
		f.waitGone("gold-1")
		t.Logf("delete of a deployed host (undeploy, clean, remove): %s", time.Since(start).Round(time.Millisecond))

		f.call(http.StatusAccepted, "DELETE", "/v1/hosts/gold-2", nil)
		f.waitGone("gold-2")
		if c := f.capacity("CUSTOM_BAREMETAL_GOLD"); c.Total != 1 || c.Free != 1 {
			t.Errorf("capacity after deletes: %+v", c)
		}

		f.deploy("node-1")
		f.call(http.StatusNoContent, "DELETE", "/v1/hosts/node-1?force=true", nil)
		f.call(http.StatusNotFound, "GET", "/v1/hosts/node-1", nil)
	})

	t.Run("no response or log line carries the BMC password", func(t *testing.T) {
		f.t = t
		var l apitypes.HostList
		f.call(http.StatusOK, "GET", "/v1/hosts", nil).decode(t, &l)
		f.assertNoPassword(bmcPassword)
	})
}
