package bmc

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var testCreds = Credentials{Username: "admin", Password: "s3cr3t-Pa55"}

func TestParseBMCAddressMapsEveryScheme(t *testing.T) {
	type want struct {
		scheme, transport, host string
		port                    int
		systemID                string
		hardwareType            string
		iface                   Interfaces
		boot                    string
		provNet, mac, secure    bool
		driverInfo              map[string]any
	}
	ipmiIface := Interfaces{Boot: "ipxe", Deploy: "direct", Inspect: "agent", Management: "ipmitool", Power: "ipmitool", RAID: "no-raid"}
	redfishIface := func(boot string) Interfaces {
		return Interfaces{Boot: boot, Deploy: "direct", Inspect: "agent", Management: "redfish", Power: "redfish", RAID: "redfish"}
	}
	idracIface := func(boot string) Interfaces {
		return Interfaces{Boot: boot, Deploy: "direct", Inspect: "agent", Management: "idrac-redfish", Power: "idrac-redfish",
			RAID: "idrac-redfish", Vendor: "idrac-redfish", BIOS: "idrac-redfish"}
	}
	iloIface := func(boot, raid string) Interfaces {
		return Interfaces{Boot: boot, Deploy: "direct", Inspect: "agent", Management: "ilo", Power: "ilo", RAID: raid}
	}
	ipmiInfo := func(host string, port int) map[string]any {
		return map[string]any{"ipmi_address": host, "ipmi_port": port, "ipmi_priv_level": "ADMINISTRATOR",
			"ipmi_username": "admin", "ipmi_password": "s3cr3t-Pa55"}
	}
	redfishInfo := func(address, system string) map[string]any {
		m := map[string]any{"redfish_address": address, "redfish_username": "admin", "redfish_password": "s3cr3t-Pa55"}
		if system != "" {
			m["redfish_system_id"] = system
		}
		return m
	}
	const sys = "/redfish/v1/Systems/1"
	cases := []struct {
		address string
		want    want
	}{
		{"192.168.111.1", want{"ipmi", "", "192.168.111.1", 623, "", "ipmi", ipmiIface, BootNetwork, true, false, false, ipmiInfo("192.168.111.1", 623)}},
		{"192.168.111.1:6230", want{"ipmi", "", "192.168.111.1", 6230, "", "ipmi", ipmiIface, BootNetwork, true, false, false, ipmiInfo("192.168.111.1", 6230)}},
		{"bmc-01.example.net", want{"ipmi", "", "bmc-01.example.net", 623, "", "ipmi", ipmiIface, BootNetwork, true, false, false, ipmiInfo("bmc-01.example.net", 623)}},
		{"[fd00:1::5]:6230", want{"ipmi", "", "fd00:1::5", 6230, "", "ipmi", ipmiIface, BootNetwork, true, false, false, ipmiInfo("fd00:1::5", 6230)}},
		{"fd00:1::5", want{"ipmi", "", "fd00:1::5", 623, "", "ipmi", ipmiIface, BootNetwork, true, false, false, ipmiInfo("fd00:1::5", 623)}},
		{"ipmi://192.168.111.1:6230", want{"ipmi", "", "192.168.111.1", 6230, "", "ipmi", ipmiIface, BootNetwork, true, false, false, ipmiInfo("192.168.111.1", 6230)}},
		{"IPMI://BMC.Example.NET", want{"ipmi", "", "bmc.example.net", 623, "", "ipmi", ipmiIface, BootNetwork, true, false, false, ipmiInfo("bmc.example.net", 623)}},
		{"ipmi://[fd00::1]", want{"ipmi", "", "fd00::1", 623, "", "ipmi", ipmiIface, BootNetwork, true, false, false, ipmiInfo("fd00::1", 623)}},
		{"ipmi://[FD00:0::1]:623/", want{"ipmi", "", "fd00::1", 623, "", "ipmi", ipmiIface, BootNetwork, true, false, false, ipmiInfo("fd00::1", 623)}},
		{"libvirt://192.168.122.1:6233", want{"libvirt", "", "192.168.122.1", 6233, "", "ipmi", ipmiIface, BootNetwork, true, true, false, ipmiInfo("192.168.122.1", 6233)}},
		{"redfish://10.0.0.8/redfish/v1/Systems/1", want{"redfish", "https", "10.0.0.8", 0, sys, "redfish", redfishIface("ipxe"), BootNetwork, true, false, true,
			redfishInfo("https://10.0.0.8", sys)}},
		{"redfish+http://192.168.111.1:8000/redfish/v1/Systems/febc9f61-4b7e-411a-ada9-8c722edcee3e", want{"redfish", "http", "192.168.111.1", 8000,
			"/redfish/v1/Systems/febc9f61-4b7e-411a-ada9-8c722edcee3e", "redfish", redfishIface("ipxe"), BootNetwork, true, false, true,
			redfishInfo("http://192.168.111.1:8000", "/redfish/v1/Systems/febc9f61-4b7e-411a-ada9-8c722edcee3e")}},
		{"redfish+https://[fd00::8]:8443/redfish/v1/Systems/1", want{"redfish", "https", "fd00::8", 8443, sys, "redfish", redfishIface("ipxe"), BootNetwork, true, false, true,
			redfishInfo("https://[fd00::8]:8443", sys)}},
		// Without a system path Ironic picks the only system the BMC has.
		{"redfish://10.0.0.8", want{"redfish", "https", "10.0.0.8", 0, "", "redfish", redfishIface("ipxe"), BootNetwork, true, false, true, redfishInfo("https://10.0.0.8", "")}},
		{"redfish://10.0.0.8/redfish/v1/", want{"redfish", "https", "10.0.0.8", 0, "", "redfish", redfishIface("ipxe"), BootNetwork, true, false, true, redfishInfo("https://10.0.0.8", "")}},
		{"redfish-virtualmedia+http://192.168.222.1:8000/redfish/v1/Systems/bmh-vm-01", want{"redfish-virtualmedia", "http", "192.168.222.1", 8000,
			"/redfish/v1/Systems/bmh-vm-01", "redfish", redfishIface("redfish-virtual-media"), BootVirtualMedia, false, true, true,
			redfishInfo("http://192.168.222.1:8000", "/redfish/v1/Systems/bmh-vm-01")}},
		{"redfish-uefihttp://10.0.0.8/redfish/v1/Systems/1", want{"redfish-uefihttp", "https", "10.0.0.8", 0, sys, "redfish", redfishIface("redfish-https"), BootUEFIHTTP, false, false, true,
			redfishInfo("https://10.0.0.8", sys)}},
		{"ilo5-redfish://10.0.0.9/redfish/v1/Systems/1", want{"ilo5-redfish", "https", "10.0.0.9", 0, sys, "redfish", redfishIface("ipxe"), BootNetwork, true, false, true,
			redfishInfo("https://10.0.0.9", sys)}},
		{"ilo5-virtualmedia+https://10.0.0.9/redfish/v1/Systems/1", want{"ilo5-virtualmedia", "https", "10.0.0.9", 0, sys, "redfish", redfishIface("redfish-virtual-media"), BootVirtualMedia, false, true, true,
			redfishInfo("https://10.0.0.9", sys)}},
		{"idrac-redfish://10.0.0.10/redfish/v1/Systems/System.Embedded.1", want{"idrac-redfish", "https", "10.0.0.10", 0, "/redfish/v1/Systems/System.Embedded.1", "idrac",
			idracIface("ipxe"), BootNetwork, true, false, true, redfishInfo("https://10.0.0.10", "/redfish/v1/Systems/System.Embedded.1")}},
		{"idrac-virtualmedia+http://10.0.0.10:8080/redfish/v1/Systems/System.Embedded.1", want{"idrac-virtualmedia", "http", "10.0.0.10", 8080, "/redfish/v1/Systems/System.Embedded.1", "idrac",
			idracIface("idrac-redfish-virtual-media"), BootVirtualMedia, false, true, true, redfishInfo("http://10.0.0.10:8080", "/redfish/v1/Systems/System.Embedded.1")}},
		{"ilo4://192.168.1.13", want{"ilo4", "https", "192.168.1.13", 443, "", "ilo", iloIface("ilo-ipxe", "no-raid"), BootNetwork, true, true, true,
			map[string]any{"ilo_address": "192.168.1.13", "ilo_username": "admin", "ilo_password": "s3cr3t-Pa55"}}},
		{"ilo4-virtualmedia://192.168.1.13:8443", want{"ilo4-virtualmedia", "https", "192.168.1.13", 8443, "", "ilo", iloIface("ilo-virtual-media", "no-raid"), BootVirtualMedia, false, true, true,
			map[string]any{"ilo_address": "192.168.1.13", "client_port": 8443, "ilo_username": "admin", "ilo_password": "s3cr3t-Pa55"}}},
		{"ilo5://ilo5.example", want{"ilo5", "https", "ilo5.example", 443, "", "ilo5", iloIface("ilo-ipxe", "ilo5"), BootNetwork, true, true, true,
			map[string]any{"ilo_address": "ilo5.example", "ilo_username": "admin", "ilo_password": "s3cr3t-Pa55"}}},
		{"irmc://[fd00::20]:8443", want{"irmc", "", "fd00::20", 8443, "", "irmc",
			Interfaces{Boot: "ipxe", Deploy: "direct", Inspect: "agent", Management: "irmc", Power: "ipmitool", RAID: "irmc"}, BootNetwork, true, true, true,
			map[string]any{"irmc_address": "fd00::20", "irmc_port": 8443, "irmc_username": "admin", "irmc_password": "s3cr3t-Pa55",
				"ipmi_address": "fd00::20", "ipmi_username": "admin", "ipmi_password": "s3cr3t-Pa55"}}},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.address, func(t *testing.T) {
			a, err := Parse(tc.address)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			w := tc.want
			got := want{a.Scheme, a.Transport, a.Host, a.Port, a.SystemID, a.HardwareType, a.Interfaces, a.BootMethod,
				a.NeedsProvisioningNetwork, a.NeedsBootMAC, a.SupportsSecureBoot, a.DriverInfo(testCreds)}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("got  %+v\nwant %+v", got, w)
			}
			// The canonical form parses back to the same address.
			again, err := Parse(a.String())
			if err != nil || !reflect.DeepEqual(again, a) {
				t.Errorf("canonical form %q does not round-trip: %v\n%+v\n%+v", a.String(), err, again, a)
			}
		})
		seen[tc.want.scheme] = true
	}
	for _, s := range Schemes() {
		if !seen[s] {
			t.Errorf("scheme %s has no test case", s)
		}
	}
}

