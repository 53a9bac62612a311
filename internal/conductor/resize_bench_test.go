package conductor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/conductor"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/inmemory"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// BenchmarkResizesAtScale measures how long a burst of resizes takes to
// reach the management cluster: 1,000 clusters (MAGNETITE_BENCH_RESIZES
// for another count) are made through the API and applied by one
// conductor with its default workers to a real kube-apiserver with the
// Cluster API CRDs, on the in-memory infrastructure (no cloud to ask, no
// Cluster API manager running: what is measured is Magnetite's side).
// Each iteration then PATCHes node_count of every cluster at once, 16
// requests in flight, and ends when every Cluster object's topology
// carries its new worker count, as seen by a watch of the management
// cluster. It reports the whole burst (the budget is 60 s for 1,000) and
// the p50 and p99 of a resize's time from its request to its apply.
//
//	MAGNETITE_TESTBIN=/path/to/.testbin go test ./internal/conductor -run '^$' \
//	    -bench ResizesAtScale -benchtime 1x -timeout 60m
func BenchmarkResizesAtScale(b *testing.B) {
	n := 1000
	if s := os.Getenv("MAGNETITE_BENCH_RESIZES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			b.Fatalf("MAGNETITE_BENCH_RESIZES=%q: want a number of clusters", s)
		}
	}
	f := startResizeFleet(b, n)
	ids := f.create(b, n)
	for i := 0; i < b.N; i++ {
		f.resizeAll(b, ids, 2+i)
	}
}

// resizeFleet is an API server, a conductor and the management cluster
// they build clusters on.
type resizeFleet struct {
	ctx context.Context
	srv *testapi.Server
	dc  dynamic.Interface
	mc  *mgmt.Client
	// applied tells, per cluster UUID, the worker count its Cluster
	// object's topology last showed.
	applied *appliedCounts
}

// noCloud is the in-memory infrastructure's cloud: it has nothing to say.
type noCloud struct{}

func (noCloud) Facts(context.Context, *model.ClusterTemplate, *model.Cluster, []*model.NodeGroup) (*facts.Facts, error) {
	return &facts.Facts{}, nil
}

func startResizeFleet(b *testing.B, clusters int) *resizeFleet {
	kube := testenv.Start(b)
	kube.InstallClusterAPI(b)
	cfg := rest.CopyConfig(kube.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := builtin.Registry(capi.Options{}, "inmemory", inmemory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mc, err := mgmt.New(mgmt.Options{Kubeconfig: kube.KubeconfigFile(b), Kinds: reg.Kinds(), Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	// The API wakes the conductor when it queues work, as serve wires them.
	wake := make(chan struct{}, 1)
	srv := testapi.Start(b, func(o *api.Options) {
		o.DefaultClusterQuota = clusters
		o.OnQueued = func() {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	})
	c := conductor.New(conductor.Options{Store: srv.Store, Mgmt: mc, Drivers: reg, Facts: noCloud{}, Owner: "bench", Log: quiet})
	done := make(chan error, 3)
	go func() { done <- c.Run(ctx) }()
	go func() { c.ProbeManagement(ctx); done <- nil }()
	go func() {
		for {
			select {
			case <-ctx.Done():
				done <- nil
				return
			case <-wake:
				c.Notify()
			}
		}
	}()
	f := &resizeFleet{ctx: ctx, srv: srv, dc: dc, mc: mc, applied: newAppliedCounts()}
	watchDone := f.watchClusters(b)
	b.Cleanup(func() {
		cancel()
		<-watchDone
		for range 3 {
			if err := <-done; err != nil {
				b.Error(err)
			}
		}
	})
	return f
}

// create makes n clusters through the API and waits until the conductor
// applied every one's Cluster object.
func (f *resizeFleet) create(b *testing.B, n int) []string {
	b.Helper()
	var tmpl struct{ UUID string }
	f.call(b, http.StatusCreated, "POST", "/v1/clustertemplates", map[string]any{
		"name": "inmemory", "coe": "kubernetes", "image_id": "ubuntu-2404", "cluster_distro": "ubuntu",
		"labels": map[string]string{"kube_tag": "v1.33.1"}}, &tmpl)
	ids := make([]string, n)
	f.parallel(b, n, func(i int) error {
		var out struct{ UUID string }
		if err := f.request(http.StatusAccepted, "POST", "/v1/clusters", map[string]any{
			"name": fmt.Sprintf("resize-%04d", i), "cluster_template_id": tmpl.UUID, "node_count": 1, "master_count": 1}, &out); err != nil {
			return err
		}
		ids[i] = out.UUID
		return nil
	})
	b.Logf("%d clusters created through the API", n)
	start := time.Now()
	testenv.WaitEvery(b, fmt.Sprintf("the conductor to apply %d clusters", n), 30*time.Minute, time.Second, f.applied.progress(ids, 1))
	b.Logf("%d clusters applied %s later", n, time.Since(start).Round(time.Second))
	return ids
}

// resizeAll PATCHes every cluster to workers nodes and reports when the
// management cluster holds every resize.
func (f *resizeFleet) resizeAll(b *testing.B, ids []string, workers int) {
	b.Helper()
	sent := make([]time.Time, len(ids))
	before := f.mc.Requests()
	b.ResetTimer()
	start := time.Now()
	f.parallel(b, len(ids), func(i int) error {
		sent[i] = time.Now()
		return f.request(http.StatusAccepted, "PATCH", "/v1/clusters/"+ids[i],
			[]map[string]any{{"op": "replace", "path": "/node_count", "value": workers}}, nil)
	})
	requested := time.Since(start)
	// Polled only to know when to stop: the times are the watch's.
	testenv.WaitEvery(b, fmt.Sprintf("%d resizes to reach the management cluster", len(ids)), 10*time.Minute, 100*time.Millisecond,
		f.applied.progress(ids, workers))
	b.StopTimer()
	after := f.mc.Requests()
	var sum int64
	for method, n := range after {
		sum += n - before[method]
	}
	lags := make([]time.Duration, len(ids))
	var last time.Time
	for i, id := range ids {
		at := f.applied.at(id, workers)
		lags[i] = at.Sub(sent[i])
		if at.After(last) {
			last = at
		}
	}
	total := last.Sub(start)
	slices.Sort(lags)
	pct := func(p float64) time.Duration { return lags[min(len(lags)-1, int(p*float64(len(lags))))] }
	b.ReportMetric(total.Seconds(), "burst-s")
	b.ReportMetric(float64(pct(0.50).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(pct(0.99).Milliseconds()), "p99-ms")
	b.ReportMetric(float64(sum)/float64(len(ids)), "mgmt-requests/resize")
	b.Logf("%d resizes to %d workers: requests answered in %s, all applied in %s; a resize's apply p50 %s p99 %s max %s; "+
		"the conductor sent the management cluster %d requests (before %v, after %v)",
		len(ids), workers, requested.Round(time.Millisecond), total.Round(time.Millisecond), pct(0.50), pct(0.99), lags[len(lags)-1],
		sum, before, after)
}

// watchClusters records, from an informer on every namespace's Cluster
// objects, each cluster's default-worker count and when it was first seen.
// An informer, unlike a bare watch, lists and watches again when the API
// server ends a watch (as a loaded one does), so no change goes unseen.
func (f *resizeFleet) watchClusters(b *testing.B) <-chan struct{} {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(f.dc, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.LabelSelector = mgmt.LabelManagedBy + "=" + mgmt.ManagedByValue
	})
	see := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if n, ok := defaultWorkers(u); ok {
				f.applied.see(u.GetLabels()[mgmt.LabelClusterUUID], n, time.Now())
			}
		}
	}
	inf := factory.ForResource(clusterGVR).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, obj any) { see(obj) }}); err != nil {
		b.Fatal(err)
	}
	factory.Start(f.ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-f.ctx.Done()
		factory.Shutdown()
	}()
	return done
}

