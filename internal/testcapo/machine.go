package testcapo

import (
	"context"
	"fmt"
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// reconcileMachine does what CAPO's OpenStackMachine and OpenStackServer
// controllers do: wait for the cluster's infrastructure and the bootstrap
// data, resolve the server group, image and flavor, make the ports, the
// root volume and the server, then report the server's state; at delete,
// remove the load balancer member, the server, its ports and volume.
func (c *Controller) reconcileMachine(ctx context.Context, o *unstructured.Unstructured) {
	ns, clusterName := o.GetNamespace(), o.GetLabels()[labelCluster]
	if clusterName == "" {
		return
	}
	capiCluster, err := c.dc.Resource(Clusters).Namespace(ns).Get(ctx, clusterName, metav1.GetOptions{})
	if err != nil {
		return
	}
	infraName, _, _ := unstructured.NestedString(capiCluster.Object, "spec", "infrastructureRef", "name")
	osc, err := c.dc.Resource(clustersGVR).Namespace(ns).Get(ctx, infraName, metav1.GetOptions{})
	if err != nil {
		return
	}
	// The machine's own identityRef, else the cluster's.
	ident := o
	if name, _, _ := unstructured.NestedString(o.Object, "spec", "identityRef", "name"); name == "" {
		ident = osc
	}
	tok, err := c.token(ctx, ns, ident)
	if err != nil {
		return
	}
	serverName := o.GetName()
	if o.GetDeletionTimestamp() != nil {
		if c.deleteServer(tok, osc, o, serverName) == nil {
			c.removeFinalizer(ctx, OpenStackMachines, o, machineFinal)
		}
		return
	}
	if id, _, _ := unstructured.NestedString(o.Object, "status", "instanceID"); id != "" {
		c.kubelet(ctx, osc, o)
		c.reportServer(ctx, tok, o, id)
		return
	}
	if prov, _, _ := unstructured.NestedBool(osc.Object, "status", "initialization", "provisioned"); !prov {
		setConditions(o, condition("InstanceReady", false, "WaitingForClusterInfrastructure", ""))
		c.updateStatus(ctx, OpenStackMachines, o)
		return
	}
	var machine *unstructured.Unstructured
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Machine" {
			machine, _ = c.dc.Resource(Machines).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		}
	}
	if machine == nil {
		return
	}
	secret, _, _ := unstructured.NestedString(machine.Object, "spec", "bootstrap", "dataSecretName")
	if secret == "" {
		setConditions(o, condition("InstanceReady", false, "WaitingForBootstrapData", ""))
		c.updateStatus(ctx, OpenStackMachines, o)
		return
	}
	o, ok := c.addFinalizer(ctx, OpenStackMachines, o, machineFinal)
	if !ok {
		return
	}
	fail := func(reason, msg string) {
		setConditions(o, condition("InstanceReady", false, reason, msg), condition("Ready", false, reason, msg))
		c.updateStatus(ctx, OpenStackMachines, o)
	}
	spec, _, _ := unstructured.NestedMap(o.Object, "spec")
	resolved, err := c.resolve(tok, spec)
	if err != nil {
		fail("DependencyFailed", "Failed to resolve server spec: "+err.Error())
		return
	}
	ports, err := c.ensurePorts(tok, osc, o, spec, serverName)
	if err != nil {
		fail("PortCreateFailed", err.Error())
		return
	}
	id, err := c.createServer(tok, spec, resolved, ports, serverName)
	if err != nil {
		fail("InstanceCreateFailed", "create OpenStack instance: error creating Openstack instance: "+err.Error())
		return
	}
	_ = unstructured.SetNestedField(o.Object, id, "status", "instanceID")
	c.updateStatus(ctx, OpenStackMachines, o)
}

// resolved are the IDs a machine's references resolve to.
type resolved struct{ flavor, image, serverGroup string }