func TestVirtualMediaAndUEFIHTTPNeedNoProvisioningNetwork(t *testing.T) {
	for _, s := range Schemes() {
		addr := s + "://10.1.1.1"
		a, err := Parse(addr)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		pxe := strings.Contains(a.Interfaces.Boot, "pxe")
		if a.NeedsProvisioningNetwork != pxe || a.NeedsProvisioningNetwork != (a.BootMethod == BootNetwork) {
			t.Errorf("%s: boot interface %s, method %s, needs provisioning network %v", s, a.Interfaces.Boot, a.BootMethod, a.NeedsProvisioningNetwork)
		}
	}
}

func TestParseBMCAddressIPMIOptions(t *testing.T) {
	a, err := Parse("ipmi://127.0.0.1:9001?privilegelevel=operator&ciphersuite=3")
	if err != nil {
		t.Fatal(err)
	}
	info := a.DriverInfo(Credentials{Username: "u", Password: "p"})
	if info["ipmi_priv_level"] != "OPERATOR" || info["ipmi_cipher_suite"] != 3 || info["ipmi_port"] != 9001 {
		t.Errorf("driver_info = %v", info)
	}
	if a.String() != "ipmi://127.0.0.1:9001?ciphersuite=3&privilegelevel=OPERATOR" {
		t.Errorf("canonical form = %s", a.String())
	}
}

