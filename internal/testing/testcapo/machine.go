package testcapo

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Condition types and reasons of CAPO's api/v1beta1/conditions_consts.go
// (the same strings in v1beta2).
const (
	instanceReady          = "InstanceReady"
	apiServerIngressReady  = "APIServerIngressReadyCondition"
	reasonWaitingInfra     = "WaitingForClusterInfrastructure"
	reasonWaitingBootstrap = "WaitingForBootstrapData"
	reasonCreateFailed     = "InstanceCreateFailed"
	reasonNotFound         = "InstanceNotFound"
	reasonStateError       = "InstanceStateError"
	reasonDeleted          = "InstanceDeleted"
	reasonNotReady         = "InstanceNotReady"
	reasonOpenStackError   = "OpenStackError"
	reasonDependencyFailed = "DependencyFailed"
	reasonPortCreateFailed = "PortCreateFailed"
	msgUnexpectedlyDeleted = "The server was unexpectedly deleted"
	// updateError is v1beta1's DeprecatedCAPIUpdateMachineError
	// (pkg/utils/errors/errors.go), the failureReason v0.14.7 sets.
	updateError = "UpdateError"
)

// reconcileMachine does what CAPO's OpenStackMachine controller does
// (controllers/openstackmachine_controller.go at v0.14.7 and
// v0.15.0-beta.0): wait for the cluster's infrastructure and the bootstrap
// data, make the machine's OpenStackServer, and once its server is up
// report it (provider ID, addresses, provisioned); at delete, delete the
// OpenStackServer and wait for it to go.
func (r *reconciler) reconcileMachine(ctx context.Context, o *unstructured.Unstructured) {
	gvr := r.rel.gvr("openstackmachines")
	ns := o.GetNamespace()
	machine := r.ownerMachine(o)
	if machine == nil {
		return // "Machine Controller has not yet set OwnerRef"
	}
	capiCluster, ok := cached(r.clusters, ns, machine.GetLabels()[labelCluster])
	if !ok {
		return
	}
	infraName, _, _ := unstructured.NestedString(capiCluster.Object, "spec", "infrastructureRef", "name")
	osc, ok := cached(r.openStackClusters, ns, infraName)
	if !ok {
		return
	}
	// The machine's own identityRef, else the cluster's.
	ident := o
	if name, _, _ := unstructured.NestedString(o.Object, "spec", "identityRef", "name"); name == "" {
		ident = osc
	}
	tok, err := r.token(ctx, ns, ident)
	if err != nil {
		if r.copiesServerState() {
			r.rel.set(o, falseCondition("OpenStackAuthenticationSucceeded", "OpenStackAuthenticationFailed", severityError,
				"Failed to create OpenStack client scope: "+err.Error()))
			r.updateStatus(ctx, r.rel.gvr("openstackmachines"), o)
		}
		return
	}
	if r.copiesServerState() {
		r.rel.set(o, trueCondition("OpenStackAuthenticationSucceeded"))
	}
	if o.GetDeletionTimestamp() != nil {
		r.deleteMachine(ctx, tok, o, osc)
		return
	}
	if r.machineGaveUp(o) {
		return // "Not reconciling machine in failed state"
	}
	write := func() {
		types := []string{instanceReady}
		if _, cp := machine.GetLabels()[labelCPMember]; cp {
			types = append(types, apiServerIngressReady)
		}
		r.rel.summarize(o, types...)
		r.updateStatus(ctx, gvr, o)
	}
	if !r.rel.provisioned(osc) {
		r.rel.set(o, falseCondition(instanceReady, reasonWaitingInfra, severityInfo, ""))
		write()
		return
	}
	secret, _, _ := unstructured.NestedString(machine.Object, "spec", "bootstrap", "dataSecretName")
	if secret == "" {
		r.rel.set(o, falseCondition(instanceReady, reasonWaitingBootstrap, severityInfo, ""))
		write()
		return
	}
	if !slices.Contains(o.GetFinalizers(), machineFinal) {
		r.addFinalizer(ctx, gvr, o, machineFinal) // and come back, as CAPO returns after adding it
		return
	}
	server, err := r.machineServer(ctx, o, osc, machine, secret)
	if err != nil {
		r.t.Logf("testcapo: OpenStackServer of %s: %v", o.GetName(), err)
		return
	}
	// v0.14.7 waits, saying nothing, until the OpenStackServer is Ready:
	// a server that failed before it was ever ACTIVE leaves its machine
	// waiting for ever (reconcileMachineServer). v0.15 and main first copy
	// the server's state onto the machine (reconcileMachineState, "to
	// propagate any errors from the OpenStackServer").
	copiesServerState := r.copiesServerState()
	if copiesServerState {
		if !r.machineState(o, machine, server) {
			write()
			return
		}
	} else if ready, _, _ := unstructured.NestedBool(server.Object, "status", "ready"); !ready {
		return
	}
	id, _, _ := unstructured.NestedString(server.Object, "status", "instanceID")
	var got struct {
		Server map[string]any `json:"server"`
	}
	if err := r.cloud.Do(tok, "GET", "/compute/v2.1/servers/"+id, nil, &got); err != nil {
		if !notFound(err) {
			return
		}
		r.rel.set(o, falseCondition(instanceReady, reasonDeleted, severityError, msgUnexpectedlyDeleted),
			falseCondition("Ready", reasonDeleted, severityError, msgUnexpectedlyDeleted))
		if r.rel.v1beta1() {
			setFailure(o, updateError, msgUnexpectedlyDeleted)
		}
		write()
		return
	}
	addrs := addresses(got.Server)
	_ = unstructured.SetNestedSlice(o.Object, addrs, "status", "addresses")
	if _, cp := machine.GetLabels()[labelCPMember]; cp {
		// reconcileAPIServerLoadBalancer (controllers/openstackmachine_controller.go, v0.14.7).
		if err := r.reconcileLoadBalancerMember(tok, osc, o, str(addrs[0].(map[string]any), "address")); err != nil {
			r.rel.set(o, falseCondition(apiServerIngressReady, "LoadBalancerMemberError", severityError,
				"Reconciling load balancer member failed: "+err.Error()))
			write()
			return
		}
		if err := r.attachAPIFloatingIP(tok, osc, id); err != nil {
			r.rel.set(o, falseCondition(apiServerIngressReady, "FloatingIPError", severityError,
				"Associating floating IP failed: "+err.Error()))
			write()
			return
		}
		r.rel.set(o, trueCondition(apiServerIngressReady))
	}
	if !copiesServerState && !r.machineState(o, machine, server) {
		write()
		return
	}
	if _, ok, _ := unstructured.NestedString(o.Object, "spec", "providerID"); !ok {
		// "openstack://<region>/<id>", the region of the machine's
		// identityRef, which Magnetite does not set.
		region, _, _ := unstructured.NestedString(o.Object, "spec", "identityRef", "region")
		status := o.Object["status"]
		_ = unstructured.SetNestedField(o.Object, fmt.Sprintf("openstack://%s/%s", region, id), "spec", "providerID")
		written, ok := r.update(ctx, gvr, o)
		if !ok {
			return
		}
		o = written
		o.Object["status"] = status
	}
	write()
	r.kubelet(ctx, osc, o)
}

