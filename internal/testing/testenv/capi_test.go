package testenv_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/certs"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// inMemoryClass is a minimal ClusterClass for CAPD's in-memory backend, in
// the shape of Cluster API v1beta2 (the test checks discovery agrees).
// Machines "boot" in a few seconds.
const inMemoryClass = `
kind: DevClusterTemplate
metadata: {name: in-memory}
spec: {template: {spec: {backend: {inMemory: {}}}}}
---
kind: KubeadmControlPlaneTemplate
metadata: {name: in-memory}
spec:
  template:
    spec:
      kubeadmConfigSpec:
        clusterConfiguration:
          apiServer: {certSANs: [localhost, 127.0.0.1]}
---
kind: DevMachineTemplate
metadata: {name: in-memory}
spec:
  template:
    spec:
      backend:
        inMemory:
          vm: {provisioning: {startupDuration: 3s, startupJitter: "0.2"}}
          node: {provisioning: {startupDuration: 1s, startupJitter: "0.2"}}
          apiServer: {provisioning: {startupDuration: 1s, startupJitter: "0.2"}}
          etcd: {provisioning: {startupDuration: 1s, startupJitter: "0.2"}}
---
kind: KubeadmConfigTemplate
metadata: {name: in-memory-worker}
spec: {template: {spec: {joinConfiguration: {nodeRegistration: {criSocket: "unix:///var/run/containerd/containerd.sock"}}}}}
---
kind: ClusterClass
metadata: {name: in-memory}
spec:
  controlPlane:
    templateRef: {apiVersion: "{KubeadmControlPlaneTemplate}", kind: KubeadmControlPlaneTemplate, name: in-memory}
    machineInfrastructure:
      templateRef: {apiVersion: "{DevMachineTemplate}", kind: DevMachineTemplate, name: in-memory}
  infrastructure:
    templateRef: {apiVersion: "{DevClusterTemplate}", kind: DevClusterTemplate, name: in-memory}
  workers:
    machineDeployments:
    - class: worker
      bootstrap:
        templateRef: {apiVersion: "{KubeadmConfigTemplate}", kind: KubeadmConfigTemplate, name: in-memory-worker}
      infrastructure:
        templateRef: {apiVersion: "{DevMachineTemplate}", kind: DevMachineTemplate, name: in-memory}
---
kind: Cluster
metadata: {name: demo}
spec:
  clusterNetwork:
    services: {cidrBlocks: [10.128.0.0/12]}
    pods: {cidrBlocks: [192.168.0.0/16]}
    serviceDomain: cluster.local
  topology:
    classRef: {name: in-memory}
    version: v1.36.0
    controlPlane:
      replicas: 1
      metadata: {labels: {LABELS}}
    workers:
      machineDeployments:
      - {class: worker, name: md-0, replicas: 1, metadata: {labels: {LABELS}}}
`

// eventLog records watch events for later assertions.
type eventLog struct {
	mu     sync.Mutex
	events []mgmt.Event
}

