package conductor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
)

// A cluster's desired state is applied whole and what Magnetite owns of the
// cluster beyond it is pruned, by one path for every kind, in the manner of
// Cluster API's topology reconciler (getCurrentState, the desired state
// generator, reconcileState: internal/controllers/topology/cluster at
// v1.14.0) and of kubectl's ApplySets (KEP-3659), whose parent records the
// kinds of its members so that a prune lists only those.
//
// What Magnetite owns of a cluster, and may therefore prune, is every
// object of a kind the kinds table declares per cluster (kinds.Kind's
// Cleanup: Secrets, ConfigMaps, the ClusterResourceSet, the autoscaler's
// objects, an infrastructure's per-cluster objects) that carries the
// cluster's ownership labels and whose fields Magnetite applied (its field
// manager is in the object's managedFields). Kinds shared between clusters
// (ClusterClasses and their templates, named by their content) are never
// pruned, and neither is what Cluster API made from them: it carries the
// labels, but not Magnetite's field manager.

// annotationDesiredKinds, on the Cluster object, lists the per-cluster kinds
// of the desired state it was applied with, so that the next prune lists
// the kinds that were desired before as well as those desired now.
const annotationDesiredKinds = "magnetite.io/desired-kinds"

// applyDesired applies a cluster's whole desired state in order, then
// prunes what Magnetite owns of the cluster that the desired state no
// longer has. It returns the Cluster object as applied (nil when the
// desired state has none) and the objects pruned.
func (c *Conductor) applyDesired(ctx context.Context, sc *scope, desired []*unstructured.Unstructured) (*unstructured.Unstructured, []*unstructured.Unstructured, error) {
	table := c.mc.Kinds()
	var kinds []string
	for _, o := range desired {
		if table[o.GetKind()].Cleanup && !slices.Contains(kinds, o.GetKind()) {
			kinds = append(kinds, o.GetKind())
		}
	}
	slices.Sort(kinds)
	previous, known := c.previousDesiredKinds(ctx, sc)
	var cluster *unstructured.Unstructured
	for _, obj := range desired {
		if obj.GetKind() == "Cluster" {
			obj = obj.DeepCopy()
			ann := obj.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[annotationDesiredKinds] = strings.Join(kinds, ",")
			obj.SetAnnotations(ann)
		}
		applied, err := c.applyChanged(ctx, sc, obj)
		if err != nil {
			c.memo.forget(sc.cluster.UUID)
			return nil, nil, classifyApplyError(err)
		}
		if obj.GetKind() == "Cluster" {
			cluster = applied
		}
	}
	keys := prunedKeys(desired)
	if c.memo.prunedRecently(sc.cluster.UUID, keys, c.now()) {
		return cluster, nil, nil
	}
	scan := kinds
	if known {
		scan = union(kinds, previous)
	} else {
		// Applied by a release that did not record its kinds: look at
		// every per-cluster kind once.
		scan = table.Cleanup()
	}
	pruned, err := c.prune(ctx, sc, desired, scan)
	if err != nil {
		c.memo.forget(sc.cluster.UUID)
		return cluster, pruned, err
	}
	c.memo.prunedNow(sc.cluster.UUID, keys, c.now())
	return cluster, pruned, nil
}

// applyChanged applies one object of the desired state unless the
// conductor applied the same content lately and nothing says it changed
// since (see appliedMemo). It returns the object as applied, or nil when
// it was not sent; the Cluster object is always returned, from the watch
// when it was not sent, since its generation is recorded.
func (c *Conductor) applyChanged(ctx context.Context, sc *scope, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	kind := c.mc.Kinds()[obj.GetKind()]
	shared := !kind.Cleanup && obj.GetKind() != "Cluster"
	memoKey := sc.cluster.UUID
	if shared {
		memoKey = ""
	}
	key := objectKey(obj)
	digest, ok := digestOf(sc.owner, obj, shared)
	if ok && obj.GetNamespace() != "" {
		live, watched := c.liveObject(obj, sc.cluster.UUID)
		if c.memo.unchanged(memoKey, key, digest, c.now(), watched, live) && (obj.GetKind() != "Cluster" || live != nil) {
			return live, nil
		}
	}
	owner := sc.owner
	if shared {
		owner, obj = mgmt.Owner{}, sharedForm(obj)
		if obj.GetNamespace() == "" {
			obj.SetNamespace(sc.namespace)
		}
	}
	applied, err := c.mc.Apply(ctx, owner, obj)
	if err != nil {
		return nil, err
	}
	if ok {
		c.memo.applied(memoKey, key, digest, applied.GetResourceVersion(), c.now())
	}
	return applied, nil
}

