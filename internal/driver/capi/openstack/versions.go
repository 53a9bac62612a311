package openstack

import (
	"fmt"

	"github.com/magnetite-io/magnetite/internal/driver/capi"
)

// CAPO's API versions, preferred first. Every CAPO release from v0.12 to
// v0.14 serves its kinds at v1beta1 only (metadata.yaml: contract v1beta1);
// v0.15 serves v1beta1 and v1beta2 and stores v1beta2. Specs are rendered
// in v1beta2's shape and converted to v1beta1's by Convert.
const (
	v1beta2 = "v1beta2"
	v1beta1 = "v1beta1"
)

// APIVersions implements capi.Versioned.
func (Infrastructure) APIVersions() []string { return []string{v1beta2, v1beta1} }

// Releases implements capi.Versioned.
func (Infrastructure) Releases() string {
	return "CAPO v0.12 to v0.14 serve v1beta1, v0.15 and newer serve v1beta2"
}

// SpecVariables implements capi.Versioned.
func (Infrastructure) SpecVariables() map[string]string { return specs.SpecVariables() }

// Convert implements capi.Versioned: it writes an OpenStack object rendered
// in v1beta2's shape in v1beta1's. The differences are those CAPO lists in
// docs/book/src/topics/crd-changes/v1beta1-to-v1beta2.md (tag
// v0.15.0-beta.0), read back from v1beta2 to v1beta1, each checked against
// the v1beta1 schema of CAPO v0.14.7's CRDs.
func (Infrastructure) Convert(version string, obj map[string]any) error {
	if version == v1beta2 {
		return nil
	}
	if version != v1beta1 {
		return fmt.Errorf("CAPO serves no version %s that Magnetite writes", version)
	}
	kind, spec := capi.ObjectSpec(obj)
	if spec == nil {
		return nil
	}
	switch kind {
	case "OpenStackCluster":
		return clusterToV1beta1(spec)
	case "OpenStackMachine", "OpenStackServer":
		return machineToV1beta1(spec)
	}
	return nil
}

// clusterToV1beta1 converts an OpenStackCluster spec.
func clusterToV1beta1(spec map[string]any) error {
	// spec.apiServer gathers what v1beta1 keeps in five top-level fields,
	// with the floating IP's switch the other way round.
	if api, ok := take(spec, "apiServer"); ok {
		for from, to := range map[string]string{
			"floatingIP": "apiServerFloatingIP", "fixedIP": "apiServerFixedIP",
			"port": "apiServerPort", "managedLoadBalancer": "apiServerLoadBalancer",
		} {
			if v, ok := api[from]; ok {
				spec[to] = v
			}
		}
		if v, ok := api["enableFloatingIP"].(bool); ok {
			spec["disableAPIServerFloatingIP"] = !v
		}
	}
	if v, ok := spec["enableExternalNetwork"].(bool); ok {
		delete(spec, "enableExternalNetwork")
		spec["disableExternalNetwork"] = !v
	}
	if n, ok := take(spec, "managedNetwork"); ok {
		if v, ok := n["mtu"]; ok {
			spec["networkMTU"] = v
		}
		if v, ok := n["enablePortSecurity"].(bool); ok {
			spec["disablePortSecurity"] = !v
		}
	}
	if r, ok := take(spec, "managedRouter"); ok {
		spec["externalRouterIPs"] = r["externalIPs"]
	}
	if sg, ok := spec["managedSecurityGroups"].(map[string]any); ok {
		if rules, ok := sg["clusterNodesSecurityGroupRules"]; ok {
			delete(sg, "clusterNodesSecurityGroupRules")
			sg["allNodesSecurityGroupRules"] = rules
		}
	}
	if _, ok := spec["primarySubnet"]; ok {
		return fmt.Errorf("primarySubnet exists from v1beta2 on; CAPO v1beta1 takes the first of subnets")
	}
	if bastion, ok := capi.NestedValue(spec, "bastion", "spec").(map[string]any); ok {
		return machineToV1beta1(bastion)
	}
	return nil
}

// machineToV1beta1 converts an OpenStackMachine spec (and a bastion's).
func machineToV1beta1(spec map[string]any) error {
	// v1beta1 names the flavor by a name string or by flavorID.
	if f, ok := take(spec, "flavor"); ok {
		switch {
		case f["id"] != nil:
			spec["flavorID"] = f["id"]
		case capi.NestedValue(f, "filter", "name") != nil:
			spec["flavor"] = capi.NestedValue(f, "filter", "name")
		default:
			return fmt.Errorf("flavor %v: v1beta1 names a flavor by ID or name only", f)
		}
	}
	ports, _ := spec["ports"].([]any)
	for _, p := range ports {
		port, _ := p.(map[string]any)
		if v, ok := port["enablePortSecurity"].(bool); ok {
			delete(port, "enablePortSecurity")
			port["disablePortSecurity"] = !v
		}
	}
	return nil
}

// take removes the object at key from m and returns it.
func take(m map[string]any, key string) (map[string]any, bool) {
	v, ok := m[key].(map[string]any)
	if ok {
		delete(m, key)
	}
	return v, ok
}
