package conductor

import (
	"slices"
	"strings"
)

// infraStatus is what an infrastructure provider's object (OpenStackMachine,
// OpenStackCluster, OpenStackServer, Metal3Machine, Metal3Cluster) says of
// itself, read alike at either version Magnetite reads them at:
//
//   - v1beta1 (CAPO v0.12-v0.14, CAPM3 up to v1.12): status.ready,
//     status.failureReason and failureMessage, Cluster API v1beta1-style
//     conditions with a severity in status.conditions (CAPM3 also keeps
//     v1beta2 conditions in status.v1beta2.conditions), failure domains as a
//     map by name;
//   - v1beta2 (CAPO v0.15, CAPM3 v1.13): status.initialization.provisioned
//     and the Ready condition, metav1 conditions in status.conditions (CAPM3
//     keeps its v1beta1 ones and the failure fields under
//     status.deprecated.v1beta1; CAPO drops them, its conditions carry the
//     reason), failure domains as a list.
//
// CAPO lists these differences in
// docs/book/src/topics/crd-changes/v1beta1-to-v1beta2.md (tag
// v0.15.0-beta.0), CAPM3 in api/v1beta1/conversion.go (tag v1.13.2).
type infraStatus struct {
	// Ready: the provider has provisioned the object.
	Ready bool
	// FailureReason and FailureMessage are the v1beta1 failure fields, set
	// when the provider has given up on the object.
	FailureReason, FailureMessage string
	// Conditions in either shape; Severity ("Error", "Warning", "Info") is
	// only said by v1beta1 conditions.
	Conditions []infraCondition
	// FailureDomains are the failure domains an infrastructure cluster
	// offers, by name.
	FailureDomains []failureDomain
}

type infraCondition struct {
	condition
	Severity string
}

type failureDomain struct {
	Name         string
	ControlPlane bool
}

// readInfraStatus reads an infrastructure object's status.
func readInfraStatus(obj map[string]any) infraStatus {
	var s infraStatus
	raw, _ := nested(obj, "status", "conditions").([]any)
	if old, ok := nested(obj, "status", "deprecated", "v1beta1", "conditions").([]any); ok {
		// CAPM3's v1beta2 objects keep the v1beta1 conditions, whose
		// severity says more than the metav1 ones.
		raw = old
	}
	for _, r := range raw {
		m, _ := r.(map[string]any)
		c := infraCondition{}
		c.Type, _ = m["type"].(string)
		c.Status, _ = m["status"].(string)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		c.Severity, _ = m["severity"].(string)
		s.Conditions = append(s.Conditions, c)
	}
	for _, path := range [][]string{{"status"}, {"status", "deprecated", "v1beta1"}} {
		if r := nestedString(obj, append(slices.Clone(path), "failureReason")...); r != "" {
			s.FailureReason = r
		}
		if m := nestedString(obj, append(slices.Clone(path), "failureMessage")...); m != "" {
			s.FailureMessage = strings.TrimSpace(m)
		}
	}
	ready, _ := nested(obj, "status", "ready").(bool)
	provisioned, _ := nested(obj, "status", "initialization", "provisioned").(bool)
	s.Ready = ready || provisioned || isTrue(obj, conditionReady)
	switch fds := nested(obj, "status", "failureDomains").(type) {
	case map[string]any:
		for name, v := range fds {
			m, _ := v.(map[string]any)
			cp, _ := m["controlPlane"].(bool)
			s.FailureDomains = append(s.FailureDomains, failureDomain{Name: name, ControlPlane: cp})
		}
	case []any:
		for _, v := range fds {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			cp, _ := m["controlPlane"].(bool)
			s.FailureDomains = append(s.FailureDomains, failureDomain{Name: name, ControlPlane: cp})
		}
	}
	slices.SortFunc(s.FailureDomains, func(a, b failureDomain) int { return strings.Compare(a.Name, b.Name) })
	return s
}

// problem is what the provider reports as wrong with the object, in its
// own words: the v1beta1 failure fields (set when it has given up), else
// the first False condition of severity Error (v1beta1 only: v1beta2
// conditions carry no severity, and their reasons must be read per
// condition type).
func (s infraStatus) problem() (string, bool) {
	if s.FailureReason != "" || s.FailureMessage != "" {
		return strings.Join(slices.DeleteFunc([]string{s.FailureReason, s.FailureMessage}, func(x string) bool { return x == "" }), ": "), true
	}
	for _, c := range s.Conditions {
		if c.Status == "False" && c.Severity == "Error" {
			return c.String(), true
		}
	}
	return "", false
}
