package labels

import (
	"strings"
	"testing"
)

func TestMetal3LabelsCheckTheirForms(t *testing.T) {
	good := map[string]string{
		HostSelector: "rack=r1,pool=gpu,example.com/tier=", HostInterface: "enp1s0", NodeReuse: "true",
		AutomatedCleaningMode: "disabled", ImageURL: "https://images.example.com/u.qcow2",
		ImageChecksum: "https://images.example.com/SHA256SUMS", ImageChecksumType: "sha512", ImageFormat: "live-iso",
		APIVIP: "fd00::5", KubeVIPTag: "v0.8.9", IPPoolRanges: "192.168.111.20-192.168.111.60,192.168.112.0/26,10.0.0.5-10.0.0.5",
		IPPoolPrefix: "24", IPPoolGateway: "192.168.111.1", IPPoolPreallocations: "default-master:0=192.168.111.30,gpu:12=192.168.111.31",
	}
	if _, err := Validate(good); err != nil {
		t.Fatalf("valid Metal3 labels refused: %v", err)
	}
	bad := []struct{ label, value, says string }{
		{HostSelector, "rack", `"rack" is not valid`},
		{HostSelector, "rack=r 1", `"rack=r 1" is not valid`},
		{HostInterface, "a-very-long-interface-name0", "a network interface name"},
		{AutomatedCleaningMode, "full", "one of metadata, disabled"},
		{ImageURL, "ftp://images.example.com/u.qcow2", "an http:// or https:// URL"},
		{ImageChecksum, "abc", "a hex digest or an http(s) URL"},
		{ImageFormat, "iso", "one of raw, qcow2, vdi, vmdk, live-iso"},
		{APIVIP, "192.168.111", "an IP address"},
		{IPPoolRanges, "192.168.111.60-192.168.111.20", `"192.168.111.60-192.168.111.20" is not valid`},
		{IPPoolRanges, "192.168.111.20-fd00::1", "is not valid"},
		{IPPoolRanges, "192.168.111.0/33", "is not valid"},
		{IPPoolPrefix, "0", "a whole number from 1 to 128"},
		{IPPoolPreallocations, "default-master=192.168.111.30", "NODEGROUP:INDEX=IP"},
		{IPPoolPreallocations, "gpu:x=192.168.111.30", "NODEGROUP:INDEX=IP"},
	}
	for _, c := range bad {
		_, err := Validate(map[string]string{c.label: c.value})
		if err == nil || !strings.Contains(err.Error(), "label "+c.label+"=") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s=%q: %v, want an error saying %q", c.label, c.value, err, c.says)
		}
	}
}
