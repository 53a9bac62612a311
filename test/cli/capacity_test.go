package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/ironic"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"
	"github.com/magnetite-io/magnetite/internal/testing/testmariadb"
)

// novaFlavor is a flavor as Nova's compute API documents it.
type novaFlavor struct {
	ID, Name         string
	VCPUs, RAM, Disk int
	ExtraSpecs       map[string]string
}

// startNova serves the part of Nova's compute API the capacity check reads
// (GET /flavors/{id}, GET /flavors/detail, GET /flavors/{id}/os-extra_specs)
// with the documented bodies: extra_specs inline from microversion 2.61 on.
// Nova itself is not packaged to run standalone here, and the check needs
// nothing else from it. It returns the compute endpoint.
func startNova(t *testing.T, flavors ...novaFlavor) string {
	t.Helper()
	body := func(f novaFlavor, r *http.Request) map[string]any {
		m := map[string]any{
			"id": f.ID, "name": f.Name, "vcpus": f.VCPUs, "ram": f.RAM, "disk": f.Disk,
			"OS-FLV-EXT-DATA:ephemeral": 0, "OS-FLV-DISABLED:disabled": false, "swap": 0, "rxtx_factor": 1.0,
			"os-flavor-access:is_public": true, "description": nil,
			"links": []any{map[string]any{"rel": "self", "href": "http://" + r.Host + "/v2.1/flavors/" + f.ID}},
		}
		v := strings.TrimPrefix(r.Header.Get("X-OpenStack-Nova-API-Version"), "compute ")
		if v == "" {
			v = strings.TrimPrefix(r.Header.Get("OpenStack-API-Version"), "compute ")
		}
		if v == "2.61" || v == "latest" {
			specs := f.ExtraSpecs
			if specs == nil {
				specs = map[string]string{}
			}
			m["extra_specs"] = specs
		}
		return m
	}
	write := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	notFound := func(w http.ResponseWriter, id string) {
		write(w, http.StatusNotFound, map[string]any{"itemNotFound": map[string]any{"code": 404, "message": "Flavor " + id + " could not be found."}})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2.1/flavors/detail", func(w http.ResponseWriter, r *http.Request) {
		var list []any
		for _, f := range flavors {
			list = append(list, body(f, r))
		}
		write(w, http.StatusOK, map[string]any{"flavors": list})
	})
	mux.HandleFunc("GET /v2.1/flavors/{id}", func(w http.ResponseWriter, r *http.Request) {
		for _, f := range flavors {
			if f.ID == r.PathValue("id") {
				write(w, http.StatusOK, map[string]any{"flavor": body(f, r)})
				return
			}
		}
		notFound(w, r.PathValue("id"))
	})
	mux.HandleFunc("GET /v2.1/flavors/{id}/os-extra_specs", func(w http.ResponseWriter, r *http.Request) {
		for _, f := range flavors {
			if f.ID == r.PathValue("id") {
				write(w, http.StatusOK, map[string]any{"extra_specs": f.ExtraSpecs})
				return
			}
		}
		notFound(w, r.PathValue("id"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/v2.1"
}

// magnetiteAPI calls Magnetite's own extensions (hosts, events), which the
// openstack CLI does not know.
type magnetiteAPI struct {
	t        *testing.T
	endpoint string
}

func (m magnetiteAPI) call(method, path string, body any, out any) int {
	m.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(m.t.Context(), method, m.endpoint+path, rd)
	if err != nil {
		m.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "container-infra latest")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			m.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	if res.StatusCode >= 300 {
		m.t.Logf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	return res.StatusCode
}

// enrollAvailable enrolls hosts of a resource class and waits until the
// inventory has driven them all to available.
func (m magnetiteAPI) enrollAvailable(rc string, names ...string) {
	m.t.Helper()
	for i, n := range names {
		body := map[string]any{"name": n, "bmc_address": fmt.Sprintf("ipmi://10.9.0.%d", 10+i),
			"bmc_username": "admin", "bmc_password": "secret", "resource_class": rc}
		if code := m.call("POST", "/hosts", body, nil); code != http.StatusCreated {
			m.t.Fatalf("enroll %s: %d", n, code)
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, n := range names {
		for {
			var h struct {
				State string `json:"state"`
			}
			m.call("GET", "/hosts/"+n, nil, &h)
			if h.State == baremetal.StateAvailable {
				break
			}
			if time.Now().After(deadline) {
				m.t.Fatalf("host %s never became available; last state %q", n, h.State)
			}
			time.Sleep(200 * time.Millisecond) // polling interval while Ironic works
		}
	}
}

var createdClusterID = regexp.MustCompile(`Request to create cluster ([0-9a-f-]{36}) accepted`)

// TestCapacityPreflightThroughTheOpenStackCLI runs `openstack coe` against
// `magnetite serve` whose host inventory is a real standalone Ironic
// (fake-hardware) and whose flavors come from Nova's compute API: bare-metal
// node groups that need more hosts of their flavor's resource class
// (resources:CUSTOM_<CLASS>=1) than are available are refused with a 409
// that says how many are needed and free, on cluster create, resize and
// node group create; hosts promised to node groups still being built are
// not free for anyone else; virtual node groups never count; with capacity_check
// = warn the same request is accepted and the warning kept in the
// cluster's events.
func TestCapacityPreflightThroughTheOpenStackCLI(t *testing.T) {
	requireCLI(t) // skips under -short
	t.Parallel()
	irc := testironic.StartIronic(t)
	// The Ironic flavors carry the hosts' root disk size, as Ironic's
	// install guide has operators set them: Nova refuses to boot an image
	// on a zero-disk flavor for a user without the admin role.
	nova := startNova(t,
		novaFlavor{ID: "0f0c5d38-1a2b-4c3d-8e9f-000000000001", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 40},
		novaFlavor{ID: "0f0c5d38-1a2b-4c3d-8e9f-000000000002", Name: "bm.gold", VCPUs: 32, RAM: 131072, Disk: 480, ExtraSpecs: map[string]string{
			"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}},
		novaFlavor{ID: "0f0c5d38-1a2b-4c3d-8e9f-000000000003", Name: "bm.silver", VCPUs: 16, RAM: 65536, Disk: 480, ExtraSpecs: map[string]string{
			"resources:CUSTOM_BAREMETAL_SILVER": "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}},
	)
	conf := func(mode string) string {
		return fmt.Sprintf("[baremetal]\nbackend = ironic\nironic_endpoint = %s\nironic_fake_hardware = true\nreconcile_interval = 1s\n"+
			"compute_endpoint = %s\ncapacity_check = %s\n", irc.URL, nova, mode)
	}
	endpoint := startMagnetite(t, conf("refuse"))
	c := newCLI(t, endpoint)
	api := magnetiteAPI{t: t, endpoint: endpoint}
	api.enrollAvailable("baremetal-gold", "gold-0", "gold-1", "gold-2")
	api.enrollAvailable("baremetal-silver", "silver-0")
	if code := api.call("POST", "/hosts/silver-0/actions/detach", map[string]any{"reason": "failed disk"}, nil); code != http.StatusAccepted {
		t.Fatalf("detach silver-0: %d", code)
	}

	// A VM control plane with bare-metal workers, flavors by name as users
	// give them.
	c.ok(t, "coe", "cluster", "template", "create", "k8s-bm-gold", "--coe", "kubernetes", "--server-type", "vm",
		"--image", "ubuntu-noble", "--external-network", "public", "--flavor", "bm.gold", "--master-flavor", "m1.large",
		"--master-lb-enabled", "--labels", "kube_tag=v1.33.1")

	refused := func(what, want string, args ...string) {
		t.Helper()
		stderr := c.fails(t, args...)
		if !strings.Contains(stderr, want) || !strings.Contains(stderr, "(HTTP 409)") {
			t.Errorf("%s: the CLI printed %q, want a 409 saying %q", what, stderr, want)
		}
	}
	refused("create with 4 gold workers and 3 gold hosts",
		"Not enough free bare-metal hosts for this request: resource class CUSTOM_BAREMETAL_GOLD: 4 needed (default-worker 4), 3 free of 3 (0 deployed, 0 detached, 0 promised to node groups being built). Enroll or free hosts, or ask for fewer nodes.",
		"coe", "cluster", "create", "too-big", "--cluster-template", "k8s-bm-gold", "--node-count", "4", "--master-count", "3")
	if out := c.ok(t, "coe", "cluster", "list", "-f", "value", "-c", "name"); out != "" {
		t.Errorf("a refused create left clusters: %q", out)
	}

	// Three virtual control plane nodes do not count; two gold workers fit.
	c.ok(t, "coe", "cluster", "create", "fits", "--cluster-template", "k8s-bm-gold", "--node-count", "2", "--master-count", "3")

	// Nova deploys one gold host elsewhere: two are free now.
	irClient, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: irc.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	irClient.Microversion = ironic.DefaultAPIVersion
	if err := nodes.ChangeProvisionState(context.Background(), irClient, "gold-0", nodes.ProvisionStateOpts{Target: nodes.TargetActive}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n, err := nodes.Get(context.Background(), irClient, "gold-0").Extract()
		if err != nil {
			t.Fatal(err)
		}
		if n.ProvisionState == string(nodes.Active) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gold-0 never deployed: %s %s", n.ProvisionState, n.LastError)
		}
		time.Sleep(200 * time.Millisecond) // polling interval while Ironic deploys
	}
	// Magnetite counts hosts from the mirror its host pass keeps: wait until
	// it shows the deployment.
	for {
		var h struct {
			ProvisionState string `json:"provision_state"`
		}
		api.call("GET", "/hosts/gold-0", nil, &h)
		if h.ProvisionState == string(nodes.Active) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Magnetite never showed gold-0 deployed: %q", h.ProvisionState)
		}
		time.Sleep(200 * time.Millisecond) // polling interval while the host pass runs
	}

	// Two gold hosts are available in Ironic, and both are promised to
	// cluster fits, still being built (nothing deploys its nodes without a
	// conductor): no other request may count them. Resizing counts only the
	// nodes added: 2 -> 5 adds 3, 2 -> 4 adds 2.
	refused("resize adding 3 gold workers with both free hosts promised",
		"resource class CUSTOM_BAREMETAL_GOLD: 3 needed (default-worker 3), 0 free of 3 (1 deployed, 0 detached, 2 promised to node groups being built)",
		"coe", "cluster", "resize", "fits", "5")
	refused("resize adding 2 gold workers with both free hosts promised",
		"resource class CUSTOM_BAREMETAL_GOLD: 2 needed (default-worker 2), 0 free of 3 (1 deployed, 0 detached, 2 promised to node groups being built)",
		"coe", "cluster", "resize", "fits", "4")
	if out := c.ok(t, "coe", "cluster", "show", "fits", "-f", "value", "-c", "node_count"); out != "2\n" {
		t.Errorf("node_count after a refused resize = %q", out)
	}
	// Shrinking never needs hosts, and gives one promised host back.
	wantLine(t, c.ok(t, "coe", "cluster", "resize", "fits", "1"), "Request to resize cluster fits has been accepted.")

	// The only silver host is detached.
	refused("node group of silver hosts",
		"resource class CUSTOM_BAREMETAL_SILVER: 1 needed (silver 1), 0 free of 1 (0 deployed, 1 detached, 0 promised to node groups being built)",
		"coe", "nodegroup", "create", "fits", "silver", "--flavor", "bm.silver", "--node-count", "1")
	// A virtual node group needs no host.
	c.ok(t, "coe", "nodegroup", "create", "fits", "vms", "--flavor", "m1.large", "--node-count", "5")
	// A gold node group takes the host the shrink gave back, and counts
	// against the same hosts when it grows: both free gold hosts are
	// promised now (default-worker 1, gold 1).
	c.ok(t, "coe", "nodegroup", "create", "fits", "gold", "--flavor", "bm.gold", "--node-count", "1")
	refused("node group resize past the free hosts",
		"resource class CUSTOM_BAREMETAL_GOLD: 3 needed (gold 3), 0 free of 3 (1 deployed, 0 detached, 2 promised to node groups being built)",
		"coe", "cluster", "resize", "fits", "4", "--nodegroup", "gold")

	// Two creates racing through the openstack CLI for the last two free
	// gold hosts, each sent to another of two replicas sharing a fresh
	// MariaDB database (nothing is promised yet): exactly one is accepted,
	// and the other is told the hosts are promised.
	shared := fmt.Sprintf("[database]\nconnection = %s\n", testmariadb.Start(t).NewDatabase())
	replicas := []*cli{newCLI(t, startMagnetite(t, conf("refuse"), shared)), newCLI(t, startMagnetite(t, conf("refuse"), shared))}
	replicas[0].ok(t, "coe", "cluster", "template", "create", "k8s-bm-gold", "--coe", "kubernetes", "--server-type", "vm",
		"--image", "ubuntu-noble", "--external-network", "public", "--flavor", "bm.gold", "--master-flavor", "m1.large",
		"--master-lb-enabled", "--labels", "kube_tag=v1.33.1")
	type outcome struct {
		stderr string
		code   int
	}
	results := make([]outcome, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := replicas[i]
			args := append(append([]string{}, rc.base...), "coe", "cluster", "create", fmt.Sprintf("race-%d", i),
				"--cluster-template", "k8s-bm-gold", "--node-count", "2", "--master-count", "3")
			cmd := rc.client.Command(context.Background(), rc.env, args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
				results[i] = outcome{err.Error(), -1}
				return
			}
			results[i] = outcome{stderr.String(), cmd.ProcessState.ExitCode()}
		}()
	}
	wg.Wait()
	accepted, refusedRace := 0, 0
	for _, r := range results {
		switch {
		case r.code == 0:
			accepted++
		case strings.Contains(r.stderr, "2 needed (default-worker 2), 0 free of 3 (1 deployed, 0 detached, 2 promised to node groups being built)") &&
			strings.Contains(r.stderr, "(HTTP 409)"):
			refusedRace++
		default:
			t.Errorf("a racing create ended %d: %s", r.code, r.stderr)
		}
	}
	if accepted != 1 || refusedRace != 1 {
		t.Errorf("racing creates: %d accepted and %d refused, want 1 and 1", accepted, refusedRace)
	}

	// In warn mode the same create is accepted and the warning kept.
	warnEndpoint := startMagnetite(t, conf("warn"))
	wc := newCLI(t, warnEndpoint)
	wc.ok(t, "coe", "cluster", "template", "create", "k8s-bm-gold", "--coe", "kubernetes", "--server-type", "vm",
		"--image", "ubuntu-noble", "--external-network", "public", "--flavor", "bm.gold", "--master-flavor", "m1.large",
		"--master-lb-enabled", "--labels", "kube_tag=v1.33.1")
	out := wc.ok(t, "coe", "cluster", "create", "too-big", "--cluster-template", "k8s-bm-gold", "--node-count", "4", "--master-count", "3")
	m := createdClusterID.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("warn mode: cluster create printed %q", out)
	}
	var events struct {
		Events []struct{ Kind, Reason, Message string } `json:"events"`
	}
	magnetiteAPI{t: t, endpoint: warnEndpoint}.call("GET", "/clusters/"+m[1]+"/events", nil, &events)
	found := false
	for _, e := range events.Events {
		if e.Reason == "InsufficientBareMetalCapacity" && strings.Contains(e.Message, "CUSTOM_BAREMETAL_GOLD: 4 needed (default-worker 4), 2 free of 3") {
			found = true
		}
	}
	if !found {
		t.Errorf("warn mode: the cluster's events lack the capacity warning: %+v", events.Events)
	}
}
