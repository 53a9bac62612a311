package testcapo

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// reconcileServer does what CAPO's OpenStackServer controller does
// (controllers/openstackserver_controller.go at v0.14.7 and
// v0.15.0-beta.0): resolve the server group, image, flavor and ports once
// into status.resolved, make the ports (status.resources), the root volume
// and the server, and report the server's state; at delete, remove the
// server (or, when there is none, its volume) and its ports.
//
// A release gives up on a server in ERROR, whether Nova refused its create
// or put it there: it is never reconciled again. MainBackoff tries again.
func (r *reconciler) reconcileServer(ctx context.Context, s *unstructured.Unstructured) {
	tok, err := r.token(ctx, s.GetNamespace(), s)
	if err != nil {
		if r.copiesServerState() {
			r.rel.set(s, falseCondition("OpenStackAuthenticationSucceeded", "OpenStackAuthenticationFailed", severityError,
				"Failed to create OpenStack client scope: "+err.Error()))
			r.updateStatus(ctx, serversGVR, s)
		}
		return
	}
	if r.copiesServerState() {
		r.rel.set(s, trueCondition("OpenStackAuthenticationSucceeded"))
	}
	if s.GetDeletionTimestamp() != nil {
		if err := r.deleteServer(tok, s); err != nil {
			r.t.Logf("testcapo: delete OpenStackServer %s: %v", s.GetName(), err)
			return
		}
		r.forgetRetry(s)
		r.removeFinalizer(ctx, serversGVR, s, serverFinal)
		return
	}
	state, _, _ := unstructured.NestedString(s.Object, "status", "instanceState")
	if r.backoff == nil && state == "ERROR" {
		return // IsServerTerminalError: "Not reconciling server in error state"
	}
	if !r.retryDue(s) {
		return
	}
	write := func() {
		r.rel.summarize(s, instanceReady)
		r.updateStatus(ctx, serversGVR, s)
	}
	changed, err := r.resolve(tok, s)
	if err != nil {
		// v0.14.7 returns the error and writes what it resolved; v0.15
		// also says so on the server.
		if r.copiesServerState() {
			r.rel.set(s, falseCondition(instanceReady, reasonDependencyFailed, severityError, "Failed to resolve server spec: "+err.Error()))
		}
		write()
		return
	}
	// Resolved references and the finalizer are written before anything
	// is made, so that a server without them made nothing.
	if !slices.Contains(s.GetFinalizers(), serverFinal) {
		status := s.Object["status"]
		written, ok := r.addFinalizer(ctx, serversGVR, s, serverFinal)
		if !ok {
			return
		}
		s = written
		s.Object["status"] = status
		changed = true
	}
	if changed {
		write()
		return
	}
	if err := r.ensurePorts(ctx, tok, s); err != nil {
		// Retried: v0.14.7 only returns it (and records the event);
		// v0.15 puts it on the server (getOrCreateServerPorts).
		if r.copiesServerState() {
			r.rel.set(s, falseCondition(instanceReady, reasonPortCreateFailed, severityError, err.Error()))
		}
		write()
		return
	}
	server, err := r.getOrCreateServer(ctx, tok, s)
	if server == nil {
		if err != nil {
			r.t.Logf("testcapo: server of %s: %v", s.GetName(), err)
		}
		write()
		return
	}
	r.forgetRetry(s)
	state = str(server, "status")
	_ = unstructured.SetNestedField(s.Object, str(server, "id"), "status", "instanceID")
	_ = unstructured.SetNestedField(s.Object, state, "status", "instanceState")
	if r.backoff != nil {
		// main: "set to false by default to avoid reporting stale Ready=true"
		_ = unstructured.SetNestedField(s.Object, false, "status", "ready")
	}
	switch state {
	case "ACTIVE":
		r.rel.set(s, trueCondition(instanceReady))
		_ = unstructured.SetNestedField(s.Object, true, "status", "ready")
	case "ERROR":
		// No word of Nova's fault.
		r.rel.set(s, falseCondition(instanceReady, reasonStateError, severityError, ""))
	case "DELETED":
		r.rel.set(s, falseCondition(instanceReady, reasonDeleted, severityError, ""))
	case "BUILD", "":
	default:
		r.rel.set(s, condition{typ: instanceReady, status: "Unknown", reason: reasonNotReady, message: "Instance state is not handled: " + state})
	}
	write()
}

