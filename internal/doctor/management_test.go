package doctor_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/doctor"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// writeKubeconfig writes a kubeconfig for server with a bearer token and CA,
// with the given file mode.
func writeKubeconfig(t *testing.T, path, server, token string, caPEM []byte, mode os.FileMode) {
	t.Helper()
	testenv.WriteKubeconfig(t, path, &rest.Config{Host: server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}, "", mode)
}

func TestKubeconfigCheckBothStates(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, good, "https://10.12.7.40:6443", "t", []byte("ca"), 0o600)
	worldReadable := filepath.Join(dir, "world-readable")
	writeKubeconfig(t, worldReadable, "https://10.12.7.40:6443", "t", []byte("ca"), 0o644)
	groupReadable := filepath.Join(dir, "group-readable")
	writeKubeconfig(t, groupReadable, "https://10.12.7.40:6443", "t", []byte("ca"), 0o640)
	empty := filepath.Join(dir, "empty")
	writeFile(t, empty, "", 0o600)

	expect(t, doctor.Kubeconfig(good, false), doctor.Pass, good, "https://10.12.7.40:6443")
	expect(t, doctor.Kubeconfig(worldReadable, false), doctor.Fail, "0644", "chmod 0600 "+worldReadable)
	expect(t, doctor.Kubeconfig(groupReadable, false), doctor.Fail, "0640", "chmod 0600")
	// An empty copy (a transfer whose stdin was lost) is caught here.
	expect(t, doctor.Kubeconfig(empty, false), doctor.Fail, "current context", "checksums")
	expect(t, doctor.Kubeconfig(filepath.Join(dir, "absent"), false), doctor.Fail, "does not exist")
	expect(t, doctor.Kubeconfig("", false), doctor.Fail, "no management cluster configured", "[management] kubeconfig")
	expect(t, doctor.Kubeconfig("", true), doctor.Pass, "service account")
}