// machineState sets the machine's status from its OpenStackServer's as
// reconcileMachineState does, and reports whether the server is ACTIVE.
// Only then does CAPO set status.instanceID, the provider ID and
// provisioned: a building server's machine has no instance ID.
func (r *reconciler) machineState(o, machine, server *unstructured.Unstructured) bool {
	state, hasState, _ := unstructured.NestedString(server.Object, "status", "instanceState")
	if !hasState {
		// v0.15.0-beta.0: no server yet, say why if the server says so.
		if status, reason, msg := get(server, instanceReady); status == "False" {
			r.rel.set(o, falseCondition(instanceReady, reason, severityError, msg), falseCondition("Ready", reason, severityError, msg))
		} else {
			const waiting = "Waiting for instance to be created"
			r.rel.set(o, falseCondition(instanceReady, reasonNotReady, severityInfo, waiting), falseCondition("Ready", reasonNotReady, severityInfo, waiting))
		}
		return false
	}
	switch state {
	case "ACTIVE":
		id, _, _ := unstructured.NestedString(server.Object, "status", "instanceID")
		_ = unstructured.SetNestedField(o.Object, id, "status", "instanceID")
		r.rel.markProvisioned(o)
		r.rel.set(o, trueCondition(instanceReady), trueCondition("Ready"))
		return true
	case "ERROR":
		if !r.copiesServerState() {
			// A machine whose server worked once (it has a node) may
			// recover; one that never did gets a permanent failure, whose
			// message prints the state's pointer, as v0.14.7's
			// fmt.Errorf("instance state %v is unexpected",
			// openStackServer.Status.InstanceState) does.
			if node, _, _ := unstructured.NestedString(machine.Object, "status", "nodeRef", "name"); node == "" {
				setFailure(o, updateError, fmt.Sprintf("instance state %v is unexpected", &state))
			}
			// MarkFalse(Ready, ..., "Instance is in ERROR state") is
			// overwritten by the summary of InstanceReady, whose message
			// is empty.
			r.rel.set(o, falseCondition(instanceReady, reasonStateError, severityError, ""))
			return false
		}
		// v0.15.0-beta.0 and main: the server's message, if it has one
		// (a refused create's), else "Instance is in ERROR state". Nova's
		// fault never reaches it.
		msg := "Instance is in ERROR state"
		if _, _, m := get(server, instanceReady); m != "" {
			msg = m
		}
		r.rel.set(o, falseCondition(instanceReady, reasonStateError, severityError, msg), falseCondition("Ready", reasonStateError, severityError, msg))
		return false
	case "DELETED":
		r.rel.set(o, falseCondition(instanceReady, reasonDeleted, severityError, ""), falseCondition("Ready", reasonDeleted, severityError, "Instance has been deleted"))
		return false
	case "BUILD", "":
		r.rel.set(o, falseCondition("Ready", reasonNotReady, severityInfo, "Instance is building"))
		return false
	}
	r.rel.set(o, condition{typ: instanceReady, status: "Unknown", reason: reasonNotReady, message: "Instance state is not handled: " + state},
		condition{typ: "Ready", status: "Unknown", reason: reasonNotReady, message: "Instance state is: " + state})
	return false
}

