package conductor

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/metrics"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
)

// operationEnded reports how an operation attempt ended; a nil registry
// records nothing.
func (c *Conductor) operationEnded(op *model.Operation, result metrics.Result) {
	if c.opts.Metrics == nil {
		return
	}
	c.opts.Metrics.OperationFinished(op.Type, result, c.now().Sub(op.CreatedAt))
}

// objectChange is the newest condition transition seen on one
// management-cluster object.
type objectChange struct {
	kind string
	at   time.Time
}

// noteChange remembers, for the watch-lag metric, when an object's newest
// condition changed. Only a transition newer than the one already seen for
// the object counts: the first sight of an object (the initial list, a
// restart) and updates that touch no condition say nothing about how fresh
// the event is.
func (c *Conductor) noteChange(ev mgmt.Event, clusterUUID string) {
	if c.opts.Metrics == nil || ev.Object == nil {
		return
	}
	key := ev.Kind + "/" + ev.Object.GetNamespace() + "/" + ev.Object.GetName()
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Type == mgmt.Deleted {
		delete(c.lastTransition, key)
		return
	}
	at, ok := newestTransition(ev.Object)
	if !ok {
		return
	}
	prev, seen := c.lastTransition[key]
	c.lastTransition[key] = at
	if !seen || !at.After(prev) {
		return
	}
	c.unsynced[clusterUUID] = append(c.unsynced[clusterUUID], objectChange{kind: ev.Kind, at: at})
}

// statusStored observes the watch lag of every change to a cluster's
// objects that its just-finished status computation took into account.
func (c *Conductor) statusStored(clusterUUID string, at time.Time) {
	if c.opts.Metrics == nil {
		return
	}
	c.mu.Lock()
	changes := c.unsynced[clusterUUID]
	delete(c.unsynced, clusterUUID)
	c.mu.Unlock()
	for _, ch := range changes {
		c.opts.Metrics.ObserveWatchLag(ch.kind, at.Sub(ch.at))
	}
}

// newestTransition is the latest lastTransitionTime among an object's
// conditions, in every place Cluster API keeps them across its API
// versions.
func newestTransition(obj *unstructured.Unstructured) (time.Time, bool) {
	var newest time.Time
	for _, path := range [][]string{
		{"status", "conditions"},
		{"status", "v1beta2", "conditions"},
		{"status", "deprecated", "v1beta1", "conditions"},
	} {
		conds, _, _ := unstructured.NestedSlice(obj.Object, path...)
		for _, raw := range conds {
			cond, _ := raw.(map[string]any)
			s, _ := cond["lastTransitionTime"].(string)
			t, err := time.Parse(time.RFC3339, s)
			if err == nil && t.After(newest) {
				newest = t
			}
		}
	}
	return newest, !newest.IsZero()
}
