package testcapo

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// release is a CAPO release the stand-in imitates: the infrastructure API
// version its controllers read and write, and where its behaviour differs
// from the other's. Every difference between the two is here.
type release struct {
	name    string
	version string // of OpenStackCluster and OpenStackMachine
}

var (
	// v0147 is CAPO v0.14.7 (2026-08-04, the newest stable release): every
	// kind at v1beta1, Cluster API v1beta1 conditions.
	v0147 = release{name: "v0.14.7", version: "v1beta1"}
	// v0150 is CAPO v0.15.0-beta.0, the first to serve v1beta2, which its
	// controllers use (metav1 conditions).
	v0150 = release{name: "v0.15.0-beta.0", version: "v1beta2"}

	// serversGVR: OpenStackServer is v1alpha1 in both releases.
	serversGVR = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Resource: "openstackservers"}
)

// discoverRelease reads which infrastructure versions the management
// cluster serves: v1beta2 means v0.15's CRDs (whose controllers use it),
// v1beta1 alone v0.14's.
func discoverRelease(ctx context.Context, dc dynamic.Interface) (release, bool) {
	for _, r := range []release{v0150, v0147} {
		if _, err := dc.Resource(r.gvr("openstackclusters")).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
			return r, true
		}
	}
	return release{}, false
}

func (r release) gvr(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: r.version, Resource: resource}
}

func (r release) v1beta1() bool { return r.version == "v1beta1" }

// Severities of Cluster API's v1beta1 conditions, which v0.14.7 writes.
const (
	severityError   = "Error"
	severityWarning = "Warning"
	severityInfo    = "Info"
)

// condition is one condition before it is written in the release's
// format.
type condition struct {
	typ, status, reason, severity, message string
}

func trueCondition(typ string) condition {
	return condition{typ: typ, status: "True", reason: "Ready"}
}

func falseCondition(typ, reason, severity, message string) condition {
	return condition{typ: typ, status: "False", reason: reason, severity: severity, message: message}
}

// set writes conditions in the release's format, keeping the transition
// time of those whose status did not change. v0.14.7 writes Cluster API
// v1beta1 conditions (util/deprecated/v1beta1/conditions: MarkTrue sets no
// reason, MarkFalse a severity); v0.15.0-beta.0 metav1 conditions, whose
// reason is never empty (api/v1beta2/conditions_consts.go:
// ReadyConditionReason "Ready").
func (r release) set(o *unstructured.Unstructured, conds ...condition) {
	old, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	byType := map[string]map[string]any{}
	var order []string
	for _, x := range old {
		m := x.(map[string]any)
		byType[m["type"].(string)] = m
		order = append(order, m["type"].(string))
	}
	now := time.Now().UTC().Format(time.RFC3339)
	for _, n := range conds {
		m := map[string]any{"type": n.typ, "status": n.status, "lastTransitionTime": now}
		if r.v1beta1() {
			if n.status != "True" {
				if n.reason != "" {
					m["reason"] = n.reason
				}
				if n.severity != "" {
					m["severity"] = n.severity
				}
				if n.message != "" {
					m["message"] = n.message
				}
			}
		} else {
			m["reason"], m["message"], m["observedGeneration"] = n.reason, n.message, o.GetGeneration()
		}
		if prev, ok := byType[n.typ]; ok {
			if prev["status"] == m["status"] {
				m["lastTransitionTime"] = prev["lastTransitionTime"]
			}
		} else {
			order = append(order, n.typ)
		}
		byType[n.typ] = m
	}
	out := make([]any, 0, len(order))
	for _, typ := range order {
		out = append(out, byType[typ])
	}
	_ = unstructured.SetNestedSlice(o.Object, out, "status", "conditions")
}

// get is a condition's status, reason and message.
func get(o *unstructured.Unstructured, typ string) (status, reason, message string) {
	list, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, x := range list {
		if m := x.(map[string]any); m["type"] == typ {
			return str(m, "status"), str(m, "reason"), str(m, "message")
		}
	}
	return "", "", ""
}

