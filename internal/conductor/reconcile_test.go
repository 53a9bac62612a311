package conductor

import (
	"errors"
	"testing"

	"github.com/magnetite-io/magnetite/internal/mgmt"
)

// TestApplyIntoATerminatingNamespaceIsRetried keeps a create that raced the
// deletion of its project's namespace from failing for good: it is retried
// and recreates the namespace, while refusals of the objects themselves
// stay permanent.
func TestApplyIntoATerminatingNamespaceIsRetried(t *testing.T) {
	terminating := errors.New(`mgmt: apply Secret magnetite-p/demo-ca (v1): secrets "demo-ca" is forbidden: unable to create new content in namespace magnetite-p because it is being terminated`)
	err := classifyApplyError(terminating)
	if errors.Is(err, errPermanent) || !errors.Is(err, mgmt.ErrNamespaceTerminating) {
		t.Errorf("terminating namespace: %v, want a retried ErrNamespaceTerminating", err)
	}
	refused := errors.New(`mgmt: apply Cluster magnetite-p/demo: admission webhook "validation.cluster.cluster.x-k8s.io" denied the request: spec.topology.version: Invalid value`)
	if err := classifyApplyError(refused); !errors.Is(err, errPermanent) {
		t.Errorf("webhook refusal: %v, want permanent", err)
	}
}
