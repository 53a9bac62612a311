package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func requestAt(minor int, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/clusters", strings.NewReader(body))
	return r.WithContext(withVersion(r.Context(), APIVersion{Major: 1, Minor: minor}))
}

// TestMicroversionRefusals: a route newer than the requested microversion
// answers Magnum's 406, a newer behaviour of an existing route a 400 with
// Magnum's sentence, and the microversion that introduced either passes.
func TestMicroversionRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gate   since
		below  int
		status int
		detail string
	}{
		{"resize route", sinceResize, 6, 406, "the requested API resize is not supported for this version; it needs container-infra 1.7 or newer"},
		{"nodegroups route", sinceNodeGroups, 8, 406, "the requested API nodegroups is not supported"},
		{"credential rotation route", sinceCredentialRotation, 11, 406, "credential rotation is not supported for this version; it needs container-infra 1.12"},
		{"upgrade at 1.7", sinceUpgradeRuns, 7, 400, "Cluster upgrade is not supported in microversion 1.7; use container-infra 1.8 or newer."},
		{"zero nodes", sinceZeroNodes, 9, 400, "Resizing a nodegroup to zero is not supported in the provided microversion (1.9)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := requireVersion(requestAt(tc.below, ""), tc.gate)
			if err == nil || err.Status != tc.status || !strings.Contains(err.Detail, tc.detail) {
				t.Fatalf("at 1.%d: %+v, want %d %q", tc.below, err, tc.status, tc.detail)
			}
			if tc.status == 406 && err.Code != "magnum.microversion-unsupported" {
				t.Errorf("code %q, want magnum.microversion-unsupported", err.Code)
			}
			for _, minor := range []int{tc.gate.minor, MaxVersion.Minor} {
				if err := requireVersion(requestAt(minor, ""), tc.gate); err != nil {
					t.Errorf("at 1.%d: refused with %v", minor, err)
				}
			}
		})
	}
	if err := requireNodeCount(requestAt(1, ""), 3); err != nil {
		t.Errorf("node_count 3 at 1.1 refused: %v", err)
	}
	if err := requireNodeCount(requestAt(9, ""), 0); err == nil {
		t.Error("node_count 0 at 1.9 accepted")
	}
}

// TestRequestValuesRefusesWhatMagnumRefuses: the one decoding helper
// refuses an empty body, a member of a newer microversion and a missing
// mandatory member with Magnum's words, and returns coerced values.
func TestRequestValuesRefusesWhatMagnumRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		minor int
		body  string
		want  string
	}{
		{"empty", 14, "", "The request body is empty; send a JSON object."},
		{"not an object", 14, "[1]", "The request body is not a valid JSON object"},
		{"newer member", 13, `{"name": "gpu", "node_labels": {"a": "b"}}`, "node_labels needs microversion 1.14 or newer (requested 1.13)"},
		{"missing", 14, `{"node_count": 2}`, "Invalid input for field/attribute name. Value: null. Mandatory field missing."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := requestValues(requestAt(tc.minor, tc.body), nodeGroupSchema, "name")
			if err == nil || !strings.Contains(toAPIError(err).Detail, tc.want) || toAPIError(err).Status != 400 {
				t.Fatalf("%v, want a 400 saying %q", err, tc.want)
			}
		})
	}
	vals, err := requestValues(requestAt(14, `{"name": "gpu", "node_count": 2}`), nodeGroupSchema, "name")
	if err != nil || vals["name"] != "gpu" || vals["node_count"] != 2 {
		t.Fatalf("values %v, %v", vals, err)
	}
}
