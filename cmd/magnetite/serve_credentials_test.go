package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/logging"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testcharts"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

// credentialsWorld is magnetite serve with Keystone auth and a conductor on
// a real kube-apiserver, and a user of project alpha.
type credentialsWorld struct {
	t        *testing.T
	ks       *testkeystone.Keystone
	addr     string
	dc       dynamic.Interface
	userID   string
	token    string
	logs     *lockedBuffer
	cloud    *testcloud.Cloud
	stateDir string
	services map[string]string
	env      *testenv.APIServer
	// kubeconfig is the management cluster's, as serve reads it.
	kubeconfig string
	// charts is the addon chart repository the conductor pulls from; it
	// lacks the cloud controller manager pinned for Kubernetes 1.36.
	charts *testcharts.Repo
}

// TestServeGivesEveryClusterItsOwnApplicationCredential runs serve with
// [auth] strategy = keystone and an OpenStack conductor against a real
// Keystone and a real kube-apiserver with Cluster API's and CAPO's CRDs
// (Nova, Glance and Neutron are internal/testing/testcloud's stand-ins): a cluster
// created with a user's token gets an application credential of that user
// in Keystone, with which the conductor reads the cloud's flavors, images
// and networks, and which it writes as a clouds.yaml Secret (that really
// authenticates) and the workload cluster's cloud.conf; PATCH
// /v1/credentials replaces it and the old one is deleted from Keystone;
// deleting the cluster deletes the Secrets and the credential. No
// credential secret reaches the log.
func TestServeGivesEveryClusterItsOwnApplicationCredential(t *testing.T) {
	t.Parallel()
	w := startCredentialsWorld(t)
	ctx := t.Context()

	w.createTemplate("k8s")
	res, body := w.api("POST", "/v1/clusters", "", map[string]any{"name": "c1", "cluster_template_id": "k8s", "node_count": 1})
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("cluster: %d %s", res.StatusCode, body)
	}
	var created struct{ UUID string }
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	clusterUUID := created.UUID

	creds := w.appCredentials()
	if len(creds) != 1 || !strings.Contains(creds[0].Name, clusterUUID) {
		t.Fatalf("Keystone holds %+v for the user, want one credential named after cluster %s", creds, clusterUUID)
	}
	first := creds[0].ID
	secret := w.waitCloudsSecret(ctx, clusterUUID, first)
	cloud := w.parseClouds(secret)
	if cloud.Auth.AuthURL != w.ks.AuthURL() || cloud.AuthType != "v3applicationcredential" || cloud.Auth.ID != first {
		t.Fatalf("clouds.yaml = %+v, want Keystone %s and credential %s", cloud, w.ks.AuthURL(), first)
	}
	project, user := w.authenticate(cloud.Auth.ID, cloud.Auth.Secret)
	if project != w.services["alpha"] || user != w.userID {
		t.Fatalf("the cluster's credential acts for user %s in project %s, want %s in %s", user, project, w.userID, w.services["alpha"])
	}
	firstSecret := cloud.Auth.Secret

	t.Run("the conductor read the cloud as the cluster and rendered it for OpenStack", func(t *testing.T) {
		reads := w.cloud.ReadsByMagnetite()
		for _, route := range []string{"GET /compute/v2.1/flavors/{id}", "GET /networking/v2.0/networks"} {
			if reads[route] == 0 {
				t.Errorf("the conductor never asked %s (reads: %v)", route, reads)
			}
		}
		// Every node group has its Nova server group, made as the cluster
		// (its project and user) with the default policy, and the machines
		// name it by ID.
		groups := w.cloud.ServerGroups()
		if len(groups) != 2 {
			t.Fatalf("Nova holds %d server groups, want one per node group: %+v", len(groups), groups)
		}
		cl := w.clusterObject(ctx, clusterUUID)
		for _, g := range groups {
			if g.ProjectID != w.services["alpha"] || g.UserID != w.userID || g.Policy != "soft-anti-affinity" ||
				!(strings.HasSuffix(g.Name, "-default-master") || strings.HasSuffix(g.Name, "-default-worker")) {
				t.Errorf("server group %+v", g)
			}
			if !strings.Contains(cl, `"serverGroup":{"id":"`+g.ID+`"}`) {
				t.Errorf("the Cluster's topology does not place machines in server group %s by ID:\n%.3000s", g.ID, cl)
			}
		}
		conf := w.workloadCloudConf(ctx, clusterUUID)
		for _, want := range []string{"application-credential-id=" + first + "\n", "auth-url=" + w.ks.AuthURL() + "\n",
			"[LoadBalancer]\nfloating-network-id=" + testcloud.ExternalNetID + "\n"} {
			if !strings.Contains(conf, want) {
				t.Errorf("the workload cluster's cloud.conf lacks %q:\n%s", want, conf)
			}
		}
	})

	t.Run("an application credential cannot create clusters", func(t *testing.T) {
		tok := w.appCredentialToken(cloud.Auth.ID, cloud.Auth.Secret)
		res, body := w.api("POST", "/v1/clusters", tok, map[string]any{"name": "c2", "cluster_template_id": "k8s", "node_count": 1})
		if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "application credential") {
			t.Fatalf("cluster create with an application credential's token: %d %s", res.StatusCode, body)
		}
		if n := len(w.appCredentials()); n != 1 {
			t.Errorf("the refused create left %d credentials, want 1", n)
		}
	})

	t.Run("a bare-metal template with a virtual master flavor is refused at create, as Nova describes the flavors", func(t *testing.T) {
		res, body := w.api("POST", "/v1/clustertemplates", "", map[string]any{"name": "k8s-bm", "coe": "kubernetes", "server_type": "bm",
			"image_id": testcloud.ImageName, "flavor_id": testcloud.BareMetalFlavor, "master_flavor_id": testcloud.MasterFlavor,
			"external_network_id": testcloud.ExternalNet, "labels": map[string]string{"kube_tag": testcloud.KubeTag}})
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("template: %d %s", res.StatusCode, body)
		}
		res, body = w.api("POST", "/v1/clusters", "", map[string]any{"name": "c-bm", "cluster_template_id": "k8s-bm", "node_count": 1})
		want := "node group default-master: flavor " + testcloud.MasterFlavor + " is not a bare-metal flavor"
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), want) {
			t.Fatalf("cluster create: %d %s, want 400 saying %q", res.StatusCode, body, want)
		}
		if n := len(w.appCredentials()); n != 1 {
			t.Errorf("the refused create left %d credentials, want 1", n)
		}
	})

	t.Run("rotation needs 1.12", func(t *testing.T) {
		res, body := w.apiAt("1.11", "PATCH", "/v1/credentials/"+clusterUUID, "", nil)
		if res.StatusCode != http.StatusNotAcceptable {
			t.Fatalf("PATCH /v1/credentials at 1.11: %d %s", res.StatusCode, body)
		}
	})

	t.Run("rotation replaces the credential and deletes the old one", func(t *testing.T) {
		// Through the client, by the cluster's name.
		var out, errb lockedBuffer
		err := execMagnetite(ctx, &out, &errb, "credential", "rotate", "c1", "--os-endpoint", "http://"+w.addr+"/v1", "--os-token", w.token)
		if err != nil || !strings.Contains(out.String(), "Request to rotate the credentials of cluster "+clusterUUID+" has been accepted.") {
			t.Fatalf("magnetite credential rotate c1: %v\n%s%s", err, out.String(), errb.String())
		}
		var second string
		for _, c := range w.appCredentials() {
			if c.ID != first {
				second = c.ID
			}
		}
		if second == "" {
			t.Fatal("rotation made no new credential in Keystone")
		}
		cloud := w.parseClouds(w.waitCloudsSecret(ctx, clusterUUID, second))
		if _, u := w.authenticate(cloud.Auth.ID, cloud.Auth.Secret); u != w.userID {
			t.Fatalf("the new credential acts for %s", u)
		}
		w.waitKeystone("the old credential is deleted", func(ids []string) bool { return len(ids) == 1 && ids[0] == second })
		// Keystone answers 401 or 404 for a credential it no longer has.
		if code := w.authenticateStatus(first, firstSecret); code == http.StatusCreated || code >= 500 {
			t.Errorf("the old credential still authenticates, or Keystone failed (%d)", code)
		}
	})

	t.Run("deleting the cluster deletes its credential and Secret", func(t *testing.T) {
		res, body := w.api("DELETE", "/v1/clusters/"+clusterUUID, "", nil)
		if res.StatusCode != http.StatusNoContent {
			t.Fatalf("delete: %d %s", res.StatusCode, body)
		}
		w.waitKeystone("the cluster's credential is deleted", func(ids []string) bool { return len(ids) == 0 })
		testenv.WaitFor(t, "the cluster to be gone", 2*time.Minute, func() (bool, string) {
			res, _ := w.api("GET", "/v1/clusters/"+clusterUUID, "", nil)
			return res.StatusCode == http.StatusNotFound, ""
		})
		list, err := w.dc.Resource(secretsGVR).List(ctx, metav1.ListOptions{LabelSelector: mgmt.ClusterSelector(clusterUUID)})
		if err != nil || len(list.Items) != 0 {
			t.Fatalf("the cluster's Secrets are still there: %v %v", err, list)
		}
		if groups := w.cloud.ServerGroups(); len(groups) != 0 {
			t.Errorf("the deleted cluster's server groups are left in Nova: %+v", groups)
		}
	})

	t.Run("the credential secrets are sealed in the database", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(w.stateDir, "magnetite.db*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no database files in %s: %v", w.stateDir, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(firstSecret)) {
				t.Errorf("%s holds an application credential secret in the clear", filepath.Base(f))
			}
		}
	})

	t.Run("no credential secret reaches the log", func(t *testing.T) {
		if !strings.Contains(w.logs.String(), "operation finished") {
			t.Fatalf("the conductor logged nothing; the capture is broken:\n%.2000s", w.logs.String())
		}
		if strings.Contains(w.logs.String(), firstSecret) {
			t.Error("an application credential secret appears in the log")
		}
	})
}

