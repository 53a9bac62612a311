package conductor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/conductor"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

const (
	benchIdle      = 10 * time.Second
	benchNamespace = "magnetite-default"
)

var (
	clusterGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	kcpGVR     = schema.GroupVersionResource{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Resource: "kubeadmcontrolplanes"}
	mdGVR      = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments"}
)

// BenchmarkStatusAtScale measures status freshness in a real management
// cluster (etcd and kube-apiserver with the Cluster API CRDs) holding 500,
// then 2,000, 5,000 and 10,000 Magnetite clusters on one conductor (set
// MAGNETITE_BENCH_SCALES, e.g. "500,2000", for other sizes). The budget at
// 10,000 is a p99 of 1 s and 250 MB of heap. Each cluster has a row with a control
// plane and a worker node group, and a Cluster, a KubeadmControlPlane and a
// MachineDeployment object labelled as Magnetite's. No Cluster API manager
// runs: the in-memory infrastructure cannot hold thousands of machines on
// one machine, so the benchmark writes the objects' status itself, as
// Cluster API's controllers would, through the status subresource.
//
// Each iteration is one condition change (Available turning False with a
// new message) on the Cluster, the KubeadmControlPlane or the
// MachineDeployment of one cluster, in turn; it ends when GET
// /v1/clusters/{id} of an API server whose store the conductor writes
// shows it in status_reason. It reports the lag's p50 and p99, the CPU
// time the process (conductor and API) uses in an idle window where nothing
// changes, as a percentage of one core, and the heap held by the
// conductor's watch caches (live objects allocated by client-go's
// informers) and in all. Run it with:
//
//	MAGNETITE_TESTBIN=/path/to/.testbin go test ./internal/conductor -run '^$' \
//	    -bench StatusAtScale -benchtime 300x -timeout 60m
func BenchmarkStatusAtScale(b *testing.B) {
	scales, err := benchScales()
	if err != nil {
		b.Fatal(err)
	}
	// Finer heap sampling, so that the watch caches' share is measured
	// rather than guessed from a few samples.
	runtime.MemProfileRate = 64 << 10
	f := startFleet(b)
	for _, n := range scales {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) { f.measure(b, n) })
	}
}