// resolve fills status.resolved as ResolveServerSpec does
// (pkg/cloud/services/compute/referenced_resources.go): each of server
// group, image, flavor and ports is looked up only while it is unset, so
// what was resolved once is kept even if the cloud changes. It reports
// whether it set anything, and every lookup's error.
func (r *reconciler) resolve(tok string, s *unstructured.Unstructured) (bool, error) {
	spec, _, _ := unstructured.NestedMap(s.Object, "spec")
	resolved, _, _ := unstructured.NestedMap(s.Object, "status", "resolved")
	if resolved == nil {
		resolved = map[string]any{}
	}
	changed := false
	var errs []error
	if sg, ok := spec["serverGroup"].(map[string]any); ok && str(resolved, "serverGroupID") == "" {
		name := filterName(sg)
		id, err := r.byRef(tok, sg, "/compute/v2.1/os-server-groups", "server_groups",
			fmt.Errorf("no server group with name %s could be found", name), fmt.Errorf("too many server groups with name %s were found", name))
		if err != nil {
			errs = append(errs, err)
		} else {
			resolved["serverGroupID"], changed = id, true
		}
	}
	if str(resolved, "imageID") == "" {
		img, _ := spec["image"].(map[string]any)
		name := filterName(img)
		id, err := r.byRef(tok, img, "/image/v2/images?name="+url.QueryEscape(name), "images",
			fmt.Errorf("no images were found with the given image filter: name=%v, tags=[]", name),
			fmt.Errorf("too many images were found with the given image filter: name=%v, tags=[]", name))
		if err != nil {
			errs = append(errs, err)
		} else {
			resolved["imageID"], changed = id, true
		}
	}
	if str(resolved, "flavorID") == "" {
		id, err := r.flavorID(tok, str(spec, "flavorID"), str(spec, "flavor"))
		if err != nil {
			errs = append(errs, err)
		} else {
			resolved["flavorID"], changed = id, true
		}
	}
	if ports, _ := resolved["ports"].([]any); len(ports) == 0 {
		ports, err := r.resolvePorts(tok, s, spec)
		if err != nil {
			errs = append(errs, err)
		} else {
			resolved["ports"], changed = ports, true
		}
	}
	if changed {
		_ = unstructured.SetNestedMap(s.Object, resolved, "status", "resolved")
	}
	return changed, errors.Join(errs...)
}

// flavorID is GetFlavorID (pkg/cloud/services/compute/instance.go): an ID
// as given, else the flavor of that name.
func (r *reconciler) flavorID(tok, id, name string) (string, error) {
	if id != "" {
		return id, nil
	}
	if name == "" {
		return "", fmt.Errorf("no flavors were found: no name set")
	}
	flavors, err := r.list(tok, "/compute/v2.1/flavors/detail", "flavors")
	if err != nil {
		return "", err
	}
	for _, f := range flavors {
		if f["name"] == name {
			return str(f, "id"), nil
		}
	}
	return "", fmt.Errorf("no flavors were found: name=%v", name)
}

