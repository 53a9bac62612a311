// Package testmetal3 runs the Metal3 host inventory on a real
// kube-apiserver with the BareMetalHost CRD, and plays baremetal-operator's
// part there: it writes BareMetalHost status through the status
// subresource in the shape the operator writes it, and adds and removes
// its finalizer. The operator itself cannot run here (it needs Ironic with
// a provisioning network), and nothing else of it is used.
package testmetal3

import (
	"context"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/baremetal/metal3"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// Namespace is the shared host namespace ([baremetal] metal3_namespace).
const Namespace = "metal3"

// Finalizer is the finalizer baremetal-operator puts on the hosts it
// manages, holding deletion until the host is deprovisioned.
const Finalizer = "baremetalhost.metal3.io"

// Resources of the objects the backend writes.
var (
	BMHResource    = schema.GroupVersionResource{Group: "metal3.io", Version: "v1alpha1", Resource: "baremetalhosts"}
	SecretResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// World is the Metal3 backend on a real kube-apiserver, with the clients a
// test needs beside it.
type World struct {
	Env      *testenv.APIServer
	Mgmt     *mgmt.Client
	Dynamic  dynamic.Interface
	Backend  *metal3.Backend
	Operator *Operator
}

// Start starts a kube-apiserver with the BareMetalHost CRD and the shared
// host namespace, and a Metal3 backend over it logging to log.
func Start(t *testing.T, log *slog.Logger) *World {
	t.Helper()
	env := testenv.Start(t)
	env.InstallProviders(t, "bmo")
	env.CreateNamespace(t, Namespace)
	ctx := context.Background()
	dc := env.Dynamic(t)
	mc, err := mgmt.NewForConfig(env.Config, mgmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := metal3.New(metal3.Config{Client: mc, Namespace: Namespace, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	op := &Operator{T: t, Hosts: dc.Resource(BMHResource).Namespace(Namespace), Secrets: dc.Resource(SecretResource).Namespace(Namespace)}
	return &World{Env: env, Mgmt: mc, Dynamic: dc, Backend: b, Operator: op}
}

// Operator plays baremetal-operator's part in the shared namespace.
type Operator struct {
	T       *testing.T
	Hosts   dynamic.ResourceInterface
	Secrets dynamic.ResourceInterface
}

// Status is the part of a BareMetalHost's status a test sets.
type Status struct {
	State       string
	PoweredOn   bool
	Operational string
	ErrType     string
	ErrMessage  string
	ErrCount    int64
	Hardware    map[string]any
	Inspected   string
	Consumer    string // a Metal3Machine name in spec.consumerRef, set by CAPM3
}

// Get reads a BareMetalHost.
func (b *Operator) Get(name string) *unstructured.Unstructured {
	b.T.Helper()
	u, err := b.Hosts.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		b.T.Fatalf("BareMetalHost %s: %v", name, err)
	}
	return u
}

// Register is the operator's first reconcile: its finalizer goes on.
func (b *Operator) Register(name string) {
	b.T.Helper()
	u := b.Get(name)
	u.SetFinalizers(append(u.GetFinalizers(), Finalizer))
	if _, err := b.Hosts.Update(context.Background(), u, metav1.UpdateOptions{FieldManager: "baremetal-operator"}); err != nil {
		b.T.Fatal(err)
	}
}

// Report writes status as the operator does after a state change.
func (b *Operator) Report(name string, s Status) {
	b.T.Helper()
	ctx := context.Background()
	u := b.Get(name)
	if s.Consumer != "" {
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
			"kind": "Metal3Machine", "name": s.Consumer, "namespace": Namespace}, "spec", "consumerRef")
		var err error
		if u, err = b.Hosts.Update(ctx, u, metav1.UpdateOptions{FieldManager: "capm3"}); err != nil {
			b.T.Fatal(err)
		}
	}
	if s.Operational == "" {
		s.Operational = "OK"
	}
	now := time.Now().UTC().Format(time.RFC3339)
	st := map[string]any{
		"provisioning":      map[string]any{"ID": "8d566f5b-a28f-451b-a70f-419507c480cd", "state": s.State, "image": map[string]any{"url": ""}},
		"poweredOn":         s.PoweredOn,
		"operationalStatus": s.Operational,
		"errorMessage":      s.ErrMessage,
		"errorCount":        s.ErrCount,
		"lastUpdated":       now,
		"operationHistory": map[string]any{
			"register": map[string]any{"start": now, "end": now},
			"inspect":  map[string]any{"start": nil, "end": nil},
		},
	}
	if s.ErrType != "" {
		st["errorType"] = s.ErrType
	}
	if s.Inspected != "" {
		st["operationHistory"].(map[string]any)["inspect"] = map[string]any{"start": s.Inspected, "end": s.Inspected}
	}
	if s.Hardware != nil {
		st["hardware"] = s.Hardware
	}
	u.Object["status"] = st
	if _, err := b.Hosts.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: "baremetal-operator"}); err != nil {
		b.T.Fatalf("status of %s: %v", name, err)
	}
}

// Release is the end of deprovisioning: the finalizer comes off.
func (b *Operator) Release(name string) {
	b.T.Helper()
	u := b.Get(name)
	u.SetFinalizers(nil)
	if _, err := b.Hosts.Update(context.Background(), u, metav1.UpdateOptions{FieldManager: "baremetal-operator"}); err != nil {
		b.T.Fatal(err)
	}
}