func benchScales() ([]int, error) {
	s := os.Getenv("MAGNETITE_BENCH_SCALES")
	if s == "" {
		return []int{500, 2000, 5000, 10000}, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || (len(out) > 0 && n < out[len(out)-1]) {
			return nil, fmt.Errorf("MAGNETITE_BENCH_SCALES=%q: want increasing cluster counts such as 500,2000,5000", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// fleet is the management cluster, the API server and the conductor the
// scales share: each scale adds clusters to the ones before.
type fleet struct {
	ctx      context.Context
	srv      *testapi.Server
	dc       dynamic.Interface
	clusters []benchCluster
	// rows serializes the seeding's inserts: SQLite takes one writer at a
	// time, and sixteen seeders beside the conductor's status writes
	// can starve one past its busy timeout on a loaded machine.
	rows sync.Mutex
	// figures are the idle CPU and heap measured once per scale (the
	// benchmark function runs more than once per scale).
	figures map[int]scaleFigures
}

type benchCluster struct {
	id, name string
	// gvr is the kind whose condition changes for this cluster.
	gvr schema.GroupVersionResource
}

type scaleFigures struct {
	idleCPU            float64
	cacheMB, heapMB    float64
	idle, idleMeasured time.Duration
}

func startFleet(b *testing.B) *fleet {
	kube := testenv.Start(b)
	kube.InstallClusterAPI(b)
	srv := testapi.Start(b)
	// Seeding thousands of objects needs more than the default client
	// rate limit; the conductor keeps its own.
	cfg := rest.CopyConfig(kube.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	kube.CreateNamespace(b, benchNamespace)
	ctx, cancel := context.WithCancel(context.Background())
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mc, err := mgmt.New(mgmt.Options{Kubeconfig: kube.KubeconfigFile(b), Kinds: builtin.Kinds(), Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	c := conductor.New(conductor.Options{Store: srv.Store, Mgmt: mc, Owner: "bench", Log: quiet})
	done := make(chan error, 2)
	go func() { done <- c.Run(ctx) }()
	go func() { c.ProbeManagement(ctx); done <- nil }()
	b.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				b.Error(err)
			}
		}
	})
	return &fleet{ctx: ctx, srv: srv, dc: dc, figures: map[int]scaleFigures{}}
}

// measure grows the fleet to n clusters, then times b.N condition changes
// and reports the figures of this scale.
func (f *fleet) measure(b *testing.B, n int) {
	f.grow(b, n)
	lags := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Spread the changes over the whole fleet.
		cl := f.clusters[(i*7919)%n]
		marker := fmt.Sprintf("round %d-%d", n, i+1)
		start := f.setAvailable(b, cl, marker)
		waitReason(b, f.srv.URL, cl.id, marker, time.Minute)
		lags = append(lags, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lags)
	pct := func(p float64) time.Duration { return lags[min(len(lags)-1, int(p*float64(len(lags))))] }
	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")

	fig, ok := f.figures[n]
	if !ok {
		fig.cacheMB, fig.heapMB = watchCacheHeap()
		// Idle: nothing changes in the management cluster or the API.
		before, wall := cpuTime(b), time.Now()
		time.Sleep(benchIdle) // a measurement window, not a wait for a condition
		fig.idle, fig.idleMeasured = cpuTime(b)-before, time.Since(wall)
		fig.idleCPU = 100 * fig.idle.Seconds() / fig.idleMeasured.Seconds()
		f.figures[n] = fig
	}
	b.ReportMetric(fig.idleCPU, "idle-cpu-%")
	b.ReportMetric(fig.cacheMB, "watch-cache-MB")
	b.ReportMetric(fig.heapMB, "heap-MB")
	b.Logf("%d clusters, %d changes: lag p50 %s p99 %s max %s; idle CPU %s over %s; watch caches %.1f MB of %.1f MB heap in use",
		n, len(lags), pct(0.50), pct(0.99), lags[len(lags)-1], fig.idle, fig.idleMeasured.Round(time.Millisecond), fig.cacheMB, fig.heapMB)
}

// grow adds clusters until the fleet has n, and waits until the API shows
// every one's first status.
func (f *fleet) grow(b *testing.B, n int) {
	b.Helper()
	if len(f.clusters) >= n {
		return
	}
	from := len(f.clusters)
	added := make([]benchCluster, n-from)
	var wg sync.WaitGroup
	errs := make(chan error, n-from)
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				cl, err := f.seed(from + i)
				if err != nil {
					errs <- err
					continue
				}
				added[i] = cl
			}
		}()
	}
	for i := range added {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	f.clusters = append(f.clusters, added...)
	for _, cl := range added {
		waitReason(b, f.srv.URL, cl.id, "round 0", 10*time.Minute)
	}
}

// seed writes cluster i: its row with a control plane and a worker node
// group, and its Cluster, KubeadmControlPlane and MachineDeployment
// objects, all with an Available condition, False with message "round 0"
// on the kind this cluster changes and True on the others. No operation
// is queued: the conductor only watches.
func (f *fleet) seed(i int) (benchCluster, error) {
	ctx := f.ctx
	id := uuid.NewString()
	name := fmt.Sprintf("bench-%04d", i)
	now := time.Now().UTC()
	cl := &model.Cluster{UUID: id, Name: name, ProjectID: "default", UserID: "admin",
		ClusterTemplateID: uuid.NewString(), Labels: map[string]string{}, Status: model.CreateInProgress,
		StatusReason: strPtr("Waiting for Cluster API to create the cluster"), CreatedAt: now}
	group := func(name, role string, count int) *model.NodeGroup {
		return &model.NodeGroup{UUID: uuid.NewString(), Name: name, ClusterID: id, ProjectID: "default", Role: role,
			NodeCount: count, MinNodeCount: 1, IsDefault: true, Labels: map[string]string{}, NodeAddresses: []string{},
			Status: model.CreateInProgress, CreatedAt: now}
	}
	master, worker := group("default-master", model.RoleMaster, 1), group("default-worker", model.RoleWorker, 1)
	f.rows.Lock()
	err := f.srv.Store.ApplyClusterChange(ctx, store.ClusterChange{Cluster: cl, Create: true, QuotaLimit: math.MaxInt32,
		NodeGroups: []*model.NodeGroup{master, worker}})
	f.rows.Unlock()
	if err != nil {
		return benchCluster{}, err
	}
	labels := func(extra map[string]any) map[string]any {
		l := map[string]any{mgmt.LabelManagedBy: mgmt.ManagedByValue, mgmt.LabelClusterUUID: id, mgmt.LabelProjectID: "default"}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	infraRef := map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachineTemplate", "name": name}
	objs := []struct {
		gvr schema.GroupVersionResource
		obj map[string]any
	}{
		{clusterGVR, map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
			"metadata": map[string]any{"name": name, "namespace": benchNamespace, "labels": labels(nil)},
			"spec":     map[string]any{"controlPlaneEndpoint": map[string]any{"host": "192.0.2.10", "port": int64(6443)}},
		}},
		{kcpGVR, map[string]any{
			"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
			"metadata": map[string]any{"name": name, "namespace": benchNamespace, "labels": labels(nil)},
			"spec": map[string]any{"replicas": int64(1), "version": "v1.33.1",
				"machineTemplate": map[string]any{"spec": map[string]any{"infrastructureRef": infraRef}}},
		}},
		{mdGVR, map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
			"metadata": map[string]any{"name": name + "-default-worker", "namespace": benchNamespace,
				"labels": labels(map[string]any{conductor.LabelNodeGroupUUID: worker.UUID})},
			"spec": map[string]any{"clusterName": name, "replicas": int64(1),
				"selector": map[string]any{"matchLabels": map[string]any{"bench": name}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"bench": name}},
					"spec": map[string]any{"clusterName": name, "version": "v1.33.1",
						"bootstrap": map[string]any{"dataSecretName": name}, "infrastructureRef": infraRef}}},
		}},
	}
	bc := benchCluster{id: id, name: name, gvr: objs[i%len(objs)].gvr}
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o.obj}
		created, err := f.dc.Resource(o.gvr).Namespace(benchNamespace).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			return bc, fmt.Errorf("create %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		status := "True"
		if o.gvr == bc.gvr {
			status = "False"
		}
		if err := writeAvailable(ctx, f.dc, o.gvr, created, status, "round 0"); err != nil {
			return bc, err
		}
	}
	return bc, nil
}

