package conductor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/certs"
	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/inmemory"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/fault"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

var clusterObjectsGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}

// holdFinalizer stands in for what keeps a machine in the field: Cluster
// API's own finalizer while Ironic cleans the host, which takes 10 to 60
// minutes.
const holdFinalizer = "test.magnetite.io/ironic-cleaning"

// plane is a running conductor over a real kube-apiserver with Cluster
// API's CRDs and no Cluster API manager: the test plays Cluster API's part
// where it needs to (deleting machines, holding them with a finalizer).
type plane struct {
	st        *store.DB
	mc        *mgmt.Client
	dc        dynamic.Interface
	c         *Conductor
	template  *model.ClusterTemplate
	namespace string
}

// startPlane runs a conductor with the given number of workers, rendering
// clusters with the in-memory infrastructure (or the first of extra, which
// are registered beside the built-in drivers) and reading the cloud through
// facts (NoCloud when nil), until the test ends. Transient failures are
// retried within a second.
func startPlane(t *testing.T, workers int, facts FactsSource, extra ...driver.Driver) *plane {
	t.Helper()
	env := managementPlane(t, testenv.CAPOv014)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	st.SetRetryPolicy(store.RetryPolicy{Base: 100 * time.Millisecond, Max: time.Second})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	drivers, err := builtin.Registry(capi.Options{}, "inmemory", inmemory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	driverName := "capi-inmemory"
	for _, d := range extra {
		if err := drivers.RegisterExplicit(d); err != nil {
			t.Fatal(err)
		}
	}
	if len(extra) > 0 {
		driverName = extra[0].Name()
	}
	mc, err := mgmt.NewForConfig(env.Config, mgmt.Options{Kinds: drivers.Kinds(), Log: quiet, NamespacePrefix: testenv.NamespacePrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{Store: st, Mgmt: mc, Drivers: drivers, Owner: "test", Workers: workers, IdleWait: time.Second, Facts: facts, Log: quiet})
	done := make(chan error, 2)
	go func() { done <- c.Run(ctx) }()
	go func() { c.ProbeManagement(ctx); done <- nil }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
		st.Close()
	})
	ct := &model.ClusterTemplate{UUID: uuid.NewString(), Name: "mem", ProjectID: "p", UserID: "u", Driver: strPtr(driverName),
		TemplateSpec: model.TemplateSpec{COE: "kubernetes", ImageID: "img", ServerType: model.ServerTypeVM, ClusterDistro: strPtr("ubuntu"),
			Labels: map[string]string{"kube_tag": "v1.34.2"}}, CreatedAt: time.Now().UTC()}
	if err := st.CreateClusterTemplate(ctx, ct); err != nil {
		t.Fatal(err)
	}
	return &plane{st: st, mc: mc, dc: env.Dynamic(t), c: c, template: ct, namespace: mc.NamespaceName("p")}
}

// create queues a cluster's create as the API does: the row, its node
// groups, its CAs and the operation, in one change.
func (p *plane) create(t *testing.T, name string) *model.Cluster {
	t.Helper()
	now := time.Now().UTC()
	cl := &model.Cluster{UUID: uuid.NewString(), Name: name, ProjectID: "p", UserID: "u", ClusterTemplateID: p.template.UUID,
		Status: model.CreateInProgress, Labels: map[string]string{}, CreatedAt: now}
	var ngs []*model.NodeGroup
	for _, ng := range []struct {
		name string
		role string
	}{{model.DefaultMasterNodeGroup, model.RoleMaster}, {model.DefaultWorkerNodeGroup, model.RoleWorker}} {
		ngs = append(ngs, &model.NodeGroup{UUID: uuid.NewString(), Name: ng.name, ClusterID: cl.UUID, ProjectID: "p", Role: ng.role,
			IsDefault: true, NodeCount: 1, MinNodeCount: 1, ImageID: strPtr("img"), Status: model.CreateInProgress, Labels: map[string]string{}, CreatedAt: now})
	}
	pairs, err := certs.GenerateCluster()
	if err != nil {
		t.Fatal(err)
	}
	var cas []*model.ClusterCertificate
	for _, kp := range pairs {
		cas = append(cas, &model.ClusterCertificate{ClusterID: cl.UUID, Purpose: string(kp.Purpose), CertPEM: kp.Cert, KeyPEM: kp.Key})
	}
	op := &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterCreate, ClusterID: cl.UUID, ProjectID: "p",
		Payload: &model.ClusterCreatePayload{MasterCount: 1, NodeCount: 1}}
	if err := p.st.ApplyClusterChange(context.Background(), store.ClusterChange{Cluster: cl, Create: true, QuotaLimit: 100,
		NodeGroups: ngs, Operation: op, Certificates: cas}); err != nil {
		t.Fatal(err)
	}
	p.c.Notify()
	return cl
}

