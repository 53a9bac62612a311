package conductor

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/inmemory"
	"github.com/magnetite-io/magnetite/internal/kinds"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// quotaDriver is the in-memory driver with one more kind in its desired
// state: a ResourceQuota for the cluster's namespace share, rendered while
// the cluster's label "quota" is "on". It declares the kind as one made
// per cluster, and nothing else: no clean-up of its own.
type quotaDriver struct{ *capi.Driver }

func (quotaDriver) Name() string { return "capi-inmemory-quota" }

func (d quotaDriver) Kinds() []kinds.Kind {
	return append(d.Driver.Kinds(), kinds.Kind{Kind: "ResourceQuota", Group: kinds.GroupCore, Cleanup: true})
}

func (d quotaDriver) Render(req driver.Request) (*driver.Result, error) {
	res, err := d.Driver.Render(req)
	if err != nil || req.Cluster.Labels["quota"] != "on" {
		return res, err
	}
	q := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ResourceQuota",
		"metadata": map[string]any{"name": driver.ClusterObjectName(req.Cluster) + "-quota", "namespace": req.Namespace},
		"spec":     map[string]any{"hard": map[string]any{"secrets": "50"}}}}
	res.Objects = append([]*unstructured.Unstructured{q}, res.Objects...)
	return res, nil
}

// TestANewKindInTheDesiredStateIsCreatedAndPruned: an object of a kind the
// conductor has no code for is applied while the desired state has it and
// pruned once it does not, and nothing else of the cluster is touched:
// not its other objects, not the ClusterClass and templates shared by
// clusters, not what Cluster API made from them.
func TestANewKindInTheDesiredStateIsCreatedAndPruned(t *testing.T) {
	ctx := context.Background()
	p := startPlane(t, 1, nil, quotaDriver{inmemory.New(capi.Options{}, inmemory.Options{})})
	cl := p.create(t, "with-quota")
	p.settled(t, cl, "create applied")
	quota := clusterObjectName(cl) + "-quota"
	// The ClusterClass and templates clusters share belong to none of them.
	for _, kind := range []string{"ClusterClass", "DevClusterTemplate", "KubeadmControlPlaneTemplate"} {
		if objs, err := p.mc.List(ctx, kind, p.namespace, mgmt.LabelClusterUUID); err != nil || len(objs) > 0 {
			t.Errorf("%d %s objects carry a cluster's label (%v)", len(objs), kind, err)
		}
		if objs, err := p.mc.List(ctx, kind, p.namespace, mgmt.ManagedSelector); err != nil || len(objs) == 0 {
			t.Errorf("no %s carries Magnetite's managed-by label (%v)", kind, err)
		}
	}
	if _, err := p.mc.Get(ctx, "ResourceQuota", p.namespace, quota); err == nil {
		t.Fatalf("ResourceQuota %s exists before the desired state has it", quota)
	}
	count := func() map[string]int {
		out := map[string]int{}
		for _, kind := range []string{"Cluster", "ClusterClass", "Secret", "DevClusterTemplate", "KubeadmControlPlaneTemplate"} {
			objs, err := p.mc.List(ctx, kind, p.namespace, "")
			if err != nil {
				t.Fatal(err)
			}
			out[kind] = len(objs)
		}
		return out
	}

	update := func(quotaLabel string) {
		p.change(t, cl.UUID, func(got *model.Cluster, _ []*model.NodeGroup) store.ClusterChange {
			got.Labels = map[string]string{"quota": quotaLabel}
			got.Status = model.UpdateInProgress
			op := &model.Operation{UUID: uuid.NewString(), Type: model.OpClusterUpdate, ClusterID: cl.UUID, ProjectID: "p"}
			return store.ClusterChange{Cluster: got, Operation: op}
		})
		p.c.Notify()
		p.settled(t, cl, "update with quota="+quotaLabel+" applied")
	}
	// What another writer made with the cluster's labels is not Magnetite's
	// to prune, as what Cluster API makes from the shared templates is not.
	foreign := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": clusterObjectName(cl) + "-made-by-another", "namespace": p.namespace,
			"labels": (mgmt.Owner{ClusterUUID: cl.UUID, ProjectID: "p"}).Labels()}}}
	if _, err := p.dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(p.namespace).
		Create(ctx, foreign, metav1.CreateOptions{FieldManager: "capi-topology"}); err != nil {
		t.Fatal(err)
	}
	update("on")
	if _, err := p.mc.Get(ctx, "ResourceQuota", p.namespace, quota); err != nil {
		t.Fatalf("the desired state's ResourceQuota was not created: %v", err)
	}
	before := count()
	obj, err := p.mc.Get(ctx, "Cluster", p.namespace, clusterObjectName(cl))
	if err != nil || !strings.Contains(obj.GetAnnotations()[annotationDesiredKinds], "ResourceQuota") {
		t.Fatalf("the Cluster does not record ResourceQuota among its desired kinds: %v, %v", obj.GetAnnotations(), err)
	}

	update("off")
	if _, err := p.mc.Get(ctx, "ResourceQuota", p.namespace, quota); err == nil {
		t.Errorf("the ResourceQuota the desired state no longer has is still there")
	}
	if _, err := p.mc.Get(ctx, "Secret", p.namespace, foreign.GetName()); err != nil {
		t.Errorf("the prune deleted a Secret another writer made: %v", err)
	}
	if after := count(); !equalCounts(before, after) {
		t.Errorf("pruning touched other objects: %v before, %v after", before, after)
	}
	events, err := p.st.ListEvents(ctx, cl.UUID, store.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range events {
		found = found || strings.Contains(ev.Message, "removed what the desired state no longer has: ResourceQuota "+quota)
	}
	if !found {
		t.Errorf("no event says the ResourceQuota was removed")
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