// resolvePorts is ConstructPorts (pkg/cloud/services/networking/port.go)
// for an OpenStackServer: each port named <server>-<index> (or its
// nameSuffix), described after the cluster, on its network (an ID as
// given, a filter looked up), its fixed IPs' subnets resolved, and its
// security groups unless port security is disabled.
func (r *reconciler) resolvePorts(tok string, s *unstructured.Unstructured, spec map[string]any) ([]any, error) {
	specs, _ := spec["ports"].([]any)
	nets, err := r.list(tok, "/networking/v2.0/networks", "networks")
	if err != nil {
		return nil, err
	}
	var out []any
	for i, ps := range specs {
		p := ps.(map[string]any)
		rp := map[string]any{"name": fmt.Sprintf("%s-%d", s.GetName(), i), "description": describe(s.GetLabels()[labelCluster])}
		if suffix := str(p, "nameSuffix"); suffix != "" {
			rp["name"] = s.GetName() + "-" + suffix
		}
		if d := str(p, "description"); d != "" {
			rp["description"] = d
		}
		for _, k := range []string{"adminStateUp", "macAddress", "allowedAddressPairs", "hostID", "vnicType", "profile", "valueSpecs", "propagateUplinkStatus", r.rel.portSecurityField()} {
			if v, ok := p[k]; ok {
				rp[k] = v
			}
		}
		if tags, _ := spec["tags"].([]any); len(tags) > 0 {
			rp["tags"] = tags
		}
		ref, ok := p["network"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("unable to determine network for port %d", i)
		}
		networkID := str(ref, "id")
		if networkID == "" {
			n, err := byFilter(ref, nets)
			if err != nil {
				return nil, err
			}
			networkID = str(n, "id")
		}
		rp["networkID"] = networkID
		if fixed, _ := p["fixedIPs"].([]any); len(fixed) > 0 {
			subs, err := r.list(tok, "/networking/v2.0/subnets?network_id="+networkID, "subnets")
			if err != nil {
				return nil, err
			}
			var rf []any
			for _, f := range fixed {
				fm := f.(map[string]any)
				x := map[string]any{}
				if ip := str(fm, "ipAddress"); ip != "" {
					x["ipAddress"] = ip
				}
				if sn, ok := fm["subnet"].(map[string]any); ok {
					sub, err := byFilter(sn, subs)
					if err != nil {
						return nil, err
					}
					x["subnet"] = sub["id"]
				}
				rf = append(rf, x)
			}
			rp["fixedIPs"] = rf
		}
		if set, enabled := r.rel.portSecurity(p); !set || enabled {
			var ids []any
			sgs, _ := p["securityGroups"].([]any)
			for i, sg := range sgs {
				id, err := r.securityGroupID(tok, sg.(map[string]any), i)
				if err != nil {
					return nil, fmt.Errorf("error getting security groups: %v", err)
				}
				if !slices.Contains(ids, any(id)) {
					ids = append(ids, id)
				}
			}
			if len(ids) > 0 {
				rp["securityGroups"] = ids
			}
		}
		out = append(out, rp)
	}
	return out, nil
}

// securityGroupID is GetSecurityGroups for one reference: an ID as given,
// else the first group of the project its filter names.
func (r *reconciler) securityGroupID(tok string, ref map[string]any, i int) (string, error) {
	if id := str(ref, "id"); id != "" {
		return id, nil
	}
	groups, err := r.list(tok, "/networking/v2.0/security-groups?name="+url.QueryEscape(filterName(ref)), "security_groups")
	if err != nil {
		return "", err
	}
	if len(groups) == 0 {
		return "", fmt.Errorf("security group %d not found", i)
	}
	return str(groups[0], "id"), nil
}

// ensurePorts makes each resolved port that status.resources does not hold
// yet, adopting one of its name on its network first (AdoptPortsServer,
// EnsurePorts): a port Neutron refuses is tried again on the next pass.
func (r *reconciler) ensurePorts(ctx context.Context, tok string, s *unstructured.Unstructured) error {
	desired, _, _ := unstructured.NestedSlice(s.Object, "status", "resolved", "ports")
	have, _, _ := unstructured.NestedSlice(s.Object, "status", "resources", "ports")
	defer func() { _ = unstructured.SetNestedSlice(s.Object, have, "status", "resources", "ports") }()
	for i := len(have); i < len(desired); i++ {
		p := desired[i].(map[string]any)
		existing, err := r.list(tok, "/networking/v2.0/ports?name="+url.QueryEscape(str(p, "name"))+"&network_id="+str(p, "networkID"), "ports")
		if err != nil {
			return fmt.Errorf("searching for existing port for server: %v", err)
		}
		if len(existing) > 1 {
			return fmt.Errorf("multiple ports found with name \"%s\"", str(p, "name"))
		}
		if len(existing) == 1 {
			have = append(have, map[string]any{"id": existing[0]["id"]})
			continue
		}
		req := map[string]any{"name": p["name"], "network_id": p["networkID"], "description": p["description"]}
		if fixed, _ := p["fixedIPs"].([]any); len(fixed) > 0 {
			var ips []any
			for _, f := range fixed {
				fm := f.(map[string]any)
				ip := map[string]any{}
				if sn := str(fm, "subnet"); sn != "" {
					ip["subnet_id"] = sn
				}
				if a := str(fm, "ipAddress"); a != "" {
					ip["ip_address"] = a
				}
				ips = append(ips, ip)
			}
			req["fixed_ips"] = ips
		}
		set, enabled := r.rel.portSecurity(p)
		if sgs, ok := p["securityGroups"]; ok {
			if set && !enabled {
				return fmt.Errorf("security groups cannot be set when port security is disabled")
			}
			req["security_groups"] = sgs
		}
		if set {
			req["port_security_enabled"] = enabled
		}
		var out struct {
			Port map[string]any `json:"port"`
		}
		if err := r.cloud.Do(tok, "POST", "/networking/v2.0/ports", map[string]any{"port": req}, &out); err != nil {
			r.event(ctx, s, "FailedCreatePort", fmt.Sprintf("Failed to create port %s: %v", str(p, "name"), err))
			return err
		}
		have = append(have, map[string]any{"id": str(out.Port, "id")})
	}
	return nil
}

