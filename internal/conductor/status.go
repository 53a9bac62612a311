package conductor

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/model"
)

// GroupState is what the management cluster reports for one node group (or
// the control plane).
type GroupState struct {
	Present   bool
	Desired   int
	Ready     int
	UpToDate  int
	Addresses []string
	// Problem is why machines of the group are not ready, quoting Cluster API.
	Problem string
}

// Settled reports whether every desired machine is ready and up to date.
func (g GroupState) Settled() bool {
	return g.Present && g.Ready == g.Desired && g.UpToDate == g.Desired
}

// Snapshot is the status-relevant summary of a cluster's objects.
type Snapshot struct {
	Exists                  bool
	Deleting                bool
	Available               bool
	ControlPlaneInitialized bool
	// TopologyCurrent is true when Cluster API has reconciled the latest
	// generation of the Cluster's topology.
	TopologyCurrent bool
	// TopologyApplied is true when Cluster API has rolled the latest
	// generation into the machine templates, even if rolling the machines
	// out is still pending.
	TopologyApplied bool
	// ObservedGeneration is the Cluster generation Cluster API last acted on.
	ObservedGeneration int64
	APIAddress         string
	// DesiredVersion is the topology's Kubernetes version; VersionsMatch
	// says whether the control plane and every machine deployment run it.
	DesiredVersion string
	VersionsMatch  bool
	Version        string
	ControlPlane   GroupState
	NodeGroups     map[string]GroupState
	// Problem is the most specific current failure, quoting the Cluster API
	// condition reason and message.
	Problem       string
	Health        model.Health
	HealthReasons map[string]string
}

// Converged reports whether Cluster API has reached the desired shape:
// available, topology reconciled, every group ready and up to date.
func (s Snapshot) Converged() bool {
	if !s.Exists || s.Deleting || !s.Available || !s.TopologyCurrent || !s.VersionsMatch || !s.ControlPlane.Settled() {
		return false
	}
	for _, g := range s.NodeGroups {
		if !g.Settled() {
			return false
		}
	}
	return true
}