// createTemplate makes a VM template on the stand-in cloud's image,
// flavors and external network.
func (w *credentialsWorld) createTemplate(name string) {
	w.t.Helper()
	res, body := w.api("POST", "/v1/clustertemplates", "", map[string]any{"name": name, "coe": "kubernetes",
		"image_id": testcloud.ImageName, "flavor_id": testcloud.FlavorName, "master_flavor_id": testcloud.MasterFlavor,
		"external_network_id": testcloud.ExternalNet, "labels": map[string]string{"kube_tag": testcloud.KubeTag}})
	if res.StatusCode != http.StatusCreated {
		w.t.Fatalf("template: %d %s", res.StatusCode, body)
	}
}

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// startCredentialsWorld skips under -short, as testkeystone.Start does.
func startCredentialsWorld(t *testing.T) *credentialsWorld { return startCredentialsWorldWithout(t) }

// startCredentialsWorldWithout is the world on a cloud that lacks what
// missing names (Neutron's L3 extension, Octavia, Cinder).
func startCredentialsWorldWithout(t *testing.T, missing ...testcloud.Missing) *credentialsWorld {
	ks := testkeystone.Start(t)
	const servicePassword = "magnetite-service-password-31"
	svc := ks.ServiceUser("magnetite", servicePassword)
	// Deleting other users' application credentials takes the admin role
	// (in the service token's project) under Keystone's default policy.
	ks.Grant(svc, ks.ProjectID("service"), "admin")
	alpha := ks.CreateProject("alpha")
	userID := ks.CreateUser("olivia", "olivia-password-0815")
	ks.Grant(userID, alpha, "member")
	w := &credentialsWorld{t: t, ks: ks, userID: userID, token: ks.Token("olivia", "olivia-password-0815", "alpha"),
		logs: &lockedBuffer{}, services: map[string]string{"alpha": alpha}}

	// One API server for the package's worlds: each Magnetite keeps to
	// its Keystone's projects' namespaces (project IDs are Keystone's
	// random ones) and its clusters' UUIDs.
	env := testenv.SharedProviders(t, testenv.CAPOv014)
	w.cloud = testcloud.Start(t, ks, missing...)
	w.dc = env.Dynamic(t)
	w.env = env
	ccm136, _ := addons.Pinned(addons.CloudControllerManager, "1.36")
	w.charts = testcharts.Serve(t, ccm136.Charts...)
	dir := t.TempDir()
	kubeconfig := env.KubeconfigFile(t)
	cfg := serveConfig(t,
		"MAGNETITE_DEFAULT_STATE_DIR="+dir, "MAGNETITE_LOG_LEVEL=debug",
		"MAGNETITE_DATABASE_SECRET_KEY="+base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")),
		"MAGNETITE_AUTH_STRATEGY=keystone", "MAGNETITE_KEYSTONE_AUTHTOKEN_AUTH_URL="+ks.AuthURL(),
		"MAGNETITE_KEYSTONE_AUTHTOKEN_USERNAME=magnetite", "MAGNETITE_KEYSTONE_AUTHTOKEN_PASSWORD="+servicePassword,
		"MAGNETITE_MANAGEMENT_KUBECONFIG="+kubeconfig, "MAGNETITE_CONDUCTOR_INFRASTRUCTURE=openstack",
		"MAGNETITE_ADDONS_SOURCE="+w.charts.URL)
	log, err := logging.New(w.logs, "text", "debug")
	if err != nil {
		t.Fatal(err)
	}
	w.addr, _ = serveUntil(t, cfg, log)
	w.stateDir, w.kubeconfig = dir, kubeconfig
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("magnetite log:\n%s", w.logs.String())
		}
	})
	return w
}