// defaultWorkers is the replicas of the default-worker machine deployment
// in a Cluster's topology.
func defaultWorkers(obj *unstructured.Unstructured) (int, bool) {
	mds, _, _ := unstructured.NestedSlice(obj.Object, "spec", "topology", "workers", "machineDeployments")
	for _, md := range mds {
		m, _ := md.(map[string]any)
		if m["name"] == model.DefaultWorkerNodeGroup {
			n, ok, _ := unstructured.NestedInt64(m, "replicas")
			return int(n), ok
		}
	}
	return 0, false
}

// appliedCounts is what the watch saw of each cluster: the worker counts
// and when each was first seen.
type appliedCounts struct {
	mu   sync.Mutex
	seen map[string]map[int]time.Time
}

func newAppliedCounts() *appliedCounts { return &appliedCounts{seen: map[string]map[int]time.Time{}} }

func (a *appliedCounts) see(id string, n int, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen[id] == nil {
		a.seen[id] = map[int]time.Time{}
	}
	if _, ok := a.seen[id][n]; !ok {
		a.seen[id][n] = at
	}
}

func (a *appliedCounts) at(id string, n int) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen[id][n]
}

func (a *appliedCounts) count(ids []string, n int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := 0
	for _, id := range ids {
		if _, ok := a.seen[id][n]; ok {
			c++
		}
	}
	return c
}

// progress is a condition for testenv.WaitEvery: every cluster of ids
// was seen with n workers.
func (a *appliedCounts) progress(ids []string, n int) func() (bool, string) {
	return func() (bool, string) {
		c := a.count(ids, n)
		return c == len(ids), fmt.Sprintf("%d of %d clusters at %d workers", c, len(ids), n)
	}
}

// parallel runs do for 0..n-1, 16 at a time, and fails b on the first
// error.
func (f *resizeFleet) parallel(b *testing.B, n int, do func(i int) error) {
	b.Helper()
	next := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

func (f *resizeFleet) call(b *testing.B, status int, method, path string, body, out any) {
	b.Helper()
	if err := f.request(status, method, path, body, out); err != nil {
		b.Fatal(err)
	}
}

// request sends an API request as the admin of project "default" and
// decodes the answer into out (when not nil).
func (f *resizeFleet) request(status int, method, path string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(f.ctx, method, f.srv.URL+path, strings.NewReader(string(raw)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "container-infra latest")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != status {
		return fmt.Errorf("%s %s: %s, want %d: %s", method, path, res.Status, status, got)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(got, out)
}
