package conductor

import (
	"fmt"
	"strings"
)

// Cluster API labels the status code reads.
const (
	labelControlPlane     = "cluster.x-k8s.io/control-plane"
	labelTopologyMDName   = "topology.cluster.x-k8s.io/deployment-name"
	labelDeploymentName   = "cluster.x-k8s.io/deployment-name"
	conditionAvailable    = "Available"
	conditionInfraReady   = "InfrastructureReady"
	conditionCPAvailable  = "ControlPlaneAvailable"
	conditionCPInit       = "ControlPlaneInitialized"
	conditionWorkersAvail = "WorkersAvailable"
	conditionNodeHealthy  = "NodeHealthy"
	conditionReady        = "Ready"
	conditionBootstrap    = "BootstrapConfigReady"
	conditionRemoteProbe  = "RemoteConnectionProbe"
	conditionTopology     = "TopologyReconciled"
	conditionDeleting     = "Deleting"
)

// Observed is what the management cluster holds for one Magnetite cluster,
// as unstructured objects (served at whatever version discovery found).
type Observed struct {
	Cluster            map[string]any
	ControlPlane       map[string]any
	MachineDeployments []map[string]any
	Machines           []map[string]any
	// Addons is the cluster's ClusterResourceSet, nil when it has none.
	Addons map[string]any
	// ServerFailures says, by Machine name, why a machine's server failed
	// for good, in OpenStack's words (read beside the watch caches: the
	// provider's server objects carry no Magnetite label).
	ServerFailures map[string]string
	// ServerRetries says, by Machine name, why CAPO is still trying to make
	// a machine's server, in OpenStack's words.
	ServerRetries map[string]string
}

// condition is a Cluster API condition in either v1beta2 (metav1.Condition)
// or v1beta1 shape; both carry type, status, reason and message.
type condition struct {
	Type, Status, Reason, Message string
	// ObservedGeneration is the object generation the condition was
	// computed for (v1beta2 conditions); 0 when not said.
	ObservedGeneration int64
}

func (c condition) String() string {
	s := c.Type
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	if m := strings.TrimSpace(c.Message); m != "" {
		s += ": " + oneLine(m)
	}
	return s
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:397] + "..."
	}
	return s
}

func nested(obj map[string]any, path ...string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func nestedString(obj map[string]any, path ...string) string {
	s, _ := nested(obj, path...).(string)
	return s
}

func nestedInt(obj map[string]any, path ...string) (int, bool) {
	switch v := nested(obj, path...).(type) {
	case int64:
		return int(v), true
	case int:
		return v, true
	case float64:
		return int(v), true
	case int32:
		return int(v), true
	}
	return 0, false
}

func labelsOf(obj map[string]any) map[string]string {
	out := map[string]string{}
	if m, ok := nested(obj, "metadata", "labels").(map[string]any); ok {
		for k, v := range m {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
	}
	return out
}

// conditions reads status conditions in the v1beta2 shape; objects served at
// v1beta1 carry them under status.v1beta2.conditions.
func conditions(obj map[string]any) []condition {
	if obj == nil {
		return nil
	}
	raw, ok := nested(obj, "status", "conditions").([]any)
	apiVersion := nestedString(obj, "apiVersion")
	if strings.HasSuffix(apiVersion, "/v1beta1") {
		if v2, ok2 := nested(obj, "status", "v1beta2", "conditions").([]any); ok2 {
			raw, ok = v2, true
		}
	}
	if !ok {
		return nil
	}
	out := make([]condition, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		c := condition{}
		c.Type, _ = m["type"].(string)
		c.Status, _ = m["status"].(string)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		if g, ok := nestedInt(m, "observedGeneration"); ok {
			c.ObservedGeneration = int64(g)
		}
		out = append(out, c)
	}
	return out
}

func findCondition(obj map[string]any, typ string) (condition, bool) {
	for _, c := range conditions(obj) {
		if c.Type == typ {
			return c, true
		}
	}
	return condition{}, false
}

func isTrue(obj map[string]any, typ string) bool {
	c, ok := findCondition(obj, typ)
	return ok && c.Status == "True"
}

// falseCondition returns the first listed condition that is False, which is
// where Cluster API explains why something is not ready.
func falseCondition(obj map[string]any, types ...string) (condition, bool) {
	for _, t := range types {
		if c, ok := findCondition(obj, t); ok && c.Status == "False" {
			return c, true
		}
	}
	return condition{}, false
}

func machineAddresses(m map[string]any) []string {
	raw, _ := nested(m, "status", "addresses").([]any)
	var internal, external []string
	for _, r := range raw {
		a, ok := r.(map[string]any)
		if !ok {
			continue
		}
		addr, _ := a["address"].(string)
		switch a["type"] {
		case "ExternalIP":
			external = append(external, addr)
		case "InternalIP":
			internal = append(internal, addr)
		}
	}
	// Magnum reports the address users reach nodes on: floating/external
	// first, the internal one otherwise.
	if len(external) > 0 {
		return external[:1]
	}
	if len(internal) > 0 {
		return internal[:1]
	}
	return nil
}

func name(obj map[string]any) string { return nestedString(obj, "metadata", "name") }

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
