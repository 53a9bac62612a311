package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestManagementClusterOutageIsVisible stops the real kube-apiserver of the
// management cluster while a cluster is being created through the
// openstack CLI: within seconds the log warns once, /healthcheck's detail
// and /metrics say the management cluster is unreachable, and the
// cluster's status_reason says since when; once the API server is back,
// the recovery is logged, the reason goes and the create completes.
func TestManagementClusterOutageIsVisible(t *testing.T) {
	mgmt, p, c, field := cliOnClusterAPI(t, "steady")
	health := func() (code int, management string) {
		res, err := http.Get("http://" + p.addr + "/healthcheck?detailed=true&format=json")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var doc struct {
			Reasons []struct{ Reason, Details, Class string }
		}
		if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		for _, r := range doc.Reasons {
			if r.Class == "ManagementClusterCheck" {
				return res.StatusCode, r.Reason + ": " + r.Details
			}
		}
		return res.StatusCode, "no management entry"
	}
	gauge := func() string {
		res, err := http.Get("http://" + p.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "magnetite_management_cluster_reachable ") {
				return strings.TrimPrefix(line, "magnetite_management_cluster_reachable ")
			}
		}
		return "absent"
	}
	logCount := func(msg string) int {
		b, _ := os.ReadFile(p.log)
		return strings.Count(string(b), msg)
	}

	c.ok(t, "coe", "cluster", "template", "create", "mem", "--coe", "kubernetes",
		"--image", "ubuntu-2204-kube-v1.31.2", "--external-network", "public", "--labels", "kube_tag=v1.31.2")
	c.ok(t, "coe", "cluster", "create", "steady", "--cluster-template", "mem", "--master-count", "1", "--node-count", "1")
	testenv.WaitFor(t, "the conductor to see the management cluster", 30*time.Second, func() (bool, string) {
		_, m := health()
		return strings.HasPrefix(m, "OK: the management cluster answers") && gauge() == "1", m
	})

	mgmt.StopAPIServer(t)
	stopped := time.Now()
	testenv.WaitFor(t, "the outage to show", 30*time.Second, func() (bool, string) {
		code, m := health()
		reason := field("status_reason")
		state := m + " | metric " + gauge() + " | " + reason
		return code == http.StatusOK && strings.HasPrefix(m, "management cluster unreachable: unreachable since") &&
			gauge() == "0" && strings.Contains(reason, "management cluster has been unreachable since"), state
	})
	t.Logf("outage visible %s after the API server stopped", time.Since(stopped).Round(time.Second))
	if st := field("status"); st != "CREATE_IN_PROGRESS" {
		t.Errorf("status during the outage %s, want CREATE_IN_PROGRESS", st)
	}

	mgmt.RestartAPIServer(t)
	testenv.WaitFor(t, "the cluster to complete after the API server came back", 4*time.Minute, func() (bool, string) {
		st, reason := field("status"), field("status_reason")
		return st == "CREATE_COMPLETE", st + ": " + reason
	})
	if _, m := health(); !strings.HasPrefix(m, "OK") || gauge() != "1" {
		t.Errorf("after recovery: health %q, metric %s", m, gauge())
	}
	if n := logCount("management cluster unreachable"); n != 1 {
		t.Errorf("the log warns of the loss %d times, want once", n)
	}
	if n := logCount("management cluster reachable again"); n != 1 {
		t.Errorf("the log records the recovery %d times, want once", n)
	}
	var events struct {
		Events []struct{ Reason string }
	}
	magnetiteAPI{t: t, endpoint: "http://" + p.addr + "/v1"}.call("GET", "/clusters/steady/events", nil, &events)
	found := false
	for _, e := range events.Events {
		found = found || e.Reason == "ManagementClusterUnreachable"
	}
	if !found {
		t.Error("the cluster's events do not record the outage")
	}
}