func (l *eventLog) add(e mgmt.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) kinds(clusterUUID string) map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for _, e := range l.events {
		if e.ClusterUUID() == clusterUUID {
			out[e.Kind] = true
		}
	}
	return out
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v", what, timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func conditionTrue(obj *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// TestInMemoryClusterLifecycle, on the package's shared management plane
// (etcd, kube-apiserver, Cluster API core, kubeadm bootstrap and control
// plane, CAPD in-memory), creates a ClusterClass cluster with Magnetite's
// own CAs through Magnetite's management client, waits until it is
// Available, reaches its workload API server with a client certificate
// Magnetite signed, then deletes it. It logs how long each step took.
func TestInMemoryClusterLifecycle(t *testing.T) {
	t.Parallel()
	start := time.Now()
	env := testenv.SharedClusterAPI(t)
	t.Logf("management plane ready in %v", time.Since(start).Round(time.Second))
	mc, err := mgmt.NewForConfig(env.Config, mgmt.Options{Kinds: builtin.Kinds(), NamespacePrefix: testenv.NamespacePrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	runInMemoryCluster(t, mc)
}

// runInMemoryCluster is the lifecycle of one in-memory cluster on the
// management cluster mc reaches.
func runInMemoryCluster(t *testing.T, mc *mgmt.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	versions, err := mc.APIVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Cluster", "ClusterClass", "KubeadmControlPlaneTemplate", "DevMachineTemplate", "DevClusterTemplate", "KubeadmConfigTemplate"} {
		if !strings.HasSuffix(versions[kind], "/v1beta2") {
			t.Fatalf("discovery resolved %s to %q; Cluster API %s serves v1beta2", kind, versions[kind], testenv.ClusterAPIVersion)
		}
	}

	owner := mgmt.Owner{ClusterUUID: "1b4e28ba-2fa1-11d2-883f-0016d3cca427", ProjectID: "demo-project"}
	ns, err := mc.EnsureNamespace(ctx, owner.ProjectID)
	if err != nil {
		t.Fatal(err)
	}
	events := &eventLog{}
	if _, err := mc.Watch(ctx, mc.Kinds().Watched(), events.add); err != nil {
		t.Fatal(err)
	}

	// Magnetite's CAs go in first; Cluster API must use them.
	pairs, err := certs.GenerateCluster()
	if err != nil {
		t.Fatal(err)
	}
	var clusterCA certs.KeyPair
	for _, kp := range pairs {
		if kp.Purpose == certs.ClusterCA {
			clusterCA = kp
		}
		if _, err := mc.Apply(ctx, owner, certs.Secret("demo", ns, kp)); err != nil {
			t.Fatal(err)
		}
	}

	doc := inMemoryClass
	for kind, v := range versions {
		doc = strings.ReplaceAll(doc, "{"+kind+"}", v)
	}
	labels := fmt.Sprintf("%q: %q, %q: %q, %q: %q", mgmt.LabelManagedBy, mgmt.ManagedByValue,
		mgmt.LabelClusterUUID, owner.ClusterUUID, mgmt.LabelProjectID, owner.ProjectID)
	doc = strings.ReplaceAll(doc, "{LABELS}", "{"+labels+"}")
	objs, err := testenv.DecodeObjects(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	created := time.Now()
	for _, o := range objs {
		if _, err := mc.Apply(ctx, owner, o); err != nil {
			t.Fatal(err)
		}
	}

	var cluster *unstructured.Unstructured
	took := waitUntil(t, 5*time.Minute, "Cluster demo Available", func() (bool, error) {
		c, err := mc.Get(ctx, "Cluster", ns, "demo")
		if err != nil {
			return false, err
		}
		cluster = c
		return conditionTrue(c, "Available"), nil
	})
	t.Logf("in-memory cluster (1 control plane, 1 worker) Available %v after apply", took.Round(time.Second))
	if !conditionTrue(cluster, "ControlPlaneInitialized") {
		t.Error("Available without ControlPlaneInitialized")
	}

	// The watch saw Magnetite's labels on what Cluster API made from the
	// topology, down to the Machines.
	waitUntil(t, time.Minute, "watch events of every watched kind", func() (bool, error) {
		k := events.kinds(owner.ClusterUUID)
		return k["Cluster"] && k["KubeadmControlPlane"] && k["MachineDeployment"] && k["Machine"], nil
	})

	// Cluster API used Magnetite's CA: its kubeconfig trusts it, and the
	// workload API server's certificate chains to it.
	kcSecret, err := mc.Get(ctx, "Secret", ns, "demo-kubeconfig")
	if err != nil {
		t.Fatalf("Cluster API wrote no kubeconfig: %v", err)
	}
	value, _, _ := unstructured.NestedString(kcSecret.Object, "data", "value")
	kcBytes, _ := base64.StdEncoding.DecodeString(value)
	if !strings.Contains(string(kcBytes), base64.StdEncoding.EncodeToString(clusterCA.Cert)) {
		t.Error("Cluster API's kubeconfig does not carry Magnetite's cluster CA")
	}
	host, _, _ := unstructured.NestedString(cluster.Object, "spec", "controlPlaneEndpoint", "host")
	port, _, _ := unstructured.NestedInt64(cluster.Object, "spec", "controlPlaneEndpoint", "port")
	nodes := kubectlWithSignedCert(t, clusterCA, fmt.Sprintf("https://%s:%d", host, port), "get", "nodes", "-o", "name")
	if n := len(strings.Fields(nodes)); n != 2 {
		t.Errorf("workload cluster lists %d nodes, want 2:\n%s", n, nodes)
	}
	t.Logf("create to usable kubeconfig: %v", time.Since(created).Round(time.Second))

	if _, err := mc.Delete(ctx, "Cluster", ns, "demo"); err != nil {
		t.Fatal(err)
	}
	took = waitUntil(t, 5*time.Minute, "Cluster demo and its Machines gone", func() (bool, error) {
		_, err := mc.Get(ctx, "Cluster", ns, "demo")
		if err == nil {
			return false, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		machines, err := mc.List(ctx, "Machine", ns, mgmt.ClusterSelector(owner.ClusterUUID))
		return len(machines) == 0, err
	})
	t.Logf("deletion took %v", took.Round(time.Second))

	// Secrets Cluster API did not generate outlive the Cluster: whoever
	// deletes a cluster must delete its CAs too.
	for _, p := range certs.Purposes {
		if _, err := mc.Get(ctx, "Secret", ns, certs.SecretName("demo", p)); err != nil {
			t.Errorf("%s: %v (expected to outlive the Cluster)", certs.SecretName("demo", p), err)
		}
	}
}

// kubectlWithSignedCert runs the testbin's kubectl against server with a
// kubeconfig like `openstack coe cluster config` writes: the cluster CA and
// a client certificate signed by Magnetite for CN=admin, O=system:masters.
func kubectlWithSignedCert(t *testing.T, ca certs.KeyPair, server string, args ...string) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := certs.SignClientCSR(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	path := testenv.WriteKubeconfig(t, filepath.Join(t.TempDir(), "config"), &rest.Config{Host: server,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.Cert, CertData: cert, KeyData: keyPEM}}, "", 0o600)
	bin, err := testenv.Testbin()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(bin, "k8s-"+testenv.KubernetesVersion, "kubectl")
	out, err := exec.Command(kubectl, append([]string{"--kubeconfig", path, "--request-timeout=20s"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