func TestDisabledCertificateVerificationReachesDriverInfo(t *testing.T) {
	cases := map[string]string{
		"redfish://h/redfish/v1/Systems/1": "redfish_verify_ca",
		"idrac-virtualmedia://h/x":         "redfish_verify_ca",
		"ilo4://h":                         "ilo_verify_ca",
		"irmc://h":                         "irmc_verify_ca",
	}
	for addr, key := range cases {
		a, err := Parse(addr)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := a.DriverInfo(Credentials{DisableCertificateVerification: true})[key]; !ok || v != false {
			t.Errorf("%s: %s = %v, want false", addr, key, v)
		}
		if _, ok := a.DriverInfo(Credentials{})[key]; ok {
			t.Errorf("%s: %s set although verification is on", addr, key)
		}
	}
}

func TestParseBMCAddressRefusesBadInput(t *testing.T) {
	cases := []struct {
		address string
		says    string // part of the reason
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"foo://10.0.0.1", `unknown scheme "foo"; accepted schemes are idrac-redfish`},
		{"redfishx://10.0.0.1", "unknown scheme"},
		{"idrac://10.0.0.1", "use idrac-redfish:// or idrac-virtualmedia://"},
		{"ibmc://10.0.0.1", "removed"},
		{"https://10.0.0.1/redfish/v1/Systems/1", "does not say which protocol"},
		{"ipmi+http://10.0.0.1", "ipmi takes no +http suffix"},
		{"irmc+https://10.0.0.1", "irmc takes no +https suffix"},
		{"ilo4+http://10.0.0.1", "accepts the suffix +https, not +http"},
		{"redfish+ftp://10.0.0.1", "not +ftp"},
		{"redfish+://10.0.0.1", "not +"},
		{"ipmi://", "no host after ipmi://"},
		{"redfish:///redfish/v1/Systems/1", "host is missing"},
		{"ipmi://10.0.0.1:0", `port "0"`},
		{"ipmi://10.0.0.1:65536", `port "65536"`},
		{"ipmi://10.0.0.1:abc", "port is not a number"},
		{"ipmi://10.0.0.1:", "port after the colon is missing"},
		{"10.0.0.1:", "port after the colon is missing"},
		{"10.0.0.1:99999", `port "99999"`},
		{"10.0.0.1:-1", `port "-1"`},
		{"ipmi://10.0.0.1/extra", "ipmi addresses take no path"},
		{"ilo4://10.0.0.1/redfish/v1", "ilo4 addresses take no path"},
		{"irmc://10.0.0.1/x", "irmc addresses take no path"},
		{"ipmi://10.0.0.1?foo=bar", `unknown query parameter "foo"`},
		{"ipmi://10.0.0.1?privilegelevel=root", `privilegelevel "root"`},
		{"ipmi://10.0.0.1?ciphersuite=99", `ciphersuite "99"`},
		{"ipmi://10.0.0.1?ciphersuite=3&ciphersuite=17", "given 2 times"},
		{"redfish://10.0.0.1/redfish/v1/Systems/1?x=y", "redfish addresses take no ?query"},
		{"redfish://10.0.0.1/redfish/v1/Systems/1#frag", "fragment"},
		{"redfish://fd00::1/redfish/v1/Systems/1", "IPv6 address must be written in brackets"},
		{"ipmi://fd00::1:623", "IPv6 address must be written in brackets"},
		{"ipmi://[fd00::1", "closing bracket"},
		{"[fd00::1", "closing bracket"},
		{"[fd00::1]x", "unexpected"},
		{"[10.0.0.1]:623", "brackets are for IPv6"},
		{"ipmi://[bmc.example]", "not an IPv6 address"},
		{"fd00::zz", "neither HOST:PORT nor an IPv6 address"},
		{"10.0.0.300", "neither an IP address nor a valid DNS name"},
		{"ipmi://bmc_01.example", "neither an IP address nor a valid DNS name"},
		{"ipmi://-bmc.example", "neither an IP address nor a valid DNS name"},
		{"ipmi://" + strings.Repeat("a", 64) + ".example", "neither an IP address nor a valid DNS name"},
		{"ipmi://bmc..example", "neither an IP address nor a valid DNS name"},
		{"bmc.example/redfish/v1/Systems/1", "cannot have a path"},
		{"ipmi:10.0.0.1", "two slashes"},
		{"redfish:bmc.example", "two slashes"},
		{"ipmi://10.0.0.1 ", ""}, // trailing space is trimmed: valid, checked below
		{"ipmi://10.0.0 .1", "spaces or control characters"},
		{"ipmi://10.0.0.1\n", ""},
		{"ipmi://10.0.0\t.1", "spaces or control characters"},
		{"redfish://10.0.0.1/%zz", "malformed %-escape"},
		{"ipmi://" + strings.Repeat("a", 3000), "longer than 2048"},
	}
	for _, tc := range cases {
		t.Run(tc.address, func(t *testing.T) {
			a, err := Parse(tc.address)
			if tc.says == "" {
				if err != nil {
					t.Fatalf("want accepted after trimming, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted as %+v, want an error saying %q", a, tc.says)
			}
			if !errors.Is(err, ErrInvalidAddress) {
				t.Errorf("error %v does not wrap ErrInvalidAddress", err)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
		})
	}
}

func TestBMCAddressErrorsNeverRepeatPasswords(t *testing.T) {
	for _, addr := range []string{
		"ipmi://admin:hunter2@10.0.0.1",
		"redfish+http://root:hunter2@10.0.0.1:8000/redfish/v1/Systems/1",
		"admin:hunter2@10.0.0.1",
		"unknown://admin:hunter2@10.0.0.1",
		"redfish://admin:hunter2@[fd00::1/x",
		"ipmi://admin:hunter2@10.0.0.1:99999",
	} {
		_, err := Parse(addr)
		if err == nil {
			t.Fatalf("%s accepted", addr)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error repeats the password: %v", err)
		}
	}
}

func TestRedactDriverInfoMasksEveryPassword(t *testing.T) {
	a, _ := Parse("irmc://10.0.0.1")
	red := RedactDriverInfo(a.DriverInfo(testCreds))
	b, _ := json.Marshal(red)
	if strings.Contains(string(b), testCreds.Password) {
		t.Fatalf("redacted driver_info still holds the password: %s", b)
	}
	if red["irmc_password"] != PasswordMask || red["ipmi_password"] != PasswordMask || red["irmc_username"] != "admin" {
		t.Errorf("redacted = %v", red)
	}
}

func FuzzParseBMCAddress(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "10.0.0.1:623", "[fd00::1]:623", "fd00::1", "ipmi://h?privilegelevel=USER&ciphersuite=3",
		"redfish+http://h:8000/redfish/v1/Systems/1", "idrac-virtualmedia://[fe80::1%25eth0]/x", "ilo4://h", "irmc://h:443",
		"user:pw@h", "ipmi://u:p@h", "redfish:///x", "libvirt://h:6230", "redfish-uefihttp://h/redfish/v1/Systems/%41"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidAddress) {
				t.Fatalf("error does not wrap ErrInvalidAddress: %v", err)
			}
			// A password written before @ must not come back in the message.
			if _, after, ok := strings.Cut(s, "://"); ok {
				hostPart := after
				if i := strings.IndexAny(after, "/?#"); i >= 0 {
					hostPart = after[:i] // the authority ends where the path, query or fragment starts
				}
				if at := strings.LastIndex(hostPart, "@"); at > 0 {
					if _, pw, ok := strings.Cut(hostPart[:at], ":"); ok && len(pw) >= 4 && !strings.Contains(strings.Replace(s, hostPart[:at], "", 1), pw) &&
						strings.Contains(err.Error(), pw) {
						t.Fatalf("error repeats the password %q: %v", pw, err)
					}
				}
			}
			return
		}
		if a.Host == "" || a.HardwareType == "" || a.Interfaces.Boot == "" || a.Interfaces.Power == "" {
			t.Fatalf("accepted %q without a complete mapping: %+v", s, a)
		}
		if _, known := bmcTypes[a.Scheme]; !known {
			t.Fatalf("accepted %q as unknown scheme %q", s, a.Scheme)
		}
		if a.Port < 0 || a.Port > 65535 {
			t.Fatalf("port %d out of range", a.Port)
		}
		again, err := Parse(a.String())
		if err != nil || !reflect.DeepEqual(again, a) {
			t.Fatalf("%q: canonical %q does not round-trip: %v", s, a.String(), err)
		}
		info := a.DriverInfo(Credentials{Username: "u", Password: "pw"})
		if len(info) < 3 {
			t.Fatalf("driver_info too small: %v", info)
		}
	})
}
