// Package horizon drives Debian's Horizon (openstack-dashboard with the
// Container Infra panels of python3-magnum-ui) in headless Chromium against
// Magnetite, as docs/horizon.md describes: a real Keystone whose catalog
// points container-infra at `magnetite serve`, whose conductor builds the
// clusters on a local Cluster API plane (in-memory infrastructure). Nova,
// Glance and Neutron are internal/testing/testcloud's stand-ins.
//
// Every step leaves a screenshot in the artifacts folder
// ($MAGNETITE_TEST_ARTIFACTS/horizon, or test/horizon/artifacts), listed in
// the test log.
package horizon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testbrowser"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
)

const (
	servicePassword = "magnetite-horizon-service-password"
	userName        = "alice"
	userPassword    = "alice-horizon-password"
	projectName     = "demo"
	keypairName     = "alice-key"
	templateName    = "k8s-horizon"
	clusterName     = "web"
)

// The columns magnum-ui's tables must show, in order.
var (
	templateColumns = []string{"Name", "ID", "COE", "Keypair", "Network Driver"}
	clusterColumns  = []string{"Name", "ID", "Status", "Health Status", "Master Count", "Node Count", "Keypair"}
)

func TestHorizonContainerInfraPanels(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Debian's Horizon with magnum-ui in headless Chromium against a real Keystone and a local Cluster API plane; runs in the full suite")
	}
	ks := testkeystone.Start(t)
	testcloud.Start(t, ks)
	mgmt := testenv.SharedClusterAPI(t)
	addr := testmagnetite.FreeAddr(t)
	ks.ServiceUser("magnetite", servicePassword)
	ks.RegisterService("container-infra", "magnetite", "http://"+addr+"/v1")
	// The panels follow a cluster to CREATE_COMPLETE; how long a simulated
	// machine boots is no part of what they show.
	testmagnetite.Serve(t, addr, testmagnetite.KeystoneConf(ks.AuthURL(), servicePassword, testkeystone.Region)+
		fmt.Sprintf("\n[management]\nkubeconfig = %s\nnamespace_prefix = %s\n\n[conductor]\ninfrastructure = inmemory\n\n[driver]\ninmemory_boot_time = 1s\n",
			mgmt.KubeconfigFile(t), testenv.NamespacePrefix(t)))

	project := ks.CreateProject(projectName)
	user := ks.CreateUser(userName, userPassword)
	ks.Grant(user, project, "member")
	createKeypair(t, ks, keypairName)

	h := startDashboard(t, ks)
	s := &session{t: t, b: testbrowser.Start(t), h: h, artifacts: artifactsDir(t)}

	s.login()
	s.open("/project/cluster_templates/")
	s.waitTable("the empty templates panel", templateColumns, templateColumns, func(rows []map[string]string) bool { return len(rows) == 0 })
	s.shot("templates-empty")

	s.createTemplate()
	s.createCluster()
	s.waitClusterStatus("CREATE_COMPLETE", "HEALTHY", "1", 6*time.Minute)
	s.shot("cluster-created")
	s.clusterDetail()
	s.resize(2)
	s.showCertificate()
	s.deleteCluster()
	s.deleteTemplate()
	// magnum-ui 11's resize form asks Heat, which this cloud (as any
	// Cluster API one) lacks: the one error Horizon may log.
	knownResizeError := func(entry string) bool {
		return strings.Contains(entry, "Invalid service catalog: orchestration") ||
			(strings.Contains(entry, "Internal Server Error: /api/container_infra/clusters/") && strings.HasSuffix(strings.SplitN(entry, "\n", 2)[0], "/resize"))
	}
	if errs := h.errors(knownResizeError); len(errs) > 0 {
		t.Errorf("Horizon logged errors:\n%s", strings.Join(errs, "\n"))
	}
}

// createKeypair imports a key pair for the user through Nova's API, as a
// user does once before creating clusters.
func createKeypair(t *testing.T, ks *testkeystone.Keystone, name string) {
	t.Helper()
	token := ks.Token(userName, userPassword, projectName)
	var catalog struct {
		Token struct {
			Catalog []struct {
				Type      string                 `json:"type"`
				Endpoints []struct{ URL string } `json:"endpoints"`
			} `json:"catalog"`
		} `json:"token"`
	}
	req, _ := http.NewRequest("GET", ks.AuthURL()+"/auth/tokens", nil)
	req.Header.Set("X-Auth-Token", token)
	req.Header.Set("X-Subject-Token", token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(res.Body).Decode(&catalog)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	nova := ""
	for _, svc := range catalog.Token.Catalog {
		if svc.Type == "compute" && len(svc.Endpoints) > 0 {
			nova = svc.Endpoints[0].URL
		}
	}
	body, _ := json.Marshal(map[string]any{"keypair": map[string]string{"name": name}})
	req, _ = http.NewRequest("POST", nova+"/os-keypairs", bytes.NewReader(body))
	req.Header.Set("X-Auth-Token", token)
	req.Header.Set("Content-Type", "application/json")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("create key pair %s: %s", name, res.Status)
	}
}

// artifactsDir is where screenshots and downloads are kept after the test:
// $MAGNETITE_TEST_ARTIFACTS/horizon, or the git-ignored artifacts folder of
// this package. It is emptied first.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("artifacts")
	if root := os.Getenv("MAGNETITE_TEST_ARTIFACTS"); root != "" {
		dir = filepath.Join(root, "horizon")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(abs); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		t.Fatal(err)
	}
	return abs
}