// ownerMachine is the Cluster API Machine that owns an infrastructure
// machine, or nil.
func (r *reconciler) ownerMachine(o *unstructured.Unstructured) *unstructured.Unstructured {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Machine" {
			if m, ok := cached(r.machines, o.GetNamespace(), ref.Name); ok {
				return m
			}
		}
	}
	return nil
}

// machineServer gets the machine's OpenStackServer, named as the machine,
// or makes it from the machine's spec as getOrCreateMachineServer does:
// the cluster's network (and its spec's subnets as fixed IPs) on ports
// that name none, the managed security group of the machine's role on
// ports without groups whose port security is not disabled, the machine's
// failure domain as availability zone, the bootstrap Secret as user data.
// The server's spec never changes after.
func (r *reconciler) machineServer(ctx context.Context, o, osc, machine *unstructured.Unstructured, secret string) (*unstructured.Unstructured, error) {
	if s, ok := cached(r.servers, o.GetNamespace(), o.GetName()); ok {
		return s, nil
	}
	ms, _, _ := unstructured.NestedMap(o.Object, "spec")
	identity, ok := ms["identityRef"]
	if !ok {
		identity, _, _ = unstructured.NestedMap(osc.Object, "spec", "identityRef")
	}
	spec := map[string]any{"identityRef": identity, "image": ms["image"], "sshKeyName": str(ms, "sshKeyName"),
		"userDataRef": map[string]any{"name": secret}}
	for _, k := range []string{"rootVolume", "serverMetadata", "serverGroup", "configDrive", "additionalBlockDevices", "schedulerHintAdditionalProperties"} {
		if v, ok := ms[k]; ok {
			spec[k] = v
		}
	}
	if name, id := r.rel.serverFlavor(ms); id != "" {
		spec["flavorID"] = id
	} else if name != "" {
		spec["flavor"] = name
	}
	if tags := instanceTags(ms, osc); len(tags) > 0 {
		spec["tags"] = tags
	}
	if fd, _, _ := unstructured.NestedString(machine.Object, "spec", "failureDomain"); fd != "" {
		spec["availabilityZone"] = fd
	}
	if trunk, _ := ms["trunk"].(bool); trunk {
		spec["trunk"] = true
	}
	clusterNet, _, _ := unstructured.NestedString(osc.Object, "status", "network", "id")
	portSpecs, _ := ms["ports"].([]any)
	if clusterNet == "" && len(portSpecs) == 0 {
		return nil, fmt.Errorf("no network configured: cluster network is missing and machine spec does not define ports with a network")
	}
	if len(portSpecs) == 0 {
		portSpecs = []any{map[string]any{}}
	}
	clusterSubnets, _, _ := unstructured.NestedSlice(osc.Object, "spec", "subnets")
	managedSG := ""
	if _, ok := osc.Object["spec"].(map[string]any)["managedSecurityGroups"]; ok {
		role := "workerSecurityGroup"
		if _, cp := machine.GetLabels()[labelCPMember]; cp {
			role = "controlPlaneSecurityGroup"
		}
		managedSG, _, _ = unstructured.NestedString(osc.Object, "status", role, "id")
	}
	machineSGs, _ := ms["securityGroups"].([]any)
	var ports []any
	for _, ps := range portSpecs {
		p := runtime.DeepCopyJSONValue(ps).(map[string]any)
		if _, ok := p["network"]; !ok && clusterNet != "" {
			p["network"] = map[string]any{"id": clusterNet}
			if len(clusterSubnets) > 0 {
				var fixed []any
				for _, sn := range clusterSubnets {
					fixed = append(fixed, map[string]any{"subnet": sn})
				}
				p["fixedIPs"] = fixed
			}
		}
		set, enabled := r.rel.portSecurity(p)
		sgs, _ := p["securityGroups"].([]any)
		if (!set || enabled) && len(sgs) == 0 && managedSG != "" {
			sgs = []any{map[string]any{"id": managedSG}}
		}
		sgs = append(sgs, machineSGs...)
		if len(sgs) > 0 {
			p["securityGroups"] = sgs
		}
		ports = append(ports, p)
	}
	spec["ports"] = ports
	s := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": serversGVR.GroupVersion().String(), "kind": "OpenStackServer",
		"metadata": map[string]any{"name": o.GetName(), "namespace": o.GetNamespace(),
			"labels": map[string]any{labelCluster: osc.GetLabels()[labelCluster]},
			"ownerReferences": []any{map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(),
				"name": o.GetName(), "uid": string(o.GetUID())}}},
		"spec": spec}}
	return r.dc.Resource(serversGVR).Namespace(o.GetNamespace()).Create(ctx, s, metav1.CreateOptions{})
}

