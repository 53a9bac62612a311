// Package testenv runs real Kubernetes parts for tests: etcd and
// kube-apiserver built by hack/build-testbin.sh, on loopback ports, with
// self-signed certificates, stopped when the test ends, and Cluster API's
// managers with their webhooks on top. It also holds what every test
// shares: WaitFor (a condition with a deadline, never a sleep),
// WriteKubeconfig, and DryRunFiles (a server-side dry run of golden files).
//
// # One Cluster API plane for a package's tests
//
// A plane (etcd, kube-apiserver, Cluster API's CRDs and its four managers)
// takes tens of seconds to start, and CAPD's in-memory backend binds fixed
// ports (19000, and 20000 upwards for workload clusters; Cluster API
// v1.14's CAPD has no flag to move them), so only one CAPD runs on a
// machine at a time. Tests therefore share one plane rather than start
// their own. A package adopts it with
//
//	func TestMain(m *testing.M) { testenv.RunMain(m) }
//
// (or code := testenv.Main(m) before its own cleanup and os.Exit(code)),
// and in each test:
//
//	t.Parallel()                            // when the test changes nothing every test sees
//	mgmt := testenv.SharedClusterAPI(t)     // *APIServer: Config, Dynamic, KubeconfigFile...
//	prefix := testenv.NamespacePrefix(t)    // [management] namespace_prefix of the Magnetite it starts
//	ns := mgmt.ProjectNamespace(t)          // a namespace of its own for objects it makes itself
//
// The first SharedClusterAPI call starts the plane (the managers start
// together); Main stops it after the last test. Under hack/test.sh the
// whole run shares one plane that hack/testrun runs, named by
// $MAGNETITE_CLUSTER_API_KUBECONFIG, so packages using planes run at the
// same time; SharedClusterAPI then connects to it and starts nothing.
// A test that stops the API server or needs other managers starts a plane
// of its own (Start, StartClusterAPI) and does not call t.Parallel.
package testenv

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Versions of the parts, matching hack/build-testbin.sh and the client-go
// this module uses.
const (
	KubernetesVersion = "v1.36.3"
	ClusterAPIVersion = "v1.14.2"
)

// Testbin is the folder holding the built parts: $MAGNETITE_TESTBIN, or
// .testbin at the repository root.
func Testbin() (string, error) {
	if d := os.Getenv("MAGNETITE_TESTBIN"); d != "" {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".testbin"), nil
}

// RepoRoot finds the module root from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no go.mod above the working directory")
		}
		dir = parent
	}
}

// ClusterAPICRDs is the folder of Cluster API's CRDs in the testbin
// (core, kubeadm-bootstrap, kubeadm-control-plane, capd).
func ClusterAPICRDs(t TB) string {
	t.Helper()
	bin, err := Testbin()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(bin, "capi-"+ClusterAPIVersion, "crds")
}

// Provider releases whose CRDs test/crds keeps (SOURCES.txt names each
// tag and commit), for InstallProviders and StartGolden.
const (
	// CAPOv014 is CAPO v0.14.7, the newest stable release: it serves its
	// kinds at infrastructure v1beta1 only, as every release from v0.12.
	CAPOv014 = "capo-v0.14.7"
	// CAPOv015 is CAPO v0.15.0-beta.0, the first to serve v1beta2 (and
	// v1beta1).
	CAPOv015 = "capo-v0.15.0-beta.0"
	// CAPM3v112 is CAPM3 v1.12.7: v1beta1 only.
	CAPM3v112 = "capm3-v1.12.7"
	// CAPM3v113 is CAPM3 v1.13.2: v1beta1 and v1beta2.
	CAPM3v113 = "capm3-v1.13.2"
)

// defaultRelease is the release a test that names only the provider
// ("capo", "capm3") gets: what operators run.
var defaultRelease = map[string]string{"capo": CAPOv014, "capm3": CAPM3v112}

