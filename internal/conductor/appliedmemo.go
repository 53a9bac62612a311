package conductor

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/mgmt"
)

// A cluster's whole desired state is computed on every reconcile, but most
// of it rarely changes: a resize changes the Cluster object's topology and
// nothing else, while the cluster's certificate Secrets, its addon
// ConfigMaps and ClusterResourceSet, and the ClusterClass and templates it
// shares with other clusters stay as they were. Applying all of them again
// costs the management cluster's API server a request each (at 1,000
// clusters, the difference between a burst of resizes applied in seconds
// and in minutes), so the conductor remembers what it applied and sends
// only what differs, as Cluster API's topology reconciler does when it
// compares its desired objects with the current ones before it patches.
//
// What is remembered is a digest of each object as it was applied and the
// resourceVersion the API server answered with. An object is sent again
// when its desired content changed; when it is of a kind the conductor
// watches and the watch shows a newer resourceVersion (someone else
// changed it, or it is gone); and in any case once its memory is older
// than appliedMemoTTL, so that an object of an unwatched kind changed or
// deleted behind Magnetite's back is put right within that time. A failed
// apply forgets the cluster's memory, and a restart starts with none: the
// first reconcile after either applies everything.

// appliedMemoTTL is how long an applied object is trusted to be unchanged
// when nothing says otherwise.
const appliedMemoTTL = 10 * time.Minute

// appliedMemo is what the conductor last applied, per cluster.
type appliedMemo struct {
	mu sync.Mutex
	// objects is keyed by cluster UUID ("" for objects clusters share),
	// then by kind/namespace/name.
	objects map[string]map[string]appliedObject
	// pruned is, per cluster, the desired state whose prune last
	// succeeded: its objects' keys, sorted and joined, and when.
	pruned map[string]prunedState
}

type appliedObject struct {
	digest          [sha256.Size]byte
	resourceVersion string
	at              time.Time
}

type prunedState struct {
	keys string
	at   time.Time
}

func newAppliedMemo() *appliedMemo {
	return &appliedMemo{objects: map[string]map[string]appliedObject{}, pruned: map[string]prunedState{}}
}

func objectKey(o *unstructured.Unstructured) string {
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// digestOf is the digest of an object as it will be applied by owner.
// Objects that clusters share (ClusterClasses and their templates, named
// by their content) are the same whichever cluster applies them: their
// digest leaves the owner out, so that one cluster's apply serves all.
func digestOf(owner mgmt.Owner, o *unstructured.Unstructured, shared bool) ([sha256.Size]byte, bool) {
	if shared {
		o = sharedForm(o)
	}
	raw, err := json.Marshal(o.Object)
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	h := sha256.New()
	if !shared {
		h.Write([]byte(owner.ClusterUUID + "\x00" + owner.ProjectID + "\x00"))
	}
	h.Write(raw)
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum, true
}

// unchanged reports whether the object was applied with this digest less
// than appliedMemoTTL ago and, when live is known (the watch's copy, or nil
// with watched true when the watch does not hold it), is still at the
// resourceVersion that apply answered with.
func (m *appliedMemo) unchanged(cluster, key string, digest [sha256.Size]byte, now time.Time, watched bool, live *unstructured.Unstructured) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.objects[cluster][key]
	if !ok || a.digest != digest || now.Sub(a.at) >= appliedMemoTTL {
		return false
	}
	if watched {
		return live != nil && live.GetResourceVersion() == a.resourceVersion
	}
	return true
}

func (m *appliedMemo) applied(cluster, key string, digest [sha256.Size]byte, resourceVersion string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objects[cluster] == nil {
		m.objects[cluster] = map[string]appliedObject{}
	}
	m.objects[cluster][key] = appliedObject{digest: digest, resourceVersion: resourceVersion, at: now}
}

// forget drops what is remembered of a cluster: after a failed apply, and
// once the cluster is gone. Shared objects are forgotten too, since the
// failure may have been theirs.
func (m *appliedMemo) forget(cluster string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, cluster)
	delete(m.objects, "")
	delete(m.pruned, cluster)
}

// prunedKeys is the form in which a desired state's object set is
// remembered.
func prunedKeys(desired []*unstructured.Unstructured) string {
	keys := make([]string, 0, len(desired))
	for _, o := range desired {
		keys = append(keys, objectKey(o))
	}
	slices.Sort(keys)
	return strings.Join(keys, "\n")
}

// prunedRecently reports whether a prune for exactly this set of desired
// objects succeeded less than appliedMemoTTL ago: nothing the conductor
// applied since lies outside the set, so there is nothing to prune.
func (m *appliedMemo) prunedRecently(cluster, keys string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pruned[cluster]
	return ok && p.keys == keys && now.Sub(p.at) < appliedMemoTTL
}

func (m *appliedMemo) prunedNow(cluster, keys string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruned[cluster] = prunedState{keys: keys, at: now}
}

// sharedForm is an object clusters share without the cluster and project
// the renderer labelled it with (it labels every object with the cluster
// it renders for): a ClusterClass or template belongs to no one cluster,
// and is applied so, with only Magnetite's managed-by label.
func sharedForm(o *unstructured.Unstructured) *unstructured.Unstructured {
	o = o.DeepCopy()
	labels := o.GetLabels()
	delete(labels, mgmt.LabelClusterUUID)
	delete(labels, mgmt.LabelProjectID)
	o.SetLabels(labels)
	ann := o.GetAnnotations()
	delete(ann, mgmt.AnnotationProjectID)
	o.SetAnnotations(ann)
	return o
}