// instanceTags are the machine's and the cluster's tags, each once
// (pkg/cloud/services/compute/referenced_resources.go, InstanceTags).
func instanceTags(machineSpec map[string]any, osc *unstructured.Unstructured) []any {
	clusterTags, _, _ := unstructured.NestedStringSlice(osc.Object, "spec", "tags")
	machineTags, _, _ := unstructured.NestedStringSlice(machineSpec, "tags")
	var out []any
	seen := map[string]bool{}
	for _, t := range append(machineTags, clusterTags...) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// deleteMachine is reconcileDelete: nothing to do when the cluster's
// infrastructure never came up; otherwise delete the OpenStackServer and
// keep the finalizer until it is gone, taking the machine out of the API
// load balancer's pool first.
func (r *reconciler) deleteMachine(ctx context.Context, tok string, o, osc *unstructured.Unstructured) {
	gvr := r.rel.gvr("openstackmachines")
	netID, _, _ := unstructured.NestedString(osc.Object, "status", "network", "id")
	if !r.rel.provisioned(osc) || netID == "" {
		r.removeFinalizer(ctx, gvr, o, machineFinal)
		return
	}
	if err := r.deleteLoadBalancerMember(tok, osc, o); err != nil {
		r.rel.set(o, falseCondition(apiServerIngressReady, "LoadBalancerMemberError", severityWarning,
			"Machine could not be removed from load balancer: "+err.Error()))
		r.updateStatus(ctx, gvr, o)
		return
	}
	if err := r.deleteMachineFloatingIPs(ctx, tok, osc, o); err != nil {
		r.rel.set(o, falseCondition(apiServerIngressReady, "FloatingIPError", severityError, "Deleting floating IP failed: "+err.Error()))
		r.updateStatus(ctx, gvr, o)
		return
	}
	servers := r.dc.Resource(serversGVR).Namespace(o.GetNamespace())
	s, err := servers.Get(ctx, o.GetName(), metav1.GetOptions{})
	if isNotFound(err) {
		r.removeFinalizer(ctx, gvr, o, machineFinal)
		return
	}
	if err == nil && s.GetDeletionTimestamp() == nil {
		if err := servers.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
			r.rel.set(o, falseCondition(instanceReady, "InstanceDeleteFailed", severityError, "Deleting instance failed: "+err.Error()))
			r.updateStatus(ctx, gvr, o)
		}
	}
}