// resolve finds the server group, image and flavor as CAPO's
// ResolveServerSpec does: IDs as given, names looked up.
func (c *Controller) resolve(tok string, spec map[string]any) (resolved, error) {
	var r resolved
	var err error
	if sg, ok := spec["serverGroup"].(map[string]any); ok {
		name := filterName(sg)
		r.serverGroup, err = c.byRef(tok, sg, "/compute/v2.1/os-server-groups", "server_groups",
			fmt.Errorf("no server group with name %s could be found", name), fmt.Errorf("too many server groups with name %s were found", name))
		if err != nil {
			return r, err
		}
	}
	img, _ := spec["image"].(map[string]any)
	name := filterName(img)
	r.image, err = c.byRef(tok, img, "/image/v2/images?name="+url.QueryEscape(name), "images",
		fmt.Errorf("no images were found with the given image filter: name=%v, tags=[]", name),
		fmt.Errorf("too many images were found with the given image filter: name=%v, tags=[]", name))
	if err != nil {
		return r, err
	}
	fl, _ := spec["flavor"].(map[string]any)
	if id := str(fl, "id"); id != "" {
		r.flavor = id
	} else {
		name := filterName(fl)
		if name == "" {
			return r, fmt.Errorf("no flavors were found: no name set")
		}
		flavors, err := c.list(tok, "/compute/v2.1/flavors/detail", "flavors")
		if err != nil {
			return r, err
		}
		for _, f := range flavors {
			if f["name"] == name {
				r.flavor = str(f, "id")
				return r, nil
			}
		}
		return r, fmt.Errorf("no flavors were found: name=%v", name)
	}
	return r, nil
}

// ensurePorts makes the machine's ports (one on the cluster network unless
// spec.ports says otherwise), named <server>-<index>, with the security
// groups CAPO puts on them.
func (c *Controller) ensurePorts(tok string, osc, o *unstructured.Unstructured, spec map[string]any, server string) ([]string, error) {
	portSpecs, _ := spec["ports"].([]any)
	if len(portSpecs) == 0 {
		portSpecs = []any{map[string]any{}}
	}
	nets, err := c.list(tok, "/networking/v2.0/networks", "networks")
	if err != nil {
		return nil, err
	}
	clusterNet, _, _ := unstructured.NestedString(osc.Object, "status", "network", "id")
	clusterSubs, _, _ := unstructured.NestedSlice(osc.Object, "status", "network", "subnets")
	managedSG, _, _ := unstructured.NestedMap(osc.Object, "spec", "managedSecurityGroups")
	role := "workerSecurityGroup"
	if _, cp := o.GetLabels()[labelCPMember]; cp {
		role = "controlPlaneSecurityGroup"
	}
	managedSGID, _, _ := unstructured.NestedString(osc.Object, "status", role, "id")
	extraSGs, _ := spec["securityGroups"].([]any)
	var ids []string
	for i, ps := range portSpecs {
		p := ps.(map[string]any)
		name := fmt.Sprintf("%s-%d", server, i)
		existing, err := c.list(tok, "/networking/v2.0/ports?name="+url.QueryEscape(name), "ports")
		if err != nil {
			return nil, err
		}
		if len(existing) > 1 {
			return nil, fmt.Errorf("multiple ports found with name %q", name)
		}
		if len(existing) == 1 {
			ids = append(ids, str(existing[0], "id"))
			continue
		}
		req := map[string]any{"name": name, "description": "Created by cluster-api-provider-openstack cluster " + resourceName(o)}
		if ref, ok := p["network"].(map[string]any); ok {
			n, err := byFilter(ref, nets)
			if err != nil {
				return nil, err
			}
			req["network_id"] = n["id"]
		} else {
			req["network_id"] = clusterNet
			var fixed []any
			for _, s := range clusterSubs {
				fixed = append(fixed, map[string]any{"subnet_id": s.(map[string]any)["id"]})
			}
			req["fixed_ips"] = fixed
		}
		var sgs []any
		psec, psecSet := p["enablePortSecurity"].(bool)
		if managedSG != nil && (!psecSet || psec) {
			sgs = append(sgs, managedSGID)
		}
		for _, sg := range extraSGs {
			sgs = append(sgs, str(sg.(map[string]any), "id"))
		}
		if len(sgs) > 0 {
			if psecSet && !psec {
				return nil, fmt.Errorf("security groups cannot be set when port security is disabled")
			}
			req["security_groups"] = sgs
		}
		if psecSet {
			req["port_security_enabled"] = psec
		}
		var out struct {
			Port map[string]any `json:"port"`
		}
		if err := c.cloud.Do(tok, "POST", "/networking/v2.0/ports", map[string]any{"port": req}, &out); err != nil {
			return nil, err
		}
		ids = append(ids, str(out.Port, "id"))
	}
	return ids, nil
}