func TestNoManagementClusterFailsReachability(t *testing.T) {
	ctx := context.Background()
	server := "https://" + closedPort(t)
	cfg := &rest.Config{Host: server, BearerToken: "t", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	expect(t, doctor.ManagementReachable(ctx, cfg), doctor.Fail, "connection refused", "tcp/")
	expect(t, doctor.ManagementAuthenticated(ctx, cfg), doctor.Fail, server)
}

func TestManagementChecksAgainstARealAPIServer(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()

	// Reachable, and the credentials are accepted; a wrong token or CA is not.
	expect(t, doctor.ManagementReachable(ctx, env.Config), doctor.Pass, strings.TrimPrefix(env.Config.Host, "https://"))
	expect(t, doctor.ManagementAuthenticated(ctx, env.Config), doctor.Pass, "authenticated as testenv-admin")
	wrongToken := rest.CopyConfig(env.Config)
	wrongToken.BearerToken = "not-a-token"
	expect(t, doctor.ManagementAuthenticated(ctx, wrongToken), doctor.Fail, "refused", "token")
	wrongCA := rest.CopyConfig(env.Config)
	wrongCA.CAData = nil
	wrongCA.CAFile = ""
	expect(t, doctor.ManagementAuthenticated(ctx, wrongCA), doctor.Fail, "certificate-authority-data")

	// The same through a kubeconfig file, as the doctor command reads it.
	path := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfig(t, path, env.Config.Host, env.Config.BearerToken, env.Config.CAData, 0o600)
	expect(t, doctor.Kubeconfig(path, false), doctor.Pass, env.Config.Host)

	client := func(apiResources string) *mgmt.Client {
		t.Helper()
		c, err := mgmt.NewForConfig(env.Config, mgmt.Options{APIResources: apiResources, Kinds: builtin.Kinds()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	servedKinds := func(c *mgmt.Client) map[string]doctor.Result {
		return results(doctor.ServedKinds(ctx, c, builtin.KindsByDriver(), doctor.FindProviders(ctx, cs, env.Dynamic(t))))
	}

	// Nothing installed: every set of kinds fails, naming what is missing.
	got := servedKinds(client(""))
	expect(t, got["CRDs Cluster API core"], doctor.Fail, "not served", "Cluster", "MachineDeployment")
	expect(t, got["CRDs infrastructure"], doctor.Fail, "no infrastructure provider")
	got = results(doctor.ProviderControllers(ctx, cs))
	expect(t, got["controllers"], doctor.Fail, "no Cluster API controller found")

	// Cluster API and the in-memory infrastructure installed.
	env.InstallClusterAPI(t)
	got = servedKinds(client(""))
	expect(t, got["CRDs Cluster API core"], doctor.Pass, "Cluster cluster.x-k8s.io/v1beta2", "MachineHealthCheck",
		"Magnetite writes cluster.x-k8s.io/v1beta2 (Cluster API v1.11 or newer serves v1beta2)")
	expect(t, got["CRDs kubeadm bootstrap"], doctor.Pass, "KubeadmConfigTemplate bootstrap.cluster.x-k8s.io/")
	expect(t, got["CRDs kubeadm control plane"], doctor.Pass, "KubeadmControlPlane controlplane.cluster.x-k8s.io/")
	expect(t, got["CRDs infrastructure"], doctor.Pass, "capi-inmemory: DevCluster", "not installed: capi-metal3, capi-openstack")
	if _, bad := got["CRDs api_resources override"]; bad {
		t.Fatalf("no override configured, yet: %+v", got["CRDs api_resources override"])
	}

	// An override that agrees with what is served passes and says so.
	got = servedKinds(client("Cluster=cluster.x-k8s.io/v1beta2"))
	expect(t, got["CRDs Cluster API core"], doctor.Pass, "Cluster cluster.x-k8s.io/v1beta2 (override)")
	// One the cluster serves but the renderer does not write fails: every
	// create would.
	got = servedKinds(client("Cluster=cluster.x-k8s.io/v1beta1"))
	expect(t, got["CRDs Cluster API core"], doctor.Fail, "Cluster cluster.x-k8s.io/v1beta1 (override)", "does not write", "v1beta2")
	// One the cluster does not serve fails, as seed 003's driver did silently.
	got = servedKinds(client("Cluster=cluster.x-k8s.io/v1beta3"))
	expect(t, got["CRDs api_resources override"], doctor.Fail, "Cluster", "v1beta3", "api_resources")
	expect(t, got["CRDs Cluster API core"], doctor.Fail, "Cluster cluster.x-k8s.io/v1beta3 (override)")

	// A provider webhook whose manager is not running.
	down := "https://" + closedPort(t) + "/validate-cluster-x-k8s-io-v1beta2-cluster"
	ignore := admissionv1.Ignore
	none := admissionv1.SideEffectClassNone
	_, err = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "capi-validating-webhook-configuration"},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "validation.cluster.cluster.x-k8s.io", ClientConfig: admissionv1.WebhookClientConfig{URL: &down, CABundle: env.Config.CAData},
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{"cluster.x-k8s.io"}, APIVersions: []string{"v1beta2"}, Resources: []string{"clusters"}}}},
			FailurePolicy: &ignore, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got = results(doctor.ProviderControllers(ctx, cs))
	webhook := "controller webhook " + strings.TrimPrefix(strings.Split(down, "/validate")[0], "https://")
	expect(t, got[webhook], doctor.Fail, "connection refused", "capi-validating-webhook-configuration", "cluster.x-k8s.io", "start the manager")
	expect(t, got["controllers controlplane.cluster.x-k8s.io"], doctor.Warn, "no running controller")
}