// addresses are a Nova server's addresses as the machine's status lists
// them, with the server's name as InternalDNS (for CSR approval, as CAPO
// says).
func addresses(s map[string]any) []any {
	var addrs []any
	if nets, ok := s["addresses"].(map[string]any); ok {
		for _, list := range nets {
			for _, a := range list.([]any) {
				addrs = append(addrs, map[string]any{"type": "InternalIP", "address": a.(map[string]any)["addr"]})
			}
		}
	}
	return append(addrs, map[string]any{"type": "InternalDNS", "address": str(s, "name")})
}

// attachAPIFloatingIP gives a control-plane machine's server the floating
// IP CAPO made for a cluster's API without a load balancer, unless a
// machine has it already (reconcileAPIServerLoadBalancer,
// controllers/openstackmachine_controller.go, v0.14.7; CAPO finds it by
// the control plane endpoint's address, which the stand-in replaces with
// its workload API server's, so it is found by its description here).
func (r *reconciler) attachAPIFloatingIP(tok string, osc *unstructured.Unstructured, serverID string) error {
	spec, _ := osc.Object["spec"].(map[string]any)
	if api := r.rel.apiServer(spec); api.managedLB || api.floatingIPDisabled || r.rel.externalNetworkDisabled(spec) {
		return nil
	}
	fip, err := r.apiFloatingIP(tok, osc)
	if err != nil || str(fip, "port_id") != "" {
		return err
	}
	ports, err := r.list(tok, "/networking/v2.0/ports?device_id="+serverID, "ports")
	if err != nil || len(ports) == 0 {
		return err
	}
	return r.cloud.Do(tok, "PUT", "/networking/v2.0/floatingips/"+str(fip, "id"),
		map[string]any{"floatingip": map[string]any{"port_id": str(ports[0], "id")}}, nil)
}

// deleteMachineFloatingIPs deletes the floating IPs on a machine's server
// (its external addresses) when the cluster names no API floating IP of
// its own: what CAPO v0.14.7's machine delete does (reconcileDelete), which
// takes the API's floating IP with the control-plane machine that had it.
func (r *reconciler) deleteMachineFloatingIPs(ctx context.Context, tok string, osc, o *unstructured.Unstructured) error {
	spec, _ := osc.Object["spec"].(map[string]any)
	if r.rel.apiServer(spec).floatingIP != "" || r.rel.externalNetworkDisabled(spec) {
		return nil
	}
	s, err := r.dc.Resource(serversGVR).Namespace(o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil // no server, no addresses
	}
	id, _, _ := unstructured.NestedString(s.Object, "status", "instanceID")
	if id == "" {
		return nil
	}
	ports, err := r.list(tok, "/networking/v2.0/ports?device_id="+id, "ports")
	if err != nil {
		return err
	}
	for _, p := range ports {
		fips, err := r.list(tok, "/networking/v2.0/floatingips?port_id="+str(p, "id"), "floatingips")
		if err != nil {
			return err
		}
		for _, f := range fips {
			if err := r.cloud.Do(tok, "DELETE", "/networking/v2.0/floatingips/"+str(f, "id"), nil, nil); err != nil && !notFound(err) {
				return err
			}
		}
	}
	return nil
}