// Summarize reads the objects of one cluster. groupOf maps the labels of a
// machine deployment or machine to the Magnetite node group name ("" for
// objects of no known group).
func Summarize(obs Observed, groupOf func(labels map[string]string) string) Snapshot {
	s := Snapshot{NodeGroups: map[string]GroupState{}, HealthReasons: map[string]string{}}
	c := obs.Cluster
	if c == nil {
		s.Health = model.Unknown
		return s
	}
	s.Exists = true
	s.Deleting = nestedString(c, "metadata", "deletionTimestamp") != ""
	s.Available = isTrue(c, conditionAvailable)
	s.ControlPlaneInitialized = isTrue(c, conditionCPInit) || isTrue(obs.ControlPlane, conditionCPInit)
	if v, ok := nested(c, "status", "initialization", "controlPlaneInitialized").(bool); ok && v {
		s.ControlPlaneInitialized = true
	}
	gen, _ := nestedInt(c, "metadata", "generation")
	observedGen, _ := nestedInt(c, "status", "observedGeneration")
	topo, hasTopo := findCondition(c, conditionTopology)
	s.ObservedGeneration = int64(observedGen)
	// TopologyReconciled computed for an older generation says nothing of
	// the templates of the newest one.
	s.TopologyCurrent = observedGen >= gen && (!hasTopo || (topo.Status == "True" && (topo.ObservedGeneration == 0 || topo.ObservedGeneration >= int64(gen))))
	// Pending upgrades or machine deployments leave TopologyReconciled
	// False, but the machine templates of that generation are in place.
	s.TopologyApplied = s.TopologyCurrent || observedGen >= gen && hasTopo && topo.ObservedGeneration >= int64(gen) && topo.Reason != "ReconcileFailed"
	if host := nestedString(c, "spec", "controlPlaneEndpoint", "host"); host != "" {
		port, _ := nestedInt(c, "spec", "controlPlaneEndpoint", "port")
		if port == 0 {
			port = 6443
		}
		s.APIAddress = "https://" + net.JoinHostPort(host, strconv.Itoa(port))
	}
	if cp := obs.ControlPlane; cp != nil {
		s.ControlPlane.Present = true
		s.ControlPlane.Desired, _ = nestedInt(cp, "spec", "replicas")
		s.ControlPlane.Ready, _ = nestedInt(cp, "status", "readyReplicas")
		s.ControlPlane.UpToDate, _ = nestedInt(cp, "status", "upToDateReplicas")
		// Mid-upgrade the status version is the oldest one still running,
		// which is the version users can rely on.
		s.Version = nestedString(cp, "status", "version")
		if c, ok := falseCondition(cp, conditionAvailable, "MachinesReady"); ok {
			s.ControlPlane.Problem = "control plane " + c.String()
		}
	}
	s.DesiredVersion = nestedString(c, "spec", "topology", "version")
	s.VersionsMatch = s.DesiredVersion == "" || s.Version == s.DesiredVersion
	for _, md := range obs.MachineDeployments {
		if v := nestedString(md, "spec", "template", "spec", "version"); v != "" && s.DesiredVersion != "" && v != s.DesiredVersion {
			s.VersionsMatch = false
		}
	}
	mdGroup := map[string]string{}
	for _, md := range obs.MachineDeployments {
		ng := groupOf(labelsOf(md))
		if ng == "" {
			continue
		}
		mdGroup[name(md)] = ng
		g := s.NodeGroups[ng]
		g.Present = true
		d, _ := nestedInt(md, "spec", "replicas")
		r, _ := nestedInt(md, "status", "readyReplicas")
		u, _ := nestedInt(md, "status", "upToDateReplicas")
		g.Desired += d
		g.Ready += r
		g.UpToDate += u
		if c, ok := falseCondition(md, conditionAvailable, "MachinesReady"); ok && g.Problem == "" {
			g.Problem = "machine deployment " + name(md) + ": " + c.String()
		}
		s.NodeGroups[ng] = g
	}
	unhealthy := 0
	for _, m := range obs.Machines {
		labels := labelsOf(m)
		addrs := machineAddresses(m)
		problem := machineProblem(m)
		if text, failed := obs.ServerFailures[name(m)]; failed {
			problem = text + retryHint
		} else if text, retried := obs.ServerRetries[name(m)]; retried {
			problem = text
		}
		// A machine on its way out (a scale down, a remediation) loses
		// its node first: that node is going, not unhealthy.
		deleting, _, _ := unstructured.NestedString(m, "metadata", "deletionTimestamp")
		if c, ok := findCondition(m, conditionNodeHealthy); ok && c.Status == "False" && deleting == "" {
			unhealthy++
		}
		if _, isCP := labels[labelControlPlane]; isCP {
			s.ControlPlane.Addresses = append(s.ControlPlane.Addresses, addrs...)
			// A machine's own failure (the cloud refusing its server) says
			// more than the control plane's summary of waiting for it.
			if problem != "" && !strings.HasPrefix(s.ControlPlane.Problem, "control plane machine ") {
				s.ControlPlane.Problem = "control plane machine " + name(m) + ": " + problem
			}
			continue
		}
		ng := groupOf(labels)
		if ng == "" {
			ng = mdGroup[labels[labelDeploymentName]]
		}
		if ng == "" {
			continue
		}
		g := s.NodeGroups[ng]
		g.Addresses = append(g.Addresses, addrs...)
		if problem != "" && (g.Problem == "" || strings.HasPrefix(g.Problem, "machine deployment")) {
			g.Problem = "machine " + name(m) + ": " + problem
		}
		s.NodeGroups[ng] = g
	}
	s.Problem = firstProblem(obs, s)
	s.Health, s.HealthReasons = health(obs, s, unhealthy)
	return s
}

// machineProblem explains why a machine is not (yet) a healthy node.
func machineProblem(m map[string]any) string {
	if c, ok := falseCondition(m, conditionInfraReady, conditionBootstrap, conditionNodeHealthy, conditionReady); ok {
		if c.Reason == "WaitingForInfrastructure" || c.Reason == "WaitingForBootstrapData" || c.Reason == "" && c.Message == "" {
			// Plain progress, not a failure worth quoting over others.
			return ""
		}
		return c.String()
	}
	if msg := nestedString(m, "status", "deprecated", "v1beta1", "failureMessage"); msg != "" {
		return oneLine(msg)
	}
	return ""
}

