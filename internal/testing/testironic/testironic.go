// Package testironic runs real parts for bare-metal tests: a standalone
// Ironic from Debian's packages (noauth, no message bus, SQLite, the
// fake-hardware and ipmi hardware types) and OpenIPMI's ipmi_sim BMC
// simulator. Each runs on loopback under the test's temp directory and is
// stopped when the test ends.
package testironic

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

// Ironic is a running Ironic API and conductor.
type Ironic struct {
	// URL is the API root without /v1, e.g. http://127.0.0.1:40123.
	URL string
	Dir string
	// StartupTime is how long Ironic took from launch to answering /v1.
	StartupTime time.Duration
}

// need fails the test when a binary of the full suite is missing.
func need(t testing.TB, bins ...string) {
	t.Helper()
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			t.Fatalf("%s is not installed; the full test suite needs it (install with: sudo bash hack/ci-deps.sh)", b)
		}
	}
}

func freePort(t testing.TB, network string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ironicConf is a standalone all-in-one Ironic: noauth, no RPC bus, no
// DHCP, SQLite. The ipmi settings shorten the waits between ipmitool calls
// so a simulated BMC answers in test time.
const ironicConf = `[DEFAULT]
auth_strategy = noauth
rpc_transport = none
host = magnetite-test
enabled_hardware_types = fake-hardware,ipmi
enabled_boot_interfaces = fake,ipxe,pxe
enabled_deploy_interfaces = fake,direct
enabled_inspect_interfaces = fake,no-inspect
enabled_management_interfaces = fake,ipmitool
enabled_power_interfaces = fake,ipmitool
enabled_raid_interfaces = fake,no-raid
enabled_vendor_interfaces = fake,ipmitool,no-vendor
enabled_bios_interfaces = fake,no-bios
enabled_console_interfaces = fake,no-console
enabled_rescue_interfaces = fake,no-rescue
enabled_network_interfaces = noop
enabled_storage_interfaces = noop
default_network_interface = noop
log_dir = {{DIR}}
log_file = ironic.log
use_stderr = false

[api]
host_ip = 127.0.0.1
port = {{PORT}}
api_workers = 1

[database]
connection = sqlite:///{{DIR}}/ironic.db

[dhcp]
dhcp_provider = none

[conductor]
automated_clean = true
sync_power_state_interval = 5

[deploy]
http_root = {{DIR}}/http
http_url = http://127.0.0.1:1

[pxe]
tftp_root = {{DIR}}/tftp
tftp_master_path = {{DIR}}/tftp/master

[ipmi]
min_command_interval = 1
command_retry_timeout = 10

[oslo_concurrency]
lock_path = {{DIR}}/lock
`

// ironicPort picks the port Ironic is started on; a test replaces it.
var ironicPort = func(t testing.TB) int { return freePort(t, "tcp") }

// StartIronic writes ironic.conf, creates the schema with ironic-dbsync,
// starts the all-in-one ironic service on a free loopback port and waits
// until /v1 answers. Tests that need it must skip under -short.
func StartIronic(t testing.TB) *Ironic {
	t.Helper()
	need(t, "ironic", "ironic-dbsync", "ipmitool")
	dir := t.TempDir()
	for _, d := range []string{"http", "tftp/master", "lock"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "ironic.conf")
	writeConf := func(port int) int {
		text := strings.NewReplacer("{{DIR}}", dir, "{{PORT}}", fmt.Sprint(port)).Replace(ironicConf)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return port
	}
	port := writeConf(ironicPort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// create_schema, not upgrade: upgrade fails on a fresh SQLite file.
	if out, err := exec.CommandContext(ctx, "ironic-dbsync", "--config-file", conf, "create_schema").CombinedOutput(); err != nil {
		t.Fatalf("ironic-dbsync create_schema: %v\n%s", err, out)
	}
	// Ironic binds its port some seconds after freePort let it go; on a
	// busy machine another test's server can take it first, and Ironic
	// exits with "Address already in use". Start it again on another port.
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			port = writeConf(ironicPort(t))
		}
		url, started, taken := runIronic(t, dir, conf, port)
		if !taken {
			return &Ironic{URL: url, Dir: dir, StartupTime: time.Since(started)}
		}
		if attempt == 3 {
			t.Fatalf("ironic found its port taken three times\n%s", tail(filepath.Join(dir, "ironic.log"), filepath.Join(dir, "ironic.out")))
		}
		t.Logf("ironic's port was taken before it listened; starting it on another")
	}
}