// deleteCluster queues a cluster's delete as the API does, with cred as
// the cluster's application credential when it is not nil.
func (p *plane) deleteCluster(t *testing.T, cl *model.Cluster, cred ...*model.ClusterCredential) {
	t.Helper()
	cl, err := p.st.GetClusterByUUID(context.Background(), cl.UUID)
	if err != nil {
		t.Fatal(err)
	}
	cl.Status = model.DeleteInProgress
	cl.StatusReason = strPtr("Deletion requested")
	op := &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterDelete, ClusterID: cl.UUID, ProjectID: "p"}
	ch := store.ClusterChange{Cluster: cl, Operation: op}
	if len(cred) > 0 {
		ch.Credential = cred[0]
	}
	if err := p.st.ApplyClusterChange(context.Background(), ch); err != nil {
		t.Fatal(err)
	}
	p.c.Notify()
}

// heldMachine makes a Machine of cl, as Cluster API's MachineSet would,
// that a finalizer keeps once it is deleted.
func (p *plane) heldMachine(t *testing.T, cl *model.Cluster, name string) {
	t.Helper()
	labels := map[string]any{labelClusterName: clusterObjectName(cl)}
	for k, v := range (mgmt.Owner{ClusterUUID: cl.UUID, ProjectID: cl.ProjectID}).Labels() {
		labels[k] = v
	}
	m := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
		"metadata": map[string]any{"name": name, "namespace": p.namespace, "labels": labels, "finalizers": []any{holdFinalizer}},
		"spec": map[string]any{"clusterName": clusterObjectName(cl), "bootstrap": map[string]any{"dataSecretName": name},
			"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachine", "name": name}}}}
	if _, err := p.dc.Resource(machinesGVR).Namespace(p.namespace).Create(context.Background(), m, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create machine %s: %v", name, err)
	}
}

