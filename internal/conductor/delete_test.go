package conductor

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestDeleteSaysWhatHoldsIt: the reason a waiting delete shows names the
// machines first, then what keeps each: its finalizers and Cluster API's
// Deleting condition (v1beta2) or the failed deletion step (v1beta1), or
// that it is not yet being deleted.
func TestDeleteSaysWhatHoldsIt(t *testing.T) {
	now := metav1.NewTime(time.Now())
	obj := func(kind, name string, deleting bool, finalizers []string, conds ...map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"kind": kind, "metadata": map[string]any{"name": name}}}
		if deleting {
			u.SetDeletionTimestamp(&now)
		}
		u.SetFinalizers(finalizers)
		if len(conds) > 0 {
			list := make([]any, len(conds))
			for i, c := range conds {
				list[i] = c
			}
			u.Object["status"] = map[string]any{"conditions": list}
		}
		return u
	}
	got := describeHolding([]*unstructured.Unstructured{
		obj("Cluster", "demo", true, []string{"cluster.cluster.x-k8s.io"}),
		obj("Machine", "demo-md-0-b", true, []string{"machine.cluster.x-k8s.io"},
			map[string]any{"type": "Deleting", "status": "True", "reason": "WaitingForInfrastructureDeletion", "message": "* Metal3Machine is deprovisioning the host"}),
		obj("Machine", "demo-md-0-a", true, []string{"machine.cluster.x-k8s.io"},
			map[string]any{"type": "DrainingSucceeded", "status": "False", "reason": "Draining", "message": "pod web-0 is not evicted"}),
		obj("Machine", "demo-cp-x", false, nil),
	})
	want := "3 machines: machine demo-cp-x (not yet being deleted); " +
		"machine demo-md-0-a (finalizers machine.cluster.x-k8s.io; DrainingSucceeded (Draining): pod web-0 is not evicted); " +
		"machine demo-md-0-b (finalizers machine.cluster.x-k8s.io; Deleting (WaitingForInfrastructureDeletion): * Metal3Machine is deprovisioning the host); " +
		"cluster demo (finalizers cluster.cluster.x-k8s.io)"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	var many []*unstructured.Unstructured
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		many = append(many, obj("Machine", n, true, nil))
	}
	if got := describeHolding(many); !strings.HasPrefix(got, "7 machines: machine a (being deleted)") || !strings.HasSuffix(got, "; and 2 more") {
		t.Errorf("seven machines: %q", got)
	}
}
