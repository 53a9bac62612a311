package testironic

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BMC is a running ipmi_sim: an IPMI 2.0 (lanplus) BMC on UDP loopback
// whose chassis power is a file, so a test can see what Ironic did.
type BMC struct {
	Port     int
	Username string
	Password string
	dir      string
}

// The simulator keeps the power state in the file "power" ("1" on, "0"
// off) through this chassis-control script, which ipmi_sim calls as
// `chassis.sh <mc> get power` and `chassis.sh <mc> set power 1`.
const chassisScript = `#!/bin/sh
state="$(dirname "$0")/power"
shift
op=$1
shift
case $op in
get)
  for p in "$@"; do
    case $p in
      power) echo "power:$(cat "$state" 2>/dev/null || echo 0)" ;;
      boot) echo "boot:default" ;;
    esac
  done ;;
set)
  while [ $# -ge 2 ]; do
    [ "$1" = power ] && echo "$2" > "$state"
    shift 2
  done ;;
esac
`

const lanConf = `name "magnetite-test-bmc"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 {{PORT}}
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
  endlan
  chassis_control "{{DIR}}/chassis.sh 0x20"
  user 2 true "{{USER}}" "{{PASSWORD}}" admin 10 none md2 md5 straight
`

const simEmu = `mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
sel_enable 0x20 1000 0x0a
mc_enable 0x20
`

// StartIPMISim starts ipmi_sim with one admin user and waits until
// ipmitool reads its power state (off). ipmi_sim speaks cipher suite 3,
// not ipmitool's default 17, and takes passwords of up to 16 characters.
func StartIPMISim(t testing.TB, username, password string) *BMC {
	t.Helper()
	need(t, "ipmi_sim", "ipmitool")
	if len(password) > 16 {
		t.Fatalf("ipmi_sim refuses sessions for passwords longer than 16 characters (IPMI 1.5's limit); %q is %d", password, len(password))
	}
	dir := t.TempDir()
	b := &BMC{Port: freePort(t, "udp"), Username: username, Password: password, dir: dir}
	r := strings.NewReplacer("{{PORT}}", fmt.Sprint(b.Port), "{{DIR}}", dir, "{{USER}}", username, "{{PASSWORD}}", password)
	files := map[string]string{"lan.conf": r.Replace(lanConf), "sim.emu": simEmu, "chassis.sh": chassisScript, "power": "0\n"}
	for name, text := range files {
		mode := os.FileMode(0o600)
		if name == "chassis.sh" {
			mode = 0o700
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, filepath.Join(dir, "ipmi_sim.out"), "ipmi_sim", "-c", filepath.Join(dir, "lan.conf"),
		"-f", filepath.Join(dir, "sim.emu"), "-s", filepath.Join(dir, "state"), "-n")
	deadline := time.Now().Add(time.Minute)
	for {
		if err := d.ExitErr(); err != nil {
			t.Fatalf("ipmi_sim exited: %v\n%s", err, tail(filepath.Join(dir, "ipmi_sim.out")))
		}
		out, err := b.ipmitool("power", "status")
		if err == nil && strings.Contains(out, "Chassis Power is off") {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("ipmi_sim did not answer within a minute: %v %s\n%s", err, out, tail(filepath.Join(dir, "ipmi_sim.out")))
		}
		time.Sleep(200 * time.Millisecond) // polling interval while ipmi_sim starts
	}
}

func (b *BMC) ipmitool(args ...string) (string, error) {
	base := []string{"-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p", fmt.Sprint(b.Port), "-U", b.Username, "-P", b.Password, "-N", "1", "-R", "1"}
	out, err := exec.Command("ipmitool", append(base, args...)...).CombinedOutput()
	return string(out), err
}

// Address is the host's BMC address in Magnetite's form.
func (b *BMC) Address() string {
	return fmt.Sprintf("ipmi://127.0.0.1:%d?ciphersuite=3", b.Port)
}

// PowerOn reports the simulated chassis power as the chassis-control
// script recorded it.
func (b *BMC) PowerOn() bool {
	raw, _ := os.ReadFile(filepath.Join(b.dir, "power"))
	return strings.TrimSpace(string(raw)) == "1"
}