func (w *credentialsWorld) api(method, path, token string, body any) (*http.Response, []byte) {
	return w.apiAt("latest", method, path, token, body)
}

func (w *credentialsWorld) apiAt(version, method, path, token string, body any) (*http.Response, []byte) {
	w.t.Helper()
	if token == "" {
		token = w.token
	}
	return apiJSON(w.t, method, "http://"+w.addr+path, body, "X-Auth-Token", token, "OpenStack-API-Version", "container-infra "+version)
}

type appCredential struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// appCredentials lists the user's application credentials in Keystone.
func (w *credentialsWorld) appCredentials() []appCredential {
	w.t.Helper()
	req, _ := http.NewRequest("GET", w.ks.AuthURL()+"/users/"+w.userID+"/application_credentials", nil)
	req.Header.Set("X-Auth-Token", w.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Creds []appCredential `json:"application_credentials"`
	}
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&out) != nil {
		w.t.Fatalf("list application credentials: %d", res.StatusCode)
	}
	return out.Creds
}

func (w *credentialsWorld) waitKeystone(what string, done func(ids []string) bool) {
	w.t.Helper()
	testenv.WaitFor(w.t, what, 2*time.Minute, func() (bool, string) {
		var ids []string
		for _, c := range w.appCredentials() {
			ids = append(ids, c.ID)
		}
		return done(ids), ""
	})
}