// providerLabels are the Cluster API contract labels each release's own
// config/crd/kustomization.yaml puts on its CRDs: which of its versions
// implements which contract. Cluster API reads templates and infrastructure
// objects at the version its contract label names.
var providerLabels = map[string]map[string]string{
	// CAPO tag v0.14.7, config/crd/kustomization.yaml.
	CAPOv014: {"cluster.x-k8s.io/v1beta1": "v1beta1"},
	// CAPO tag v0.15.0-beta.0, config/crd/kustomization.yaml.
	CAPOv015: {"cluster.x-k8s.io/v1beta1": "v1beta1", "cluster.x-k8s.io/v1beta2": "v1beta2"},
	// CAPM3 tag v1.12.7, config/crd/kustomization.yaml.
	CAPM3v112: {"cluster.x-k8s.io/v1beta1": "v1beta1"},
	// CAPM3 tag v1.13.2, config/crd/kustomization.yaml.
	CAPM3v113: {"cluster.x-k8s.io/v1beta1": "v1beta1", "cluster.x-k8s.io/v1beta2": "v1beta2"},
}

// clusterAPILabels are the contract labels of Cluster API's own providers
// (kubeadm bootstrap and control plane, CAPD), all v1beta2 in v1.14.
var clusterAPILabels = map[string]string{"cluster.x-k8s.io/v1beta2": "v1beta2"}

// ProviderRelease is the release of CRDs name stands for: a release itself
// (CAPOv015), or a provider ("capo", "capm3") for its default release.
func ProviderRelease(name string) string {
	if r, ok := defaultRelease[name]; ok {
		return r
	}
	return name
}

// ProviderLabels are the contract labels Cluster API reads on the CRDs of
// the release name stands for (ProviderRelease); none for providers whose
// kinds Cluster API does not read (bmo, ipam-metal3).
func ProviderLabels(name string) map[string]string { return providerLabels[ProviderRelease(name)] }

// ProviderCRDs is the folder of CRDs of a provider whose Go module cannot
// be fetched: a release (CAPOv014, CAPOv015, CAPM3v112, CAPM3v113), a
// provider for its default release ("capo" is CAPO v0.14.7, "capm3" CAPM3
// v1.12.7), bmo or ipam-metal3. It is $MAGNETITE_PROVIDER_CRDS/<release>
// when set, else the copies kept in the repository's test/crds (their
// upstream tags and commits are in test/crds/SOURCES.txt), so that a fresh
// clone anywhere runs the suite.
func ProviderCRDs(t TB, name string) string {
	t.Helper()
	base := os.Getenv("MAGNETITE_PROVIDER_CRDS")
	if base == "" {
		root, err := RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		base = filepath.Join(root, "test", "crds")
	}
	dir := filepath.Join(base, ProviderRelease(name))
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("testenv: provider CRDs %s are missing (%v); set MAGNETITE_PROVIDER_CRDS", dir, err)
	}
	return dir
}

