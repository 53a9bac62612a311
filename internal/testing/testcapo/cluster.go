package testcapo

import (
	"context"
	"fmt"
	"net/url"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// reconcileCluster does what CAPO's OpenStackCluster controller does for
// the fields Magnetite renders (controllers/openstackcluster_controller.go
// at v0.14.7 and v0.15.0-beta.0): the external network, the cluster
// network and subnets by ID or filter, the API load balancer (listener and
// pool on the API port) with its floating IP, the control plane endpoint,
// Nova's availability zones as failure domains, and provisioned; at
// delete, the load balancer and floating IP go.
func (r *reconciler) reconcileCluster(ctx context.Context, o *unstructured.Unstructured) {
	gvr := r.rel.gvr("openstackclusters")
	if o.GetLabels()[labelCluster] == "" {
		return // Cluster API has not adopted it yet
	}
	write := func() { r.updateStatus(ctx, gvr, o) }
	tok, err := r.token(ctx, o.GetNamespace(), o)
	if err != nil {
		r.rel.set(o, falseCondition("Ready", "OpenStackAuthenticationFailed", severityError, "Failed to create OpenStack client scope: "+err.Error()))
		write()
		return
	}
	lbName := "k8s-clusterapi-cluster-" + resourceName(o) + "-kubeapi"
	if o.GetDeletionTimestamp() != nil {
		spec, _ := o.Object["spec"].(map[string]any)
		if err := r.deleteAPILoadBalancer(tok, lbName, r.rel.apiServer(spec)); err != nil {
			return // retried next pass
		}
		if err := r.deleteNetworkComponents(tok, o); err != nil {
			r.rel.set(o, falseCondition("Ready", "DeletionFailed", severityError, err.Error()))
			write()
			return
		}
		if w := r.workloadsOf(); w != nil {
			w.close(o.GetNamespace() + "/" + o.GetName())
		}
		r.removeFinalizer(ctx, gvr, o, clusterFinal)
		return
	}
	if !slices.Contains(o.GetFinalizers(), clusterFinal) {
		r.addFinalizer(ctx, gvr, o, clusterFinal) // "Register the finalizer immediately"
		return
	}
	if r.rel.provisioned(o) {
		// CAPO lists the zones again on every reconcile, "in case any
		// AZs have been removed from OpenStack".
		before := fmt.Sprint(o.Object["status"].(map[string]any)["failureDomains"])
		if r.failureDomains(tok, o) == nil && fmt.Sprint(o.Object["status"].(map[string]any)["failureDomains"]) != before {
			write() // only a change, so that watchers see no churn
		}
		return
	}
	spec, _, _ := unstructured.NestedMap(o.Object, "spec")
	nets, err := r.list(tok, "/networking/v2.0/networks", "networks")
	if err != nil {
		return
	}
	// fail is handleUpdateOSCError for a transient error: Ready False with
	// a Warning, after the step's own condition.
	fail := func(err error, step ...condition) {
		r.rel.set(o, step...)
		r.rel.set(o, falseCondition("Ready", reasonOpenStackError, severityWarning, err.Error()))
		write()
	}
	if err := r.reconcileExternalNetwork(o, spec, nets); err != nil {
		fail(fmt.Errorf("failed to reconcile external network: %w", err))
		return
	}
	var chosen []map[string]any
	if managed, ok := spec["managedSubnets"].([]any); ok && len(managed) > 0 {
		network, router, err := r.reconcileManagedNetwork(tok, o, managed)
		if err != nil {
			fail(err, falseCondition("NetworkReady", "NetworkCreateFailed", severityError, "Failed to reconcile network: "+err.Error()))
			return
		}
		_ = unstructured.SetNestedMap(o.Object, network, "status", "network")
		if router != nil {
			_ = unstructured.SetNestedMap(o.Object, router, "status", "router")
		}
		for _, s := range network["subnets"].([]any) {
			chosen = append(chosen, s.(map[string]any))
		}
	} else if chosen = r.preExistingNetwork(tok, o, spec, nets, fail); chosen == nil {
		return
	}
	r.rel.set(o, trueCondition("NetworkReady"))

	api := r.rel.apiServer(spec)
	if managed, ok := spec["managedSecurityGroups"].(map[string]any); ok {
		if err := r.reconcileSecurityGroups(tok, o, managed, api.port); err != nil {
			fail(fmt.Errorf("failed to reconcile security groups: %w", err),
				falseCondition("SecurityGroupsReady", "SecurityGroupCreateFailed", severityError, "Failed to reconcile security groups: "+err.Error()))
			return
		}
		r.rel.set(o, trueCondition("SecurityGroupsReady"))
	}
	host, port := "", api.port
	endpointFailed := func(err error) {
		fail(err, falseCondition("APIEndpointReady", "APIEndpointConfigFailed", severityError, "Failed to reconcile control plane endpoint: "+err.Error()))
	}
	switch {
	case api.managedLB:
		lb, err := r.ensureAPILoadBalancer(tok, o, lbName, str(chosen[0], "id"), api)
		if err != nil {
			endpointFailed(fmt.Errorf("failed to reconcile load balancer: %w", err))
			return
		}
		host = str(lb, "ip")
		if host == "" {
			host = str(lb, "internalIP")
		}
		if _, ok := lb["ip"]; !ok && r.rel.v1beta1() {
			// v0.14.7's LoadBalancer status has ip without omitempty:
			// empty without a floating IP, and its CRD requires it.
			// v1beta2's omits it, and v0.15.0-beta.0's CRD then refuses
			// the status (ip is required, of at least one character).
			lb["ip"] = ""
		}
		_ = unstructured.SetNestedMap(o.Object, lb, "status", r.rel.loadBalancerStatus())
	case api.floatingIP != "":
		host = api.floatingIP
	case !api.floatingIPDisabled && !r.rel.externalNetworkDisabled(spec):
		// Without a load balancer CAPO makes the API's floating IP
		// itself, unattached (reconcileControlPlaneEndpoint, v0.14.7);
		// the first control-plane machine takes it
		// (reconcileAPIServerLoadBalancer).
		fip, err := r.apiFloatingIP(tok, o)
		if err != nil {
			endpointFailed(fmt.Errorf("floating IP cannot be got or created: %w", err))
			return
		}
		host = str(fip, "floating_ip_address")
	default:
		endpointFailed(fmt.Errorf("unable to determine control plane endpoint"))
		return
	}
	if w := r.workloadsOf(); w != nil {
		// The load balancer's address stands for the API server that
		// kubeadm init will bring up behind it: the cluster's front door.
		p, err := w.endpointPort(o.GetNamespace() + "/" + o.GetName())
		if err != nil {
			endpointFailed(err)
			return
		}
		host, port = "127.0.0.1", int64(p)
	}
	if err := r.failureDomains(tok, o); err != nil {
		return
	}
	status := o.Object["status"]
	_ = unstructured.SetNestedMap(o.Object, map[string]any{"host": host, "port": port}, "spec", "controlPlaneEndpoint")
	written, ok := r.update(ctx, gvr, o)
	if !ok {
		return
	}
	o = written
	o.Object["status"] = status
	r.rel.set(o, trueCondition("APIEndpointReady"), trueCondition("Ready"))
	r.rel.markProvisioned(o)
	if r.rel.v1beta1() {
		unstructured.RemoveNestedField(o.Object, "status", "failureReason")
		unstructured.RemoveNestedField(o.Object, "status", "failureMessage")
	}
	write()
}

// reconcileExternalNetwork is ReconcileExternalNetwork
// (pkg/cloud/services/networking/network.go at v0.14.7): none when
// disabled; the one named (among external networks only); with none
// named, the only external network there is, none when there is none, and
// "filter matched more than one resource" when there are several.
func (r *reconciler) reconcileExternalNetwork(o *unstructured.Unstructured, spec map[string]any, nets []map[string]any) error {
	if r.rel.externalNetworkDisabled(spec) {
		unstructured.RemoveNestedField(o.Object, "status", "externalNetwork")
		return nil
	}
	var external []map[string]any
	for _, n := range nets {
		if n["router:external"] == true {
			external = append(external, n)
		}
	}
	var n map[string]any
	if ref, ok := spec["externalNetwork"].(map[string]any); ok {
		var err error
		if n, err = byFilter(ref, external); err != nil {
			return fmt.Errorf("failed to get external network: %w", err)
		}
	} else {
		switch len(external) {
		case 0:
			unstructured.RemoveNestedField(o.Object, "status", "externalNetwork")
			return nil
		case 1:
			n = external[0]
		default:
			return fmt.Errorf("failed to get external network: filter matched more than one resource")
		}
	}
	_ = unstructured.SetNestedMap(o.Object, map[string]any{"id": n["id"], "name": n["name"]}, "status", "externalNetwork")
	return nil
}

// failureDomains publishes Nova's available zones as the cluster's failure
// domains, each for control planes unless controlPlaneOmitAvailabilityZone
// says none or controlPlaneAvailabilityZones names others
// (reconcileNormal, pkg/cloud/services/compute/availabilityzone.go).
func (r *reconciler) failureDomains(tok string, o *unstructured.Unstructured) error {
	var out struct {
		Zones []struct {
			Name  string `json:"zoneName"`
			State struct {
				Available bool `json:"available"`
			} `json:"zoneState"`
		} `json:"availabilityZoneInfo"`
	}
	if err := r.cloud.Do(tok, "GET", "/compute/v2.1/os-availability-zone", nil, &out); err != nil {
		return fmt.Errorf("error extracting availability zone list: %v", err)
	}
	omit, _, _ := unstructured.NestedBool(o.Object, "spec", "controlPlaneOmitAvailabilityZone")
	only, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "controlPlaneAvailabilityZones")
	domains := map[string]bool{}
	for _, z := range out.Zones {
		if !z.State.Available {
			continue
		}
		domains[z.Name] = !omit
		if len(only) > 0 {
			domains[z.Name] = slices.Contains(only, z.Name)
		}
	}
	r.rel.failureDomains(o, domains)
	return nil
}

