package mgmt

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// EventType says what happened to an object.
type EventType string

const (
	Added   EventType = "added"
	Updated EventType = "updated"
	Deleted EventType = "deleted"
)

// Event is one change of a watched object. For a deletion Object is the last
// state the watch saw.
type Event struct {
	Type   EventType
	Kind   string
	Object *unstructured.Unstructured
}

// ClusterUUID is the Magnetite cluster the object belongs to, from its
// ownership label.
func (e Event) ClusterUUID() string { return e.Object.GetLabels()[LabelClusterUUID] }

// Watch keeps shared informers on Magnetite's objects of some kinds and
// answers reads from their caches.
type Watch struct {
	informers map[string]cache.SharedIndexInformer
	resources map[string]Resource
}

const byClusterUUID = "magnetite-cluster-uuid"

// Watch starts informers for kinds, limited to objects carrying Magnetite's
// managed-by label, waits until their caches are filled, and calls handle for
// every add, update and delete until ctx ends. Calls for one kind come in
// order from one goroutine; different kinds call concurrently. The initial
// listing arrives as Added events. A kind the management cluster does not
// serve is an error.
func (c *Client) Watch(ctx context.Context, kinds []string, handle func(Event)) (*Watch, error) {
	w := &Watch{informers: map[string]cache.SharedIndexInformer{}, resources: map[string]Resource{}}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, 0, metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = ManagedSelector })
	for _, kind := range kinds {
		r, err := c.Resource(ctx, kind)
		if err != nil {
			return nil, err
		}
		inf := factory.ForResource(r.GVR()).Informer()
		if err := inf.AddIndexers(cache.Indexers{byClusterUUID: func(obj any) ([]string, error) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				if id := u.GetLabels()[LabelClusterUUID]; id != "" {
					return []string{id}, nil
				}
			}
			return nil, nil
		}}); err != nil {
			return nil, fmt.Errorf("mgmt: index %s: %w", kind, err)
		}
		if err := inf.SetTransform(slim); err != nil {
			return nil, fmt.Errorf("mgmt: watch %s: %w", kind, err)
		}
		if _, err := inf.AddEventHandler(eventHandler(kind, handle)); err != nil {
			return nil, fmt.Errorf("mgmt: watch %s: %w", kind, err)
		}
		w.informers[kind], w.resources[kind] = inf, r
	}
	factory.Start(ctx.Done())
	synced := make(chan struct{})
	go func() {
		defer close(synced)
		factory.WaitForCacheSync(ctx.Done())
	}()
	select {
	case <-synced:
	case <-ctx.Done():
		factory.Shutdown()
		return nil, ctx.Err()
	}
	for kind, inf := range w.informers {
		if !inf.HasSynced() {
			factory.Shutdown()
			return nil, fmt.Errorf("mgmt: watch %s: cache did not sync", kind)
		}
	}
	// The informers stop with ctx; Shutdown then waits for their goroutines.
	go func() {
		<-ctx.Done()
		factory.Shutdown()
	}()
	return w, nil
}

// lastApplied is the annotation kubectl's client-side apply keeps a whole
// copy of the object in.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// slim drops from an object, before the cache keeps it, what nothing in
// Magnetite reads from the cache: its managed fields (a record of every
// field's writer, often a third of the object) and kubectl's last-applied
// copy. With thousands of clusters the caches are most of the process's
// memory.
func slim(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetManagedFields(nil)
		if ann := u.GetAnnotations(); ann[lastApplied] != "" {
			delete(ann, lastApplied)
			u.SetAnnotations(ann)
		}
	}
	return obj, nil
}

func eventHandler(kind string, handle func(Event)) cache.ResourceEventHandlerFuncs {
	emit := func(t EventType, obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			handle(Event{Type: t, Kind: kind, Object: u})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { emit(Added, obj) },
		UpdateFunc: func(old, obj any) {
			// Periodic resyncs are off, but a relist after a broken watch
			// redelivers unchanged objects; they are not changes.
			if o, ok := old.(*unstructured.Unstructured); ok {
				if n, ok := obj.(*unstructured.Unstructured); ok && o.GetResourceVersion() == n.GetResourceVersion() {
					return
				}
			}
			emit(Updated, obj)
		},
		DeleteFunc: func(obj any) { emit(Deleted, obj) },
	}
}

// Objects returns the cached objects of kind that belong to a Magnetite
// cluster. They are shared with the cache: do not modify them.
func (w *Watch) Objects(kind, clusterUUID string) ([]*unstructured.Unstructured, error) {
	inf, ok := w.informers[kind]
	if !ok {
		return nil, fmt.Errorf("mgmt: %s is not watched", kind)
	}
	items, err := inf.GetIndexer().ByIndex(byClusterUUID, clusterUUID)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, it := range items {
		if u, ok := it.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out, nil
}

// Resource is where a watched kind is served.
func (w *Watch) Resource(kind string) (Resource, bool) {
	r, ok := w.resources[kind]
	return r, ok
}
