package testcloud

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/uuid"
)

// Workload is what a workload cluster's cloud controller manager and
// Cinder CSI driver made for one Service and one persistent volume.
type Workload struct {
	LoadBalancerID, FloatingIPID, SecurityGroupID, VolumeID, SnapshotID string
}

// MakeWorkload does, with token (the cluster's application credential's),
// what a cluster's cloud controller manager does for a LoadBalancer Service
// ns/svc (an Octavia load balancer named kube_service_<cluster>_<ns>_<svc>,
// tagged with its name, with a listener, a floating IP described as the
// provider describes it, and the security group it makes for the members
// with manage-security-groups on) and what its Cinder CSI driver does for a
// persistent volume and a snapshot of it (both with the
// cinder.csi.openstack.org/cluster property), through the services' APIs.
func (c *Cloud) MakeWorkload(token, cluster, ns, svc string) (Workload, error) {
	var wl Workload
	lbName := fmt.Sprintf("kube_service_%s_%s_%s", cluster, ns, svc)
	lb, err := c.Create(token, "/load-balancer/v2.0/lbaas/loadbalancers", "loadbalancer", map[string]any{
		"name": lbName, "description": fmt.Sprintf("Kubernetes external service %s/%s from cluster %s", ns, svc, cluster),
		"vip_subnet_id": PrivateSubnetID, "tags": []string{lbName}})
	if err != nil {
		return wl, err
	}
	wl.LoadBalancerID, _ = lb["id"].(string)
	// The provider waits for ACTIVE before adding listeners.
	if err := c.awaitStatus(token, "/load-balancer/v2.0/lbaas/loadbalancers/"+wl.LoadBalancerID, "loadbalancer", "provisioning_status", "ACTIVE"); err != nil {
		return wl, err
	}
	if _, err := c.Create(token, "/load-balancer/v2.0/lbaas/listeners", "listener", map[string]any{
		"name": "listener_0_" + lbName, "loadbalancer_id": wl.LoadBalancerID, "protocol": "TCP", "protocol_port": 80}); err != nil {
		return wl, err
	}
	fip, err := c.Create(token, "/networking/v2.0/floatingips", "floatingip", map[string]any{
		"floating_network_id": ExternalNetID, "port_id": lb["vip_port_id"],
		"description": fmt.Sprintf("Floating IP for Kubernetes external service %s/%s from cluster %s", ns, svc, cluster)})
	if err != nil {
		return wl, err
	}
	wl.FloatingIPID, _ = fip["id"].(string)
	sg, err := c.Create(token, "/networking/v2.0/security-groups", "security_group", map[string]any{
		"name":        fmt.Sprintf("lb-sg-%s-%s-%s", uuid.NewString(), ns, svc),
		"description": fmt.Sprintf("Security Group for %s/%s Service LoadBalancer in cluster %s", ns, svc, cluster)})
	if err != nil {
		return wl, err
	}
	wl.SecurityGroupID, _ = sg["id"].(string)
	vol, err := c.Create(token, "/volume/v3/volumes", "volume", map[string]any{
		"name": "pvc-" + svc, "size": 1, "metadata": map[string]string{"cinder.csi.openstack.org/cluster": cluster,
			"csi.storage.k8s.io/pvc/name": svc, "csi.storage.k8s.io/pvc/namespace": ns}})
	if err != nil {
		return wl, err
	}
	wl.VolumeID, _ = vol["id"].(string)
	// The snapshotter snapshots a ready volume.
	if err := c.awaitStatus(token, "/volume/v3/volumes/"+wl.VolumeID, "volume", "status", "available"); err != nil {
		return wl, err
	}
	snap, err := c.Create(token, "/volume/v3/snapshots", "snapshot", map[string]any{
		"name": "snapshot-" + uuid.NewString(), "volume_id": wl.VolumeID, "force": true,
		"metadata": map[string]string{"cinder.csi.openstack.org/cluster": cluster}})
	wl.SnapshotID, _ = snap["id"].(string)
	return wl, err
}

// Create POSTs one resource to path, under key as the OpenStack APIs take
// it, as the holder of token, and returns what the service made.
func (c *Cloud) Create(token, path, key string, body map[string]any) (map[string]any, error) {
	var out map[string]map[string]any
	if err := c.call(token, "POST", path, map[string]any{key: body}, &out); err != nil {
		return nil, err
	}
	return out[key], nil
}

// awaitStatus reads path until its object (under key) has field set to
// want: the services move on a few requests after the one that asked.
func (c *Cloud) awaitStatus(token, path, key, field, want string) error {
	var got string
	for range 12 {
		var out map[string]map[string]any
		if err := c.call(token, "GET", path, nil, &out); err != nil {
			return err
		}
		if got, _ = out[key][field].(string); got == want {
			return nil
		}
	}
	return fmt.Errorf("%s stays %s %s", path, field, got)
}

// call sends a request to the stand-in as the holder of token.
func (c *Cloud) call(token, method, path string, body, out any) error {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, c.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-Auth-Token", token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode >= 300 {
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		return &HTTPError{Method: method, URL: c.URL + path, Status: res.StatusCode, Body: b.String()}
	}
	if out != nil {
		return json.NewDecoder(res.Body).Decode(out)
	}
	return nil
}

// HTTPError is a refused request, worded as gophercloud words it (which is
// what CAPO's conditions carry).
type HTTPError struct {
	Method, URL string
	Status      int
	Body        string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("Expected HTTP response code [200 201 202 204] when accessing [%s %s], but got %d instead: %s", e.Method, e.URL, e.Status, e.Body)
}
