package conductor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/apitest"
	"github.com/magnetite-io/magnetite/internal/conductor"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testenv"
)

const (
	benchClusters = 500
	benchIdle     = 10 * time.Second
)

var clusterGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}

// BenchmarkStatusLag500Clusters measures, with 500 Magnetite clusters in a
// real management cluster (kube-apiserver with the Cluster API CRDs), the
// delay from a condition change on one Cluster object (written through the
// status subresource) to the change showing in GET /v1/clusters/{id} of an
// API server whose store the conductor writes; each iteration is one
// change. It then reports the process's CPU use over an idle window in
// which nothing changes. Run it with, for example:
//
//	go test ./internal/conductor -run '^$' -bench StatusLag -benchtime 300x
func BenchmarkStatusLag500Clusters(b *testing.B) {
	kube := testenv.Start(b)
	kube.InstallClusterAPI(b)
	srv := apitest.Start(b)
	dc := kube.Dynamic(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	ids, names := seedClusters(ctx, b, srv.Store, dc)
	mc, err := mgmt.New(mgmt.Options{Kubeconfig: kube.KubeconfigFile(b), Kinds: builtin.Kinds(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	c := conductor.New(conductor.Options{Store: srv.Store, Mgmt: mc, Owner: "bench", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	for _, id := range ids {
		waitReason(b, srv.URL, id, "round 0", 2*time.Minute)
	}

	lags := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := ids[i%len(ids)]
		marker := fmt.Sprintf("round %d", i+1)
		start := setAvailable(ctx, b, dc, names[i%len(ids)], marker)
		waitReason(b, srv.URL, id, marker, time.Minute)
		lags = append(lags, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lags)
	pct := func(p float64) time.Duration { return lags[min(len(lags)-1, int(p*float64(len(lags))))] }
	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")

	// Idle: nothing changes in the management cluster or the API.
	before, wall := cpuTime(b), time.Now()
	time.Sleep(benchIdle) // a measurement window, not a wait for a condition
	idle := cpuTime(b) - before
	b.ReportMetric(100*idle.Seconds()/time.Since(wall).Seconds(), "idle-cpu-%")
	b.Logf("%d clusters, %d changes: lag p50 %s p99 %s max %s; idle CPU %s over %s",
		len(ids), len(lags), pct(0.50), pct(0.99), lags[len(lags)-1], idle, benchIdle)
}

const benchNamespace = "magnetite-default"

// seedClusters writes benchClusters cluster rows and, for each, a Cluster
// object labelled as Magnetite's whose Available condition is False with
// message "round 0". No operations are queued: the conductor only watches.
// It returns the clusters' UUIDs and their Cluster objects' names.
func seedClusters(ctx context.Context, b *testing.B, st *store.DB, dc dynamic.Interface) (ids, names []string) {
	b.Helper()
	ns := benchNamespace
	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	ids, names = make([]string, benchClusters), make([]string, benchClusters)
	for i := range ids {
		id := uuid.NewString()
		ids[i] = id
		cl := &model.Cluster{UUID: id, Name: fmt.Sprintf("bench-%03d", i), ProjectID: "default", UserID: "admin",
			ClusterTemplateID: uuid.NewString(), Labels: map[string]string{}, Status: model.CreateInProgress,
			StatusReason: strPtr("Waiting for Cluster API to create the cluster"), CreatedAt: time.Now().UTC()}
		if err := st.ApplyClusterChange(ctx, store.ClusterChange{Cluster: cl, Create: true, QuotaLimit: benchClusters}); err != nil {
			b.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
			"metadata": map[string]any{"name": cl.Name, "namespace": ns, "labels": map[string]any{
				mgmt.LabelManagedBy: mgmt.ManagedByValue, mgmt.LabelClusterUUID: id, mgmt.LabelProjectID: "default"}},
			"spec": map[string]any{"controlPlaneEndpoint": map[string]any{"host": "192.0.2.10", "port": int64(6443)}},
		}}
		if _, err := dc.Resource(clusterGVR).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		names[i] = cl.Name
		setAvailable(ctx, b, dc, cl.Name, "round 0")
	}
	return ids, names
}

// setAvailable sets the Available condition of a Cluster object to False
// with message marker, through the status subresource, and returns when
// the write started.
func setAvailable(ctx context.Context, b *testing.B, dc dynamic.Interface, name, marker string) time.Time {
	b.Helper()
	obj, err := dc.Resource(clusterGVR).Namespace(benchNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cond := map[string]any{"type": "Available", "status": "False", "reason": "BenchmarkNotAvailable",
		"message": marker, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
	if err := unstructured.SetNestedSlice(obj.Object, []any{cond}, "status", "conditions"); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := dc.Resource(clusterGVR).Namespace(benchNamespace).UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	return start
}

// waitReason polls GET /v1/clusters/{id} until status_reason ends with
// marker.
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

// cpuTime is the user plus system CPU time of this process so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func strPtr(s string) *string { return &s }