// summarize sets Ready from the given conditions as v0.14.7's patchMachine
// and patchServer do on every write (v1beta1conditions.SetSummary): true
// when all are, else the reason and message of the first of the worst
// group (False before Unknown, Error before Warning before Info). With
// none of them set it leaves Ready alone. v0.15 writes Ready itself.
func (r release) summarize(o *unstructured.Unstructured, types ...string) {
	if !r.v1beta1() {
		return
	}
	rank := func(status, severity string) int {
		switch {
		case status == "False" && severity == severityError:
			return 0
		case status == "False" && severity == severityWarning:
			return 1
		case status == "False":
			return 2
		case status == "Unknown":
			return 3
		}
		return 4
	}
	best, found := condition{}, false
	bestRank := 5
	list, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, typ := range types {
		for _, x := range list {
			m := x.(map[string]any)
			if m["type"] != typ {
				continue
			}
			found = true
			if k := rank(str(m, "status"), str(m, "severity")); k < bestRank {
				bestRank = k
				best = condition{typ: "Ready", status: str(m, "status"), reason: str(m, "reason"), severity: str(m, "severity"), message: str(m, "message")}
			}
		}
	}
	if !found {
		return
	}
	if bestRank == 4 {
		best = trueCondition("Ready")
	}
	r.set(o, best)
}

// provisioned reports whether an OpenStackCluster or OpenStackMachine is
// ready: v0.14.7 reads status.ready (controllers/openstackmachine_controller.go),
// v0.15 status.initialization.provisioned.
func (r release) provisioned(o *unstructured.Unstructured) bool {
	if r.v1beta1() {
		ready, _, _ := unstructured.NestedBool(o.Object, "status", "ready")
		return ready
	}
	p, _, _ := unstructured.NestedBool(o.Object, "status", "initialization", "provisioned")
	return p
}

// markProvisioned sets what each release sets once the infrastructure is
// up: v0.14.7 both status.ready and initialization.provisioned, v0.15
// initialization.provisioned.
func (r release) markProvisioned(o *unstructured.Unstructured) {
	if r.v1beta1() {
		_ = unstructured.SetNestedField(o.Object, true, "status", "ready")
	}
	_ = unstructured.SetNestedField(o.Object, true, "status", "initialization", "provisioned")
}

// failureDomains writes Nova's zones as the cluster's failure domains:
// v1beta1 a map by name, v1beta2 a list sorted by name
// (docs/book/src/topics/crd-changes/v1beta1-to-v1beta2.md at v0.15.0-beta.0).
func (r release) failureDomains(o *unstructured.Unstructured, controlPlane map[string]bool) {
	names := make([]string, 0, len(controlPlane))
	for n := range controlPlane {
		names = append(names, n)
	}
	sort.Strings(names)
	if r.v1beta1() {
		m := map[string]any{}
		for _, n := range names {
			m[n] = map[string]any{"controlPlane": controlPlane[n]}
		}
		_ = unstructured.SetNestedMap(o.Object, m, "status", "failureDomains")
		return
	}
	var l []any
	for _, n := range names {
		l = append(l, map[string]any{"name": n, "controlPlane": controlPlane[n]})
	}
	_ = unstructured.SetNestedSlice(o.Object, l, "status", "failureDomains")
}

// apiServer is what an OpenStackCluster's spec says of the API server,
// from v1beta1's top-level fields or v1beta2's spec.apiServer.
type apiServer struct {
	managedLB, floatingIPDisabled bool
	floatingIP                    string
	port                          int64
}

func (r release) apiServer(spec map[string]any) apiServer {
	a := apiServer{port: 6443}
	if r.v1beta1() {
		a.managedLB, _, _ = unstructured.NestedBool(spec, "apiServerLoadBalancer", "enabled")
		a.floatingIPDisabled, _, _ = unstructured.NestedBool(spec, "disableAPIServerFloatingIP")
		a.floatingIP, _, _ = unstructured.NestedString(spec, "apiServerFloatingIP")
		if p, ok, _ := unstructured.NestedInt64(spec, "apiServerPort"); ok {
			a.port = p
		}
		return a
	}
	a.managedLB, _, _ = unstructured.NestedBool(spec, "apiServer", "managedLoadBalancer", "enabled")
	if enabled, ok, _ := unstructured.NestedBool(spec, "apiServer", "enableFloatingIP"); ok {
		a.floatingIPDisabled = !enabled
	}
	a.floatingIP, _, _ = unstructured.NestedString(spec, "apiServer", "floatingIP")
	if p, ok, _ := unstructured.NestedInt64(spec, "apiServer", "port"); ok {
		a.port = p
	}
	return a
}

