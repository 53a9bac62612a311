package conductor

import (
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/model"
)

func cond(typ, status, reason, msg string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg}
}

func clusterObj(apiVersion string, gen, observed int64, conds ...map[string]any) map[string]any {
	cs := make([]any, len(conds))
	for i, c := range conds {
		cs[i] = c
	}
	status := map[string]any{"observedGeneration": observed, "conditions": cs}
	if strings.HasSuffix(apiVersion, "v1beta1") {
		status = map[string]any{"observedGeneration": observed, "v1beta2": map[string]any{"conditions": cs}}
	}
	return map[string]any{
		"apiVersion": apiVersion, "kind": "Cluster",
		"metadata": map[string]any{"name": "demo-1234", "generation": gen},
		"spec": map[string]any{"controlPlaneEndpoint": map[string]any{"host": "10.0.0.5", "port": int64(6443)},
			"topology": map[string]any{"version": "v1.31.2"}},
		"status": status,
	}
}

func kcp(desired, ready, upToDate int64, version string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": "demo-1234-cp"},
		"spec":     map[string]any{"replicas": desired, "version": version},
		"status":   map[string]any{"readyReplicas": ready, "upToDateReplicas": upToDate, "version": version},
	}
}

func md(topoName string, desired, ready, upToDate int64) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": "demo-1234-" + topoName + "-x", "labels": map[string]any{labelTopologyMDName: topoName}},
		"spec":     map[string]any{"replicas": desired},
		"status":   map[string]any{"readyReplicas": ready, "upToDateReplicas": upToDate},
	}
}

func machine(nameStr string, cp bool, topoName, ip string, conds ...map[string]any) map[string]any {
	labels := map[string]any{}
	if cp {
		labels[labelControlPlane] = ""
	} else {
		labels[labelTopologyMDName] = topoName
	}
	cs := make([]any, len(conds))
	for i, c := range conds {
		cs[i] = c
	}
	return map[string]any{
		"metadata": map[string]any{"name": nameStr, "labels": labels},
		"status": map[string]any{"conditions": cs,
			"addresses": []any{map[string]any{"type": "InternalIP", "address": ip}}},
	}
}

func identityGroup(l map[string]string) string { return l[labelTopologyMDName] }

func availableCluster(apiVersion string) Observed {
	return Observed{
		Cluster: clusterObj(apiVersion, 2, 2, cond("Available", "True", "Available", ""),
			cond("ControlPlaneInitialized", "True", "Initialized", ""), cond("TopologyReconciled", "True", "ReconcileSucceeded", ""),
			cond("InfrastructureReady", "True", "Ready", ""), cond("ControlPlaneAvailable", "True", "Available", "")),
		ControlPlane:       kcp(1, 1, 1, "v1.31.2"),
		MachineDeployments: []map[string]any{md("default-worker", 2, 2, 2)},
		Machines: []map[string]any{
			machine("cp-0", true, "", "10.0.0.10", cond("NodeHealthy", "True", "", "")),
			machine("w-0", false, "default-worker", "10.0.0.11", cond("NodeHealthy", "True", "", "")),
			machine("w-1", false, "default-worker", "10.0.0.12", cond("NodeHealthy", "True", "", "")),
		},
	}
}

func TestSummarizeReadsConvergedClusterAtEitherServedVersion(t *testing.T) {
	for _, v := range []string{"cluster.x-k8s.io/v1beta2", "cluster.x-k8s.io/v1beta1"} {
		t.Run(v, func(t *testing.T) {
			s := Summarize(availableCluster(v), identityGroup)
			if !s.Converged() {
				t.Fatalf("want converged, got %+v", s)
			}
			if s.Health != model.Healthy {
				t.Errorf("health = %s, reasons %v", s.Health, s.HealthReasons)
			}
			if s.APIAddress != "https://10.0.0.5:6443" || s.Version != "v1.31.2" {
				t.Errorf("api %q version %q", s.APIAddress, s.Version)
			}
			if got := s.NodeGroups["default-worker"].Addresses; len(got) != 2 || got[0] != "10.0.0.11" {
				t.Errorf("worker addresses %v", got)
			}
			if got := s.ControlPlane.Addresses; len(got) != 1 || got[0] != "10.0.0.10" {
				t.Errorf("control plane addresses %v", got)
			}
		})
	}
}