// preExistingNetwork resolves the cluster's own network and subnets by ID
// or filter, sets status.network and returns the subnets, or nil when it
// failed (and said so).
func (r *reconciler) preExistingNetwork(tok string, o *unstructured.Unstructured, spec map[string]any, nets []map[string]any,
	fail func(err error, step ...condition)) []map[string]any {
	netRef, _ := spec["network"].(map[string]any)
	n, err := byFilter(netRef, nets)
	if err != nil {
		fail(fmt.Errorf("failed to find network: %w", err), falseCondition("NetworkReady", reasonOpenStackError, severityError, "Failed to find network: "+err.Error()))
		return nil
	}
	subs, err := r.list(tok, "/networking/v2.0/subnets?network_id="+str(n, "id"), "subnets")
	if err != nil {
		return nil
	}
	var chosen []map[string]any
	if refs, ok := spec["subnets"].([]any); ok && len(refs) > 0 {
		for _, r := range refs {
			s, err := byFilter(r.(map[string]any), subs)
			if err != nil {
				fail(err, falseCondition("NetworkReady", reasonOpenStackError, severityError, "Failed to get cluster subnets: "+err.Error()))
				return nil
			}
			chosen = append(chosen, s)
		}
	} else {
		chosen = subs
	}
	if len(chosen) == 0 {
		err := fmt.Errorf("no subnets found for network %s", str(n, "id"))
		fail(err, falseCondition("NetworkReady", reasonOpenStackError, severityError, "Failed to get cluster subnets: "+err.Error()))
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
func (c *Controller) ensureAPILoadBalancer(tok string, o *unstructured.Unstructured, name, subnetID string, api apiServer) (map[string]any, error) {
	port := api.port
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
		pool, err := c.cloud.Create(tok, "/load-balancer/v2.0/lbaas/pools", "pool", map[string]any{
			"name": child, "listener_id": str(listener, "id"), "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"})
		if err != nil {
			return nil, err
		}
		if err := c.waitLB(tok, id); err != nil {
			return nil, err
		}
		// ensureMonitor, with the defaults of APIServerLoadBalancerMonitor
		// (pkg/cloud/services/loadbalancer/loadbalancer.go, v0.14.7).
		if _, err := c.cloud.Create(tok, "/load-balancer/v2.0/lbaas/healthmonitors", "healthmonitor", map[string]any{
			"name": child, "pool_id": str(pool, "id"), "type": "TCP", "delay": 10, "timeout": 5,
			"max_retries": 5, "max_retries_down": 3}); err != nil {
			return nil, err
		}
		if err := c.waitLB(tok, id); err != nil {
			return nil, err
		}
	}
	status := map[string]any{"name": name, "id": id, "internalIP": str(lb, "vip_address")}
	if api.floatingIPDisabled {
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

// apiFloatingIP gets or makes the floating IP of a cluster's API without a
// load balancer on its external network, with the description CAPO gives
// what it makes for a cluster.
func (r *reconciler) apiFloatingIP(tok string, o *unstructured.Unstructured) (map[string]any, error) {
	ext, _, _ := unstructured.NestedString(o.Object, "status", "externalNetwork", "id")
	if ext == "" {
		return nil, fmt.Errorf("no external network")
	}
	description := "Created by cluster-api-provider-openstack cluster " + resourceName(o)
	fip, _, err := r.firstOrCreate(tok, "/networking/v2.0/floatingips", "description="+url.QueryEscape(description), "floatingip",
		map[string]any{"floating_network_id": ext, "description": description})
	return fip, err
}

// deleteAPILoadBalancer is CAPO's DeleteLoadBalancer
// (pkg/cloud/services/loadbalancer/loadbalancer.go, v0.14.7 and
// v0.15.0-beta.0), which its cluster delete runs only for a cluster with
// an API load balancer: it looks for a floating IP on the load balancer's
// VIP port by listing Neutron's floating IPs (a Neutron without its L3
// extension answers 404, and CAPO retries the delete for ever), deletes it
// unless the user gave it, then deletes the load balancer, cascading. It
// returns nil once the load balancer is gone.
func (c *Controller) deleteAPILoadBalancer(tok, name string, api apiServer) error {
	if !api.managedLB {
		return nil
	}
	lbs, err := c.list(tok, "/load-balancer/v2.0/lbaas/loadbalancers?name="+name, "loadbalancers")
	if err != nil || len(lbs) == 0 {
		return err
	}
	lb := lbs[0]
	if str(lb, "provisioning_status") == "PENDING_DELETE" {
		return fmt.Errorf("load balancer %s is being deleted", name)
	}
	if port := str(lb, "vip_port_id"); port != "" {
		fips, err := c.list(tok, "/networking/v2.0/floatingips?port_id="+port, "floatingips")
		if err != nil {
			return err
		}
		for _, f := range fips {
			if str(f, "floating_ip_address") == api.floatingIP {
				continue // the user's own
			}
			if err := c.cloud.Do(tok, "DELETE", "/networking/v2.0/floatingips/"+str(f, "id"), nil, nil); err != nil {
				return err
			}
		}
	}
	_ = c.cloud.Do(tok, "DELETE", "/load-balancer/v2.0/lbaas/loadbalancers/"+str(lb, "id")+"?cascade=true", nil, nil)
	return fmt.Errorf("load balancer %s is being deleted", name)
}

// apiPool is the API load balancer's pool of a cluster with a managed
// one (nil when it has none or it is not there yet): named after the
// load balancer and its listener's port, as CAPO names it.
// It returns the listener's port too.
func (r *reconciler) apiPool(tok string, osc *unstructured.Unstructured) (map[string]any, int64, error) {
	spec, _ := osc.Object["spec"].(map[string]any)
	api := r.rel.apiServer(spec)
	lbName, _, _ := unstructured.NestedString(osc.Object, "status", r.rel.loadBalancerStatus(), "name")
	if !api.managedLB || lbName == "" {
		return nil, 0, nil
	}
	pools, err := r.list(tok, fmt.Sprintf("/load-balancer/v2.0/lbaas/pools?name=%s-%d", lbName, api.port), "pools")
	if err != nil || len(pools) == 0 {
		return nil, 0, err
	}
	return pools[0], api.port, nil
}

// reconcileLoadBalancerMember puts a control-plane machine's address in
// the API load balancer's pool under the name CAPO gives it, replacing a
// member of that name with another address
// (ReconcileLoadBalancerMember, pkg/cloud/services/loadbalancer/loadbalancer.go, v0.14.7).
func (r *reconciler) reconcileLoadBalancerMember(tok string, osc, o *unstructured.Unstructured, ip string) error {
	pool, port, err := r.apiPool(tok, osc)
	if err != nil || pool == nil {
		return err
	}
	name := str(pool, "name") + "-" + o.GetName()
	path := "/load-balancer/v2.0/lbaas/pools/" + str(pool, "id") + "/members"
	members, err := r.list(tok, path+"?name="+name, "members")
	if err != nil {
		return err
	}
	lbID, _, _ := unstructured.NestedString(osc.Object, "status", r.rel.loadBalancerStatus(), "id")
	for _, m := range members {
		if str(m, "address") == ip {
			return nil
		}
		if err := r.cloud.Do(tok, "DELETE", path+"/"+str(m, "id"), nil, nil); err != nil {
			return err
		}
		if err := r.waitLB(tok, lbID); err != nil {
			return err
		}
	}
	if _, err := r.cloud.Create(tok, path, "member", map[string]any{"name": name, "address": ip, "protocol_port": port}); err != nil {
		return err
	}
	return r.waitLB(tok, lbID)
}

// deleteLoadBalancerMember takes a control-plane machine out of the API
// load balancer's pool (DeleteLoadBalancerMember, same file).
func (r *reconciler) deleteLoadBalancerMember(tok string, osc, o *unstructured.Unstructured) error {
	pool, _, err := r.apiPool(tok, osc)
	if err != nil || pool == nil {
		return err
	}
	path := "/load-balancer/v2.0/lbaas/pools/" + str(pool, "id") + "/members"
	members, err := r.list(tok, path+"?name="+str(pool, "name")+"-"+o.GetName(), "members")
	if err != nil {
		return err
	}
	lbID, _, _ := unstructured.NestedString(osc.Object, "status", r.rel.loadBalancerStatus(), "id")
	for _, m := range members {
		if err := r.waitLB(tok, lbID); err != nil {
			return err
		}
		if err := r.cloud.Do(tok, "DELETE", path+"/"+str(m, "id"), nil, nil); err != nil && !notFound(err) {
			return err
		}
	}
	return nil
}