// setAvailable turns the Available condition of cluster's changing object
// False with message marker and returns when the write started.
func (f *fleet) setAvailable(b *testing.B, cl benchCluster, marker string) time.Time {
	b.Helper()
	name := cl.name
	if cl.gvr == mdGVR {
		name += "-default-worker"
	}
	obj, err := f.dc.Resource(cl.gvr).Namespace(benchNamespace).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := writeAvailable(f.ctx, f.dc, cl.gvr, obj, "False", marker); err != nil {
		b.Fatal(err)
	}
	return start
}

// writeAvailable writes obj's status as Cluster API would: its Available
// condition and, for the groups of machines, one ready and up-to-date
// replica.
func writeAvailable(ctx context.Context, dc dynamic.Interface, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, status, message string) error {
	cond := map[string]any{"type": "Available", "status": status, "reason": "BenchmarkAvailability",
		"message": message, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
	if err := unstructured.SetNestedSlice(obj.Object, []any{cond}, "status", "conditions"); err != nil {
		return err
	}
	if gvr != clusterGVR {
		for _, f := range []string{"replicas", "readyReplicas", "upToDateReplicas", "availableReplicas"} {
			if err := unstructured.SetNestedField(obj.Object, int64(1), "status", f); err != nil {
				return err
			}
		}
	}
	if _, err := dc.Resource(gvr).Namespace(benchNamespace).UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// waitReason polls GET /v1/clusters/{id} until status_reason ends with
// ": " + marker.
func waitReason(b *testing.B, base, id, marker string, limit time.Duration) {
	b.Helper()
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/v1/clusters/" + id)
		if err != nil {
			b.Fatal(err)
		}
		var body struct {
			StatusReason string `json:"status_reason"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET cluster %s: %s %v", id, resp.Status, err)
		}
		if last = body.StatusReason; strings.HasSuffix(last, ": "+marker) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	b.Fatalf("status_reason of %s never showed %q within %s; last %q", id, marker, limit, last)
}

// watchCacheHeap returns, after a full collection, the live heap allocated
// by client-go's informers (the watch caches' objects, decoded by their
// reflectors' lists and watches) and the whole heap in use, in MB. The heap profile samples
// allocations; each sample is scaled as pprof scales it.
func watchCacheHeap() (cacheMB, heapMB float64) {
	// The profile reflects the heap as of the last completed collection
	// but one.
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	for {
		n, ok := runtime.MemProfile(recs, false)
		if ok {
			recs = recs[:n]
			break
		}
		recs = make([]runtime.MemProfileRecord, n+100)
	}
	rate := float64(runtime.MemProfileRate)
	var cache float64
	for _, r := range recs {
		objects := r.InUseObjects()
		if objects == 0 || !allocatedByInformer(r.Stack()) {
			continue
		}
		bytes := float64(r.InUseBytes())
		avg := bytes / float64(objects)
		cache += bytes / (1 - math.Exp(-avg/rate))
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return cache / (1 << 20), float64(ms.HeapInuse) / (1 << 20)
}

// informerPackages are where the informers' objects are decoded: their
// reflectors' lists, and the watch streams (the conductor's only
// watches are its informers').
var informerPackages = []string{"k8s.io/client-go/tools/cache.", "k8s.io/apimachinery/pkg/watch.", "k8s.io/client-go/rest/watch."}

func allocatedByInformer(stack []uintptr) bool {
	frames := runtime.CallersFrames(stack)
	for {
		fr, more := frames.Next()
		for _, p := range informerPackages {
			if strings.HasPrefix(fr.Function, p) {
				return true
			}
		}
		if !more {
			return false
		}
	}
}

// cpuTime is the user plus system CPU time of this process so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func strPtr(s string) *string { return &s }