// TestSummarizeQuotesMachineInfrastructureFailure: what Cluster API mirrors
// from the infrastructure machine is quoted; where Magnetite read why the
// server failed (OpenStack's own words), that is what users read instead of
// CAPO's "Instance is in ERROR state".
func TestSummarizeQuotesMachineInfrastructureFailure(t *testing.T) {
	obs := availableCluster("cluster.x-k8s.io/v1beta2")
	obs.MachineDeployments = []map[string]any{md("gpu", 1, 0, 1)}
	// CAPO v0.15's OpenStackMachine copies the server's condition, and a
	// server in ERROR says no more than this (controllers/openstackmachine_controller.go).
	obs.Machines = append(obs.Machines, machine("gpu-0", false, "gpu", "10.0.0.20",
		cond("InfrastructureReady", "False", "InstanceStateError", "Instance is in ERROR state")))
	s := Summarize(obs, identityGroup)
	if s.Converged() {
		t.Fatal("a node group with 0/1 ready must not be converged")
	}
	if !strings.Contains(s.Problem, "InstanceStateError") || !strings.Contains(s.Problem, "gpu-0") || !strings.Contains(s.Problem, "gpu") {
		t.Errorf("problem %q does not quote the Cluster API reason", s.Problem)
	}
	if s.Health != model.Unhealthy {
		t.Errorf("health = %s", s.Health)
	}

	obs.ServerFailures = map[string]string{"gpu-0": failureText(machineServer{ServerID: "5c1e"}, "No valid host was found. There are not enough hosts available.")}
	s = Summarize(obs, identityGroup)
	if !strings.Contains(s.Problem, "node group gpu: machine gpu-0: its server 5c1e is in ERROR: No valid host was found.") ||
		strings.Contains(s.Problem, "Instance is in ERROR state") || !strings.Contains(s.Problem, "retry") {
		t.Errorf("problem %q does not say Nova's fault and how to recover", s.Problem)
	}
}

// TestSummarizeQuotesTheInfrastructureProvidersReasonFirst: while the
// cluster's infrastructure is not ready, what the provider says of it
// (CAPO's Ready condition, which Cluster API mirrors onto the Cluster) is
// the problem users read, not the control plane's waiting for it; Cluster
// API's own fallback, said while the provider is silent, is not.
func TestSummarizeQuotesTheInfrastructureProvidersReasonFirst(t *testing.T) {
	// CAPO's words (handleUpdateOSCError of gophercloud's error) with
	// Neutron's answer (neutron/db/l3_db.py, _get_assoc_data).
	const refusal = "failed to reconcile load balancer: Expected HTTP response code [201] when accessing [POST /v2.0/floatingips], " +
		`but got 404 instead: {"NeutronError": {"type": "ExternalGatewayForFloatingIPNotFound", "message": "External network 9c8b7a65 ` +
		`is not reachable from subnet 2f1e0b6a.  Therefore, cannot associate Port 5d8c1f7e with a Floating IP.", "detail": ""}}`
	waiting := func(infra map[string]any) Observed {
		return Observed{
			Cluster: clusterObj("cluster.x-k8s.io/v1beta2", 1, 1, infra, cond("ControlPlaneInitialized", "False", "NotInitialized", ""),
				cond("ControlPlaneAvailable", "False", "NotAvailable", "Control plane not yet initialized")),
			ControlPlane: map[string]any{
				"metadata": map[string]any{"name": "demo-1234-cp"},
				"spec":     map[string]any{"replicas": int64(1), "version": "v1.31.2"},
				"status": map[string]any{"conditions": []any{
					cond("Available", "False", "NotAvailable", "Control plane not yet initialized")}},
			},
		}
	}
	s := Summarize(waiting(cond("InfrastructureReady", "False", "OpenStackError", refusal)), identityGroup)
	want := "cluster InfrastructureReady (OpenStackError): failed to reconcile load balancer: ExternalGatewayForFloatingIPNotFound: " +
		"External network 9c8b7a65 is not reachable from subnet 2f1e0b6a. Therefore, cannot associate Port 5d8c1f7e with a Floating IP."
	if s.Problem != want {
		t.Errorf("problem %q, want Neutron's refusal as CAPO reported it: %q", s.Problem, want)
	}
	// Neutron's quota refusal (neutron_lib's OverQuota, 409) takes the
	// same way: the step CAPO failed at and Neutron's words.
	const overQuota = "failed to reconcile load balancer: Expected HTTP response code [201] when accessing [POST /v2.0/floatingips], " +
		`but got 409 instead: {"NeutronError": {"type": "OverQuota", "message": "Quota exceeded for resources: ['floatingip'].", "detail": ""}}`
	s = Summarize(waiting(cond("InfrastructureReady", "False", "OpenStackError", overQuota)), identityGroup)
	if want := "cluster InfrastructureReady (OpenStackError): failed to reconcile load balancer: OverQuota: Quota exceeded for resources: ['floatingip']."; s.Problem != want {
		t.Errorf("problem %q, want Neutron's quota refusal as CAPO reported it: %q", s.Problem, want)
	}
	s = Summarize(waiting(cond("InfrastructureReady", "False", "NotReady", "OpenStackCluster status.initialization.provisioned is false")), identityGroup)
	if !strings.HasPrefix(s.Problem, "control plane Available") {
		t.Errorf("problem %q, want the control plane's while the provider says nothing", s.Problem)
	}
}

