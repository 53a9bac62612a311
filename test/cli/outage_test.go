package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestManagementClusterOutageIsVisible takes the real kube-apiserver of the
// management cluster away from magnetite serve while a cluster is being
// created through the openstack CLI: within seconds the log warns once,
// /healthcheck's detail and /metrics say the management cluster is
// unreachable, and the cluster's status_reason says since when; once the
// API server is back, the recovery is logged, the reason goes and the
// create completes.
//
// Magnetite reaches the API server through a loopback relay that the test
// cuts (open connections closed, new ones reset, as by an API server that
// went down) rather than by stopping the API server: the
// management cluster is shared by the package's other tests, which must not
// see the outage.
func TestManagementClusterOutageIsVisible(t *testing.T) {
	requireCLI(t) // skips under -short
	t.Parallel()
	mgmt := testenv.SharedClusterAPI(t)
	server, err := url.Parse(mgmt.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	link := startRelay(t, server.Host)
	viaLink := rest.CopyConfig(mgmt.Config)
	viaLink.Host = "https://" + link.addr
	// The product's boot time: the create must outlast the cut below.
	p := startConductor(t, testenv.WriteKubeconfig(t, "", viaLink, "", 0o600), 0)
	c := newCLI(t, "http://"+p.addr+"/v1")
	field := func(name string) string {
		return strings.TrimSpace(c.ok(t, "coe", "cluster", "show", "steady", "-f", "value", "-c", name))
	}
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

	link.cut()
	stopped := time.Now()
	testenv.WaitFor(t, "the outage to show", 30*time.Second, func() (bool, string) {
		code, m := health()
		cl, problem := c.clusterNow(t, "steady")
		reason := problem
		if cl != nil {
			reason = str(cl.StatusReason)
		}
		state := m + " | metric " + gauge() + " | " + reason
		return code == http.StatusOK && strings.HasPrefix(m, "management cluster unreachable: unreachable since") &&
			gauge() == "0" && strings.Contains(reason, "management cluster has been unreachable since"), state
	})
	if reason := field("status_reason"); !strings.Contains(reason, "management cluster has been unreachable since") {
		t.Errorf("openstack coe cluster show steady: status_reason %q during the outage, want it to say since when the management cluster is unreachable", reason)
	}
	t.Logf("outage visible %s after the API server went away", time.Since(stopped).Round(time.Second))
	if st := field("status"); st != "CREATE_IN_PROGRESS" {
		t.Errorf("status during the outage %s, want CREATE_IN_PROGRESS", st)
	}

	link.restore()
	// After the API server came back.
	c.waitStatus(t, "steady", "CREATE_COMPLETE", 4*time.Minute)
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
