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
	"github.com/magnetite-io/magnetite/internal/testapi"
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
