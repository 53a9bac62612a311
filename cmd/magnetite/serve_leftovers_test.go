package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestServeDeletesWhatTheWorkloadLeftInTheCloud runs serve with Keystone
// and an OpenStack conductor on a real kube-apiserver, with the Octavia,
// Neutron and Cinder stand-ins. For each cluster the test makes, with the
// cluster's own application credential, what its cloud controller manager
// and Cinder CSI driver would (a Service's load balancer with a listener,
// floating IP and security group, a persistent volume and its snapshot), plus the same for a cluster
// Magnetite does not know. Deleting a cluster deletes its load balancer
// (showing it in status_reason while Octavia is busy), floating IP and
// volume and nothing of the other cluster's; workload_cleanup=keep leaves
// them; a volume still attached fails the delete with Cinder's reason, and
// once detached a second delete finishes; a load balancer's security
// group still on a port fails it with Neutron's SecurityGroupInUse until
// the group is taken off.
func TestServeDeletesWhatTheWorkloadLeftInTheCloud(t *testing.T) {
	t.Parallel()
	w := startCredentialsWorld(t)
	ctx := t.Context()
	w.createTemplate("k8s")
	type made struct {
		uuid, object, token string
		wl                  testcloud.Workload
	}
	create := func(name string, labels map[string]string) made {
		t.Helper()
		req := map[string]any{"name": name, "cluster_template_id": "k8s", "node_count": 1}
		if labels != nil {
			req["labels"], req["merge_labels"] = labels, true
		}
		res, body := w.api("POST", "/v1/clusters", "", req)
		if res.StatusCode != http.StatusAccepted {
			t.Fatalf("cluster %s: %d %s", name, res.StatusCode, body)
		}
		var m made
		var created struct{ UUID string }
		if err := json.Unmarshal(body, &created); err != nil {
			t.Fatal(err)
		}
		m.uuid = created.UUID
		var cred string
		for _, c := range w.appCredentials() {
			if strings.Contains(c.Name, m.uuid) {
				cred = c.ID
			}
		}
		cloud := w.parseClouds(w.waitCloudsSecret(ctx, m.uuid, cred))
		// The cluster name the workload's components run with is the
		// Cluster object's.
		var obj struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(w.clusterObject(ctx, m.uuid)), &obj); err != nil {
			t.Fatal(err)
		}
		m.object = obj.Metadata.Name
		m.token = w.appCredentialToken(cloud.Auth.ID, cloud.Auth.Secret)
		wl, err := w.cloud.MakeWorkload(m.token, m.object, "default", "web")
		if err != nil {
			t.Fatalf("make the workload's resources of %s: %v", name, err)
		}
		m.wl = wl
		return m
	}
	plain := create("plain", nil)
	kept := create("kept", map[string]string{"workload_cleanup": "keep"})
	busy := create("busy", nil)
	guarded := create("guarded", nil)
	// Another cluster's, in the same project: never Magnetite's to delete.
	foreign, err := w.cloud.MakeWorkload(w.token, "someone-elses-cluster", "default", "web")
	if err != nil {
		t.Fatal(err)
	}

	// The security group goes and stays with the load balancer; the
	// snapshot goes before the volume (Cinder keeps a volume that has
	// snapshots) and stays with it.
	has := func(wl testcloud.Workload) (lb, fip, vol bool) {
		sg, snap := false, false
		for _, l := range w.cloud.LoadBalancers() {
			lb = lb || l.ID == wl.LoadBalancerID
		}
		for _, g := range w.cloud.SecurityGroups() {
			sg = sg || g.ID == wl.SecurityGroupID
		}
		for _, f := range w.cloud.FloatingIPs() {
			fip = fip || f.ID == wl.FloatingIPID
		}
		for _, v := range w.cloud.Volumes() {
			vol = vol || v.ID == wl.VolumeID
		}
		for _, s := range w.cloud.Snapshots() {
			snap = snap || s.ID == wl.SnapshotID
		}
		if lb != sg || (snap && !vol) {
			t.Errorf("load balancer %v but its security group %v; volume %v but its snapshot %v", lb, sg, vol, snap)
		}
		return lb, fip, vol
	}
	status := func(uuid string) (string, string) {
		res, body := w.api("GET", "/v1/clusters/"+uuid, "", nil)
		if res.StatusCode == http.StatusNotFound {
			return "gone", ""
		}
		var c struct {
			Status       string `json:"status"`
			StatusReason string `json:"status_reason"`
		}
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatalf("cluster %s: %d %s", uuid, res.StatusCode, body)
		}
		return c.Status, c.StatusReason
	}
	// waitStatus waits until the cluster's status is want ("gone" once it
	// is deleted) and returns its status_reason.
	waitStatus := func(t *testing.T, uuid, want string) string {
		t.Helper()
		what, reason := want, ""
		if want == "gone" {
			what = "the cluster to be gone"
		}
		testenv.WaitFor(t, what, 2*time.Minute, func() (bool, string) {
			var st string
			st, reason = status(uuid)
			return st == want, st
		})
		return reason
	}
	del := func(uuid string) {
		t.Helper()
		if res, body := w.api("DELETE", "/v1/clusters/"+uuid, "", nil); res.StatusCode != http.StatusNoContent {
			t.Fatalf("delete %s: %d %s", uuid, res.StatusCode, body)
		}
	}

	t.Run("a delete removes the cluster's load balancer, floating IP and volume, and says so while Octavia works", func(t *testing.T) {
		w.cloud.HoldLoadBalancer(plain.wl.LoadBalancerID, true)
		del(plain.uuid)
		testenv.WaitFor(t, "status_reason to show the load balancer being deleted", 2*time.Minute, func() (bool, string) {
			st, reason := status(plain.uuid)
			return st == "DELETE_IN_PROGRESS" && strings.Contains(reason, "kube_service_"+plain.object+"_default_web") &&
				strings.Contains(reason, "PENDING_DELETE"), ""
		})
		w.cloud.HoldLoadBalancer(plain.wl.LoadBalancerID, false)
		waitStatus(t, plain.uuid, "gone")
		if lb, fip, vol := has(plain.wl); lb || fip || vol {
			t.Errorf("left in the cloud: load balancer %v, floating IP %v, volume %v", lb, fip, vol)
		}
		if lb, fip, vol := has(foreign); !lb || !fip || !vol {
			t.Errorf("another cluster's resources were deleted: load balancer kept %v, floating IP kept %v, volume kept %v", lb, fip, vol)
		}
	})

	t.Run("workload_cleanup=keep leaves them", func(t *testing.T) {
		del(kept.uuid)
		waitStatus(t, kept.uuid, "gone")
		if lb, fip, vol := has(kept.wl); !lb || !fip || !vol {
			t.Errorf("kept: load balancer %v, floating IP %v, volume %v; want all", lb, fip, vol)
		}
	})

	t.Run("a volume still attached fails the delete with Cinder's reason until it is detached", func(t *testing.T) {
		w.cloud.AttachVolume(busy.wl.VolumeID, "4b1ce0a6-2f4e-4a51-9a53-1f0c2d0e7a11")
		del(busy.uuid)
		reason := waitStatus(t, busy.uuid, "DELETE_FAILED")
		for _, want := range []string{"volume pvc-web (" + busy.wl.VolumeID + ") in-use",
			"Invalid volume: Volume status must be available or error", "must not be migrating, attached"} {
			if !strings.Contains(reason, want) {
				t.Errorf("status_reason lacks %q:\n%s", want, reason)
			}
		}
		if lb, fip, vol := has(busy.wl); lb || fip || !vol {
			t.Errorf("after the refusal: load balancer %v, floating IP %v, volume %v; want only the volume", lb, fip, vol)
		}
		w.cloud.AttachVolume(busy.wl.VolumeID, "")
		del(busy.uuid)
		waitStatus(t, busy.uuid, "gone")
		if _, _, vol := has(busy.wl); vol {
			t.Error("the detached volume is still there")
		}
	})

	t.Run("a security group still on a port fails the delete with Neutron's reason until it is taken off", func(t *testing.T) {
		// A node's port the cloud controller manager put the group on,
		// left behind (say, a server deleted by hand with its port kept).
		var port struct {
			Port struct{ ID string } `json:"port"`
		}
		if err := w.cloud.Do(guarded.token, "POST", "/networking/v2.0/ports", map[string]any{"port": map[string]any{
			"name": "kept-node-port", "network_id": testcloud.PrivateNetID}}, &port); err != nil {
			t.Fatal(err)
		}
		w.cloud.UseSecurityGroup(port.Port.ID, guarded.wl.SecurityGroupID, false)
		del(guarded.uuid)
		reason := waitStatus(t, guarded.uuid, "DELETE_FAILED")
		if want := "SecurityGroupInUse: Security Group " + guarded.wl.SecurityGroupID + " in use."; !strings.Contains(reason, want) {
			t.Errorf("status_reason lacks %q:\n%s", want, reason)
		}
		w.cloud.UseSecurityGroup(port.Port.ID, guarded.wl.SecurityGroupID, true)
		del(guarded.uuid)
		waitStatus(t, guarded.uuid, "gone")
		if lb, _, _ := has(guarded.wl); lb {
			t.Error("the load balancer and its security group are still there")
		}
		if err := w.cloud.Do(guarded.token, "DELETE", "/networking/v2.0/ports/"+port.Port.ID, nil, nil); err != nil {
			t.Fatal(err)
		}
	})

	if n := len(w.cloud.ServerGroups()); n != 0 {
		t.Errorf("%d server groups left", n)
	}
	if !slices.ContainsFunc(w.cloud.LoadBalancers(), func(l testcloud.LoadBalancer) bool { return l.ID == foreign.LoadBalancerID }) {
		t.Error("the foreign load balancer is gone")
	}
}
