package metal3

import (
	"fmt"
	"slices"

	"github.com/magnetite-io/magnetite/internal/driver/capi"
)

// CAPM3's API versions, preferred first. CAPM3 up to v1.12 serves its kinds
// at v1beta1 only (contract v1beta1); v1.13 serves v1beta1 and v1beta2 and
// stores v1beta2. Specs are rendered in v1beta2's shape and converted to
// v1beta1's by Convert.
const (
	v1beta2 = "v1beta2"
	v1beta1 = "v1beta1"
)

// APIVersions implements capi.Versioned.
func (Infrastructure) APIVersions() []string { return []string{v1beta2, v1beta1} }

// Releases implements capi.Versioned.
func (Infrastructure) Releases() string {
	return "CAPM3 v1.12 and older serve v1beta1, v1.13 and newer serve v1beta2"
}

// SpecVariables implements capi.Versioned.
func (Infrastructure) SpecVariables() map[string]string { return specs.SpecVariables() }

// Convert implements capi.Versioned: it writes a Metal3 object rendered in
// v1beta2's shape in v1beta1's, as CAPM3's own conversion does
// (api/v1beta1/conversion.go at tag v1.13.2), for the fields Magnetite
// renders, each checked against the v1beta1 schema of CAPM3 v1.12.7's CRDs.
func (Infrastructure) Convert(version string, obj map[string]any) error {
	if version == v1beta2 {
		return nil
	}
	if version != v1beta1 {
		return fmt.Errorf("CAPM3 serves no version %s that Magnetite writes", version)
	}
	kind, spec := capi.ObjectSpec(obj)
	if spec == nil {
		return nil
	}
	switch kind {
	case "Metal3Cluster":
		clusterToV1beta1(spec)
	case "Metal3Machine":
		// The image's disk format is "format" in v1beta1.
		if img, ok := spec["image"].(map[string]any); ok {
			if f, ok := img["diskFormat"]; ok {
				delete(img, "diskFormat")
				img["format"] = f
			}
		}
	case "Metal3DataTemplate":
		networksToV1beta1(spec)
	case "Metal3Remediation":
		// v1beta1 takes the timeout as a duration string.
		if s, ok := spec["strategy"].(map[string]any); ok {
			if secs, ok := s["timeoutSeconds"].(int64); ok {
				delete(s, "timeoutSeconds")
				s["timeout"] = fmt.Sprintf("%ds", secs)
			}
		}
	}
	return nil
}

// clusterToV1beta1 converts a Metal3Cluster spec: v1beta1 also carries the
// deprecated inverse of cloudProviderEnabled, and keeps failure domains in
// a map by name.
func clusterToV1beta1(spec map[string]any) {
	if v, ok := spec["cloudProviderEnabled"].(bool); ok {
		spec["noCloudProvider"] = !v
	}
	if fds, ok := spec["failureDomains"].([]any); ok {
		byName := map[string]any{}
		for _, x := range fds {
			fd, _ := x.(map[string]any)
			name, _ := fd["name"].(string)
			byName[name] = mapWithout(fd, "name")
		}
		spec["failureDomains"] = byName
	}
}

// networksToV1beta1 converts a Metal3DataTemplate's networks: v1beta1
// requires the pool reference's kind (v1beta2 defaults it and its group),
// and an IPv6 network's ipAddressFromIPPool, which CAPM3's v1beta1 Go type
// always writes (empty when the pool is named by fromPoolRef).
func networksToV1beta1(spec map[string]any) {
	networks, _ := capi.NestedValue(spec, "networkData", "networks").(map[string]any)
	for family, list := range networks {
		items, _ := list.([]any)
		for _, x := range items {
			n, _ := x.(map[string]any)
			if ref, ok := n["fromPoolRef"].(map[string]any); ok {
				if ref["kind"] == nil {
					ref["kind"] = "IPPool"
				}
				if ref["apiGroup"] == nil {
					ref["apiGroup"] = "ipam.metal3.io"
				}
			}
			if _, ok := n["ipAddressFromIPPool"]; !ok && family == "ipv6" {
				n["ipAddressFromIPPool"] = ""
			}
		}
	}
}

func mapWithout(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if !slices.Contains(keys, k) {
			out[k] = v
		}
	}
	return out
}