// runIronic starts Ironic with conf, which names port, and waits until /v1
// answers. It returns the URL and when Ironic was started, or taken when
// Ironic exited because its port was in use (its process stopped then).
func runIronic(t testing.TB, dir, conf string, port int) (url string, started time.Time, taken bool) {
	t.Helper()
	started = time.Now()
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	stop := startDaemon(t, filepath.Join(dir, "ironic.out"), "ironic", "--config-file", conf)
	deadline := time.Now().Add(4 * time.Minute)
	for {
		if err := stop.ExitErr(); err != nil {
			logs := tail(filepath.Join(dir, "ironic.log"), filepath.Join(dir, "ironic.out"))
			if strings.Contains(logs, "Address already in use") {
				stop.Stop(10 * time.Second)
				_ = os.Remove(filepath.Join(dir, "ironic.log"))
				return url, started, true
			}
			t.Fatalf("ironic exited before answering: %v\n%s", err, logs)
		}
		// Only once this Ironic says it listens: another test's server
		// that took the port could answer first.
		if log, _ := os.ReadFile(filepath.Join(dir, "ironic.log")); bytes.Contains(log, []byte(fmt.Sprintf("listening on 127.0.0.1:%d", port))) {
			if resp, err := http.Get(url + "/v1"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return url, started, false
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ironic did not answer on %s/v1 within 4 minutes\n%s", url, tail(filepath.Join(dir, "ironic.log"), filepath.Join(dir, "ironic.out")))
		}
		time.Sleep(100 * time.Millisecond) // polling interval while Ironic starts
	}
}

// Log returns the end of Ironic's log, for failure messages, without the
// API's access lines: a test polling Ironic would leave nothing else in it.
func (i *Ironic) Log() string {
	raw, err := os.ReadFile(filepath.Join(i.Dir, "ironic.log"))
	if err != nil {
		return err.Error()
	}
	var kept []string
	for _, l := range strings.Split(string(raw), "\n") {
		if !strings.Contains(l, "eventlet.wsgi.server") {
			kept = append(kept, l)
		}
	}
	return "--- ironic.log (access lines left out) ---\n" + strings.Join(kept[max(0, len(kept)-80):], "\n")
}

// startDaemon runs a command in its own process group, output to outFile,
// and stops that group (SIGTERM, then SIGKILL after 10 s) at cleanup.
func startDaemon(t testing.TB, outFile, name string, args ...string) *testproc.Process {
	t.Helper()
	d, err := testproc.Start(exec.Command(name, args...), outFile)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() { d.Stop(10 * time.Second) })
	return d
}

func tail(files ...string) string {
	var b bytes.Buffer
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if len(raw) > 6000 {
			raw = raw[len(raw)-6000:]
		}
		fmt.Fprintf(&b, "--- %s ---\n%s\n", filepath.Base(f), raw)
	}
	return b.String()
}

// DeadEndpoint is an Ironic endpoint on a loopback port that hangs up:
// any request to it fails as an Ironic that does not answer would.
func DeadEndpoint(t testing.TB) string {
	t.Helper()
	// The port stays held for the whole test, hanging up on every
	// connection: a port closed at once could be handed to the next server
	// the test starts, which would then answer in Ironic's place.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return "http://" + l.Addr().String()
}
