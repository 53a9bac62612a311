// Package teststack runs Magnetite as an operator's automation meets it: a
// real Keystone whose catalog lists the container-infra endpoint, `magnetite
// serve` behind it, and its conductor building clusters on a local Cluster
// API (kube-apiserver, the core and kubeadm managers, CAPD's in-memory
// backend), where clusters reach CREATE_COMPLETE. The infrastructure-as-code
// client tests (test/terraform, test/ansible) start one each, on the Cluster
// API plane their package shares (testenv.SharedClusterAPI: the package's
// TestMain calls testenv.RunMain).
package teststack

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
)

// The user whose credentials the clients hold: a member of Project.
const (
	Project  = "demo"
	User     = "alice"
	Password = "alice-password"
)

// Stack is a running Keystone, Magnetite and management cluster.
type Stack struct {
	Keystone *testkeystone.Keystone
	// Magnum is Magnetite's container-infra endpoint, http://addr/v1.
	Magnum string
	Mgmt   *testenv.APIServer
	// NamespacePrefix starts the names of this Magnetite's project
	// namespaces, apart from other tests' on the shared plane.
	NamespacePrefix string
}

// Start starts the stack, with each dropIn as one more conf.d file of
// serve; everything stops at cleanup. Under -short it skips (Keystone and
// Cluster API take minutes).
func Start(t *testing.T, dropIns ...string) *Stack {
	t.Helper()
	// The plane first: it may wait many minutes for the machine's CAPD lock
	// (testenv), and a Keystone left idle that long was seen answering
	// its next admin request with a 500.
	mgmt := testenv.SharedClusterAPI(t) // skips under -short
	prefix := testenv.NamespacePrefix(t)
	ks := testkeystone.Start(t)
	const servicePassword = "magnetite-iac-test-password"
	svc := ks.ServiceUser("magnetite", servicePassword)
	ks.Grant(svc, ks.ProjectID("service"), "admin")
	ks.Grant(ks.CreateUser(User, Password), ks.CreateProject(Project), "member")

	addr := testmagnetite.FreeAddr(t)
	magnum := "http://" + addr + "/v1"
	// Both clients find Magnetite through the catalog, as on a cloud.
	ks.RegisterService("container-infra", "magnum", magnum)
	// The clients wait for clusters to finish; how long a simulated
	// machine boots is no part of what they test.
	testmagnetite.Serve(t, addr, append([]string{testmagnetite.KeystoneConf(ks.AuthURL(), servicePassword, testkeystone.Region) + `
[management]
kubeconfig = ` + mgmt.KubeconfigFile(t) + `
namespace_prefix = ` + prefix + `
[conductor]
infrastructure = inmemory
[driver]
inmemory_boot_time = 1s
`}, dropIns...)...)
	return &Stack{Keystone: ks, Magnum: magnum, Mgmt: mgmt, NamespacePrefix: prefix}
}

// Env is the OS_* environment of the user's password login, which the
// OpenStack provider and the openstack CLI read.
func (s *Stack) Env() []string {
	return []string{
		"OS_AUTH_URL=" + s.Keystone.AuthURL(), "OS_IDENTITY_API_VERSION=3", "OS_INTERFACE=public",
		"OS_USERNAME=" + User, "OS_PASSWORD=" + Password, "OS_PROJECT_NAME=" + Project,
		"OS_USER_DOMAIN_NAME=Default", "OS_PROJECT_DOMAIN_NAME=Default", "OS_REGION_NAME=" + testkeystone.Region,
	}
}

// Get reads a Magnum API path as the user into out (nil discards the body)
// and returns the status code.
func (s *Stack) Get(t *testing.T, path string, out any) int {
	t.Helper()
	code, _ := s.Do(t, http.MethodGet, path, nil, out)
	return code
}

// Do sends a request with body (nil for none) as JSON to a Magnum API path
// as the user, decodes a 2xx answer into out (nil discards it) and returns
// the status code and the body.
func (s *Stack) Do(t *testing.T, method, path string, body, out any) (int, string) {
	t.Helper()
	var in io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		in = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, s.Magnum+path, in)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Auth-Token", s.Keystone.Token(User, Password, Project))
	req.Header.Set("OpenStack-API-Version", "container-infra latest")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if out != nil && res.StatusCode/100 == 2 {
		if err := json.Unmarshal(got, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, got)
		}
	}
	return res.StatusCode, string(got)
}

// Cluster is the part of a Magnum cluster the tests read.
type Cluster struct {
	UUID         string `json:"uuid"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	StatusReason string `json:"status_reason"`
	NodeCount    int    `json:"node_count"`
}

// Clusters lists the user's clusters.
func (s *Stack) Clusters(t *testing.T) []Cluster {
	t.Helper()
	var list struct {
		Clusters []Cluster `json:"clusters"`
	}
	if code := s.Get(t, "/clusters", &list); code != http.StatusOK {
		t.Fatalf("list clusters: HTTP %d", code)
	}
	return list.Clusters
}

// RequireNothingLeft fails the test when Magnetite still lists a cluster or
// a template, or the management cluster still holds a Cluster API object
// or secret this Magnetite made for a cluster (other tests' live in their
// own namespaces of the shared plane).
func (s *Stack) RequireNothingLeft(t *testing.T) {
	t.Helper()
	if cl := s.Clusters(t); len(cl) != 0 {
		t.Errorf("clusters left: %+v", cl)
	}
	var templates struct {
		ClusterTemplates []struct{ Name string } `json:"clustertemplates"`
	}
	s.Get(t, "/clustertemplates", &templates)
	if len(templates.ClusterTemplates) != 0 {
		t.Errorf("cluster templates left: %+v", templates.ClusterTemplates)
	}
	dc := s.Mgmt.Dynamic(t)
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"},
		{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Resource: "kubeadmcontrolplanes"},
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments"},
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"},
		{Version: "v1", Resource: "secrets"},
	} {
		l, err := dc.Resource(gvr).Namespace("").List(t.Context(), metav1.ListOptions{LabelSelector: "magnetite.io/cluster-uuid"})
		if err != nil {
			t.Fatalf("list %s: %v", gvr.Resource, err)
		}
		for _, o := range l.Items {
			if strings.HasPrefix(o.GetNamespace(), s.NamespacePrefix) {
				t.Errorf("%s %s/%s is left", gvr.Resource, o.GetNamespace(), o.GetName())
			}
		}
	}
}
