package conductor

import (
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/cloud"
)

// novaRefusal is how CAPO records a refused server create: gophercloud's
// error text around Nova's body.
const novaRefusal = `Expected HTTP response code [202] when accessing [POST https://nova.example/v2.1/servers], but got 400 instead: {"badRequest": {"code": 400, "message": "Flavor 3 could not be found."}}`

// v1beta1Cond is a condition as Cluster API's v1beta1 helpers write it
// (CAPO v0.14 on every kind, and on OpenStackServer before v0.15).
func v1beta1Cond(typ, status, severity, reason, msg string) map[string]any {
	c := map[string]any{"type": typ, "status": status, "lastTransitionTime": "2026-11-27T09:00:00Z"}
	if severity != "" {
		c["severity"] = severity
	}
	if reason != "" {
		c["reason"] = reason
	}
	if msg != "" {
		c["message"] = msg
	}
	return c
}

// openStackMachine is an OpenStackMachine of machine demo-cp-x (a
// control-plane one when cp) at apiVersion, with spec and status.
func openStackMachine(apiVersion string, cp bool, spec, status map[string]any) map[string]any {
	labels := map[string]any{labelClusterName: "demo"}
	if cp {
		labels[labelControlPlane] = ""
	}
	return map[string]any{
		"apiVersion": apiVersion, "kind": "OpenStackMachine",
		"metadata": map[string]any{"name": "demo-cp-x", "uid": "osm-uid", "labels": labels,
			"ownerReferences": []any{map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": "demo-cp-x"}}},
		"spec": spec, "status": status,
	}
}

func openStackServer(status map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "OpenStackServer",
		"metadata": map[string]any{"name": "demo-cp-x", "labels": map[string]any{labelClusterName: "demo"},
			"ownerReferences": []any{map[string]any{"kind": "OpenStackMachine", "name": "demo-cp-x"}}},
		"status": status,
	}
}

// TestFailedServersAreReadAsReleasedCAPOWritesThem reads the objects CAPO
// v0.14.7 and v0.15.0-beta.0 leave behind (controllers/
// openstackserver_controller.go, openstackmachine_controller.go at each tag)
// and v0.13's failure fields.
func TestFailedServersAreReadAsReleasedCAPOWritesThem(t *testing.T) {
	v1beta1Spec := map[string]any{"flavor": "m1.medium", "image": map[string]any{"filter": map[string]any{"name": "ubuntu"}},
		"serverGroup": map[string]any{"id": "sg-1"}, "sshKeyName": "alice-key",
		"rootVolume": map[string]any{"sizeGiB": int64(10), "type": "fast", "availabilityZone": map[string]any{"from": "Name", "name": "az2"}}}
	v1beta2Spec := map[string]any{"flavor": map[string]any{"filter": map[string]any{"name": "m1.medium"}}, "image": map[string]any{"id": "img-1"}}
	// v0.14.7's machine keeps what it said before waiting for its server.
	waiting := map[string]any{"ready": false, "conditions": []any{
		v1beta1Cond("InstanceReady", "False", "Info", "WaitingForBootstrapData", ""), v1beta1Cond("Ready", "False", "Info", "WaitingForBootstrapData", "")}}
	cases := []struct {
		name               string
		osm, oss           map[string]any
		failed, provisoned bool
		serverID, recorded string
		refs               cloud.ServerRefs
	}{
		{
			name: "v0.14.7: Nova refused the create",
			osm:  openStackMachine("infrastructure.cluster.x-k8s.io/v1beta1", true, v1beta1Spec, waiting),
			oss: openStackServer(map[string]any{"ready": false, "instanceState": "ERROR", "conditions": []any{
				v1beta1Cond("InstanceReady", "False", "Error", "InstanceCreateFailed", novaRefusal),
				v1beta1Cond("Ready", "False", "Error", "InstanceCreateFailed", novaRefusal)}}),
			failed: true, recorded: novaRefusal,
			refs: cloud.ServerRefs{Flavor: "m1.medium", Image: "ubuntu", ServerGroup: "sg-1", Keypair: "alice-key", VolumeType: "fast", VolumeZone: "az2"},
		},
		{
			name: "v0.14.7: Nova put the server in ERROR",
			osm:  openStackMachine("infrastructure.cluster.x-k8s.io/v1beta1", true, v1beta1Spec, waiting),
			oss: openStackServer(map[string]any{"ready": false, "instanceID": "srv-1", "instanceState": "ERROR", "conditions": []any{
				v1beta1Cond("InstanceReady", "False", "Error", "InstanceStateError", ""),
				v1beta1Cond("Ready", "False", "Error", "InstanceStateError", "")}}),
			failed: true, serverID: "srv-1",
			refs: cloud.ServerRefs{Flavor: "m1.medium", Image: "ubuntu", ServerGroup: "sg-1", Keypair: "alice-key", VolumeType: "fast", VolumeZone: "az2"},
		},
		{
			name:     "v0.14.7: server building (instanceID on the OpenStackServer only)",
			osm:      openStackMachine("infrastructure.cluster.x-k8s.io/v1beta1", true, v1beta1Spec, waiting),
			oss:      openStackServer(map[string]any{"ready": false, "instanceID": "srv-2", "instanceState": "BUILD"}),
			serverID: "srv-2",
			refs:     cloud.ServerRefs{Flavor: "m1.medium", Image: "ubuntu", ServerGroup: "sg-1", Keypair: "alice-key", VolumeType: "fast", VolumeZone: "az2"},
		},
		{
			name: "v0.14.7: server ACTIVE",
			osm: openStackMachine("infrastructure.cluster.x-k8s.io/v1beta1", false, v1beta1Spec, map[string]any{"ready": true, "instanceID": "srv-3",
				"initialization": map[string]any{"provisioned": true}}),
			oss:        openStackServer(map[string]any{"ready": true, "instanceID": "srv-3", "instanceState": "ACTIVE"}),
			provisoned: true, serverID: "srv-3",
			refs: cloud.ServerRefs{Flavor: "m1.medium", Image: "ubuntu", ServerGroup: "sg-1", Keypair: "alice-key", VolumeType: "fast", VolumeZone: "az2"},
		},
		{
			name: "v0.15.0-beta.0: the machine copies the server's refusal",
			osm: openStackMachine("infrastructure.cluster.x-k8s.io/v1beta2", false, v1beta2Spec, map[string]any{"conditions": []any{
				cond("InstanceReady", "False", "InstanceStateError", novaRefusal), cond("Ready", "False", "InstanceStateError", novaRefusal)}}),
			oss: openStackServer(map[string]any{"instanceState": "ERROR", "conditions": []any{
				cond("InstanceReady", "False", "InstanceCreateFailed", novaRefusal)}}),
			failed: true, recorded: novaRefusal,
			refs: cloud.ServerRefs{Flavor: "m1.medium", Image: "img-1"},
		},
		{
			name: "v0.15.0-beta.0 machine without its server object",
			osm: openStackMachine("infrastructure.cluster.x-k8s.io/v1beta2", false, v1beta2Spec, map[string]any{"conditions": []any{
				cond("InstanceReady", "False", "InstanceStateError", "Instance is in ERROR state")}}),
			failed: true, recorded: "Instance is in ERROR state",
			refs: cloud.ServerRefs{Flavor: "m1.medium", Image: "img-1"},
		},
		{
			name: "v0.13: permanent failure on the machine",
			osm: openStackMachine("infrastructure.cluster.x-k8s.io/v1beta1", false, map[string]any{"flavorID": "3"}, map[string]any{
				"failureReason": "UpdateError", "failureMessage": "instance state ERROR is unexpected"}),
			failed: true, recorded: "instance state ERROR is unexpected",
			refs: cloud.ServerRefs{Flavor: "3"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ms := readMachineServer(tc.osm, tc.oss)
			if ms.Machine != "demo-cp-x" || ms.Failed != tc.failed || ms.Provisioned != tc.provisoned || ms.ServerID != tc.serverID || ms.Recorded != tc.recorded {
				t.Errorf("read %+v, want failed %v provisioned %v server %q recorded %q", ms, tc.failed, tc.provisoned, tc.serverID, tc.recorded)
			}
			if ms.Refs != tc.refs {
				t.Errorf("refs %+v, want %+v", ms.Refs, tc.refs)
			}
		})
	}
}

// TestFailureTextIsOpenStacksOwnMessage: Nova's fault for a server that
// exists, the service's message out of CAPO's record of a refused create.
func TestFailureTextIsOpenStacksOwnMessage(t *testing.T) {
	cases := []struct {
		ms        machineServer
		novaFault string
		want      string
	}{
		{machineServer{ServerID: "srv-1"}, "No valid host was found. There are not enough hosts available.",
			"its server srv-1 is in ERROR: No valid host was found. There are not enough hosts available."},
		{machineServer{ServerID: "srv-1", Recorded: "Instance is in ERROR state"}, "", "its server srv-1 is in ERROR and Nova recorded no fault"},
		{machineServer{Recorded: novaRefusal}, "", "OpenStack refused to create its server: Flavor 3 could not be found."},
		{machineServer{Recorded: `error creating root volume: Expected HTTP response code [202] when accessing [POST http://cinder/v3/volumes], but got 404 instead: {"itemNotFound": {"code": 404, "message": "Volume type with name fast could not be found."}}`}, "",
			"OpenStack refused to create its server: Volume type with name fast could not be found."},
		{machineServer{}, "", "OpenStack refused to create its server"},
	}
	for _, tc := range cases {
		if got := failureText(tc.ms, tc.novaFault); got != tc.want {
			t.Errorf("failureText(%+v, %q) = %q, want %q", tc.ms, tc.novaFault, got, tc.want)
		}
	}
}

// TestReplacementsDueReplaceOneControlPlaneMachineAtATime: approved
// workers all go at once; control-plane machines one by one, never while
// another control-plane machine is being deleted, built or still to be
// made by the control plane.
func TestReplacementsDueReplaceOneControlPlaneMachineAtATime(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	failedCP := func(name string) machineServer { return machineServer{Machine: name, ControlPlane: true, Failed: true} }
	failedWorker := func(name string) machineServer { return machineServer{Machine: name, Failed: true} }
	approved := map[string]bool{"cp-b": true, "cp-a": true, "w-1": true, "stranded": true}
	names := func(ms []machineServer) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Machine)
		}
		return strings.Join(out, ",")
	}
	none := controlPlaneReplacement{}
	recent := controlPlaneReplacement{At: now.Add(-30 * time.Second), Known: []string{"cp-a", "cp-b"}}
	cases := []struct {
		name string
		ms   []machineServer
		last controlPlaneReplacement
		want string
	}{
		{"every approved worker, the first control-plane machine",
			[]machineServer{failedCP("cp-b"), failedCP("cp-a"), failedWorker("w-1"), failedWorker("w-2")}, none, "w-1,cp-a"},
		{"not while a control-plane machine is being deleted",
			[]machineServer{failedCP("cp-b"), {Machine: "cp-a", ControlPlane: true, Failed: true, Deleting: true}, failedWorker("w-1")}, none, "w-1"},
		{"not while a new control-plane machine is being built",
			[]machineServer{failedCP("cp-b"), {Machine: "cp-new", ControlPlane: true}}, none, ""},
		{"a provisioned control-plane machine does not hold the next",
			[]machineServer{failedCP("cp-b"), {Machine: "cp-ok", ControlPlane: true, Provisioned: true, ServerID: "s"}}, none, "cp-b"},
		{"not until the control plane made the machine that replaces the last",
			[]machineServer{failedCP("cp-b")}, recent, ""},
		{"the next once it has and it is up",
			[]machineServer{failedCP("cp-b"), {Machine: "cp-new", ControlPlane: true, Provisioned: true, ServerID: "s"}}, recent, "cp-b"},
		{"nor for longer than the grace",
			[]machineServer{failedCP("cp-b")}, controlPlaneReplacement{At: now.Add(-controlPlaneReplaceGrace - time.Second), Known: recent.Known}, "cp-b"},
		{"a stranded control-plane machine without a server, once approved",
			[]machineServer{{Machine: "stranded", ControlPlane: true, ServerGroup: "gone"}}, none, "stranded"},
		{"nothing failed and not approved",
			[]machineServer{failedWorker("w-2"), {Machine: "cp-a", ControlPlane: true, Provisioned: true, ServerID: "s"}}, none, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(replacementsDue(tc.ms, approved, tc.last, now)); got != tc.want {
				t.Errorf("due %q, want %q", got, tc.want)
			}
		})
	}
}
