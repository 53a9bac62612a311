package conductor

import (
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestInfraStatusReadsBothVersions reads what CAPO and CAPM3 write at
// v1beta1 (v0.14.7, v1.12.7) and v1beta2 (v0.15.0-beta.0, v1.13.2): the
// status fields each version has, as their CRDs in test/crds declare them.
func TestInfraStatusReadsBothVersions(t *testing.T) {
	for _, tc := range []struct {
		name, object string
		want         infraStatus
		problem      string
	}{
		{name: "CAPO v1beta1 OpenStackMachine whose server went to ERROR", object: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachine
status:
  ready: false
  failureReason: UpdateError
  failureMessage: "Instance state ERROR is unexpected"
  conditions:
  - {type: InstanceReady, status: "False", severity: Error, reason: InstanceStateError, message: Instance is in ERROR state, lastTransitionTime: "2026-11-27T09:00:00Z"}
  - {type: Ready, status: "False", severity: Error, reason: InstanceStateError, message: Instance is in ERROR state, lastTransitionTime: "2026-11-27T09:00:00Z"}
`, want: infraStatus{FailureReason: "UpdateError", FailureMessage: "Instance state ERROR is unexpected"},
			problem: "UpdateError: Instance state ERROR is unexpected"},
		{name: "CAPO v1beta1 OpenStackMachine without failure fields", object: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachine
status:
  conditions:
  - {type: InstanceReady, status: "False", severity: Error, reason: InstanceStateError, message: Instance is in ERROR state, lastTransitionTime: "2026-11-27T09:00:00Z"}
`, problem: "InstanceReady (InstanceStateError): Instance is in ERROR state"},
		{name: "CAPO v1beta2 OpenStackMachine", object: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: OpenStackMachine
status:
  initialization: {provisioned: true}
  conditions:
  - {type: Ready, status: "True", reason: Ready, message: "", observedGeneration: 2, lastTransitionTime: "2026-11-27T09:00:00Z"}
`, want: infraStatus{Ready: true}},
		{name: "CAPO v1beta1 OpenStackCluster", object: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackCluster
status:
  ready: true
  failureDomains:
    nova-b: {controlPlane: false}
    nova-a: {controlPlane: true}
`, want: infraStatus{Ready: true, FailureDomains: []failureDomain{{"nova-a", true}, {"nova-b", false}}}},
		{name: "CAPO v1beta2 OpenStackCluster", object: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: OpenStackCluster
status:
  conditions:
  - {type: Ready, status: "True", reason: Ready, message: "", lastTransitionTime: "2026-11-27T09:00:00Z"}
  failureDomains:
  - {name: nova-b}
  - {name: nova-a, controlPlane: true}
`, want: infraStatus{Ready: true, FailureDomains: []failureDomain{{"nova-a", true}, {"nova-b", false}}}},
		{name: "CAPM3 v1beta2 Metal3Machine keeps the v1beta1 failure under deprecated", object: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Machine
status:
  conditions:
  - {type: Ready, status: "False", reason: NotReady, message: "host provisioning failed", lastTransitionTime: "2026-11-27T09:00:00Z"}
  deprecated:
    v1beta1:
      failureReason: CreateError
      failureMessage: "no BareMetalHost matches the host selector"
      conditions:
      - {type: AssociateBMH, status: "False", severity: Error, reason: AssociateBMHFailed, lastTransitionTime: "2026-11-27T09:00:00Z"}
`, want: infraStatus{FailureReason: "CreateError", FailureMessage: "no BareMetalHost matches the host selector"},
			problem: "CreateError: no BareMetalHost matches the host selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(tc.object), &obj); err != nil {
				t.Fatal(err)
			}
			got := readInfraStatus(obj)
			if len(got.Conditions) == 0 && nested(obj, "status", "conditions") != nil {
				t.Errorf("no conditions read")
			}
			got.Conditions = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("read %+v, want %+v", got, tc.want)
			}
			problem, ok := readInfraStatus(obj).problem()
			if problem != tc.problem || ok != (tc.problem != "") {
				t.Errorf("problem %q (%v), want %q", problem, ok, tc.problem)
			}
		})
	}
}
