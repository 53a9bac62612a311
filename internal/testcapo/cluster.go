package testcapo

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// reconcileCluster does what CAPO's OpenStackCluster controller does for
// the fields Magnetite renders: the external network, the cluster network
// and subnets by ID or filter, the API load balancer (listener and pool on
// the API port) with its floating IP, the control plane endpoint, and
// provisioned; at delete, the load balancer and floating IP go.
func (c *Controller) reconcileCluster(ctx context.Context, o *unstructured.Unstructured) {
	if o.GetLabels()[labelCluster] == "" {
		return // Cluster API has not adopted it yet
	}
	tok, err := c.token(ctx, o.GetNamespace(), o)
	if err != nil {
		setConditions(o, condition("Ready", false, "OpenStackAuthenticationFailed", "Failed to create OpenStack client scope: "+err.Error()))
		c.updateStatus(ctx, clustersGVR, o)
		return
	}
	lbName := "k8s-clusterapi-cluster-" + resourceName(o) + "-kubeapi"
	if o.GetDeletionTimestamp() != nil {
		if err := c.deleteAPILoadBalancer(tok, o, lbName); err != nil {
			return // retried next pass
		}
		if err := c.deleteNetworkComponents(tok, o); err != nil {
			setConditions(o, condition("Ready", false, "DeletionFailed", err.Error()))
			c.updateStatus(ctx, clustersGVR, o)
			return
		}
		if w := c.workloadsOf(); w != nil {
			w.close(o.GetNamespace() + "/" + o.GetName())
		}
		c.removeFinalizer(ctx, clustersGVR, o, clusterFinal)
		return
	}
	o, ok := c.addFinalizer(ctx, clustersGVR, o, clusterFinal)
	if !ok {
		return
	}
	if prov, _, _ := unstructured.NestedBool(o.Object, "status", "initialization", "provisioned"); prov {
		return
	}
	spec, _, _ := unstructured.NestedMap(o.Object, "spec")
	nets, err := c.list(tok, "/networking/v2.0/networks", "networks")
	if err != nil {
		return
	}
	fail := func(cond, reason string, err error) {
		setConditions(o, condition(cond, false, reason, err.Error()), condition("Ready", false, reason, err.Error()))
		c.updateStatus(ctx, clustersGVR, o)
	}
	if ext, ok := spec["externalNetwork"].(map[string]any); ok {
		// CAPO looks among external networks only (ExternalNetworksOnly).
		var external []map[string]any
		for _, n := range nets {
			if n["router:external"] == true {
				external = append(external, n)
			}
		}
		n, err := byFilter(ext, external)
		if err != nil {
			fail("NetworkReady", "NetworkCreateFailed", fmt.Errorf("failed to get external network: %w", err))
			return
		}
		_ = unstructured.SetNestedMap(o.Object, map[string]any{"id": n["id"], "name": n["name"]}, "status", "externalNetwork")
	}
	var chosen []map[string]any
	if managed, ok := spec["managedSubnets"].([]any); ok && len(managed) > 0 {
		network, router, err := c.reconcileManagedNetwork(tok, o, managed)
		if err != nil {
			fail("NetworkReady", "NetworkReconcileFailed", err)
			return
		}
		_ = unstructured.SetNestedMap(o.Object, network, "status", "network")
		if router != nil {
			_ = unstructured.SetNestedMap(o.Object, router, "status", "router")
		}
		for _, s := range network["subnets"].([]any) {
			chosen = append(chosen, s.(map[string]any))
		}
	} else if chosen = c.preExistingNetwork(tok, o, spec, nets, fail); chosen == nil {
		return
	}
	setConditions(o, condition("NetworkReady", true, "Ready", ""))

	host := ""
	port := int64(6443)
	if p, ok, _ := unstructured.NestedInt64(spec, "apiServer", "port"); ok {
		port = p
	}
	if managed, ok := spec["managedSecurityGroups"].(map[string]any); ok {
		if err := c.reconcileSecurityGroups(tok, o, managed, port); err != nil {
			fail("SecurityGroupsReady", "SecurityGroupReconcileFailed", err)
			return
		}
		setConditions(o, condition("SecurityGroupsReady", true, "Ready", ""))
	}
	if enabled, _, _ := unstructured.NestedBool(spec, "apiServer", "managedLoadBalancer", "enabled"); enabled {
		lb, err := c.ensureAPILoadBalancer(tok, o, lbName, str(chosen[0], "id"), port)
		if err != nil {
			fail("APIEndpointReady", "APIEndpointConfigFailed", err)
			return
		}
		host = str(lb, "ip")
		if host == "" {
			host = str(lb, "internalIP")
		}
		_ = unstructured.SetNestedMap(o.Object, lb, "status", "apiServerManagedLoadBalancer")
	} else if fip, _, _ := unstructured.NestedString(spec, "apiServer", "floatingIP"); fip != "" {
		host = fip
	}
	if host == "" {
		fail("APIEndpointReady", "APIEndpointConfigFailed", fmt.Errorf("unable to determine control plane endpoint"))
		return
	}
	if w := c.workloadsOf(); w != nil {
		// The load balancer's address stands for the API server that
		// kubeadm init will bring up behind it: the cluster's front door.
		p, err := w.endpointPort(o.GetNamespace() + "/" + o.GetName())
		if err != nil {
			fail("APIEndpointReady", "APIEndpointConfigFailed", err)
			return
		}
		host, port = "127.0.0.1", int64(p)
	}
	status := o.Object["status"]
	_ = unstructured.SetNestedMap(o.Object, map[string]any{"host": host, "port": port}, "spec", "controlPlaneEndpoint")
	written, ok := c.update(ctx, clustersGVR, o)
	if !ok {
		return
	}
	written.Object["status"] = status
	setConditions(written, condition("APIEndpointReady", true, "Ready", ""), condition("Ready", true, "Ready", ""))
	_ = unstructured.SetNestedField(written.Object, true, "status", "initialization", "provisioned")
	c.updateStatus(ctx, clustersGVR, written)
}