// A Cluster CRD served only at a version Magnetite does not speak.
const clusterV1alpha3CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusters.cluster.x-k8s.io
spec:
  group: cluster.x-k8s.io
  names: {kind: Cluster, listKind: ClusterList, plural: clusters, singular: cluster}
  scope: Namespaced
  versions:
  - name: v1alpha3
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// A KubeadmControlPlane CRD of a Cluster API older than v1.11: v1beta1
// only, which the renderer does not write.
const kcpV1beta1CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: kubeadmcontrolplanes.controlplane.cluster.x-k8s.io
spec:
  group: controlplane.cluster.x-k8s.io
  names: {kind: KubeadmControlPlane, listKind: KubeadmControlPlaneList, plural: kubeadmcontrolplanes, singular: kubeadmcontrolplane}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

func TestCRDServedOnlyAtAnUnexpectedVersionFails(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "cluster.yaml"), clusterV1alpha3CRD, 0o644)
	writeFile(t, filepath.Join(dir, "kcp.yaml"), kcpV1beta1CRD, 0o644)
	env.InstallCRDs(t, dir, nil)
	c, err := mgmt.NewForConfig(env.Config, mgmt.Options{Kinds: builtin.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	got := results(doctor.ServedKinds(ctx, c, builtin.KindsByDriver(), doctor.Providers{}))
	expect(t, got["CRDs Cluster API core"], doctor.Fail, "Cluster cluster.x-k8s.io/v1alpha3", "does not write", "upgrade")
	// v1beta1 alone is what every create would then fail on: the
	// renderer writes Cluster API's own kinds at v1beta2.
	expect(t, got["CRDs kubeadm control plane"], doctor.Fail, "KubeadmControlPlane controlplane.cluster.x-k8s.io/v1beta1", "does not write", "v1beta2", "Cluster API v1.11")
}

// TestServedKindsNameTheProviderReleases: with CAPO v0.14.7's CRDs (its
// kinds served at v1beta1 only) the infrastructure check passes, says
// Magnetite writes v1beta1 for the OpenStack kinds, and names the release:
// from the CRDs' contract labels, then from the provider Deployment's image
// tag once clusterctl's provider label ties the CRDs to it. Cluster API's
// core is named alike from its manager's Deployment.
func TestServedKindsNameTheProviderReleases(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	env.InstallClusterAPI(t)
	env.InstallProviders(t, testenv.CAPOv014)
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	c, err := mgmt.NewForConfig(env.Config, mgmt.Options{Kinds: builtin.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	got := results(doctor.ServedKinds(ctx, c, builtin.KindsByDriver(), doctor.FindProviders(ctx, cs, env.Dynamic(t))))
	expect(t, got["CRDs Cluster API core"], doctor.Pass, "Magnetite writes cluster.x-k8s.io/v1beta2", "Cluster API v1.11 or newer")
	expect(t, got["CRDs infrastructure"], doctor.Pass, "capi-openstack: OpenStackCluster infrastructure.cluster.x-k8s.io/v1beta1",
		"OpenStackMachineTemplate infrastructure.cluster.x-k8s.io/v1beta1", "Magnetite writes infrastructure.cluster.x-k8s.io/v1beta1",
		"CRDs labelled for Cluster API contract v1beta1 at v1beta1")

	const provider = "infrastructure-openstack"
	labels := map[string]string{"cluster.x-k8s.io/provider": provider}
	maps.Copy(labels, testenv.ProviderLabels(testenv.CAPOv014))
	env.InstallCRDs(t, testenv.ProviderCRDs(t, testenv.CAPOv014), labels)
	image := "registry.k8s.io/capi-openstack/capi-openstack-controller:v0.14.7"
	providerDeployment(t, env, cs, "capo-system", "capo-controller-manager", provider, image)
	// clusterctl labels Cluster API's own CRDs and manager as the
	// provider cluster-api.
	env.InstallCRDs(t, filepath.Join(testenv.ClusterAPICRDs(t), "core"), map[string]string{"cluster.x-k8s.io/provider": "cluster-api"})
	coreImage := "registry.k8s.io/cluster-api/cluster-api-controller:" + testenv.ClusterAPIVersion
	providerDeployment(t, env, cs, "capi-system", "capi-controller-manager", "cluster-api", coreImage)
	got = results(doctor.ServedKinds(ctx, c, builtin.KindsByDriver(), doctor.FindProviders(ctx, cs, env.Dynamic(t))))
	expect(t, got["CRDs infrastructure"], doctor.Pass, "Magnetite writes infrastructure.cluster.x-k8s.io/v1beta1",
		"release v0.14.7 (image "+image+" of deployment capo-system/capo-controller-manager)")
	expect(t, got["CRDs Cluster API core"], doctor.Pass, "Magnetite writes cluster.x-k8s.io/v1beta2",
		"release "+testenv.ClusterAPIVersion+" (image "+coreImage+" of deployment capi-system/capi-controller-manager)")
}

// providerDeployment makes a provider's manager Deployment as clusterctl
// installs it: labelled with the provider's name, its image tag the
// release.
func providerDeployment(t *testing.T, env *testenv.APIServer, cs kubernetes.Interface, namespace, name, provider, image string) {
	t.Helper()
	env.CreateNamespace(t, namespace)
	sel := map[string]string{"control-plane": name}
	_, err := cs.AppsV1().Deployments(namespace).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"cluster.x-k8s.io/provider": provider}},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: sel},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: image}}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// openStackV1alpha7CRDs are CAPO's contract kinds served at v1alpha7 only,
