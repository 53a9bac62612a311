package conductor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

// adoptedCredentials is a real Keystone with a user of project demo, and
// a kube-apiserver, where Magnum's Cluster API drivers left clusters.
type adoptedCredentials struct {
	t       *testing.T
	ks      *testkeystone.Keystone
	project string
	user    string
	secrets dynamic.NamespaceableResourceInterface
	mc      *mgmt.Client
	env     *testenv.APIServer
}

// adoptedCluster is one such cluster: the credential its driver made, its
// Secrets as the driver wrote them, and a conductor whose store holds the
// cluster, adopted, with a new credential of Magnetite's.
type adoptedCluster struct {
	uuid, magnumID, magnumSecret, newID, newSecret string
	a                                              *model.ForeignCluster
	c                                              *Conductor
	sc                                             *scope
	secrets                                        map[string]map[string]string // name -> key -> value
}

func startAdoptedCredentials(t *testing.T) *adoptedCredentials {
	w := &adoptedCredentials{t: t, ks: testkeystone.Start(t), env: managementPlane(t, testenv.CAPOv014)}
	w.project = w.ks.CreateProject("demo")
	w.user = w.ks.CreateUser("carol", "carol-password")
	w.ks.Grant(w.user, w.project, "member")
	var err error
	if w.mc, err = mgmt.NewForConfig(w.env.Config, mgmt.Options{Kinds: builtin.Kinds()}); err != nil {
		t.Fatal(err)
	}
	w.secrets = w.env.Dynamic(t).Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"})
	return w
}