// waitCloudsSecret waits until the cluster's clouds.yaml Secret carries the
// credential and returns its clouds.yaml.
func (w *credentialsWorld) waitCloudsSecret(ctx context.Context, clusterUUID, credentialID string) []byte {
	w.t.Helper()
	var data []byte
	testenv.WaitFor(w.t, "the clouds.yaml Secret with credential "+credentialID, 2*time.Minute, func() (bool, string) {
		list, err := w.dc.Resource(secretsGVR).List(ctx, metav1.ListOptions{LabelSelector: mgmt.ClusterSelector(clusterUUID)})
		if err != nil {
			w.t.Fatal(err)
		}
		for _, s := range list.Items {
			if !strings.HasSuffix(s.GetName(), "-cloud-config") || s.GetAnnotations()["magnetite.io/application-credential-id"] != credentialID {
				continue
			}
			if s.GetLabels()[mgmt.LabelProjectID] != w.services["alpha"] {
				w.t.Fatalf("the Secret %s/%s is not labelled with the cluster's project: %v", s.GetNamespace(), s.GetName(), s.GetLabels())
			}
			enc, _, _ := unstructured.NestedString(s.Object, "data", "clouds.yaml")
			var err error
			data, err = base64.StdEncoding.DecodeString(enc)
			return err == nil, ""
		}
		return false, ""
	})
	return data
}

type cloudsEntry struct {
	Auth struct {
		AuthURL string `json:"auth_url"`
		ID      string `json:"application_credential_id"`
		Secret  string `json:"application_credential_secret"`
	} `json:"auth"`
	AuthType string `json:"auth_type"`
}

