package deploy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/client"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
)

// rbacValues run Magnetite without Keystone and on Cluster API's
// in-memory infrastructure, as the local plane offers.
const rbacValues = fullValues + `
config:
  auth: {strategy: noauth, noauth_roles: "admin,member"}
  conductor: {infrastructure: inmemory, lease: 10s}
  log: {format: text}
`

// TestChartOnRealClusterAPI installs the chart's objects on a real
// kube-apiserver (all of them as server-side dry-run, its ServiceAccount
// and RBAC for real) and runs `magnetite serve` with the chart's
// magnetite.conf and a kubeconfig holding a token of the chart's
// ServiceAccount from the API server's TokenRequest: the conductor must
// create, resize and delete a cluster on the local Cluster API with no
// more than the chart grants, and the same credentials must be refused
// what Magnetite never does.
func TestChartOnRealClusterAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the local Cluster API plane built by hack/build-testbin.sh; runs in the full suite")
	}
	t.Parallel()
	objs := mustRender(t, rbacValues)
	mgmt := testenv.SharedClusterAPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(mgmt.Config)
	if err != nil {
		t.Fatal(err)
	}
	// A plane the run shares may have it from an earlier count.
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dryRunChart(ctx, t, mgmt, objs)

	// What helm install would create and the conductor's credentials
	// depend on.
	dc, mapper := mgmt.Dynamic(t), mgmt.Mapper(t)
	for key, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding":
			o = o.DeepCopy()
			if o.GetKind() == "ServiceAccount" {
				o.SetNamespace(releaseNamespace)
			}
			if _, err := testenv.ServerSideApply(ctx, dc, mapper, o, false); err != nil {
				t.Fatalf("apply %s: %v", key, err)
			}
		}
	}
	sa := objs["ServiceAccount/magnetite"]
	tok, err := admin.CoreV1().ServiceAccounts(releaseNamespace).CreateToken(ctx, sa.GetName(),
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for the chart's ServiceAccount: %v", err)
	}
	saConfig := &rest.Config{Host: mgmt.Config.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: mgmt.Config.CAData}}
	kubeconfig := testenv.WriteKubeconfig(t, "", saConfig, releaseNamespace, 0o600)

	conf, _, _ := unstructured.NestedString(objs["ConfigMap/magnetite"].Object, "data", "magnetite.conf")
	addr := testmagnetite.FreeAddr(t)
	p, err := testmagnetite.Start(t, testmagnetite.Build(t), "magnetite-0", addr, conf,
		// The pod's state volume, here under the test's directory; project
		// namespaces apart from other tests' on the shared plane; machines
		// that boot in a second.
		"[DEFAULT]\nstate_dir = "+filepath.Join(t.TempDir(), "state")+"\n[management]\nkubeconfig = "+kubeconfig+
			"\nnamespace_prefix = "+testenv.NamespacePrefix(t)+"\n[driver]\ninmemory_boot_time = 1s\n")
	if err != nil {
		t.Fatal(err)
	}
	p.WaitReady(t, time.Minute)
	api, err := client.New(p.Base, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	tmpl, err := api.CreateTemplate(ctx, map[string]any{"name": "mem", "coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.31.2",
		"external_network_id": "public", "labels": map[string]string{"kube_tag": "v1.31.2"}})
	if err != nil {
		t.Fatal(err)
	}
	uuid, err := api.CreateCluster(ctx, map[string]any{"name": "demo", "cluster_template_id": tmpl.UUID, "master_count": 1, "node_count": 1})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(ctx, t, api, uuid, "CREATE_COMPLETE", 6*time.Minute)

	if _, err := api.ResizeCluster(ctx, uuid, client.ResizeRequest{NodeCount: 2}); err != nil {
		t.Fatal(err)
	}
	waitStatus(ctx, t, api, uuid, "UPDATE_COMPLETE", 5*time.Minute)
	mds, err := dc.Resource(schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments"}).
		Namespace("").List(ctx, metav1.ListOptions{LabelSelector: "magnetite.io/cluster-uuid=" + uuid})
	if err != nil || len(mds.Items) != 1 {
		t.Fatalf("machine deployments of the cluster: %v (%d)", err, len(mds.Items))
	}
	if n, _, _ := unstructured.NestedInt64(mds.Items[0].Object, "spec", "replicas"); n != 2 {
		t.Errorf("after the resize the MachineDeployment asks for %d replicas, want 2", n)
	}
	projectNS := mds.Items[0].GetNamespace()

	if err := api.DeleteCluster(ctx, uuid); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the deleted cluster to be gone (404)", 5*time.Minute, func() (bool, string) {
		cl, err := api.GetCluster(ctx, uuid)
		if client.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, cl.Status
	})
	// The project's namespace is released with its last cluster, just
	// after its row goes (it stays Terminating here: the local plane runs
	// no namespace controller).
	testenv.WaitFor(t, "namespace "+projectNS+" of the project to be released", 2*time.Minute, func() (bool, string) {
		ns, err := admin.CoreV1().Namespaces().Get(ctx, projectNS, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return ns.DeletionTimestamp != nil, string(ns.Status.Phase)
	})
	// Nothing the conductor tried was refused: a forbidden list would let
	// the namespace check pass blind, a forbidden apply would stall a
	// cluster.
	if b, _ := os.ReadFile(p.Log); strings.Contains(strings.ToLower(string(b)), "forbidden") {
		t.Errorf("the conductor was refused something with the chart's RBAC:\n%s", grepLines(string(b), "forbidden"))
	}

	// Minimal: the same credentials cannot run workloads, read nodes,
	// grant themselves more, or change what the chart granted.
	sac, err := kubernetes.NewForConfig(saConfig)
	if err != nil {
		t.Fatal(err)
	}
	forbidden := map[string]error{}
	_, forbidden["create a Pod"] = sac.CoreV1().Pods(releaseNamespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "escape"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	// Nodes can be listed (the namespace-release rule lists every kind and
	// Kubernetes cannot limit a wildcard to namespaced ones), not read,
	// watched or changed.
	_, forbidden["read a Node"] = sac.CoreV1().Nodes().Get(ctx, "any-node", metav1.GetOptions{})
	_, forbidden["watch Nodes"] = sac.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	_, forbidden["read a Secret by name"] = sac.CoreV1().Secrets("kube-system").Get(ctx, "anything", metav1.GetOptions{})
	_, forbidden["bind cluster-admin"] = sac.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "escalate"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.GetName(), Namespace: releaseNamespace}},
	}, metav1.CreateOptions{})
	_, forbidden["widen its own ClusterRole"] = sac.RbacV1().ClusterRoles().Patch(ctx, "magnetite", types.MergePatchType,
		[]byte(`{"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`), metav1.PatchOptions{})
	sadc, err := dynamic.NewForConfig(saConfig)
	if err != nil {
		t.Fatal(err)
	}
	forbidden["delete a KubeadmControlPlane"] = sadc.Resource(schema.GroupVersionResource{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Resource: "kubeadmcontrolplanes"}).
		Namespace(projectNS).Delete(ctx, "anything", metav1.DeleteOptions{})
	for what, err := range forbidden {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the chart's ServiceAccount may %s: %v (want 403 Forbidden)", what, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func waitStatus(ctx context.Context, t *testing.T, api *client.Client, uuid, want string, limit time.Duration) {
	t.Helper()
	testenv.WaitFor(t, "cluster "+want, limit, func() (bool, string) {
		cl, err := api.GetCluster(ctx, uuid)
		if err != nil {
			return false, err.Error()
		}
		if strings.HasSuffix(cl.Status, "_FAILED") {
			t.Fatalf("cluster %s: %s", cl.Status, deref(cl.StatusReason))
		}
		return cl.Status == want, cl.Status + ": " + deref(cl.StatusReason)
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func grepLines(text, word string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(strings.ToLower(l), word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