// capiInfrastructureReasons are the reasons Cluster API itself gives the
// Cluster's InfrastructureReady condition (core/reconcilers/cluster/
// cluster_controller_status.go, setInfrastructureReadyCondition, v1.14):
// its fallback while the provider has said nothing, and the object's
// absence. Any other reason is the provider's, mirrored from its Ready
// condition.
var capiInfrastructureReasons = []string{"Ready", "NotReady", "NoReasonReported", "DoesNotExist", "Deleted", "InternalError"}

// infrastructureProblem is why the infrastructure provider says the
// cluster's infrastructure is not ready, when it says so: CAPO v0.14.7
// marks its OpenStackCluster's Ready condition False with OpenStack's
// words when a step fails (controllers/openstackcluster_controller.go,
// handleUpdateOSCError), among them Neutron's refusal of the API load
// balancer's floating IP, and Cluster API mirrors it onto the Cluster.
func infrastructureProblem(obs Observed) (string, bool) {
	c, ok := falseCondition(obs.Cluster, conditionInfraReady)
	if !ok || strings.TrimSpace(c.Message) == "" || slices.Contains(capiInfrastructureReasons, c.Reason) {
		return "", false
	}
	// CAPO quotes gophercloud's error, the refused request and the
	// service's whole answer: keep the step that failed and the service's
	// own message.
	if refused := cloud.RefusalMessage(c.Message); refused != strings.TrimSpace(c.Message) {
		step, _, _ := strings.Cut(c.Message, "Expected HTTP response code")
		c.Message = step + refused
	}
	return "cluster " + c.String(), true
}

func firstProblem(obs Observed, s Snapshot) string {
	// Nothing of the control plane can start before the cluster's
	// infrastructure is there: the provider's reason comes before the
	// control plane's waiting for it.
	if p, ok := infrastructureProblem(obs); ok && !s.ControlPlaneInitialized {
		return p
	}
	if s.ControlPlane.Problem != "" {
		return s.ControlPlane.Problem
	}
	for _, ng := range slices.Sorted(maps.Keys(s.NodeGroups)) {
		if p := s.NodeGroups[ng].Problem; p != "" {
			return "node group " + ng + ": " + p
		}
	}
	if c, ok := falseCondition(obs.Cluster, conditionInfraReady, conditionTopology, conditionCPAvailable, conditionWorkersAvail, conditionAvailable); ok {
		return "cluster " + c.String()
	}
	return ""
}

func health(obs Observed, s Snapshot, unhealthyNodes int) (model.Health, map[string]string) {
	reasons := map[string]string{}
	reason := func(obj map[string]any, typ string) string {
		c, ok := findCondition(obj, typ)
		switch {
		case !ok:
			return "unknown"
		case c.Status == "True":
			return "ok"
		default:
			return c.String()
		}
	}
	reasons["cluster"] = reason(obs.Cluster, conditionAvailable)
	reasons["infrastructure"] = reason(obs.Cluster, conditionInfraReady)
	reasons["control_plane"] = reason(obs.Cluster, conditionCPAvailable)
	if s.ControlPlane.Present {
		reasons["control_plane"] += fmt.Sprintf(" (%d/%d ready)", s.ControlPlane.Ready, s.ControlPlane.Desired)
	}
	for _, ng := range slices.Sorted(maps.Keys(s.NodeGroups)) {
		g := s.NodeGroups[ng]
		r := fmt.Sprintf("%d/%d ready", g.Ready, g.Desired)
		if g.Problem != "" {
			r += ": " + g.Problem
		}
		reasons["nodegroup "+ng] = r
	}
	addons, hasAddons := addonsHealth(obs.Addons, s.ControlPlaneInitialized)
	if hasAddons {
		reasons["addons"] = addons
	}
	if !s.ControlPlaneInitialized {
		return model.Unknown, reasons
	}
	if s.Available && unhealthyNodes == 0 && s.ControlPlane.Ready >= s.ControlPlane.Desired && !strings.HasPrefix(addons, "failed") {
		ok := true
		for _, g := range s.NodeGroups {
			if g.Ready < g.Desired {
				ok = false
			}
		}
		if ok {
			return model.Healthy, reasons
		}
	}
	if unhealthyNodes > 0 {
		reasons["nodes"] = plural(unhealthyNodes, "node") + " not healthy"
	}
	return model.Unhealthy, reasons
}