func (w *credentialsWorld) parseClouds(b []byte) cloudsEntry {
	w.t.Helper()
	var doc struct {
		Clouds map[string]cloudsEntry `json:"clouds"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		w.t.Fatalf("clouds.yaml: %v\n%s", err, b)
	}
	c, ok := doc.Clouds["openstack"]
	if !ok {
		w.t.Fatalf("clouds.yaml has no cloud openstack:\n%s", b)
	}
	return c
}

// appCredentialLogin asks Keystone for a token with an application
// credential and returns its answer.
func (w *credentialsWorld) appCredentialLogin(id, secret string) (*http.Response, []byte) {
	w.t.Helper()
	return apiJSON(w.t, "POST", w.ks.AuthURL()+"/auth/tokens", map[string]any{"auth": map[string]any{"identity": map[string]any{
		"methods": []string{"application_credential"}, "application_credential": map[string]any{"id": id, "secret": secret}}}})
}

func (w *credentialsWorld) authenticateStatus(id, secret string) int {
	w.t.Helper()
	res, _ := w.appCredentialLogin(id, secret)
	return res.StatusCode
}

// authenticate logs in with an application credential and returns the
// token's project and user.
func (w *credentialsWorld) authenticate(id, secret string) (project, user string) {
	w.t.Helper()
	res, body := w.appCredentialLogin(id, secret)
	var out struct {
		Token struct {
			User    struct{ ID string } `json:"user"`
			Project struct{ ID string } `json:"project"`
		} `json:"token"`
	}
	if res.StatusCode != http.StatusCreated || json.Unmarshal(body, &out) != nil {
		w.t.Fatalf("the application credential does not authenticate: %d", res.StatusCode)
	}
	return out.Token.Project.ID, out.Token.User.ID
}

func (w *credentialsWorld) appCredentialToken(id, secret string) string {
	w.t.Helper()
	res, _ := w.appCredentialLogin(id, secret)
	if res.StatusCode != http.StatusCreated {
		w.t.Fatalf("application credential login: %d", res.StatusCode)
	}
	return res.Header.Get("X-Subject-Token")
}

// workloadCloudConf returns the cloud.conf the cluster's ClusterResourceSet
// Secret puts into the workload cluster.
// clusterObject is the cluster's Cluster object in the management cluster,
// as JSON.
func (w *credentialsWorld) clusterObject(ctx context.Context, clusterUUID string) string {
	w.t.Helper()
	gvr := schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	var found []unstructured.Unstructured
	testenv.WaitFor(w.t, "the conductor to apply the Cluster", 2*time.Minute, func() (bool, string) {
		list, err := w.dc.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: mgmt.ClusterSelector(clusterUUID)})
		if err != nil {
			w.t.Fatal(err)
		}
		found = list.Items
		return len(found) == 1, ""
	})
	b, err := json.Marshal(found[0].Object)
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

func (w *credentialsWorld) workloadCloudConf(ctx context.Context, clusterUUID string) string {
	w.t.Helper()
	list, err := w.dc.Resource(secretsGVR).List(ctx, metav1.ListOptions{LabelSelector: mgmt.ClusterSelector(clusterUUID)})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, s := range list.Items {
		if !strings.HasSuffix(s.GetName(), "-cloud-config-addon") {
			continue
		}
		if typ, _, _ := unstructured.NestedString(s.Object, "type"); typ != "addons.cluster.x-k8s.io/resource-set" {
			w.t.Errorf("the addon Secret has type %q", typ)
		}
		enc, _, _ := unstructured.NestedString(s.Object, "data", "cloud-config.yaml")
		stream, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			w.t.Fatal(err)
		}
		var inner struct {
			Metadata struct{ Name, Namespace string }
			Data     map[string]string
		}
		if err := yaml.Unmarshal(stream, &inner); err != nil || inner.Metadata.Name != "cloud-config" || inner.Metadata.Namespace != "kube-system" {
			w.t.Fatalf("the addon Secret does not carry kube-system/cloud-config (%v):\n%s", err, stream)
		}
		conf, err := base64.StdEncoding.DecodeString(inner.Data["cloud.conf"])
		if err != nil {
			w.t.Fatal(err)
		}
		return string(conf)
	}
	w.t.Fatalf("cluster %s has no -cloud-config-addon Secret: %d Secrets", clusterUUID, len(list.Items))
	return ""
}
