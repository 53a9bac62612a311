package testcloud

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// Workload is what a workload cluster's cloud controller manager and
// Cinder CSI driver made for one Service and one persistent volume.
type Workload struct {
	LoadBalancerID, FloatingIPID, VolumeID string
}

// MakeWorkload does, with token (the cluster's application credential's),
// what a cluster's cloud controller manager does for a LoadBalancer Service
// ns/svc (an Octavia load balancer named kube_service_<cluster>_<ns>_<svc>,
// tagged with its name, with a listener, and a floating IP described as
// the provider describes it) and what its Cinder CSI driver does for a
// persistent volume (a volume with the cinder.csi.openstack.org/cluster
// property), through the services' APIs.
func (c *Cloud) MakeWorkload(token, cluster, ns, svc string) (Workload, error) {
	var wl Workload
	lbName := fmt.Sprintf("kube_service_%s_%s_%s", cluster, ns, svc)
	var lb struct {
		LB struct {
			ID        string `json:"id"`
			VIPPortID string `json:"vip_port_id"`
		} `json:"loadbalancer"`
	}
	err := c.call(token, "POST", "/load-balancer/v2.0/lbaas/loadbalancers", map[string]any{"loadbalancer": map[string]any{
		"name": lbName, "description": fmt.Sprintf("Kubernetes external service %s/%s from cluster %s", ns, svc, cluster),
		"vip_subnet_id": PrivateSubnetID, "tags": []string{lbName}}}, &lb)
	if err != nil {
		return wl, err
	}
	wl.LoadBalancerID = lb.LB.ID
	// The provider waits for ACTIVE before adding listeners.
	for i := 0; ; i++ {
		var got struct {
			LB struct {
				Status string `json:"provisioning_status"`
			} `json:"loadbalancer"`
		}
		if err := c.call(token, "GET", "/load-balancer/v2.0/lbaas/loadbalancers/"+wl.LoadBalancerID, nil, &got); err != nil {
			return wl, err
		}
		if got.LB.Status == "ACTIVE" {
			break
		}
		if i > 10 {
			return wl, fmt.Errorf("load balancer %s stays %s", wl.LoadBalancerID, got.LB.Status)
		}
	}
	err = c.call(token, "POST", "/load-balancer/v2.0/lbaas/listeners", map[string]any{"listener": map[string]any{
		"name": "listener_0_" + lbName, "loadbalancer_id": wl.LoadBalancerID, "protocol": "TCP", "protocol_port": 80}}, nil)
	if err != nil {
		return wl, err
	}
	var fip struct {
		FIP struct {
			ID string `json:"id"`
		} `json:"floatingip"`
	}
	err = c.call(token, "POST", "/networking/v2.0/floatingips", map[string]any{"floatingip": map[string]any{
		"floating_network_id": ExternalNetID, "port_id": lb.LB.VIPPortID,
		"description": fmt.Sprintf("Floating IP for Kubernetes external service %s/%s from cluster %s", ns, svc, cluster)}}, &fip)
	if err != nil {
		return wl, err
	}
	wl.FloatingIPID = fip.FIP.ID
	var vol struct {
		V struct {
			ID string `json:"id"`
		} `json:"volume"`
	}
	err = c.call(token, "POST", "/volume/v3/volumes", map[string]any{"volume": map[string]any{
		"name": "pvc-" + svc, "size": 1, "metadata": map[string]string{"cinder.csi.openstack.org/cluster": cluster,
			"csi.storage.k8s.io/pvc/name": svc, "csi.storage.k8s.io/pvc/namespace": ns}}}, &vol)
	wl.VolumeID = vol.V.ID
	return wl, err
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
