package testcapo

import (
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// managedName is CAPO's name for the network, subnet and router it makes
// for a cluster: k8s-clusterapi-cluster-<namespace>-<cluster>.
func managedName(o *unstructured.Unstructured) string {
	return "k8s-clusterapi-cluster-" + resourceName(o)
}

// securityGroupName is CAPO's name for a cluster's managed security group
// of a role (controlplane, worker, bastion).
func securityGroupName(o *unstructured.Unstructured, role string) string {
	return "k8s-cluster-" + resourceName(o) + "-secgroup-" + role
}

// byName is the only item of a list named name, none, or CAPO's error for
// several ("which should not happen").
func (c *Controller) byName(tok, path, key, name string) (map[string]any, error) {
	found, err := c.list(tok, path+"?name="+url.QueryEscape(name), key)
	if err != nil {
		return nil, err
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("found %d %s with the name %s, which should not happen", len(found), key, name)
}

// ensureNamed is the only item of a list named name (byName), or, when
// there is none, the one it makes by posting body under key.
func (c *Controller) ensureNamed(tok, path, key, name string, body map[string]any) (map[string]any, error) {
	it, err := c.byName(tok, path, key+"s", name)
	if err == nil && it == nil {
		it, err = c.cloud.Create(tok, path, key, body)
	}
	return it, err
}

// reconcileManagedNetwork does what CAPO does for an OpenStackCluster with
// managedSubnets: get or make the cluster's network and its subnet (the
// first managedSubnets entry's CIDR and DNS servers), and, when there is
// an external network, a router with its gateway there and an interface on
// the subnet. It returns status.network and status.router.
func (c *Controller) reconcileManagedNetwork(tok string, o *unstructured.Unstructured, managed []any) (network, router map[string]any, err error) {
	if len(managed) != 1 {
		return nil, nil, fmt.Errorf("failed to reconcile network: ManagedSubnets only supports one element, %d provided", len(managed))
	}
	want, _ := managed[0].(map[string]any)
	name := managedName(o)
	n, err := c.ensureNamed(tok, "/networking/v2.0/networks", "network", name, map[string]any{"name": name, "admin_state_up": true})
	if err != nil {
		return nil, nil, fmt.Errorf("failed to reconcile network: %w", err)
	}
	cidr := str(want, "cidr")
	subs, err := c.list(tok, "/networking/v2.0/subnets?network_id="+str(n, "id")+"&cidr="+url.QueryEscape(cidr), "subnets")
	if err != nil {
		return nil, nil, fmt.Errorf("failed to reconcile subnets: %w", err)
	}
	var sub map[string]any
	switch len(subs) {
	case 0:
		req := map[string]any{"network_id": n["id"], "name": name, "ip_version": 4, "cidr": cidr,
			"description": "Created by cluster-api-provider-openstack cluster " + resourceName(o)}
		if dns, ok := want["dnsNameservers"].([]any); ok {
			req["dns_nameservers"] = dns
		}
		if sub, err = c.cloud.Create(tok, "/networking/v2.0/subnets", "subnet", req); err != nil {
			return nil, nil, fmt.Errorf("failed to reconcile subnets: %w", err)
		}
	case 1:
		sub = subs[0]
	default:
		return nil, nil, fmt.Errorf("failed to reconcile subnets: found %d subnets with the CIDR %s and network %s, which should not happen", len(subs), cidr, str(n, "id"))
	}
	network = map[string]any{"id": n["id"], "name": n["name"],
		"subnets": []any{map[string]any{"id": sub["id"], "name": sub["name"], "cidr": sub["cidr"]}}}

	ext, _, _ := unstructured.NestedString(o.Object, "status", "externalNetwork", "id")
	if ext == "" {
		return network, nil, nil // no router without an external network
	}
	rt, err := c.ensureNamed(tok, "/networking/v2.0/routers", "router", name, map[string]any{"name": name,
		"description": "Created by cluster-api-provider-openstack cluster " + resourceName(o), "external_gateway_info": map[string]any{"network_id": ext}})
	if err != nil {
		return nil, nil, fmt.Errorf("failed to reconcile router: %w", err)
	}
	ifaces, err := c.list(tok, "/networking/v2.0/ports?device_id="+str(rt, "id"), "ports")
	if err != nil {
		return nil, nil, fmt.Errorf("failed to reconcile router: %w", err)
	}
	attached := false
	for _, p := range ifaces {
		ips, _ := p["fixed_ips"].([]any)
		for _, ip := range ips {
			attached = attached || str(ip.(map[string]any), "subnet_id") == str(sub, "id")
		}
	}
	if !attached {
		if err := c.cloud.Do(tok, "PUT", "/networking/v2.0/routers/"+str(rt, "id")+"/add_router_interface",
			map[string]any{"subnet_id": sub["id"]}, nil); err != nil {
			return nil, nil, fmt.Errorf("failed to reconcile router: unable to create router interface: %v", err)
		}
	}
	return network, map[string]any{"id": rt["id"], "name": rt["name"]}, nil
}

// reconcileSecurityGroups gets or makes the cluster's control-plane and
// worker security groups, with the rules CAPO gives them: the API server
// port open to all on the control plane, and, with
// allowAllInClusterTraffic, everything between the cluster's groups. It
// sets status.controlPlaneSecurityGroup and status.workerSecurityGroup.
func (c *Controller) reconcileSecurityGroups(tok string, o *unstructured.Unstructured, managed map[string]any, apiPort int64) error {
	groups := map[string]map[string]any{}
	for _, role := range []string{"controlplane", "worker"} {
		name := securityGroupName(o, role)
		g, err := c.ensureNamed(tok, "/networking/v2.0/security-groups", "security_group", name, map[string]any{
			"name": name, "description": "Cluster API managed group"})
		if err != nil {
			return fmt.Errorf("failed to reconcile security groups: %w", err)
		}
		groups[role] = g
	}
	for role, g := range groups {
		if rules, _ := g["security_group_rules"].([]any); len(rules) > 0 {
			continue
		}
		var rules []map[string]any
		if role == "controlplane" {
			rules = append(rules, map[string]any{"description": "Kubernetes API", "direction": "ingress", "ethertype": "IPv4",
				"protocol": "tcp", "port_range_min": apiPort, "port_range_max": apiPort, "remote_ip_prefix": "0.0.0.0/0"})
		}
		if all, _ := managed["allowAllInClusterTraffic"].(bool); all {
			for _, remote := range groups {
				rules = append(rules, map[string]any{"description": "In-cluster Ingress", "direction": "ingress", "ethertype": "IPv4",
					"remote_group_id": remote["id"]})
			}
		}
		for _, r := range rules {
			r["security_group_id"] = g["id"]
			if _, err := c.cloud.Create(tok, "/networking/v2.0/security-group-rules", "security_group_rule", r); err != nil {
				return fmt.Errorf("failed to reconcile security groups: %w", err)
			}
		}
	}
	for role, field := range map[string]string{"controlplane": "controlPlaneSecurityGroup", "worker": "workerSecurityGroup"} {
		_ = unstructured.SetNestedMap(o.Object, map[string]any{"id": groups[role]["id"], "name": groups[role]["name"]}, "status", field)
	}
	return nil
}

// deleteNetworkComponents does CAPO's cluster delete after the load
// balancer: with managedSubnets the router (its interface first) and the
// network, then the managed security groups, bastion's included. Neutron's
// refusals (a network or group still in use) are returned and retried.
func (c *Controller) deleteNetworkComponents(tok string, o *unstructured.Unstructured) error {
	name := managedName(o)
	if managed, _, _ := unstructured.NestedSlice(o.Object, "spec", "managedSubnets"); len(managed) > 0 {
		rt, err := c.byName(tok, "/networking/v2.0/routers", "routers", name)
		if err != nil {
			return err
		}
		if rt != nil {
			sub, err := c.byName(tok, "/networking/v2.0/subnets", "subnets", name)
			if err != nil {
				return err
			}
			if sub != nil {
				if err := c.cloud.Do(tok, "PUT", "/networking/v2.0/routers/"+str(rt, "id")+"/remove_router_interface",
					map[string]any{"subnet_id": sub["id"]}, nil); err != nil && !notFound(err) {
					return fmt.Errorf("failed to delete router: unable to remove router interface: %v", err)
				}
			}
			if err := c.cloud.Do(tok, "DELETE", "/networking/v2.0/routers/"+str(rt, "id"), nil, nil); err != nil {
				return fmt.Errorf("failed to delete router: %w", err)
			}
		}
		n, err := c.byName(tok, "/networking/v2.0/networks", "networks", name)
		if err != nil {
			return err
		}
		if n != nil {
			if err := c.cloud.Do(tok, "DELETE", "/networking/v2.0/networks/"+str(n, "id"), nil, nil); err != nil {
				return fmt.Errorf("failed to delete network: %w", err)
			}
		}
	}
	for _, role := range []string{"controlplane", "worker", "bastion"} {
		g, err := c.byName(tok, "/networking/v2.0/security-groups", "security_groups", securityGroupName(o, role))
		if err != nil {
			return err
		}
		if g != nil {
			if err := c.cloud.Do(tok, "DELETE", "/networking/v2.0/security-groups/"+str(g, "id"), nil, nil); err != nil {
				return fmt.Errorf("failed to delete security groups: %w", err)
			}
		}
	}
	return nil
}
