package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/ironic"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"
)

// deadIronic is an Ironic backend whose endpoint is a loopback port nothing
// listens on: any request that reaches it fails with 503.
func deadIronic(t *testing.T) baremetal.Backend {
	t.Helper()
	b, err := ironic.New(ironic.Config{Endpoint: testironic.DeadEndpoint(t)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHostInventoryAnswers501WithoutABackend(t *testing.T) {
	c := newClient(t, testapi.Start(t))
	r := c.must(http.StatusNotImplemented, "GET", "/v1/hosts", nil)
	if !strings.Contains(string(r.Body), "[baremetal] backend") {
		t.Errorf("501 does not say how to turn the inventory on: %s", r.Body)
	}
}

func TestHostInventoryIsForAdministratorsOnly(t *testing.T) {
	c := newClient(t, testapi.StartWithHosts(t, deadIronic(t), time.Second))
	for _, roles := range []string{"member", "reader", "member,reader"} {
		for _, req := range [][2]string{{"GET", "/v1/hosts"}, {"GET", "/v1/hosts/h1"}, {"POST", "/v1/hosts"},
			{"DELETE", "/v1/hosts/h1"}, {"POST", "/v1/hosts/h1/actions/power"}} {
			c.as("p1", roles).must(http.StatusForbidden, req[0], req[1], map[string]any{})
		}
	}
}

// The whole enrollment, the BMC address first, is checked before the
// backend is called: the backend here cannot be reached, so any request
// that got to it would answer 503, not 400.
func TestHostEnrollRefusesBadInputBeforeCallingTheBackend(t *testing.T) {
	c := newClient(t, testapi.StartWithHosts(t, deadIronic(t), time.Second))
	valid := map[string]any{"name": "node-0", "bmc_address": "ipmi://192.168.111.1:6230", "bmc_username": "admin",
		"bmc_password": "pw", "boot_mac_address": "00:5a:91:3f:9a:bd"}
	cases := []struct {
		name   string
		change map[string]any
		says   string
	}{
		{"unknown scheme", map[string]any{"bmc_address": "foo://10.0.0.1"}, `unknown scheme \"foo\"; accepted schemes are`},
		{"retired idrac", map[string]any{"bmc_address": "idrac://10.0.0.1"}, "use idrac-redfish:// or idrac-virtualmedia://"},
		{"ipmi path", map[string]any{"bmc_address": "ipmi://10.0.0.1/x"}, "ipmi addresses take no path"},
		{"unbracketed ipv6", map[string]any{"bmc_address": "redfish://fd00::1/redfish/v1/Systems/1"}, "must be written in brackets"},
		{"bad port", map[string]any{"bmc_address": "10.0.0.1:70000"}, `port \"70000\"`},
		{"credentials in address", map[string]any{"bmc_address": "ipmi://root:hunter2@10.0.0.1"}, "credentials do not belong in the address"},
		{"empty address", map[string]any{"bmc_address": ""}, "the address is empty"},
		{"no name", map[string]any{"name": ""}, "name"},
		{"bad name", map[string]any{"name": "node 0"}, `name \"node 0\"`},
		{"no password", map[string]any{"bmc_password": ""}, "bmc_username and bmc_password are required"},
		{"bad mac", map[string]any{"boot_mac_address": "00:5a:91"}, "boot_mac_address"},
		{"virtual media without mac", map[string]any{"bmc_address": "redfish-virtualmedia://10.0.0.1/redfish/v1/Systems/1", "boot_mac_address": ""},
			"needs boot_mac_address"},
		{"bad boot mode", map[string]any{"boot_mode": "bios"}, "boot_mode \\\"bios\\\" must be UEFI, UEFISecureBoot or legacy"},
		{"secure boot over ipmi", map[string]any{"boot_mode": "UEFISecureBoot"}, "UEFISecureBoot is not supported by ipmi"},
		{"bad cleaning mode", map[string]any{"automated_cleaning_mode": "full"}, "must be metadata or disabled"},
		{"bad target", map[string]any{"target_state": "active"}, "must be available or manageable"},
		{"bad resource class", map[string]any{"resource_class": "gold class"}, "resource_class"},
		{"bad label", map[string]any{"labels": map[string]any{"-bad": "x"}}, "label key"},
		{"bad hint", map[string]any{"root_device_hints": map[string]any{"device_name": "sda"}}, "under /dev/"},
		{"unknown field", map[string]any{"bmc_pasword": "x"}, "unknown field"},
		{"wrong type", map[string]any{"labels": "rack=1"}, "labels"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := merged(valid, tc.change)
			r := c.must(http.StatusBadRequest, "POST", "/v1/hosts", body)
			if !strings.Contains(string(r.Body), tc.says) {
				t.Errorf("400 does not say %q: %s", tc.says, r.Body)
			}
			if strings.Contains(string(r.Body), "hunter2") {
				t.Errorf("400 repeats the password: %s", r.Body)
			}
		})
	}
	// The same request with a valid address does reach the backend, which
	// cannot answer: proof the refusals above never called it. The
	// conductor will try again; the answer says so and why.
	r := c.must(http.StatusAccepted, "POST", "/v1/hosts", valid)
	var accepted apitypes.HostOperationAccepted
	if err := json.Unmarshal(r.Body, &accepted); err != nil {
		t.Fatal(err)
	}
	if op := accepted.Operation; op.State != "pending" || op.Attempts != 1 || op.Host != "node-0" || op.Type != "host_enroll" ||
		!strings.Contains(op.LastError, "did not answer") || op.NextAttemptAt == nil {
		t.Errorf("202 does not show an enrollment waiting to be retried because Ironic did not answer: %s", r.Body)
	}
	if strings.Contains(string(r.Body), "pw") {
		t.Errorf("202 carries the BMC password: %s", r.Body)
	}
	// The operation can be followed; it stays queued for its retry.
	var followed apitypes.HostOperation
	if err := json.Unmarshal(c.must(http.StatusOK, "GET", "/v1/hosts/operations/"+accepted.Operation.UUID, nil).Body, &followed); err != nil {
		t.Fatal(err)
	}
	if followed.UUID != accepted.Operation.UUID || followed.Type != "host_enroll" || followed.State == "succeeded" || followed.State == "failed" {
		t.Errorf("followed operation = %+v", followed)
	}
	c.must(http.StatusNotFound, "GET", "/v1/hosts/operations/00000000-0000-4000-8000-000000000000", nil)
}

func TestHostActionsRefuseBadBodies(t *testing.T) {
	c := newClient(t, testapi.StartWithHosts(t, deadIronic(t), time.Second))
	cases := []struct {
		action string
		body   any
		status int
		says   string
	}{
		{"power", map[string]any{"target": "sideways"}, http.StatusBadRequest, "target must be on or off"},
		{"power", map[string]any{"target": "on", "mode": "soft"}, http.StatusBadRequest, "for off, soft"},
		{"reboot", map[string]any{"mode": "gentle"}, http.StatusBadRequest, "use hard (default) or soft"},
		{"detach", map[string]any{"why": "x"}, http.StatusBadRequest, "unknown field"},
		{"cleaning_mode", "{", http.StatusBadRequest, "not valid"},
		{"explode", map[string]any{}, http.StatusNotFound, "actions are power, reboot, inspect, provide, detach, attach and cleaning_mode"},
	}
	for _, tc := range cases {
		r := c.must(tc.status, "POST", "/v1/hosts/node-0/actions/"+tc.action, tc.body)
		if !strings.Contains(string(r.Body), tc.says) {
			t.Errorf("%s: answer does not say %q: %s", tc.action, tc.says, r.Body)
		}
	}
	c.must(http.StatusBadRequest, "DELETE", "/v1/hosts/node-0?force=maybe", nil)
	c.must(http.StatusBadRequest, "GET", "/v1/hosts?label=rack", nil)
}
