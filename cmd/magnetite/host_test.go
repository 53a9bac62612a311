package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidateBMCPrintsTheIronicMappingAsJSON(t *testing.T) {
	out, err := runMagnetite(t, "host", "validate-bmc", "--username", "root", "redfish-virtualmedia+http://192.168.222.1:8000/redfish/v1/Systems/bmh-vm-01")
	if err != nil {
		t.Fatalf("validate-bmc: %v\n%s", err, out)
	}
	var got struct {
		Address      string `json:"address"`
		HardwareType string `json:"hardware_type"`
		Interfaces   struct {
			Boot string `json:"boot"`
		} `json:"interfaces"`
		NeedsProvisioningNetwork bool           `json:"needs_provisioning_network"`
		DriverInfo               map[string]any `json:"driver_info"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if got.Address != "redfish-virtualmedia+http://192.168.222.1:8000/redfish/v1/Systems/bmh-vm-01" || got.HardwareType != "redfish" ||
		got.Interfaces.Boot != "redfish-virtual-media" || got.NeedsProvisioningNetwork {
		t.Errorf("unexpected result: %+v", got)
	}
	want := map[string]any{"redfish_address": "http://192.168.222.1:8000", "redfish_system_id": "/redfish/v1/Systems/bmh-vm-01",
		"redfish_username": "root", "redfish_password": "******"}
	for k, v := range want {
		if got.DriverInfo[k] != v {
			t.Errorf("driver_info[%s] = %v, want %v", k, got.DriverInfo[k], v)
		}
	}
}

func TestValidateBMCRefusesABadAddressWithTheReason(t *testing.T) {
	out, err := runMagnetite(t, "host", "validate-bmc", "idrac://10.0.0.1")
	if err == nil {
		t.Fatalf("accepted:\n%s", out)
	}
	if !strings.Contains(err.Error(), "idrac-redfish://") {
		t.Errorf("error does not say what to use instead: %v", err)
	}
}