// TestSummarizeScaleDownStaysHealthy: after a scale down to one worker,
// the machine Cluster API is deleting has lost its node (NodeHealthy
// False); the cluster it leaves, one worker ready of one, is healthy.
func TestSummarizeScaleDownStaysHealthy(t *testing.T) {
	obs := availableCluster("cluster.x-k8s.io/v1beta2")
	obs.MachineDeployments = []map[string]any{md("default-worker", 1, 1, 1)}
	going := obs.Machines[2]
	going["metadata"].(map[string]any)["deletionTimestamp"] = "2026-11-27T18:16:00Z"
	going["status"].(map[string]any)["conditions"] = []any{cond("NodeHealthy", "False", "NodeDeleted", "")}
	if s := Summarize(obs, identityGroup); s.Health != model.Healthy {
		t.Errorf("health after a scale down = %s, reasons %v; want HEALTHY", s.Health, s.HealthReasons)
	}
	// The same node lost by a machine that stays is an unhealthy node.
	delete(going["metadata"].(map[string]any), "deletionTimestamp")
	if s := Summarize(obs, identityGroup); s.Health != model.Unhealthy || s.HealthReasons["nodes"] == "" {
		t.Errorf("health with a machine's node lost = %s, reasons %v; want UNHEALTHY naming the node", s.Health, s.HealthReasons)
	}
}

func TestSummarizeWithoutClusterIsUnknown(t *testing.T) {
	s := Summarize(Observed{}, identityGroup)
	if s.Exists || s.Health != model.Unknown || s.Converged() {
		t.Errorf("got %+v", s)
	}
}

func TestSummarizeStaleGenerationIsNotConverged(t *testing.T) {
	obs := availableCluster("cluster.x-k8s.io/v1beta2")
	obs.Cluster["metadata"].(map[string]any)["generation"] = int64(3)
	if Summarize(obs, identityGroup).Converged() {
		t.Error("a topology change Cluster API has not observed yet must not count as converged")
	}
}

func testCluster(status model.Status, created time.Time) (*model.Cluster, []*model.NodeGroup) {
	c := &model.Cluster{UUID: "u1", Name: "demo", Status: status, CreateTimeout: 60, CreatedAt: created}
	ngs := []*model.NodeGroup{
		{UUID: "m", Name: "default-master", Role: model.RoleMaster, NodeCount: 1, Status: status},
		{UUID: "w", Name: "default-worker", Role: model.RoleWorker, NodeCount: 2, Status: status},
	}
	return c, ngs
}

