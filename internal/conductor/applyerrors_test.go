package conductor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// applyFailure wraps a Status as mgmt.Client.Apply does.
func applyFailure(err error) error {
	return fmt.Errorf("mgmt: apply Cluster magnetite-p/demo (cluster.x-k8s.io/v1beta2): %w", err)
}

// namespaceTerminating is what the API server's NamespaceLifecycle
// admission answers a create in a namespace being deleted: a Forbidden
// with the NamespaceTerminating cause.
func namespaceTerminating() error {
	err := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "demo-ca",
		errors.New("unable to create new content in namespace magnetite-p because it is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace magnetite-p is being terminated", Field: "metadata.namespace"})
	return err
}

// TestApplyErrorsArePermanentOnlyWhenResendingCannotPass: the management
// cluster's refusals of the objects themselves fail the cluster with the
// API server's words; conflicts, missing kinds, timeouts, throttling and
// server errors are retried; a create that raced the deletion of its
// project's namespace is retried and recreates the namespace.
func TestApplyErrorsArePermanentOnlyWhenResendingCannotPass(t *testing.T) {
	gk := schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Cluster"}
	gr := schema.GroupResource{Group: "cluster.x-k8s.io", Resource: "clusters"}
	invalid := apierrors.NewInvalid(gk, "demo", field.ErrorList{
		field.Invalid(field.NewPath("spec", "topology", "version"), "v1.99.0", "must be a version the ClusterClass supports")})
	webhookDenied := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 400,
		Reason: metav1.StatusReasonBadRequest, Message: `admission webhook "validation.cluster.cluster.x-k8s.io" denied the request: without explanation`}}
	for _, tc := range []struct {
		name      string
		err       error
		permanent bool
	}{
		{"invalid", invalid, true},
		{"webhook denial", webhookDenied, true},
		{"bad request", apierrors.NewBadRequest("the body is not a Cluster"), true},
		{"forbidden", apierrors.NewForbidden(gr, "demo", errors.New(`User "system:serviceaccount:magnetite:conductor" cannot patch resource "clusters"`)), true},
		{"method not supported", apierrors.NewMethodNotSupported(gr, "patch"), true},
		{"entity too large", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), true},
		{"conflict", apierrors.NewConflict(gr, "demo", errors.New("the object has been modified")), false},
		{"already exists", apierrors.NewAlreadyExists(gr, "demo"), false},
		{"not found", apierrors.NewNotFound(gr, "demo"), false},
		{"timeout", apierrors.NewTimeoutError("request did not complete within 30s", 2), false},
		{"server timeout", apierrors.NewServerTimeout(gr, "patch", 2), false},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), false},
		{"internal error", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), false},
		{"service unavailable", apierrors.NewServiceUnavailable("the server is shutting down"), false},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, false},
		{"deadline", context.DeadlineExceeded, false},
		{"kind not served", fault.New(mgmt.ErrKindNotServed, "OpenStackCluster"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := classifyApplyError(applyFailure(tc.err))
			if got := errors.Is(err, errPermanent); got != tc.permanent {
				t.Fatalf("classifyApplyError(%v): permanent = %v, want %v", tc.err, got, tc.permanent)
			}
			if tc.permanent {
				if want := tc.err.Error(); !strings.Contains(err.Error(), want) {
					t.Errorf("permanent failure %q does not carry the API server's message %q", err, want)
				}
			} else if !errors.Is(err, tc.err) {
				t.Errorf("retried failure %v lost its cause %v", err, tc.err)
			}
		})
	}
	if err := classifyApplyError(nil); err != nil {
		t.Errorf("classifyApplyError(nil) = %v", err)
	}
}

func TestApplyIntoATerminatingNamespaceIsRetried(t *testing.T) {
	err := classifyApplyError(applyFailure(namespaceTerminating()))
	if errors.Is(err, errPermanent) || !errors.Is(err, mgmt.ErrNamespaceTerminating) {
		t.Errorf("terminating namespace: %v, want a retried ErrNamespaceTerminating", err)
	}
	if !apierrors.IsForbidden(err) {
		t.Errorf("terminating namespace: %v lost the API server's Status", err)
	}
	// Any other Forbidden on a secret stays permanent.
	other := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "demo-ca", errors.New("exceeded quota: secrets"))
	if err := classifyApplyError(applyFailure(other)); !errors.Is(err, errPermanent) {
		t.Errorf("forbidden without the NamespaceTerminating cause: %v, want permanent", err)
	}
}

// TestRealAPIServerRefusalsAreClassified: what a real kube-apiserver
// answers through mgmt.Client is classified as the table above says: an
// object it validates away fails for good, a write into a namespace being
// deleted is retried, and a write it accepts passes.
func TestRealAPIServerRefusalsAreClassified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := managementPlane(t, testenv.CAPOv014)
	mc, err := mgmt.NewForConfig(env.Config, mgmt.Options{NamespacePrefix: testenv.NamespacePrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	owner := mgmt.Owner{ClusterUUID: "c1", ProjectID: "p1"}
	configMap := func(ns, name string, data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns}, "data": data}}
	}

	_, err = mc.Apply(ctx, owner, configMap("default", "ok", map[string]any{"key": "value"}))
	if err := classifyApplyError(err); err != nil {
		t.Fatalf("an accepted apply classified as %v", err)
	}

	_, err = mc.Apply(ctx, owner, configMap("default", "invalid", map[string]any{"not a key!": "value"}))
	if !apierrors.IsInvalid(err) {
		t.Fatalf("the API server answered %v, want 422 Invalid", err)
	}
	if err := classifyApplyError(err); !errors.Is(err, errPermanent) || !strings.Contains(err.Error(), "not a key!") {
		t.Errorf("an invalid object classified as %v, want permanent with the API server's reason", err)
	}

	// Without kube-controller-manager nothing finalizes a deleted
	// namespace: it stays Terminating.
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "going-away"}}}
	if _, err := env.Dynamic(t).Resource(nsGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Dynamic(t).Resource(nsGVR).Delete(ctx, "going-away", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = mc.Apply(ctx, owner, configMap("going-away", "late", map[string]any{"key": "value"}))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("the API server answered %v, want 403 for a terminating namespace", err)
	}
	if err := classifyApplyError(err); errors.Is(err, errPermanent) || !errors.Is(err, mgmt.ErrNamespaceTerminating) {
		t.Errorf("a write into a terminating namespace classified as %v, want a retried ErrNamespaceTerminating", err)
	}
}
