package cli

import (
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testtty"
)

var (
	readyCount = regexp.MustCompile(`(?m)^  (control plane|node group default-worker)\s+(\?/\d+|\d+/\d+ ready)`)
	exitLine   = regexp.MustCompile(`\[exit (\d+)\]`)
	// A Cluster API condition as the status reason reports it, e.g.
	// "control plane Available (NotAvailable): Control plane not yet initialized".
	conditionMessage = regexp.MustCompile(`\w+ \(\w+\): \S`)
)

// TestClusterCreateWaitOnTheLocalManagementPlane runs `magnetite cluster
// create --wait` in a real terminal (a tmux pane) against magnetite serve
// whose conductor builds the cluster on a local Cluster API with in-memory
// infrastructure. What the user sees is sampled while it builds: the ready
// counts must change in place, a condition message from the build must
// show, and the command must end on CREATE_COMPLETE with exit status 0.
func TestClusterCreateWaitOnTheLocalManagementPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("needs tmux and a local Cluster API built by hack/build-testbin.sh; runs in the full suite (hack/test.sh)")
	}
	t.Parallel()
	mgmt := testenv.SharedClusterAPI(t)
	serve := startConductor(t, mgmt.KubeconfigFile(t), bootTime)
	endpoint := []string{"--os-endpoint", "http://" + serve.addr + "/v1", "--os-token", "tty-test"}

	out, err := exec.Command(serve.bin, append([]string{"template", "create", "mem-131", "--coe", "kubernetes",
		"--image", "ubuntu-2204-kube-v1.31.2", "--external-network", "public", "--labels", "kube_tag=v1.31.2"}, endpoint...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("magnetite template create: %v\n%s", err, out)
	}
	term := testtty.Start(t, 120, 30, nil, append([]string{serve.bin, "cluster", "create", "tty", "--cluster-template", "mem-131",
		"--master-count", "1", "--node-count", "2", "--wait", "--poll-interval", "200ms"}, endpoint...)...)

	// Sample the screen until the command ends, keeping every distinct
	// ready count and condition message drawn on the way.
	counts := map[string][]string{}
	var messages []string
	seen := map[string]bool{}
	var last string
	deadline := time.Now().Add(8 * time.Minute)
	for {
		last = term.Screen()
		for _, m := range readyCount.FindAllStringSubmatch(last, -1) {
			if k := m[1] + " " + m[2]; !seen[k] {
				seen[k] = true
				counts[m[1]] = append(counts[m[1]], m[2])
			}
		}
		if lines := strings.Split(strings.TrimRight(last, "\n"), "\n"); strings.Contains(last, "Cluster tty: CREATE_IN_PROGRESS") {
			// The block's last line is the status reason, once there is one.
			if msg := strings.TrimSpace(lines[len(lines)-1]); msg != "" && !readyCount.MatchString(lines[len(lines)-1]) &&
				!strings.HasPrefix(msg, "Cluster tty:") && !seen["msg "+msg] {
				seen["msg "+msg] = true
				messages = append(messages, msg)
			}
		}
		if exitLine.MatchString(last) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("magnetite cluster create --wait did not end; the terminal shows:\n%s", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("ready counts drawn: %v; condition messages drawn: %q", counts, messages)
	t.Logf("final screen:\n%s", last)

	if m := exitLine.FindStringSubmatch(last); m[1] != "0" {
		t.Errorf("exit status %s, want 0", m[1])
	}
	for _, want := range []string{"Cluster tty: CREATE_COMPLETE", "control plane              1/1 ready",
		"node group default-worker  2/2 ready", "Cluster tty is CREATE_COMPLETE after"} {
		if !strings.Contains(last, want) {
			t.Errorf("the final screen lacks %q", want)
		}
	}
	if n := strings.Count(last, "Cluster tty: "); n != 1 {
		t.Errorf("the progress block appears %d times; want it redrawn in place", n)
	}
	for _, group := range []string{"control plane", "node group default-worker"} {
		if len(counts[group]) < 2 {
			t.Errorf("%s: the ready count never changed on screen (saw %v)", group, counts[group])
		}
	}
	fromClusterAPI := false
	for _, m := range messages {
		fromClusterAPI = fromClusterAPI || conditionMessage.MatchString(m)
	}
	if !fromClusterAPI {
		t.Errorf("no Cluster API condition message was drawn while the cluster was building (saw %q)", messages)
	}
	checkConductorMetrics(t, "http://"+serve.addr+"/metrics")
}

// checkConductorMetrics scrapes serve's /metrics after a cluster was built:
// the conductor's finished create and the watch lag of the Cluster API
// changes it followed are served by the same registry as the API's
// requests.
func checkConductorMetrics(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	var created float64
	for _, m := range fams["magnetite_operations_finished_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["type"] == "cluster_create" && labels["result"] == "succeeded" {
			created = m.GetCounter().GetValue()
		}
	}
	if created != 1 {
		t.Errorf("magnetite_operations_finished_total{type=cluster_create,result=succeeded} = %v, want 1", created)
	}
	var lags uint64
	var lagSum float64
	for _, m := range fams["magnetite_watch_lag_seconds"].GetMetric() {
		lags += m.GetHistogram().GetSampleCount()
		lagSum += m.GetHistogram().GetSampleSum()
	}
	t.Logf("watch lag: %d changes followed, %.2fs on average (condition times have one-second resolution)", lags, lagSum/float64(max(lags, 1)))
	if lags == 0 {
		t.Error("magnetite_watch_lag_seconds observed nothing while Cluster API built the cluster")
	}
	if len(fams["magnetite_http_request_duration_seconds"].GetMetric()) == 0 {
		t.Error("the API's request latencies are missing from the registry the conductor reports to")
	}
}