func TestDecideCompletesOnlyWhenConvergedAndNothingPending(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	snap := Summarize(availableCluster("cluster.x-k8s.io/v1beta2"), identityGroup)
	cases := []struct {
		name    string
		status  model.Status
		pending bool
		want    model.Status
	}{
		{"create converged", model.CreateInProgress, false, model.CreateComplete},
		{"create converged but work queued", model.CreateInProgress, true, model.CreateInProgress},
		{"update converged", model.UpdateInProgress, false, model.UpdateComplete},
		{"complete stays complete", model.CreateComplete, false, model.CreateComplete},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, ngs := testCluster(tc.status, now.Add(-time.Minute))
			d := Decide(c, ngs, snap, tc.pending, now)
			if d.Cluster.Status != tc.want {
				t.Errorf("status = %s, want %s (reason %q)", d.Cluster.Status, tc.want, derefOr(d.Cluster.StatusReason, ""))
			}
			if *d.Cluster.APIAddress != "https://10.0.0.5:6443" || *d.Cluster.COEVersion != "v1.31.2" {
				t.Errorf("api/version not copied: %v %v", d.Cluster.APIAddress, d.Cluster.COEVersion)
			}
		})
	}
}

func TestDecideEnforcesCreateTimeoutWithLastReason(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	obs := availableCluster("cluster.x-k8s.io/v1beta2")
	obs.MachineDeployments = []map[string]any{md("default-worker", 2, 0, 2)}
	// Released CAPO's machine says only that it waits; the conductor read
	// what OpenStack said of the refused server.
	obs.Machines = append(obs.Machines[:1], machine("w-0", false, "default-worker", "10.0.0.11",
		cond("InfrastructureReady", "False", "WaitingForBootstrapData", "")))
	obs.ServerFailures = map[string]string{"w-0": failureText(machineServer{Recorded: `Expected HTTP response code [202] when accessing [POST http://nova/v2.1/servers], but got 400 instead: {"badRequest": {"code": 400, "message": "Flavor 3 could not be found."}}`}, "")}
	snap := Summarize(obs, identityGroup)
	c, ngs := testCluster(model.CreateInProgress, now.Add(-61*time.Minute))
	d := Decide(c, ngs, snap, false, now)
	if d.Cluster.Status != model.CreateFailed {
		t.Fatalf("status = %s", d.Cluster.Status)
	}
	if r := *d.Cluster.StatusReason; !strings.Contains(r, "Timed out after 60 minutes") || !strings.Contains(r, "OpenStack refused to create its server: Flavor 3 could not be found.") {
		t.Errorf("reason %q", r)
	}
	c2, ngs2 := testCluster(model.CreateInProgress, now.Add(-59*time.Minute))
	if d := Decide(c2, ngs2, snap, false, now); d.Cluster.Status != model.CreateInProgress || !strings.Contains(*d.Cluster.StatusReason, "Flavor 3 could not be found.") {
		t.Errorf("before the timeout: status %s reason %q", d.Cluster.Status, *d.Cluster.StatusReason)
	}
}

func TestDecideLeavesReadOnlyImportedClustersAlone(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	snap := Summarize(Observed{}, identityGroup)
	c, ngs := testCluster(model.CreateInProgress, now.Add(-24*time.Hour))
	reason := "Imported from Magnum; read-only: its driver k8s_fedora_coreos_v1 builds clusters with Heat"
	c.StatusReason = &reason
	c.Imported = &model.Imported{MagnumDriver: "k8s_fedora_coreos_v1", Unsupported: "its driver k8s_fedora_coreos_v1 builds clusters with Heat"}
	d := Decide(c, ngs, snap, false, now)
	if d.Changed || d.Cluster.Status != model.CreateInProgress || *d.Cluster.StatusReason != reason {
		t.Errorf("an imported read-only cluster was changed: changed=%v status %s reason %q", d.Changed, d.Cluster.Status, *d.Cluster.StatusReason)
	}
	c.Imported = nil
	if d := Decide(c, ngs, snap, false, now); d.Cluster.Status != model.CreateFailed {
		t.Errorf("the same cluster, not imported, must time out: %s", d.Cluster.Status)
	}
}