// loadBalancerStatus is where the API load balancer's status goes.
func (r release) loadBalancerStatus() string {
	if r.v1beta1() {
		return "apiServerLoadBalancer"
	}
	return "apiServerManagedLoadBalancer"
}

// externalNetworkDisabled: v1beta1's disableExternalNetwork, v1beta2's
// enableExternalNetwork false.
func (r release) externalNetworkDisabled(spec map[string]any) bool {
	if r.v1beta1() {
		d, _, _ := unstructured.NestedBool(spec, "disableExternalNetwork")
		return d
	}
	e, ok, _ := unstructured.NestedBool(spec, "enableExternalNetwork")
	return ok && !e
}

// serverFlavor is an OpenStackServer's flavor and flavorID (both releases'
// v1alpha1 keep v1beta1's pair) from its machine's spec: v1beta1 has the
// same pair, v1beta2 flavor {id, filter {name}}.
func (r release) serverFlavor(machineSpec map[string]any) (name, id string) {
	if r.v1beta1() {
		return str(machineSpec, "flavor"), str(machineSpec, "flavorID")
	}
	f, _ := machineSpec["flavor"].(map[string]any)
	return filterName(f), str(f, "id")
}

// portSecurity is what a port's spec says of port security: set, and
// enabled. v1beta1 (and v0.14.7's OpenStackServer) say disablePortSecurity,
// v1beta2 (and v0.15's OpenStackServer) enablePortSecurity.
func (r release) portSecurity(port map[string]any) (set, enabled bool) {
	if r.v1beta1() {
		d, ok := port["disablePortSecurity"].(bool)
		return ok, !d
	}
	e, ok := port["enablePortSecurity"].(bool)
	return ok, e
}

// portSecurityField is the name of that field in the release.
func (r release) portSecurityField() string {
	if r.v1beta1() {
		return "disablePortSecurity"
	}
	return "enablePortSecurity"
}

// machineGaveUp reports whether a release has stopped reconciling an
// OpenStackMachine for good: v0.14.7 once failureReason or failureMessage
// is set, v0.15.0-beta.0 once Ready is False for InstanceStateError
// (controllers/openstackmachine_controller.go, reconcileNormal). CAPO main
// has no such stop.
func (r reconciler) machineGaveUp(o *unstructured.Unstructured) bool {
	if r.backoff != nil {
		return false
	}
	if r.rel.v1beta1() {
		_, reason, _ := unstructured.NestedString(o.Object, "status", "failureReason")
		_, message, _ := unstructured.NestedString(o.Object, "status", "failureMessage")
		return reason || message
	}
	status, reason, _ := get(o, "Ready")
	return status == "False" && reason == "InstanceStateError"
}

// copiesServerState reports whether the OpenStackMachine and
// OpenStackServer controllers are v0.15's or main's, which put the
// server's troubles in its conditions and copy them onto the machine;
// v0.14.7's say nothing of a server that is not ready yet.
func (r reconciler) copiesServerState() bool { return !r.rel.v1beta1() || r.backoff != nil }

// setFailure is v1beta1's OpenStackMachine.SetFailure.
func setFailure(o *unstructured.Unstructured, reason, message string) {
	_ = unstructured.SetNestedField(o.Object, reason, "status", "failureReason")
	_ = unstructured.SetNestedField(o.Object, message, "status", "failureMessage")
}

// describe is how CAPO's description of what it made names the cluster
// (pkg/utils/names.GetDescription).
func describe(cluster string) string {
	return fmt.Sprintf("Created by cluster-api-provider-openstack cluster %s", cluster)
}
