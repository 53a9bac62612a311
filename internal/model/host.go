package model

// RootDeviceHints choose the disk a bare-metal host's image is written to;
// every hint given must match. The backends, the store's mirror and the
// API's host views all carry this one type.
type RootDeviceHints struct {
	DeviceName         string `json:"device_name,omitempty"`
	HCTL               string `json:"hctl,omitempty"`
	Model              string `json:"model,omitempty"`
	Vendor             string `json:"vendor,omitempty"`
	SerialNumber       string `json:"serial_number,omitempty"`
	MinSizeGigabytes   int    `json:"min_size_gigabytes,omitempty"`
	WWN                string `json:"wwn,omitempty"`
	WWNWithExtension   string `json:"wwn_with_extension,omitempty"`
	WWNVendorExtension string `json:"wwn_vendor_extension,omitempty"`
	Rotational         *bool  `json:"rotational,omitempty"`
}

// HostHardware summarises what inspection found on a bare-metal host.
type HostHardware struct {
	CPUArch      string `json:"cpu_arch,omitempty"`
	CPUCount     int    `json:"cpu_count,omitempty"`
	MemoryMiB    int    `json:"memory_mib,omitempty"`
	LocalDiskGiB int    `json:"local_disk_gib,omitempty"`
}