// getOrCreateServer is the server Nova holds for s: by status.instanceID,
// else by name, else the one it makes. A create Nova or Cinder refuses
// sets InstanceCreateFailed with the refusal and instanceState ERROR
// (getOrCreateServer): the release's last word on s.
func (r *reconciler) getOrCreateServer(ctx context.Context, tok string, s *unstructured.Unstructured) (map[string]any, error) {
	if id, _, _ := unstructured.NestedString(s.Object, "status", "instanceID"); id != "" {
		var got struct {
			Server map[string]any `json:"server"`
		}
		err := r.cloud.Do(tok, "GET", "/compute/v2.1/servers/"+id, nil, &got)
		switch {
		case notFound(err):
			r.rel.set(s, falseCondition(instanceReady, reasonNotFound, severityError, msgUnexpectedlyDeleted))
			return nil, nil
		case err != nil:
			err = fmt.Errorf("get server %q detail failed: %v", id, err)
			r.rel.set(s, falseCondition(instanceReady, reasonOpenStackError, severityError, err.Error()))
			return nil, err
		}
		return got.Server, nil
	}
	found, err := r.list(tok, "/compute/v2.1/servers/detail?name="+url.QueryEscape("^"+s.GetName()+"$"), "servers")
	if err != nil {
		return nil, fmt.Errorf("get server list: %v", err)
	}
	if len(found) > 1 {
		r.event(ctx, s, "DuplicateServerNames", fmt.Sprintf("Found %d servers with name '%s'. This is likely to cause errors.", len(found), s.GetName()))
		return nil, fmt.Errorf("filter matched more than one resource")
	}
	if len(found) == 1 {
		return found[0], nil
	}
	id, err := r.createServer(ctx, tok, s)
	if err != nil {
		r.rel.set(s, falseCondition(instanceReady, reasonCreateFailed, severityError, err.Error()))
		_ = unstructured.SetNestedField(s.Object, "ERROR", "status", "instanceState")
		r.failedRetry(s)
		return nil, fmt.Errorf("create OpenStack instance: %w", err)
	}
	// Nova's answer to a create has no status: CAPO records the state ""
	// and reads the server on the next reconcile.
	return map[string]any{"id": id, "status": ""}, nil
}