// preExistingNetwork resolves the cluster's own network and subnets by ID
// or filter, sets status.network and returns the subnets, or nil when it
// failed (and said so).
func (c *Controller) preExistingNetwork(tok string, o *unstructured.Unstructured, spec map[string]any, nets []map[string]any,
	fail func(cond, reason string, err error)) []map[string]any {
	netRef, _ := spec["network"].(map[string]any)
	n, err := byFilter(netRef, nets)
	if err != nil {
		fail("NetworkReady", "NetworkCreateFailed", fmt.Errorf("error fetching cluster network: %w", err))
		return nil
	}
	subs, err := c.list(tok, "/networking/v2.0/subnets?network_id="+str(n, "id"), "subnets")
	if err != nil {
		return nil
	}
	var chosen []map[string]any
	if refs, ok := spec["subnets"].([]any); ok && len(refs) > 0 {
		for _, r := range refs {
			s, err := byFilter(r.(map[string]any), subs)
			if err != nil {
				fail("NetworkReady", "SubnetCreateFailed", fmt.Errorf("failed to find subnet: %w", err))
				return nil
			}
			chosen = append(chosen, s)
		}
	} else {
		chosen = subs
	}
	if len(chosen) == 0 {
		fail("NetworkReady", "SubnetCreateFailed", fmt.Errorf("no subnets found for network %s", str(n, "id")))
		return nil
	}
	var statusSubs []any
	for _, s := range chosen {
		statusSubs = append(statusSubs, map[string]any{"id": s["id"], "name": s["name"], "cidr": s["cidr"]})
	}
	_ = unstructured.SetNestedMap(o.Object, map[string]any{"id": n["id"], "name": n["name"], "subnets": statusSubs}, "status", "network")
	return chosen
}