func TestDecideReportsNoChangeTwice(t *testing.T) {
	now := time.Now()
	snap := Summarize(availableCluster("cluster.x-k8s.io/v1beta2"), identityGroup)
	c, ngs := testCluster(model.CreateInProgress, now)
	d := Decide(c, ngs, snap, false, now)
	if !d.Changed {
		t.Fatal("first decision must change the cluster")
	}
	merged := map[string]*model.NodeGroup{}
	for _, ng := range d.NodeGroups {
		merged[ng.UUID] = ng
	}
	for i, ng := range ngs {
		if m, ok := merged[ng.UUID]; ok {
			ngs[i] = m
		}
	}
	if again := Decide(d.Cluster, ngs, snap, false, now); again.Changed {
		t.Errorf("a second decision on the same snapshot must not write: %+v", again.Cluster)
	}
}

func TestDecideWaitsForTheAppliedChangeToReachTheCache(t *testing.T) {
	now := time.Now()
	snap := Summarize(availableCluster("cluster.x-k8s.io/v1beta2"), identityGroup)
	cases := []struct {
		name   string
		mutate func(c *model.Cluster, ngs []*model.NodeGroup)
	}{
		{"resized in the store, old size in the cache", func(_ *model.Cluster, ngs []*model.NodeGroup) { ngs[1].NodeCount = 3 }},
		{"applied generation not yet observed", func(c *model.Cluster, _ []*model.NodeGroup) { c.AppliedGeneration = 3 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, ngs := testCluster(model.UpdateInProgress, now)
			tc.mutate(c, ngs)
			if d := Decide(c, ngs, snap, false, now); d.Cluster.Status != model.UpdateInProgress {
				t.Errorf("status = %s, want UPDATE_IN_PROGRESS until Cluster API shows the change", d.Cluster.Status)
			}
		})
	}
}

func TestSummarizeUpgradeNotConvergedUntilControlPlaneRunsTheNewVersion(t *testing.T) {
	obs := availableCluster("cluster.x-k8s.io/v1beta2")
	obs.Cluster["spec"].(map[string]any)["topology"] = map[string]any{"version": "v1.32.0"}
	if s := Summarize(obs, identityGroup); s.Converged() || s.Version != "v1.31.2" {
		t.Errorf("converged=%v version=%s; the control plane still runs v1.31.2", s.Converged(), s.Version)
	}
}

// TestSummarizeTellsTheTemplatesInPlaceFromTheRolloutDone: a
// TopologyReconciled condition computed for the newest generation but
// False while machine deployments wait for the control plane means the
// templates are in place; one computed for an older generation does not.
func TestSummarizeTellsTheTemplatesInPlaceFromTheRolloutDone(t *testing.T) {
	topo := func(status, reason string, observed int64) map[string]any {
		c := cond("TopologyReconciled", status, reason, "")
		c["observedGeneration"] = observed
		return c
	}
	cases := []struct {
		name             string
		topo             map[string]any
		current, applied bool
	}{
		{"reconciled", topo("True", "ReconcileSucceeded", 3), true, true},
		{"deployments pending", topo("False", "MachineDeploymentsCreatePending", 3), false, true},
		{"computed for the generation before", topo("True", "ReconcileSucceeded", 2), false, false},
		{"reconcile failed", topo("False", "ReconcileFailed", 3), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := Observed{Cluster: clusterObj("cluster.x-k8s.io/v1beta2", 3, 3, tc.topo)}
			s := Summarize(obs, identityGroup)
			if s.TopologyCurrent != tc.current || s.TopologyApplied != tc.applied {
				t.Errorf("current %v applied %v, want %v %v", s.TopologyCurrent, s.TopologyApplied, tc.current, tc.applied)
			}
		})
	}
}