// createServer makes the root volume (when asked) and the server.
func (c *Controller) createServer(tok string, spec map[string]any, r resolved, ports []string, name string) (string, error) {
	server := map[string]any{"name": name, "flavorRef": r.flavor}
	if cd, ok := spec["configDrive"].(bool); ok {
		server["config_drive"] = cd
	} else {
		server["config_drive"] = false
	}
	if k := str(spec, "sshKeyName"); k != "" {
		server["key_name"] = k
	}
	var nets []any
	for _, p := range ports {
		nets = append(nets, map[string]any{"port": p})
	}
	server["networks"] = nets
	meta := map[string]any{}
	if items, ok := spec["serverMetadata"].([]any); ok {
		for _, it := range items {
			m := it.(map[string]any)
			meta[str(m, "key")] = m["value"]
		}
	}
	server["metadata"] = meta
	if size, ok, _ := unstructured.NestedInt64(spec, "rootVolume", "sizeGiB"); ok && size > 0 {
		vol, err := c.ensureRootVolume(tok, spec, r.image, name, size)
		if err != nil {
			return "", err
		}
		server["block_device_mapping_v2"] = []any{map[string]any{"source_type": "volume", "destination_type": "volume",
			"uuid": vol, "boot_index": 0, "delete_on_termination": true}}
	} else {
		server["imageRef"] = r.image
		server["block_device_mapping_v2"] = []any{map[string]any{"source_type": "image", "destination_type": "local",
			"uuid": r.image, "boot_index": 0, "delete_on_termination": true}}
	}
	body := map[string]any{"server": server}
	if r.serverGroup != "" {
		body["os:scheduler_hints"] = map[string]any{"group": r.serverGroup}
	}
	var out struct {
		Server map[string]any `json:"server"`
	}
	if err := c.cloud.Do(tok, "POST", "/compute/v2.1/servers", body, &out); err != nil {
		return "", err
	}
	return str(out.Server, "id"), nil
}

// ensureRootVolume gets or makes <server>-root and waits for it to be
// available.
func (c *Controller) ensureRootVolume(tok string, spec map[string]any, image, server string, size int64) (string, error) {
	name := server + "-root"
	vols, err := c.list(tok, "/volume/v3/volumes/detail?name="+url.QueryEscape(name), "volumes")
	if err != nil {
		return "", err
	}
	var id string
	if len(vols) > 0 {
		if s, _ := vols[0]["size"].(float64); int64(s) != size {
			return "", fmt.Errorf("expected to find volume %s with size %d; found size %d", name, size, int64(s))
		}
		id = str(vols[0], "id")
	} else {
		req := map[string]any{"name": name, "description": "Root volume for " + server, "size": size, "imageRef": image}
		if t, _, _ := unstructured.NestedString(spec, "rootVolume", "type"); t != "" {
			req["volume_type"] = t
		}
		// From: Name takes the zone named; otherwise CAPO uses the
		// machine's failure domain, which Magnetite does not set.
		if az, _, _ := unstructured.NestedMap(spec, "rootVolume", "availabilityZone"); str(az, "from") == "Name" {
			req["availability_zone"] = str(az, "name")
		}
		var out struct {
			V map[string]any `json:"volume"`
		}
		if err := c.cloud.Do(tok, "POST", "/volume/v3/volumes", map[string]any{"volume": req}, &out); err != nil {
			return "", err
		}
		id = str(out.V, "id")
	}
	for i := 0; i < 20; i++ {
		var got struct {
			V map[string]any `json:"volume"`
		}
		if err := c.cloud.Do(tok, "GET", "/volume/v3/volumes/"+id, nil, &got); err != nil {
			return "", err
		}
		switch str(got.V, "status") {
		case "available":
			return id, nil
		case "error":
			return "", fmt.Errorf("volume %s is in error state", id)
		}
	}
	return "", fmt.Errorf("timed out waiting for volume %s to become available", id)
}