// createServer makes the root volume (when asked) and the server as
// createInstanceImpl does (pkg/cloud/services/compute/instance.go),
// recording CAPO's events, and returns the server's ID.
func (r *reconciler) createServer(ctx context.Context, tok string, s *unstructured.Unstructured) (string, error) {
	spec, _, _ := unstructured.NestedMap(s.Object, "spec")
	resolved, _, _ := unstructured.NestedMap(s.Object, "status", "resolved")
	name := s.GetName()
	server := map[string]any{"name": name, "flavorRef": str(resolved, "flavorID")}
	cd, _ := spec["configDrive"].(bool)
	server["config_drive"] = cd
	if k := str(spec, "sshKeyName"); k != "" {
		server["key_name"] = k
	}
	if az := str(spec, "availabilityZone"); az != "" {
		server["availability_zone"] = az
	}
	var nets []any
	ports, _, _ := unstructured.NestedSlice(s.Object, "status", "resources", "ports")
	for _, p := range ports {
		nets = append(nets, map[string]any{"port": str(p.(map[string]any), "id")})
	}
	if len(nets) == 0 {
		return "", fmt.Errorf("portIDs cannot be empty")
	}
	server["networks"] = nets
	// The bootstrap Secret's value, base64 as gophercloud sends it
	// (getUserDataSecretValue, controllers/openstackserver_controller.go,
	// v0.14.7): a Secret's data is that encoding already.
	if ref, _, _ := unstructured.NestedString(spec, "userDataRef", "name"); ref != "" {
		secret, err := r.dc.Resource(secretsGVR).Namespace(s.GetNamespace()).Get(ctx, ref, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("get secret %s/%s: %w", s.GetNamespace(), ref, err)
		}
		value, ok, _ := unstructured.NestedString(secret.Object, "data", "value")
		if !ok {
			return "", fmt.Errorf("secret %s/%s does not contain userData", s.GetNamespace(), ref)
		}
		server["user_data"] = value
	}
	meta := map[string]any{}
	if items, ok := spec["serverMetadata"].([]any); ok {
		for _, it := range items {
			m := it.(map[string]any)
			meta[str(m, "key")] = m["value"]
		}
	}
	server["metadata"] = meta
	if tags, _ := spec["tags"].([]any); len(tags) > 0 {
		server["tags"] = tags
	}
	image := str(resolved, "imageID")
	if size, ok, _ := unstructured.NestedInt64(spec, "rootVolume", "sizeGiB"); ok && size > 0 {
		vol, err := r.ensureRootVolume(ctx, tok, s, spec, image, size)
		if err != nil {
			return "", err
		}
		server["block_device_mapping_v2"] = []any{map[string]any{"source_type": "volume", "destination_type": "volume",
			"uuid": vol, "boot_index": 0, "delete_on_termination": true}}
	} else {
		server["imageRef"] = image
		server["block_device_mapping_v2"] = []any{map[string]any{"source_type": "image", "destination_type": "local",
			"uuid": image, "boot_index": 0, "delete_on_termination": true}}
	}
	body := map[string]any{"server": server}
	if g := str(resolved, "serverGroupID"); g != "" {
		body["os:scheduler_hints"] = map[string]any{"group": g}
	}
	var out struct {
		Server map[string]any `json:"server"`
	}
	if err := r.cloud.Do(tok, "POST", "/compute/v2.1/servers", body, &out); err != nil {
		r.event(ctx, s, "FailedCreateServer", fmt.Sprintf("Failed to create server %s: %v", name, err))
		return "", fmt.Errorf("error creating Openstack instance: %v", err)
	}
	r.normalEvent(ctx, s, "SuccessfulCreateServer", fmt.Sprintf("Created server %s with id %s", name, str(out.Server, "id")))
	return str(out.Server, "id"), nil
}

// ensureRootVolume gets or makes <server>-root and waits for it to be
// available (getBlockDevices): a volume Cinder refuses, or one in error,
// fails the create like Nova's refusals do.
func (r *reconciler) ensureRootVolume(ctx context.Context, tok string, s *unstructured.Unstructured, spec map[string]any, image string, size int64) (string, error) {
	name := s.GetName() + "-root"
	vols, err := r.list(tok, "/volume/v3/volumes/detail?name="+url.QueryEscape(name), "volumes")
	if err != nil {
		return "", fmt.Errorf("error listing volumes: %w", err)
	}
	var id string
	switch len(vols) {
	case 0:
		req := map[string]any{"name": name, "description": "Root volume for " + s.GetName(), "size": size, "imageRef": image}
		if t, _, _ := unstructured.NestedString(spec, "rootVolume", "type"); t != "" {
			req["volume_type"] = t
		}
		// resolveVolumeOpts: From Name (or unset) takes the zone named,
		// From Machine the server's availability zone.
		az, _, _ := unstructured.NestedMap(spec, "rootVolume", "availabilityZone")
		switch str(az, "from") {
		case "", "Name":
			if n := str(az, "name"); n != "" {
				req["availability_zone"] = n
			}
		case "Machine":
			if n := str(spec, "availabilityZone"); n != "" {
				req["availability_zone"] = n
			}
		}
		var out struct {
			V map[string]any `json:"volume"`
		}
		if err := r.cloud.Do(tok, "POST", "/volume/v3/volumes", map[string]any{"volume": req}, &out); err != nil {
			r.event(ctx, s, "FailedCreateVolume", fmt.Sprintf("Failed to create volume; name=%s size=%d err=%v", name, size, err))
			return "", err
		}
		id = str(out.V, "id")
		r.normalEvent(ctx, s, "SuccessfulCreateVolume", "Created volume; id="+id)
	case 1:
		if got, _ := vols[0]["size"].(float64); int64(got) != size {
			return "", fmt.Errorf("expected to find volume %s with size %d; found size %d", name, size, int64(got))
		}
		id = str(vols[0], "id")
	default:
		return "", fmt.Errorf("expected to find a single volume called %s; found %d", name, len(vols))
	}
	for range 20 {
		var got struct {
			V map[string]any `json:"volume"`
		}
		if err := r.cloud.Do(tok, "GET", "/volume/v3/volumes/"+id, nil, &got); err != nil {
			return "", fmt.Errorf("volume %s did not become available: %w", id, err)
		}
		switch str(got.V, "status") {
		case "available":
			return id, nil
		case "error":
			return "", fmt.Errorf("volume %s did not become available: volume %s is in error state", id, id)
		}
	}
	return "", fmt.Errorf("volume %s did not become available: timed out waiting for the condition", id)
}