// removeMachines deletes cl's machines, as Cluster API does once the
// Cluster is being deleted; release lets the held ones go.
func (p *plane) removeMachines(t *testing.T, cl *model.Cluster, release bool) {
	t.Helper()
	ctx := context.Background()
	ms, err := p.dc.Resource(machinesGVR).Namespace(p.namespace).List(ctx, metav1.ListOptions{LabelSelector: mgmt.ClusterSelector(cl.UUID)})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms.Items {
		if release {
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			if _, err := p.dc.Resource(machinesGVR).Namespace(p.namespace).Patch(ctx, m.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.dc.Resource(machinesGVR).Namespace(p.namespace).Delete(ctx, m.GetName(), metav1.DeleteOptions{}); err != nil && !strings.Contains(err.Error(), "not found") {
			t.Fatal(err)
		}
	}
}

func (p *plane) cluster(t *testing.T, id string) (*model.Cluster, bool) {
	t.Helper()
	cl, err := p.st.GetClusterByUUID(context.Background(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return cl, true
}

// change makes a change of a cluster as the API does: it reads the cluster
// and its node groups, edit says what to write, and the store refuses the
// write (ErrStale) when the conductor wrote the cluster in between (its
// status, as Cluster API's objects move); the change is then read and made
// again, as a client told to send the request again does.
func (p *plane) change(t *testing.T, id string, edit func(cl *model.Cluster, ngs []*model.NodeGroup) store.ClusterChange) {
	t.Helper()
	ctx := context.Background()
	for attempt := 1; ; attempt++ {
		cl, ok := p.cluster(t, id)
		if !ok {
			t.Fatalf("cluster %s is gone", id)
		}
		ngs, err := p.st.NodeGroupsOf(ctx, []string{id})
		if err != nil {
			t.Fatal(err)
		}
		err = p.st.ApplyClusterChange(ctx, edit(cl, ngs[id]))
		if errors.Is(err, store.ErrStale) && attempt < 10 {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
}

// workerGroup is the default worker node group among ngs.
func workerGroup(t *testing.T, ngs []*model.NodeGroup) *model.NodeGroup {
	t.Helper()
	for _, ng := range ngs {
		if ng.Role == model.RoleWorker {
			return ng
		}
	}
	t.Fatal("the cluster has no worker node group")
	return nil
}

// settled waits until none of cl's operations is pending: what was asked
// of it is applied (or has failed).
func (p *plane) settled(t *testing.T, cl *model.Cluster, what string) {
	t.Helper()
	testenv.WaitFor(t, what, time.Minute, func() (bool, string) {
		n, err := p.st.PendingOperations(context.Background(), cl.UUID)
		return err == nil && n == 0, fmt.Sprintf("%d operations pending (%v)", n, err)
	})
}

// clusterObject reports whether cl's Cluster object is in the management
// cluster.
func (p *plane) clusterObject(t *testing.T, cl *model.Cluster) bool {
	t.Helper()
	_, err := p.mc.Get(context.Background(), "Cluster", p.namespace, clusterObjectName(cl))
	return err == nil
}

// TestSlowDeletesDoNotHoldBackOtherClusters: with more clusters being
// deleted than the conductor has workers, each waiting on machines a
// finalizer holds (Ironic cleaning its host), a create of another cluster
// still reaches the management cluster while every delete waits; each
// delete says which machines hold it and what keeps them, and finishes
// once its machines go.
func TestSlowDeletesDoNotHoldBackOtherClusters(t *testing.T) {
	const workers = 2
	p := startPlane(t, workers, nil)
	var deleting []*model.Cluster
	for i := range workers + 2 {
		cl := p.create(t, fmt.Sprintf("bm-%d", i))
		testenv.WaitFor(t, "cluster "+cl.Name+" applied", time.Minute, func() (bool, string) {
			return p.clusterObject(t, cl), "no Cluster object yet"
		})
		p.heldMachine(t, cl, cl.Name+"-md-0-a")
		p.heldMachine(t, cl, cl.Name+"-md-0-b")
		deleting = append(deleting, cl)
	}
	testenv.WaitFor(t, "creates done", time.Minute, func() (bool, string) {
		n, err := p.st.PendingOperations(context.Background(), deleting[len(deleting)-1].UUID)
		return err == nil && n == 0, fmt.Sprintf("%d operations pending (%v)", n, err)
	})
	for _, cl := range deleting {
		p.deleteCluster(t, cl)
	}
	// Cluster API removes the machines of a deleted Cluster, and the
	// finalizer keeps each one.
	testenv.WaitFor(t, "every Cluster object deleted", time.Minute, func() (bool, string) {
		for _, cl := range deleting {
			if p.clusterObject(t, cl) {
				return false, "cluster " + cl.Name + " still there"
			}
		}
		return true, ""
	})
	for _, cl := range deleting {
		p.removeMachines(t, cl, false)
	}
	for _, cl := range deleting {
		testenv.WaitFor(t, "delete of "+cl.Name+" says what holds it", time.Minute, func() (bool, string) {
			got, ok := p.cluster(t, cl.UUID)
			if !ok {
				return false, "row gone while its machines are held"
			}
			reason := derefOr(got.StatusReason, "")
			want := []string{"2 machines", cl.Name + "-md-0-a", cl.Name + "-md-0-b", holdFinalizer}
			for _, w := range want {
				if !strings.Contains(reason, w) {
					return false, fmt.Sprintf("status_reason %q does not name %q", reason, w)
				}
			}
			return true, ""
		})
	}

	// Every delete waits; a create on another cluster gets through.
	fresh := p.create(t, "vm-new")
	testenv.WaitFor(t, "the new cluster's objects in the management cluster", 30*time.Second, func() (bool, string) {
		return p.clusterObject(t, fresh), "no Cluster object yet"
	})
	for _, cl := range deleting {
		got, ok := p.cluster(t, cl.UUID)
		if !ok || got.Status != model.DeleteInProgress {
			t.Fatalf("cluster %s finished deleting while its machines were held: %v", cl.Name, got)
		}
	}

	// Each delete finishes once its machines go, the others still wait.
	for i, cl := range deleting {
		p.removeMachines(t, cl, true)
		testenv.WaitFor(t, "cluster "+cl.Name+" deleted", time.Minute, func() (bool, string) {
			got, ok := p.cluster(t, cl.UUID)
			if ok {
				return false, string(got.Status) + ": " + derefOr(got.StatusReason, "")
			}
			return true, ""
		})
		for _, other := range deleting[i+1:] {
			if _, ok := p.cluster(t, other.UUID); !ok {
				t.Fatalf("cluster %s deleted while its machines were held", other.Name)
			}
		}
	}
}

// neutronLeftovers stands in for the cloud's answers to a delete's search
// for what the workload left: Neutron first answers the floating IP list
// with 404 (a transient failure), then a load balancer is still being
// deleted, then nothing is left.
type neutronLeftovers struct {
	NoCloud
	// The answers move on only once the test has seen what the last one
	// made status_reason say: a state shown between two polls would be
	// missed otherwise.
	retrySeen, waitingSeen atomic.Bool
}

func (n *neutronLeftovers) CleanWorkloadLeftovers(context.Context, *model.Cluster, string, cloud.LeftoverPolicy) (cloud.Cleanup, error) {
	lb := cloud.Leftover{Kind: "load balancer", ID: "lb-1", Name: "kube_service_ingress", Status: "PENDING_DELETE"}
	switch {
	case !n.retrySeen.Load():
		return cloud.Cleanup{}, fault.New(cloud.ErrUnavailable, "could not list floating IPs: Neutron answered 404")
	case !n.waitingSeen.Load():
		return cloud.Cleanup{Remaining: []cloud.Leftover{lb}}, nil
	}
	return cloud.Cleanup{}, nil
}

// TestDeleteShowsTheTransientErrorItRetries: while a delete retries what
// the cloud failed, status_reason says what failed, in the cloud's words
// and without Magnetite's vocabulary; while the cloud is still deleting,
// it says what; and the delete finishes.
func TestDeleteShowsTheTransientErrorItRetries(t *testing.T) {
	cloudSide := &neutronLeftovers{}
	p := startPlane(t, 1, cloudSide)
	cl := p.create(t, "lb-user")
	p.settled(t, cl, "cluster applied")
	p.deleteCluster(t, cl, &model.ClusterCredential{ID: "ac-1", ClusterID: cl.UUID, UserID: "u", ProjectID: "p", Secret: "s3cret", CreatedAt: time.Now().UTC()})
	seen := map[string]bool{}
	testenv.WaitFor(t, "cluster deleted", time.Minute, func() (bool, string) {
		got, ok := p.cluster(t, cl.UUID)
		if !ok {
			return true, ""
		}
		reason := derefOr(got.StatusReason, "")
		switch {
		case strings.Contains(reason, "Retrying") && strings.Contains(reason, "could not list floating IPs: Neutron answered 404"):
			seen["retry"] = true
			cloudSide.retrySeen.Store(true)
		case strings.Contains(reason, "Deleting what the workload left in the cloud: load balancer kube_service_ingress (lb-1)"):
			seen["waiting"] = true
			cloudSide.waitingSeen.Store(true)
		}
		for _, internal := range []string{"permanent", "transient", cloud.ErrUnavailable.Error()} {
			if strings.Contains(reason, internal) {
				t.Errorf("status_reason %q shows %q", reason, internal)
			}
		}
		return false, reason
	})
	if !seen["retry"] || !seen["waiting"] {
		t.Errorf("status_reason showed the retried error: %v, what the cloud still deletes: %v", seen["retry"], seen["waiting"])
	}
}

// flakyNova stands in for a cloud whose compute API stops answering: facts
// are read while it answers and refused with Nova's 503 once down is set.
type flakyNova struct {
	NoCloud
	down atomic.Bool
}

func (f *flakyNova) Facts(ctx context.Context, ct *model.ClusterTemplate, cl *model.Cluster, ngs []*model.NodeGroup) (*facts.Facts, error) {
	if f.down.Load() {
		return nil, fault.New(cloud.ErrUnavailable, "could not read flavor m1.large: Nova answered 503")
	}
	return f.NoCloud.Facts(ctx, ct, cl, ngs)
}

// TestChangeShowsTheTransientErrorItRetries: while a change of a built
// cluster retries a failure, status_reason keeps showing the failure, even
// as the status pass writes what Cluster API reports.
func TestChangeShowsTheTransientErrorItRetries(t *testing.T) {
	ctx := context.Background()
	nova := &flakyNova{}
	p := startPlane(t, 1, nova)
	cl := p.create(t, "resized")
	p.settled(t, cl, "create applied")
	nova.down.Store(true)
	p.change(t, cl.UUID, func(got *model.Cluster, _ []*model.NodeGroup) store.ClusterChange {
		got.Status = model.UpdateInProgress
		op := &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterUpdate, ClusterID: cl.UUID, ProjectID: "p",
			Payload: &model.ClusterUpdatePayload{NodeCount: 2}}
		return store.ClusterChange{Cluster: got, Operation: op}
	})
	p.c.Notify()
	retrying := func() (bool, string) {
		got, _ := p.cluster(t, cl.UUID)
		reason := derefOr(got.StatusReason, "")
		return strings.HasPrefix(reason, "Retrying (attempt ") && strings.HasSuffix(reason, " failed): read cloud facts: could not read flavor m1.large: Nova answered 503"), reason
	}
	testenv.WaitFor(t, "status_reason shows the retried failure", time.Minute, retrying)
	// Cluster API reports something new: the status pass writes it, and
	// the failure stays the reason.
	patch := []byte(`{"spec":{"controlPlaneEndpoint":{"host":"10.9.8.7","port":6443}}}`)
	if _, err := p.dc.Resource(clusterObjectsGVR).Namespace(p.namespace).Patch(ctx, clusterObjectName(cl), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the status pass saw the change", time.Minute, func() (bool, string) {
		got, _ := p.cluster(t, cl.UUID)
		return derefOr(got.APIAddress, "") == "https://10.9.8.7:6443", derefOr(got.APIAddress, "")
	})
	if ok, reason := retrying(); !ok {
		t.Errorf("the status pass replaced the retried failure with %q", reason)
	}
	nova.down.Store(false)
	p.settled(t, cl, "the change applied once Nova answers")
}