// liveObject is the watch's copy of obj, when the conductor watches its
// kind (watched; live is nil when the watch does not hold it).
func (c *Conductor) liveObject(obj *unstructured.Unstructured, clusterUUID string) (live *unstructured.Unstructured, watched bool) {
	c.mu.Lock()
	w := c.watch
	c.mu.Unlock()
	if w == nil || !c.mc.Kinds()[obj.GetKind()].Watched {
		return nil, false
	}
	objs, err := w.Objects(obj.GetKind(), clusterUUID)
	if err != nil {
		return nil, true
	}
	for _, o := range objs {
		if o.GetNamespace() == obj.GetNamespace() && o.GetName() == obj.GetName() {
			return o, true
		}
	}
	return nil, true
}

// previousDesiredKinds reads the kinds recorded on the cluster's Cluster
// object, from the watch cache when the conductor runs one; known is false
// when none are recorded (or there is no Cluster object yet, in which case
// nothing was applied to prune either).
func (c *Conductor) previousDesiredKinds(ctx context.Context, sc *scope) (kinds []string, known bool) {
	var obj *unstructured.Unstructured
	if c.watch != nil {
		objs, err := c.watch.Objects("Cluster", sc.cluster.UUID)
		if err != nil {
			return nil, false
		}
		if len(objs) == 0 {
			return nil, true
		}
		obj = objs[0]
	} else {
		var err error
		obj, err = c.mc.Get(ctx, "Cluster", sc.namespace, clusterObjectName(sc.cluster))
		if apierrors.IsNotFound(err) {
			return nil, true
		}
		if err != nil {
			return nil, false
		}
	}
	v, ok := obj.GetAnnotations()[annotationDesiredKinds]
	if !ok {
		return nil, false
	}
	if v == "" {
		return nil, true
	}
	return strings.Split(v, ","), true
}

// prune deletes the cluster's objects of the kinds that Magnetite applied
// and desired does not hold, and reports them in one event.
func (c *Conductor) prune(ctx context.Context, sc *scope, desired []*unstructured.Unstructured, kinds []string) ([]*unstructured.Unstructured, error) {
	want := map[string]bool{}
	for _, o := range desired {
		want[o.GetKind()+"/"+o.GetName()] = true
	}
	var pruned []*unstructured.Unstructured
	for _, kind := range kinds {
		if !c.mc.Kinds()[kind].Cleanup {
			continue // shared between clusters, or made by Cluster API
		}
		objs, err := c.mc.ListMetadata(ctx, kind, sc.namespace, mgmt.ClusterSelector(sc.cluster.UUID))
		if errors.Is(err, mgmt.ErrKindNotServed) {
			continue // nothing of it was applied
		}
		if apierrors.IsForbidden(err) {
			// An account that may not list them never applied them either.
			c.log.Warn("cannot look for objects to prune", "kind", kind, "namespace", sc.namespace, "error", err)
			continue
		}
		if err != nil {
			return pruned, err
		}
		for i := range objs {
			o := &objs[i]
			if want[kind+"/"+o.GetName()] || !appliedByMagnetite(o) || o.GetDeletionTimestamp() != nil {
				continue
			}
			if _, err := c.mc.Delete(ctx, kind, sc.namespace, o.GetName()); err != nil {
				return pruned, err
			}
			pruned = append(pruned, o)
		}
	}
	if len(pruned) > 0 {
		// A pruned object desired again must be applied again.
		c.memo.forget(sc.cluster.UUID)
		c.event(ctx, sc.cluster.UUID, model.EventOperation, "", "desired state", describePruned(pruned))
	}
	return pruned, nil
}

// appliedByMagnetite reports whether Magnetite's field manager applied
// fields of the object.
func appliedByMagnetite(o *unstructured.Unstructured) bool {
	for _, f := range o.GetManagedFields() {
		if f.Manager == mgmt.FieldManager {
			return true
		}
	}
	return false
}

// describePruned says what a prune removed, naming each part of the
// cluster (driver.LabelComponent, such as the cluster autoscaler) whose
// objects all went.
func describePruned(pruned []*unstructured.Unstructured) string {
	var names []string
	components := map[string]bool{}
	for _, o := range pruned {
		names = append(names, o.GetKind()+" "+o.GetName())
		if comp := o.GetLabels()[driver.LabelComponent]; comp != "" {
			components[comp] = true
		}
	}
	msg := "removed what the desired state no longer has: " + strings.Join(names, ", ")
	for _, comp := range slices.Sorted(maps.Keys(components)) {
		msg = fmt.Sprintf("removed the %s (no longer desired); %s", strings.ReplaceAll(comp, "-", " "), msg)
	}
	return msg
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}