// deleteServer is reconcileDelete: the server (found by ID or name), or,
// when Nova has none, the volume made for it; then its ports. It reports
// whether all are gone.
func (r *reconciler) deleteServer(tok string, s *unstructured.Unstructured) error {
	name := s.GetName()
	id, _, _ := unstructured.NestedString(s.Object, "status", "instanceID")
	if id == "" {
		found, err := r.list(tok, "/compute/v2.1/servers/detail?name="+url.QueryEscape("^"+name+"$"), "servers")
		if err != nil {
			return err
		}
		if len(found) == 1 {
			id = str(found[0], "id")
		}
	}
	if id != "" {
		if err := r.cloud.Do(tok, "DELETE", "/compute/v2.1/servers/"+id, nil, nil); err != nil && !notFound(err) {
			return err
		}
	}
	// The volume of a server Nova never made (a server takes its own with
	// it): CAPO deletes it and moves on; the stand-in waits for Cinder to
	// finish, so that a deleted cluster leaves nothing behind.
	vols, err := r.list(tok, "/volume/v3/volumes/detail?name="+url.QueryEscape(name+"-root"), "volumes")
	if err != nil {
		return err
	}
	for _, v := range vols {
		if str(v, "status") != "deleting" {
			if err := r.cloud.Do(tok, "DELETE", "/volume/v3/volumes/"+str(v, "id"), nil, nil); err != nil && !notFound(err) {
				return err
			}
		}
	}
	if len(vols) > 0 {
		return fmt.Errorf("volume %s-root is being deleted", name)
	}
	// The ports it made, and those of its name it did not get to record
	// (adoptServerResources runs on the delete path too).
	ports, err := r.list(tok, "/networking/v2.0/ports", "ports")
	if err != nil {
		return err
	}
	recorded, _, _ := unstructured.NestedSlice(s.Object, "status", "resources", "ports")
	for _, p := range ports {
		mine := false
		for _, x := range recorded {
			mine = mine || str(x.(map[string]any), "id") == str(p, "id")
		}
		if n := str(p, "name"); mine || (len(n) > len(name) && n[:len(name)+1] == name+"-") {
			if err := r.cloud.Do(tok, "DELETE", "/networking/v2.0/ports/"+str(p, "id"), nil, nil); err != nil && !notFound(err) {
				return fmt.Errorf("failed to delete port %q: %w", str(p, "id"), err)
			}
		}
	}
	return nil
}

// retryDue reports whether main's backoff lets s be reconciled now (always
// under a release's semantics).
func (r *reconciler) retryDue(s *unstructured.Unstructured) bool {
	if r.backoff == nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !time.Now().Before(r.retries[s.GetUID()].next)
}

// failedRetry counts a refused create of s and sets when main tries again:
// Base·2^(failures-1), at most Max.
func (r *reconciler) failedRetry(s *unstructured.Unstructured) {
	if r.backoff == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.retries[s.GetUID()]
	wait := r.backoff.Base << rt.failures
	if wait <= 0 || wait > r.backoff.Max {
		wait = r.backoff.Max
	}
	rt.failures++
	rt.next = time.Now().Add(wait)
	r.retries[s.GetUID()] = rt
}

func (r *reconciler) forgetRetry(s *unstructured.Unstructured) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.retries, s.GetUID())
}
