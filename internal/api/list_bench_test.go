package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// BenchmarkListLargePages measures the listings Horizon and the CLI make
// of a busy cloud: a page of 1000 cluster templates and one of 1000
// clusters (with their node groups), in detail, through the whole HTTP
// stack: read and encoded from the stored rows each time (uncached), and
// answered from the page cache (cached; the generations are still read
// from the database on every request). Run with:
//
//	go test ./internal/api -run '^$' -bench ListLargePages -benchmem
func BenchmarkListLargePages(b *testing.B) {
	srv := testapi.Start(b)
	ctx := context.Background()
	now := time.Now().UTC()
	var tmpl string
	for i := range 1000 {
		ct := &model.ClusterTemplate{UUID: uuid.NewString(), Name: fmt.Sprint("t", i),
			ProjectID: "bench", UserID: "u", TemplateSpec: model.TemplateSpec{COE: "kubernetes",
				ImageID: "ubuntu-2204-kube-v1.30.4", ServerType: model.ServerTypeVM,
				Labels: map[string]string{"kube_tag": "v1.30.4", "auto_healing_enabled": "true"}},
			CreatedAt: now}
		if err := srv.Store.CreateClusterTemplate(ctx, ct); err != nil {
			b.Fatal(err)
		}
		tmpl = ct.UUID
	}
	for i := range 1000 {
		c := &model.Cluster{UUID: uuid.NewString(), Name: fmt.Sprint("c", i), ProjectID: "bench", UserID: "u",
			ClusterTemplateID: tmpl, Status: model.CreateComplete, Labels: map[string]string{"kube_tag": "v1.30.4"},
			CreateTimeout: 60, CreatedAt: now, HealthStatusReason: map[string]string{}}
		var ngs []*model.NodeGroup
		for _, role := range []string{model.RoleMaster, model.RoleWorker} {
			ngs = append(ngs, &model.NodeGroup{UUID: uuid.NewString(), Name: "default-" + role, ClusterID: c.UUID,
				ProjectID: "bench", Role: role, NodeCount: 3, IsDefault: true, Status: model.CreateComplete,
				NodeAddresses: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, Labels: map[string]string{}, CreatedAt: now})
		}
		if err := srv.Store.ApplyClusterChange(ctx, store.ClusterChange{Cluster: c, Create: true, QuotaLimit: 10000, NodeGroups: ngs}); err != nil {
			b.Fatal(err)
		}
	}
	get := func(b *testing.B, path string) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("OpenStack-API-Version", "container-infra latest")
		req.Header.Set("X-Project-Id", "bench")
		req.Header.Set("X-Roles", "member")
		res, err := srv.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || n < 100000 {
			b.Fatalf("GET %s: %d, %d bytes", path, res.StatusCode, n)
		}
	}
	for _, path := range []string{"/v1/clustertemplates/detail?limit=1000", "/v1/clusters/detail?limit=1000"} {
		for _, mode := range []string{"uncached", "cached"} {
			b.Run(mode+path, func(b *testing.B) {
				if mode == "uncached" {
					srv.API.SetPageCacheBytesForTest(-1)
					defer srv.API.SetPageCacheBytesForTest(16 << 20)
				}
				for b.Loop() {
					get(b, path)
				}
			})
		}
	}
}

// BenchmarkTemplateListParallel is apibench's first case in process: GET
// /v1/clustertemplates of 50 templates from 32 clients at once, through
// the whole HTTP stack and the page cache, for CPU profiles of the serving
// side (the clients run in the same process; focus on the server's
// goroutines):
//
//	go test ./internal/api -run '^$' -bench TemplateListParallel -cpuprofile cpu.out
//	go tool pprof -top -focus 'net/http.\(\*conn\).serve' cpu.out
func BenchmarkTemplateListParallel(b *testing.B) {
	srv := testapi.Start(b)
	c := newClient(b, srv)
	for i := range 50 {
		c.createTemplate(map[string]any{"name": fmt.Sprint("t", i), "network_driver": "calico",
			"labels": map[string]string{"kube_tag": "v1.31.2", "auto_healing_enabled": "true"}})
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	b.SetParallelism(16) // 32 clients on 2 CPUs
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := hc.Get(srv.URL + "/v1/clustertemplates")
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Errorf("GET /v1/clustertemplates: %d", res.StatusCode)
				return
			}
		}
	})
}
