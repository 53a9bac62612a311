package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

// BenchmarkListClustersAuth measures GET /v1/clusters (a page of 20
// clusters) with a Keystone token whose validation is cached, next to the
// same request under noauth; the difference is what authentication costs
// once Keystone has answered. Run with:
//
//	go test ./internal/api -run '^$' -bench ListClustersAuth
func BenchmarkListClustersAuth(b *testing.B) {
	ks := testkeystone.Start(b) // skips under -short
	ks.ServiceUser(testapi.ServiceUser, testapi.ServicePassword)
	token := testapi.KeystoneMember(ks, "bench", "bencher")
	validator := testapi.KeystoneValidator(b, ks, func(c *auth.KeystoneConfig) { c.CacheTime = time.Hour })

	type mode struct {
		name    string
		srv     *testapi.Server
		headers map[string]string
	}
	modes := []mode{
		{"noauth", testapi.Start(b), map[string]string{"X-Project-Id": "bench", "X-Roles": "member"}},
		{"keystone", testapi.Start(b, func(o *api.Options) { o.Auth = validator }), map[string]string{"X-Auth-Token": token}},
	}
	send := func(m mode, method, path string, body any) (int, []byte) {
		var rd io.Reader
		if body != nil {
			raw, _ := json.Marshal(body)
			rd = bytes.NewReader(raw)
		}
		req, _ := http.NewRequest(method, m.srv.URL+path, rd)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("OpenStack-API-Version", "container-infra latest")
		for k, v := range m.headers {
			req.Header.Set(k, v)
		}
		res, err := m.srv.Client().Do(req)
		if err != nil {
			return 0, []byte(err.Error())
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, out
	}
	for _, m := range modes {
		status, body := send(m, "POST", "/v1/clustertemplates", map[string]any{"name": "k8s", "coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.30.4"})
		if status != http.StatusCreated {
			b.Fatalf("%s: create template: %d %s", m.name, status, body)
		}
		var tmpl struct{ UUID string }
		json.Unmarshal(body, &tmpl)
		for i := range 20 {
			if status, body := send(m, "POST", "/v1/clusters", map[string]any{"name": fmt.Sprint("c", i), "cluster_template_id": tmpl.UUID}); status != http.StatusAccepted {
				b.Fatalf("%s: create cluster: %d %s", m.name, status, body)
			}
		}
		// Warm: the first request validates the token with Keystone.
		if status, body := send(m, "GET", "/v1/clusters", nil); status != http.StatusOK || !bytes.Contains(body, []byte(`"c19"`)) {
			b.Fatalf("%s: list: %d %s", m.name, status, body)
		}
	}
	// The modes alternate over rounds, so a busy spell of the machine does
	// not land on one of them only.
	for range 3 {
		for _, m := range modes {
			b.Run(m.name, func(b *testing.B) {
				for b.Loop() {
					if status, body := send(m, "GET", "/v1/clusters", nil); status != http.StatusOK {
						b.Fatalf("status %d: %s", status, body)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			})
		}
		for _, m := range modes {
			b.Run(m.name+"-parallel", func(b *testing.B) {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if status, body := send(m, "GET", "/v1/clusters", nil); status != http.StatusOK {
							b.Errorf("status %d: %s", status, body)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			})
		}
	}
}
