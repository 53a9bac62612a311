package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/certs"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// BenchmarkResizeBesideCreates measures what a user resizing a cluster
// waits for, alone and while eight other clients keep creating clusters
// (each create makes the cluster's four CA key pairs): writes that need no
// bare-metal hosts must not queue behind each other. It reports the p50
// and p99 of the resize latency. Run with:
//
//	go test ./internal/api -run '^$' -bench ResizeBesideCreates
func BenchmarkResizeBesideCreates(b *testing.B) {
	for _, creators := range []int{0, 8} {
		b.Run(fmt.Sprintf("creating-clients=%d", creators), func(b *testing.B) {
			srv := testapi.Start(b, func(o *api.Options) { o.DefaultClusterQuota = 1 << 30 })
			c := newClient(b, srv)
			tmpl := c.createTemplate(map[string]any{"master_lb_enabled": true})
			id := c.createCluster(tmpl, map[string]any{"name": "resized", "node_count": 1})

			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for w := range creators {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ctx.Err() == nil; i++ {
						res := c.do("POST", "/v1/clusters", map[string]any{"cluster_template_id": tmpl, "name": fmt.Sprintf("load-%d-%d", w, i)})
						if res.Status != http.StatusAccepted {
							b.Errorf("create beside the resizes: %d %s", res.Status, res.Body)
							return
						}
					}
				}()
			}
			latencies := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				c.must(http.StatusAccepted, "POST", "/v1/clusters/"+id+"/actions/resize", map[string]any{"node_count": 1 + i%3})
				latencies = append(latencies, time.Since(start))
			}
			b.StopTimer()
			stop()
			wg.Wait()
			slices.Sort(latencies)
			b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkClusterCreate measures cluster creates, each of which makes the
// cluster's four CA and service-account RSA keys, with every key made on
// the request (keys=inline) and with a key pool of four clusters' keys
// filled in the background (keys=pool, [api] key_pool_size = 16).
// one-at-a-time is a create arriving when the pool has had time to fill
// (the usual pace of cluster creates), reporting its latency; clients=4 is
// four clients creating back to back, reporting creates per second (the
// pool empties within the first few creates and keys are then made as
// fast as the CPU allows either way). Run with:
//
//	go test ./internal/api -run '^$' -bench ClusterCreate -benchtime 40x
func BenchmarkClusterCreate(b *testing.B) {
	for _, keys := range []string{"inline", "pool"} {
		for _, clients := range []int{1, 4} {
			name := "keys=" + keys + "/one-at-a-time"
			if clients > 1 {
				name = fmt.Sprintf("keys=%s/clients=%d", keys, clients)
			}
			b.Run(name, func(b *testing.B) {
				var pool *certs.KeyPool
				ctx, stop := context.WithCancel(context.Background())
				defer stop()
				if keys == "pool" {
					pool = certs.NewKeyPool(16)
					go func() {
						if err := pool.Run(ctx); err != nil {
							b.Error(err)
						}
					}()
				}
				srv := testapi.Start(b, func(o *api.Options) { o.DefaultClusterQuota = 1 << 30; o.KeyPool = pool })
				c := newClient(b, srv)
				tmpl := c.createTemplate(nil)
				create := func(name string) time.Duration {
					start := time.Now()
					c.must(http.StatusAccepted, "POST", "/v1/clusters", map[string]any{"cluster_template_id": tmpl, "name": name})
					return time.Since(start)
				}
				if clients > 1 {
					var wg sync.WaitGroup
					b.ResetTimer()
					start := time.Now()
					for w := range clients {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := w; i < b.N; i += clients {
								create(fmt.Sprintf("c-%d", i))
							}
						}()
					}
					wg.Wait()
					b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
					return
				}
				latencies := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := range b.N {
					b.StopTimer()
					waitPoolFull(b, pool)
					b.StartTimer()
					latencies = append(latencies, create(fmt.Sprintf("c-%d", i)))
				}
				b.StopTimer()
				slices.Sort(latencies)
				b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
			})
		}
	}
}

// waitPoolFull waits until the key pool holds all its keys (nil: no pool).
func waitPoolFull(b *testing.B, p *certs.KeyPool) {
	deadline := time.Now().Add(2 * time.Minute)
	for p.Stats().Ready < p.Size() {
		if time.Now().After(deadline) {
			b.Fatalf("the key pool never filled: %+v", p.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