// reportServer sets the machine's status from its server's state.
func (c *Controller) reportServer(ctx context.Context, tok string, o *unstructured.Unstructured, id string) {
	var out struct {
		Server map[string]any `json:"server"`
	}
	if err := c.cloud.Do(tok, "GET", "/compute/v2.1/servers/"+id, nil, &out); err != nil {
		msg := "The server was unexpectedly deleted"
		setConditions(o, condition("InstanceReady", false, "InstanceDeleted", msg), condition("Ready", false, "InstanceDeleted", msg))
		_ = unstructured.SetNestedField(o.Object, "DELETED", "status", "instanceState")
		c.updateStatus(ctx, OpenStackMachines, o)
		return
	}
	s := out.Server
	state := str(s, "status")
	_ = unstructured.SetNestedField(o.Object, state, "status", "instanceState")
	switch state {
	case "ACTIVE":
		if prov, _, _ := unstructured.NestedBool(o.Object, "status", "initialization", "provisioned"); prov {
			return
		}
		if _, ok, _ := unstructured.NestedString(o.Object, "spec", "providerID"); !ok {
			status := o.Object["status"]
			_ = unstructured.SetNestedField(o.Object, "openstack:///"+id, "spec", "providerID")
			written, ok := c.update(ctx, OpenStackMachines, o)
			if !ok {
				return
			}
			o = written
			o.Object["status"] = status
		}
		var addrs []any
		if nets, ok := s["addresses"].(map[string]any); ok {
			for _, list := range nets {
				for _, a := range list.([]any) {
					addrs = append(addrs, map[string]any{"type": "InternalIP", "address": a.(map[string]any)["addr"]})
				}
			}
		}
		addrs = append(addrs, map[string]any{"type": "InternalDNS", "address": str(s, "name")})
		_ = unstructured.SetNestedSlice(o.Object, addrs, "status", "addresses")
		_ = unstructured.SetNestedField(o.Object, true, "status", "initialization", "provisioned")
		setConditions(o, condition("InstanceReady", true, "Ready", ""), condition("Ready", true, "Ready", ""))
		c.updateStatus(ctx, OpenStackMachines, o)
	case "ERROR":
		msg := "Instance is in ERROR state"
		if f, ok := s["fault"].(map[string]any); ok && str(f, "message") != "" {
			msg = str(f, "message")
		}
		setConditions(o, condition("InstanceReady", false, "InstanceStateError", msg), condition("Ready", false, "InstanceStateError", msg))
		c.updateStatus(ctx, OpenStackMachines, o)
	}
}

// deleteServer removes the server, its ports and root volume, and reports
// whether all are gone.
func (c *Controller) deleteServer(tok string, osc, o *unstructured.Unstructured, name string) error {
	if id, _, _ := unstructured.NestedString(o.Object, "status", "instanceID"); id != "" {
		if err := c.cloud.Do(tok, "DELETE", "/compute/v2.1/servers/"+id, nil, nil); err != nil && !notFound(err) {
			return err
		}
	}
	ports, err := c.list(tok, "/networking/v2.0/ports", "ports")
	if err != nil {
		return err
	}
	for _, p := range ports {
		if n := str(p, "name"); len(n) > len(name) && n[:len(name)+1] == name+"-" {
			if err := c.cloud.Do(tok, "DELETE", "/networking/v2.0/ports/"+str(p, "id"), nil, nil); err != nil && !notFound(err) {
				return err
			}
		}
	}
	vols, err := c.list(tok, "/volume/v3/volumes/detail?name="+url.QueryEscape(name+"-root"), "volumes")
	if err != nil {
		return err
	}
	for _, v := range vols {
		if str(v, "status") != "deleting" {
			if err := c.cloud.Do(tok, "DELETE", "/volume/v3/volumes/"+str(v, "id"), nil, nil); err != nil && !notFound(err) {
				return err
			}
		}
	}
	if len(vols) > 0 {
		return fmt.Errorf("volume %s-root is being deleted", name)
	}
	return nil
}

// filterName is the name a reference's filter asks for.
func filterName(ref map[string]any) string {
	name, _, _ := unstructured.NestedString(ref, "filter", "name")
	return name
}

// byRef is a reference's ID as given, else the ID of the only item listed
// at path (under key) that its filter names, or CAPO's error for none or
// several.
func (c *Controller) byRef(tok string, ref map[string]any, path, key string, none, many error) (string, error) {
	if id := str(ref, "id"); id != "" {
		return id, nil
	}
	items, err := c.list(tok, path, key)
	if err != nil {
		return "", err
	}
	var ids []string
	for _, it := range items {
		if it["name"] == filterName(ref) {
			ids = append(ids, str(it, "id"))
		}
	}
	switch len(ids) {
	case 0:
		return "", none
	case 1:
		return ids[0], nil
	}
	return "", many
}