// ensureAPILoadBalancer gets or creates the API load balancer, its
// listener and pool, and its floating IP (unless disabled), returning
// status.apiServerManagedLoadBalancer.
func (c *Controller) ensureAPILoadBalancer(tok string, o *unstructured.Unstructured, name, subnetID string, port int64) (map[string]any, error) {
	lb, _, err := c.firstOrCreate(tok, "/load-balancer/v2.0/lbaas/loadbalancers", "name="+name, "loadbalancer", map[string]any{
		"name": name, "vip_subnet_id": subnetID, "description": "Created by cluster-api-provider-openstack cluster " + resourceName(o)})
	if err != nil {
		return nil, err
	}
	id := str(lb, "id")
	if err := c.waitLB(tok, id); err != nil {
		return nil, fmt.Errorf("load balancer %q with id %s is not active after timeout: %v", name, id, err)
	}
	child := fmt.Sprintf("%s-%d", name, port)
	listener, created, err := c.firstOrCreate(tok, "/load-balancer/v2.0/lbaas/listeners", "name="+child, "listener", map[string]any{
		"name": child, "loadbalancer_id": id, "protocol": "TCP", "protocol_port": port})
	if err != nil {
		return nil, err
	}
	if created {
		if err := c.waitLB(tok, id); err != nil {
			return nil, err
		}
		if _, err := c.cloud.Create(tok, "/load-balancer/v2.0/lbaas/pools", "pool", map[string]any{
			"name": child, "listener_id": str(listener, "id"), "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}); err != nil {
			return nil, err
		}
		if err := c.waitLB(tok, id); err != nil {
			return nil, err
		}
	}
	status := map[string]any{"name": name, "id": id, "internalIP": str(lb, "vip_address")}
	if enabled, ok, _ := unstructured.NestedBool(o.Object, "spec", "apiServer", "enableFloatingIP"); ok && !enabled {
		return status, nil
	}
	ext, _, _ := unstructured.NestedString(o.Object, "status", "externalNetwork", "id")
	if ext == "" {
		return status, nil
	}
	fip, _, err := c.firstOrCreate(tok, "/networking/v2.0/floatingips", "port_id="+str(lb, "vip_port_id"), "floatingip", map[string]any{
		"floating_network_id": ext, "port_id": str(lb, "vip_port_id"),
		"description": "Created by cluster-api-provider-openstack cluster " + resourceName(o)})
	if err != nil {
		return nil, err
	}
	status["ip"] = str(fip, "floating_ip_address")
	return status, nil
}

// firstOrCreate is the first item listed at path?query (under key+"s"),
// or, when there is none, the one it makes by posting body under key, and
// whether it made it: how CAPO gets or makes the API load balancer's parts.
func (c *Controller) firstOrCreate(tok, path, query, key string, body map[string]any) (map[string]any, bool, error) {
	found, err := c.list(tok, path+"?"+query, key+"s")
	if err != nil {
		return nil, false, err
	}
	if len(found) > 0 {
		return found[0], false, nil
	}
	made, err := c.cloud.Create(tok, path, key, body)
	return made, err == nil, err
}

// deleteAPILoadBalancer deletes the API load balancer (cascade) and the
// floating IP CAPO made for it, and reports whether they are gone.
func (c *Controller) deleteAPILoadBalancer(tok string, o *unstructured.Unstructured, name string) error {
	fips, err := c.list(tok, "/networking/v2.0/floatingips?description="+
		"Created%20by%20cluster-api-provider-openstack%20cluster%20"+resourceName(o), "floatingips")
	if err != nil {
		return err
	}
	for _, f := range fips {
		if err := c.cloud.Do(tok, "DELETE", "/networking/v2.0/floatingips/"+str(f, "id"), nil, nil); err != nil {
			return err
		}
	}
	lbs, err := c.list(tok, "/load-balancer/v2.0/lbaas/loadbalancers?name="+name, "loadbalancers")
	if err != nil {
		return err
	}
	for _, lb := range lbs {
		if str(lb, "provisioning_status") != "PENDING_DELETE" {
			_ = c.cloud.Do(tok, "DELETE", "/load-balancer/v2.0/lbaas/loadbalancers/"+str(lb, "id")+"?cascade=true", nil, nil)
		}
	}
	if len(lbs) > 0 {
		return fmt.Errorf("load balancer %s is being deleted", name)
	}
	return nil
}