// APIServer is a running kube-apiserver and its etcd.
type APIServer struct {
	// Config reaches the API server as a member of system:masters.
	Config *rest.Config
	// Dir holds certificates, data and the servers' logs.
	Dir string

	procs []*proc
	pki   *pkiFiles
	// apiserver is kube-apiserver's binary and arguments, to start it again
	// after StopAPIServer.
	apiserver []string
	// runWide is set on the plane hack/test.sh runs for every package
	// (SharedClusterAPI connects to it): this binary neither started it
	// nor may stop it.
	runWide bool
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// Start runs etcd and kube-apiserver for the test and stops them at
// cleanup. It skips under -short (the servers take seconds to start and
// need hack/build-testbin.sh) and fails when the binaries are missing.
func Start(t TB) *APIServer {
	t.Helper()
	if _, outsideTests := t.(*PlaneRun); !outsideTests && testing.Short() {
		t.Skip("-short: needs etcd and kube-apiserver from hack/build-testbin.sh; runs in the full suite")
	}
	bin, err := Testbin()
	if err != nil {
		t.Fatal(err)
	}
	k8s := filepath.Join(bin, "k8s-"+KubernetesVersion)
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(k8s, b)); err != nil {
			t.Fatalf("testenv: %s is missing (%v); build it with hack/build-testbin.sh", filepath.Join(k8s, b), err)
		}
	}
	s := &APIServer{Dir: t.TempDir()}
	t.Cleanup(func() { s.stop(t) })
	pki, err := writePKI(filepath.Join(s.Dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	s.pki = pki
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A port found free can be taken before etcd listens on it (another
	// test's plane starting at the same moment): etcd exits, and starts
	// again on other ports.
	var ports []int
	var etcdURL string
	for attempt := 1; ; attempt++ {
		if ports, err = planePorts(3); err != nil {
			t.Fatal(err)
		}
		etcdURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		err = s.startEtcd(ctx, filepath.Join(k8s, "etcd"), etcdURL, fmt.Sprintf("http://127.0.0.1:%d", ports[1]))
		if err == nil {
			break
		}
		if attempt == 3 || !errors.Is(err, errPortTaken) {
			t.Fatalf("%v\n%s", err, s.logTail("etcd"))
		}
	}
	// kube-apiserver's port can be taken the same way: it starts again on
	// another.
	port := ports[2]
	for attempt := 1; ; attempt++ {
		err := s.startAPIServer(ctx, filepath.Join(k8s, "kube-apiserver"), etcdURL, port)
		if err == nil {
			return s
		}
		if attempt == 3 || !errors.Is(err, errPortTaken) {
			t.Fatalf("%v\n%s", err, s.logTail("kube-apiserver"))
		}
		more, err := planePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		port = more[0]
	}
}

// startAPIServer runs kube-apiserver on port with etcd at etcdURL and waits
// until it is ready. It returns errPortTaken when kube-apiserver exited
// because its port was taken, having forgotten that process.
func (s *APIServer) startAPIServer(ctx context.Context, bin, etcdURL string, port int) error {
	pki := s.pki
	host := fmt.Sprintf("127.0.0.1:%d", port)
	s.apiserver = []string{bin,
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(s.Dir, "apiserver-certs"),
		"--tls-cert-file=" + pki.serverCert, "--tls-private-key-file=" + pki.serverKey,
		"--client-ca-file=" + pki.caCert, "--token-auth-file=" + pki.tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://" + host, "--service-account-key-file=" + pki.saPub,
		"--service-account-signing-key-file=" + pki.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount", "--allow-privileged=true",
		// API Priority and Fairness classifies and queues every request
		// and keeps its own FlowSchemas and priority levels; no test
		// relies on it (nothing here reads 429s or the flowcontrol
		// objects), and the plain in-flight limits it falls back to
		// (400 reads, 200 writes at once) are far above what a test
		// sends. Measured with ServerCPULogEnv on
		// TestEveryOSProfileBootsTheControlPlaneClusterAPIWrites, runs
		// interleaved: kube-apiserver and etcd used 27.2 CPU-s on average
		// over six runs instead of 28.7 over eight (each pair of runs
		// next to each other saved 0.4 to 2.8 s).
		"--enable-priority-and-fairness=false"}
	if dir := os.Getenv(AuditDirEnv); dir != "" {
		pol := filepath.Join(s.Dir, "audit-policy.yaml")
		_ = os.WriteFile(pol, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"), 0o600)
		s.apiserver = append(s.apiserver, "--audit-policy-file="+pol,
			"--audit-log-path="+filepath.Join(dir, fmt.Sprintf("audit-%d-%d.log", os.Getpid(), port)), "--audit-log-format=json")
	}
	if err := s.run(s.apiserver[0], "kube-apiserver", s.apiserver[1:]...); err != nil {
		return err
	}
	s.Config = &rest.Config{
		Host:            "https://" + host,
		BearerToken:     pki.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: pki.caPEM},
		QPS:             200, Burst: 400,
		Timeout: 30 * time.Second,
	}
	err := s.waitAPIServer(ctx, "kube-apiserver")
	if errors.Is(err, errPortTaken) {
		s.procs = s.procs[:len(s.procs)-1]
	}
	return err
}

// planePorts picks the ports of etcd (client, peer) and kube-apiserver;
// a test replaces it to hand out a taken port.
var planePorts = freePorts

// startEtcd runs etcd on the given URLs and waits until it is healthy. It
// returns errPortTaken when etcd exited because a port was taken, having
// forgotten that etcd.
func (s *APIServer) startEtcd(ctx context.Context, bin, clientURL, peerURL string) error {
	if err := s.run(bin, "etcd",
		"--name=testenv", "--data-dir="+filepath.Join(s.Dir, "etcd"),
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=testenv="+peerURL, "--unsafe-no-fsync"); err != nil {
		return err
	}
	p := s.procs[len(s.procs)-1]
	healthy := answersOK(http.DefaultClient, clientURL+"/health")
	err := poll(ctx, func() (bool, error) {
		select {
		case <-p.done:
			if strings.Contains(s.logTail("etcd"), "address already in use") {
				return false, fmt.Errorf("testenv: etcd exited: %w", errPortTaken)
			}
			return false, errors.New("testenv: etcd exited")
		default:
		}
		return healthy()
	})
	if err == nil {
		return nil
	}
	if errors.Is(err, errPortTaken) {
		s.procs = s.procs[:len(s.procs)-1]
		_ = os.RemoveAll(filepath.Join(s.Dir, "etcd"))
		return err
	}
	return fmt.Errorf("testenv: etcd did not become healthy: %w", err)
}

// awaitAPIServer waits until kube-apiserver reports ready.
func (s *APIServer) awaitAPIServer(ctx context.Context, t TB) {
	t.Helper()
	if err := s.waitAPIServer(ctx, "kube-apiserver-restarted"); err != nil {
		t.Fatalf("%v\n%s", err, s.logTail("kube-apiserver-restarted"))
	}
}

// waitAPIServer waits until the kube-apiserver last started (logging as
// name) is ready, or reports why not: errPortTaken when it exited because
// its port was taken.
func (s *APIServer) waitAPIServer(ctx context.Context, name string) error {
	p := s.procs[len(s.procs)-1]
	tr, err := rest.TransportFor(s.Config)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	ready := answersOK(hc, s.Config.Host+"/readyz")
	err = poll(ctx, func() (bool, error) {
		select {
		case <-p.done:
			if strings.Contains(s.logTail(name), "address already in use") {
				return false, fmt.Errorf("testenv: %s exited: %w", name, errPortTaken)
			}
			return false, fmt.Errorf("testenv: %s exited", name)
		default:
		}
		return ready()
	})
	if err != nil && !errors.Is(err, errPortTaken) {
		return fmt.Errorf("testenv: %s did not become ready: %w", name, err)
	}
	return err
}

// StopAPIServer stops kube-apiserver alone, leaving etcd and every manager
// running: an outage of the management cluster's API as its clients see it.
func (s *APIServer) StopAPIServer(t TB) {
	t.Helper()
	if s.runWide {
		t.Fatal(errRunWide)
	}
	for i, p := range s.procs {
		if p.name != "kube-apiserver" {
			continue
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		s.procs = append(s.procs[:i], s.procs[i+1:]...)
		return
	}
	t.Fatal("testenv: kube-apiserver is not running")
}

// RestartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same address with the same data, and waits until it is ready.
func (s *APIServer) RestartAPIServer(t TB) {
	t.Helper()
	if s.runWide {
		t.Fatal(errRunWide)
	}
	if err := s.run(s.apiserver[0], "kube-apiserver-restarted", s.apiserver[1:]...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s.awaitAPIServer(ctx, t)
}

// Dynamic returns a dynamic client.
func (s *APIServer) Dynamic(t TB) dynamic.Interface {
	t.Helper()
	dc, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// Mapper returns a REST mapper from fresh discovery (call it after
// installing CRDs).
func (s *APIServer) Mapper(t TB) meta.RESTMapper {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs applies every CustomResourceDefinition in the YAML files
// under dir (recursively), adding labels to each (providers' CRDs need the
// cluster.x-k8s.io/<contract>=<version> labels), and waits until all are
// Established. It returns the CRDs' names.
func (s *APIServer) InstallCRDs(t TB, dir string, labels map[string]string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatalf("testenv: read CRDs from %s: %v", dir, err)
	}
	if len(files) == 0 {
		t.Fatalf("testenv: no CRD files in %s", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	crds := s.Dynamic(t).Resource(crdGVR)
	var names []string
	for _, f := range files {
		objs, err := ReadObjects(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			l := o.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			for k, v := range labels {
				l[k] = v
			}
			o.SetLabels(l)
			if _, err := crds.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "magnetite-testenv", Force: true}); err != nil {
				t.Fatalf("testenv: install CRD %s from %s: %v", o.GetName(), f, err)
			}
			names = append(names, o.GetName())
		}
	}
	for _, n := range names {
		err := poll(ctx, func() (bool, error) {
			crd, err := crds.Get(ctx, n, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("testenv: CRD %s not established: %v", n, err)
		}
	}
	s.waitDiscoverable(ctx, t, crds, names)
	return names
}

// waitDiscoverable waits until discovery lists every served version of the
// CRDs: an Established CRD may still be missing from discovery for a
// moment, and a REST mapper that reads discovery then keeps not knowing
// that version.
func (s *APIServer) waitDiscoverable(ctx context.Context, t TB, crds dynamic.ResourceInterface, names []string) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		crd, err := crds.Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("testenv: read CRD %s: %v", n, err)
		}
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			m, _ := v.(map[string]any)
			if served, _ := m["served"].(bool); !served {
				continue
			}
			gv := group + "/" + fmt.Sprint(m["name"])
			err := poll(ctx, func() (bool, error) {
				list, err := dc.ServerResourcesForGroupVersion(gv)
				if err != nil {
					return false, nil
				}
				for _, r := range list.APIResources {
					if r.Name == plural {
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				t.Fatalf("testenv: %s of CRD %s not in discovery: %v", gv, n, err)
			}
		}
	}
}

// ReadObjects decodes every object of a (multi-document) YAML file.
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeObjects(f)
}

// DecodeObjects decodes a stream of YAML or JSON documents.
func DecodeObjects(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(r), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// answersOK is a poll condition: GET url through c answers 200.
func answersOK(c *http.Client, url string) func() (bool, error) {
	return func() (bool, error) {
		res, err := c.Get(url)
		if err != nil {
			return false, nil
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK, nil
	}
}

// poll checks cond every 50ms (backing off to 1s) until it holds, fails,
// or ctx ends.
func poll(ctx context.Context, cond func() (bool, error)) error {
	wait := 50 * time.Millisecond
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if wait < time.Second {
			wait *= 2
		}
	}
}

func (s *APIServer) run(path, name string, args ...string) error {
	logf, err := os.Create(filepath.Join(s.Dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = processEnv(name)
	// A process group of its own: a test interrupted by ^C does not take
	// the servers down before cleanup stops them in order. A test process
	// that ends without its cleanups (killed, or a test binary's default
	// end on an interrupt) takes them with it: the kernel kills each with
	// SIGKILL, instead of leaving etcds and kube-apiservers of a gigabyte
	// or more running after the run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("testenv: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	started := time.Now()
	go func() {
		_ = cmd.Wait()
		logf.Close()
		logServerCPU(name, cmd.ProcessState, time.Since(started))
		close(p.done)
	}()
	s.procs = append(s.procs, p)
	return nil
}

// AuditDirEnv names a folder where each kube-apiserver this package starts
// writes an audit log of every request's metadata (user, user agent, verb,
// resource; audit-<test process>-<port>.log, JSON lines), to read who keeps
// a plane busy: a plane's CPU follows the requests its clients send.
const AuditDirEnv = "MAGNETITE_TESTENV_AUDIT_DIR"

// ServerCPULogEnv names a file each server this package starts (etcd,
// kube-apiserver, the Cluster API managers) appends a line to when it
// exits: its name, user and system CPU seconds, its peak resident memory
// in MiB, the seconds it ran, and the test binary that started it
// (cli.test, say). The suite runs on two shared cores, so what a flag of
// the servers saves is read in CPU seconds, per server, not in a test's
// wall time; the memory says what a saving bought with memory (a higher
// GOGC, say) costs; the seconds and binary say which package's planes
// cost what, and how much of it they spent idle.
const ServerCPULogEnv = "MAGNETITE_TESTENV_CPU_LOG"

func logServerCPU(name string, ps *os.ProcessState, ran time.Duration) {
	path := os.Getenv(ServerCPULogEnv)
	if path == "" || ps == nil {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	var peakMiB int64
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		peakMiB = ru.Maxrss / 1024 // kilobytes on Linux
	}
	_, _ = fmt.Fprintf(f, "%s\t%.2f\t%.2f\t%d\t%.1f\t%s\n", name, ps.UserTime().Seconds(), ps.SystemTime().Seconds(), peakMiB, ran.Seconds(), filepath.Base(os.Args[0]))
}

// stop ends the API server before etcd, each with SIGTERM and, if it does
// not exit within ten seconds, SIGKILL.
func (s *APIServer) stop(t TB) {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(10 * time.Second)
		select {
		case <-p.done:
		case <-timer.C:
			t.Logf("testenv: %s did not stop on SIGTERM; killing it", p.name)
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		timer.Stop()
	}
	if t.Failed() {
		for _, p := range s.procs {
			t.Logf("%s", s.logTail(p.name))
		}
	}
}

func (s *APIServer) logTail(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, name+".log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return "--- last lines of " + name + ".log\n" + strings.Join(lines, "\n")
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

type pkiFiles struct {
	caCert, serverCert, serverKey, saKey, saPub, tokens string
	caPEM                                               []byte
	token                                               string
	ca                                                  *x509.Certificate
	caKey                                               *ecdsa.PrivateKey
}

// writePKI makes a CA, a serving certificate for 127.0.0.1 and localhost,
// a service-account key pair and a token of a system:masters user.
func writePKI(dir string) (*pkiFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pkiFiles{
		caCert: filepath.Join(dir, "ca.crt"), serverCert: filepath.Join(dir, "apiserver.crt"),
		serverKey: filepath.Join(dir, "apiserver.key"), saKey: filepath.Join(dir, "sa.key"),
		saPub: filepath.Join(dir, "sa.pub"), tokens: filepath.Join(dir, "tokens.csv"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "magnetite-testenv-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	srvCert, srvKeyPEM, err := servingCert(ca, caKey, "kube-apiserver")
	if err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	p.token = hex.EncodeToString(tok)
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	p.ca, p.caKey = ca, caKey
	files := map[string][]byte{
		p.caCert:     p.caPEM,
		p.serverCert: srvCert,
		p.serverKey:  srvKeyPEM,
		p.saKey:      pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		p.saPub:      pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
		p.tokens:     []byte(p.token + ",testenv-admin,testenv-admin,system:masters\n"),
	}
	for path, b := range files {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// servingCert issues a certificate for 127.0.0.1 and localhost signed by
// the test CA, PEM-encoded with its key.
func servingCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string) (cert, key []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// DryRunApply server-side applies obj with dryRun=All as field manager
// "magnetite" (forcing conflicts), the way Magnetite applies for real, and
// with strict field validation, as kubectl apply --dry-run=server checks:
// a field the served version's schema does not know fails rather than
// being dropped silently.
func DryRunApply(ctx context.Context, dc dynamic.Interface, mapper meta.RESTMapper, obj *unstructured.Unstructured) error {
	_, err := serverSideApply(ctx, dc, mapper, obj, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
	return err
}

// ServerSideApply applies obj as field manager "magnetite", forcing
// conflicts, with dryRun=All when dryRun is set.
func ServerSideApply(ctx context.Context, dc dynamic.Interface, mapper meta.RESTMapper, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	var opts metav1.PatchOptions
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return serverSideApply(ctx, dc, mapper, obj, opts)
}

func serverSideApply(ctx context.Context, dc dynamic.Interface, mapper meta.RESTMapper, obj *unstructured.Unstructured, opts metav1.PatchOptions) (*unstructured.Unstructured, error) {
	gvk := obj.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gvk, err)
	}
	var ri dynamic.ResourceInterface = dc.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = dc.Resource(m.Resource).Namespace(obj.GetNamespace())
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	force := true
	opts.FieldManager, opts.Force = "magnetite", &force
	return ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, opts)
}