// as CAPO v0.8 and v0.9 served them.
func openStackV1alpha7CRDs() string {
	var b strings.Builder
	for _, kind := range []string{"OpenStackCluster", "OpenStackClusterTemplate", "OpenStackMachine", "OpenStackMachineTemplate"} {
		plural := strings.ToLower(kind) + "s"
		fmt.Fprintf(&b, `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s.infrastructure.cluster.x-k8s.io
spec:
  group: infrastructure.cluster.x-k8s.io
  names: {kind: %s, listKind: %sList, plural: %s, singular: %s}
  scope: Namespaced
  versions:
  - name: v1alpha7
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, plural, kind, kind, plural, strings.ToLower(kind))
	}
	return b.String()
}

// TestProviderServedOnlyAtAVersionMagnetiteDoesNotWriteFails: CAPO kinds
// served at v1alpha7 only fail the infrastructure check, which names the
// releases Magnetite writes for.
func TestProviderServedOnlyAtAVersionMagnetiteDoesNotWriteFails(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	env.InstallClusterAPI(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "capo.yaml"), openStackV1alpha7CRDs(), 0o644)
	env.InstallCRDs(t, dir, map[string]string{"cluster.x-k8s.io/v1beta1": "v1alpha7"})
	c, err := mgmt.NewForConfig(env.Config, mgmt.Options{Kinds: builtin.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	got := results(doctor.ServedKinds(ctx, c, builtin.KindsByDriver(), doctor.FindProviders(ctx, cs, env.Dynamic(t))))
	expect(t, got["CRDs infrastructure"], doctor.Fail,
		"capi-openstack served only at versions Magnetite does not write: OpenStackCluster infrastructure.cluster.x-k8s.io/v1alpha7",
		"contract v1beta1 at v1alpha7",
		"install a provider release Magnetite writes for (CAPO v0.12 to v0.14 serve v1beta1, v0.15 and newer serve v1beta2)")
}

func TestProviderControllersPassWhenTheManagersRun(t *testing.T) {
	t.Parallel()
	env := testenv.SharedClusterAPI(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	rs := doctor.ProviderControllers(ctx, cs)
	webhooks := 0
	for _, r := range rs {
		if r.Status != doctor.Pass {
			t.Errorf("with every manager running: %s %s: %s", r.Status, r.Check, r.Detail)
		}
		if strings.HasPrefix(r.Check, "controller webhook 127.0.0.1:") {
			webhooks++
			expect(t, r, doctor.Pass, "answers TLS")
		}
	}
	// One webhook server per manager.
	if webhooks != 4 {
		t.Fatalf("found %d webhook servers, want 4: %+v", webhooks, rs)
	}
}