// cluster makes a cluster of a, whose Secrets secrets returns given the
// credential its driver made.
func (w *adoptedCredentials) cluster(a *model.ForeignCluster, secrets func(id, secret string) map[string]map[string]string) *adoptedCluster {
	t, ctx := w.t, context.Background()
	ac := &adoptedCluster{uuid: uuid.NewString(), a: a}
	ac.magnumID, ac.magnumSecret = w.ks.ApplicationCredential(w.user, "carol", "carol-password", "demo", "magnum-"+ac.uuid)
	ac.newID, ac.newSecret = w.ks.ApplicationCredential(w.user, "carol", "carol-password", "demo", "magnetite-"+ac.uuid)
	if _, err := w.mc.Get(ctx, "Namespace", "", a.Namespace); err != nil {
		w.env.CreateNamespace(t, a.Namespace)
	}
	ac.secrets = secrets(ac.magnumID, ac.magnumSecret)
	for name, data := range ac.secrets {
		s := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": name, "namespace": a.Namespace, "labels": map[string]any{"cluster-uuid": ac.uuid}}, "stringData": anyMap(data)}}
		if _, err := w.secrets.Namespace(a.Namespace).Create(ctx, s, metav1.CreateOptions{FieldManager: a.Driver}); err != nil {
			t.Fatal(err)
		}
	}
	ct := &model.ClusterTemplate{UUID: uuid.NewString(), Name: "t", ProjectID: w.project, TemplateSpec: model.TemplateSpec{COE: "kubernetes",
		ImageID: "img", ServerType: model.ServerTypeVM, Labels: map[string]string{}}, CreatedAt: time.Now().UTC()}
	cl := &model.Cluster{UUID: ac.uuid, Name: "adopted", ProjectID: w.project, UserID: w.user, ClusterTemplateID: ct.UUID,
		Status: model.UpdateInProgress, Labels: map[string]string{}, CreatedAt: time.Now().UTC(),
		Imported: &model.Imported{MagnumDriver: a.Driver, At: time.Now().UTC(), ClusterAPI: a}}
	st := storeWith(t, ct, cl, nil, nil)
	cl, _ = st.GetClusterByUUID(ctx, ac.uuid)
	if err := st.ApplyClusterChange(ctx, store.ClusterChange{Cluster: cl, Credential: &model.ClusterCredential{
		ID: ac.newID, Secret: ac.newSecret, ClusterID: ac.uuid, UserID: w.user, ProjectID: w.project}}); err != nil {
		t.Fatal(err)
	}
	admin, err := auth.NewKeystone(auth.KeystoneConfig{AuthURL: w.ks.AuthURL(), Username: "admin", Password: testkeystone.AdminPassword,
		ProjectName: "admin", UserDomainName: "Default", ProjectDomainName: "Default"})
	if err != nil {
		t.Fatal(err)
	}
	ac.c = New(Options{Store: st, Mgmt: w.mc, Owner: "test", Credentials: CloudCredentials{Keystone: admin},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if ac.sc, err = ac.c.load(ctx, ac.uuid); err != nil {
		t.Fatal(err)
	}
	return ac
}

// read is a value of one of the cluster's Secrets as it is now.
func (w *adoptedCredentials) read(ac *adoptedCluster, name, key string) string {
	s, err := w.mc.Get(context.Background(), "Secret", ac.a.Namespace, name)
	if err != nil {
		w.t.Fatal(err)
	}
	return string(secretValue(s, key))
}

// login is Keystone's answer to a login with an application credential.
func (w *adoptedCredentials) login(id, secret string) int {
	w.t.Helper()
	body, _ := json.Marshal(map[string]any{"auth": map[string]any{"identity": map[string]any{"methods": []string{"application_credential"},
		"application_credential": map[string]any{"id": id, "secret": secret}}}})
	res, err := http.Post(w.ks.AuthURL()+"/auth/tokens", "application/json", bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func anyMap(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sameYAML fails unless two YAML documents hold the same values.
func sameYAML(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := yaml.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	_ = yaml.Unmarshal([]byte(want), &w)
	if fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("%s:\n%s\nwant:\n%s", what, got, want)
	}
}

// TestAdoptedClustersCredentialsAreRotatedWhereTheirDriversKeepThem: with
// a real Keystone and kube-apiserver, an adopted cluster's new application
// credential replaces the one Magnum's driver made where the driver keeps
// it (magnum-cluster-api: the clouds.yaml CAPO reads and the workload's
// cloud.conf its ClusterResourceSet applies; magnum-capi-helm: its
// cloud-credentials clouds.yaml), nothing else in those Secrets changes,
// the new credential logs in and the driver's is deleted from Keystone. A
// cluster deleted without a rotation has its driver's credential deleted
// as the driver would.
func TestAdoptedClustersCredentialsAreRotatedWhereTheirDriversKeepThem(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs Keystone and a kube-apiserver; runs in the full suite (hack/test.sh)")
	}
	t.Parallel()
	ctx := context.Background()
	w := startAdoptedCredentials(t)
	// As magnum-cluster-api v0.38.1 writes them (resources.py
	// CloudConfigSecret, yaml.dump's sorted keys; utils.py
	// generate_cloud_controller_manager_config).
	mcaSecrets := func(stack string) func(id, secret string) map[string]map[string]string {
		return func(id, secret string) map[string]map[string]string {
			clouds := fmt.Sprintf("clouds:\n  default:\n    auth:\n      application_credential_id: %s\n      application_credential_secret: %s\n      auth_url: %s\n    endpoint_type: public\n    identity_api_version: 3\n    region_name: %s\n    verify: true\n",
				id, secret, w.ks.AuthURL(), testkeystone.Region)
			conf := fmt.Sprintf("[Global]\nauth-url=%s\nregion=%s\napplication-credential-id=%s\napplication-credential-secret=%s\ntls-insecure=false\n\n[LoadBalancer]\nlb-provider=amphorav2\nlb-method=ROUND_ROBIN\ncreate-monitor=True\n",
				w.ks.AuthURL(), testkeystone.Region, id, secret)
			manifest, _ := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret",
				"metadata": map[string]any{"name": "cloud-config", "namespace": "kube-system"}, "stringData": map[string]any{"cloud.conf": conf, "ca.crt": ""}})
			return map[string]map[string]string{
				stack + "-cloud-config":   {"clouds.yaml": clouds, "cacert": ""},
				stack + "-cloud-provider": {"cloud-config-secret.yaml": string(manifest)},
			}
		}
	}
	topology := func(stack string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"topology": map[string]any{"variables": []any{
			map[string]any{"name": "clusterIdentityRefName", "value": stack + "-cloud-config"}}}}}}
	}
	rotated := func(ac *adoptedCluster, s string) string {
		return strings.NewReplacer(ac.magnumID, ac.newID, ac.magnumSecret, ac.newSecret).Replace(s)
	}

	t.Run("magnum-cluster-api", func(t *testing.T) {
		ac := w.cluster(&model.ForeignCluster{Driver: driverMCA, Namespace: "magnum-system", Name: "kube-ab12c", Adopted: true}, mcaSecrets("kube-ab12c"))
		if err := ac.c.rotateAdoptedCredential(ctx, ac.sc, ac.a, topology("kube-ab12c")); err != nil {
			t.Fatal(err)
		}
		sameYAML(t, "clouds.yaml after the rotation", w.read(ac, "kube-ab12c-cloud-config", "clouds.yaml"), rotated(ac, ac.secrets["kube-ab12c-cloud-config"]["clouds.yaml"]))
		if got := w.read(ac, "kube-ab12c-cloud-config", "cacert"); got != "" {
			t.Errorf("the rotation changed the CA to %q", got)
		}
		var applied, before struct {
			StringData map[string]string `json:"stringData"`
		}
		_ = yaml.Unmarshal([]byte(w.read(ac, "kube-ab12c-cloud-provider", "cloud-config-secret.yaml")), &applied)
		_ = yaml.Unmarshal([]byte(ac.secrets["kube-ab12c-cloud-provider"]["cloud-config-secret.yaml"]), &before)
		if want := rotated(ac, before.StringData["cloud.conf"]); applied.StringData["cloud.conf"] != want {
			t.Errorf("the workload's cloud.conf after the rotation:\n%s\nwant:\n%s", applied.StringData["cloud.conf"], want)
		}
		if code := w.login(ac.newID, ac.newSecret); code != http.StatusCreated {
			t.Errorf("the new credential logs in with %d", code)
		}
		if code := w.login(ac.magnumID, ac.magnumSecret); code == http.StatusCreated {
			t.Error("the credential magnum-cluster-api made still logs in")
		}
	})

	t.Run("magnum-capi-helm", func(t *testing.T) {
		// As magnum-capi-helm 1.4.0 writes it (common/app_creds.py).
		a := &model.ForeignCluster{Driver: driverMCH, Namespace: "magnum-" + w.project, Name: "web-x", HelmRelease: "web-x", Adopted: true}
		ac := w.cluster(a, func(id, secret string) map[string]map[string]string {
			return map[string]map[string]string{"web-x-cloud-credentials": {"clouds.yaml": fmt.Sprintf(
				"clouds:\n  openstack:\n    auth:\n      application_credential_id: %s\n      application_credential_secret: %s\n      auth_url: %s\n    auth_type: v3applicationcredential\n    identity_api_version: 3\n    interface: public\n    region_name: %s\n    verify: true\n",
				id, secret, w.ks.AuthURL(), testkeystone.Region)}}
		})
		if err := ac.c.rotateAdoptedCredential(ctx, ac.sc, ac.a, &unstructured.Unstructured{Object: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		sameYAML(t, "clouds.yaml after the rotation", w.read(ac, "web-x-cloud-credentials", "clouds.yaml"), rotated(ac, ac.secrets["web-x-cloud-credentials"]["clouds.yaml"]))
		if code := w.login(ac.magnumID, ac.magnumSecret); code == http.StatusCreated {
			t.Error("the credential magnum-capi-helm made still logs in")
		}
	})

	t.Run("deleted without a rotation", func(t *testing.T) {
		ac := w.cluster(&model.ForeignCluster{Driver: driverMCA, Namespace: "magnum-system", Name: "kube-cd34e", Adopted: true}, mcaSecrets("kube-cd34e"))
		cl, err := ac.c.st.GetClusterByUUID(ctx, ac.uuid)
		if err != nil {
			t.Fatal(err)
		}
		if err := ac.c.deleteAdoptedLeftovers(ctx, cl, ac.a); err != nil {
			t.Fatal(err)
		}
		if code := w.login(ac.magnumID, ac.magnumSecret); code == http.StatusCreated {
			t.Error("the credential magnum-cluster-api made for the deleted cluster still logs in")
		}
		list, err := w.secrets.Namespace("magnum-system").List(ctx, metav1.ListOptions{LabelSelector: "cluster-uuid=" + ac.uuid})
		if err != nil || len(list.Items) != 0 {
			t.Errorf("the deleted cluster's Secrets are left: %d (%v)", len(list.Items), err)
		}
	})
}
