package testenv

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Cluster API managers built by hack/build-testbin.sh, with the webhook
// manifest each one serves.
const (
	CoreManager                = "capi-manager"
	KubeadmBootstrapManager    = "kubeadm-bootstrap-manager"
	KubeadmControlPlaneManager = "kubeadm-control-plane-manager"
	InMemoryManager            = "capd-manager"
)

var webhookManifest = map[string]string{
	CoreManager:                "core.yaml",
	KubeadmBootstrapManager:    "kubeadm-bootstrap.yaml",
	KubeadmControlPlaneManager: "kubeadm-control-plane.yaml",
	InMemoryManager:            "capd.yaml",
}

// InstallClusterAPI installs the CRDs of Cluster API's core, kubeadm
// bootstrap and control plane providers and the in-memory provider, with
// the contract labels providers need.
func (s *APIServer) InstallClusterAPI(t TB) {
	t.Helper()
	crds := ClusterAPICRDs(t)
	s.InstallCRDs(t, filepath.Join(crds, "core"), nil)
	for _, p := range []string{"kubeadm-bootstrap", "kubeadm-control-plane", "capd"} {
		s.InstallCRDs(t, filepath.Join(crds, p), clusterAPILabels)
	}
}

// InstallProviders installs the CRDs of the named providers (ProviderCRDs:
// a release such as CAPOv015, "capo" or "capm3" for their default release,
// "bmo", "ipam-metal3"), each with the contract labels its release's own
// kustomization sets (ProviderLabels).
func (s *APIServer) InstallProviders(t TB, names ...string) {
	t.Helper()
	for _, name := range names {
		s.InstallCRDs(t, ProviderCRDs(t, name), ProviderLabels(name))
	}
}

// CreateNamespace creates the namespace name.
func (s *APIServer) CreateNamespace(t TB, name string) {
	t.Helper()
	if err := s.createNamespace(context.Background(), name); err != nil {
		t.Fatal(err)
	}
}

func (s *APIServer) createNamespace(ctx context.Context, name string) error {
	dc, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		return err
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	_, err = dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{})
	return err
}

// GoldenNamespace is the namespace of the drivers' golden renders.
const GoldenNamespace = "magnetite-system"

// StartGolden runs an API server that a driver's golden renders apply to:
// Cluster API's CRDs (InstallClusterAPI), the named providers' CRDs
// (InstallProviders), the given managers with their webhooks (none for a
// schema-only dry run) and GoldenNamespace. It returns a dynamic client
// and a REST mapper that knows the CRDs.
func StartGolden(t TB, providers []string, managers ...string) (*APIServer, dynamic.Interface, meta.RESTMapper) {
	t.Helper()
	s := Start(t)
	s.InstallClusterAPI(t)
	s.InstallProviders(t, providers...)
	if len(managers) > 0 {
		s.StartManagers(t, managers...)
	}
	s.CreateNamespace(t, GoldenNamespace)
	return s, s.Dynamic(t), s.Mapper(t)
}

// StartManagers runs Cluster API managers against the API server with
// their webhooks registered (served on loopback with a certificate of the
// test CA) and the ClusterTopology and KubeadmBootstrapFormatIgnition
// feature gates on, and waits until each reports ready. The managers start
// together and are awaited together: each takes seconds to build its caches
// and most of that is waiting, so a plane is ready in the time of its
// slowest manager rather than the sum. They stop at cleanup, before the API
// server.
func (s *APIServer) StartManagers(t TB, managers ...string) {
	t.Helper()
	if s.runWide {
		t.Fatal(errRunWide)
	}
	if _, runWide := t.(*PlaneRun); !runWide && slices.Contains(managers, InMemoryManager) {
		NeedsOwnCAPD(t)
	}
	bin, err := Testbin()
	if err != nil {
		t.Fatal(err)
	}
	capiDir := filepath.Join(bin, "capi-"+ClusterAPIVersion)
	kubeconfig := WriteKubeconfig(t, filepath.Join(s.Dir, "kubeconfig"), s.Config, "", 0o600)
	// launch starts manager m on ports free a moment ago.
	launch := func(m string) startedManager {
		manifest, ok := webhookManifest[m]
		if !ok {
			t.Fatalf("testenv: unknown manager %s", m)
		}
		certDir, err := s.writeServingCert(m)
		if err != nil {
			t.Fatal(err)
		}
		ports, err := managerPorts(3)
		if err != nil {
			t.Fatal(err)
		}
		start := func() error {
			return s.run(filepath.Join(capiDir, m), m,
				"--kubeconfig="+kubeconfig, "--leader-elect=false",
				"--webhook-cert-dir="+certDir, fmt.Sprintf("--webhook-port=%d", ports[0]),
				fmt.Sprintf("--health-addr=127.0.0.1:%d", ports[1]),
				fmt.Sprintf("--diagnostics-address=127.0.0.1:%d", ports[2]), "--insecure-diagnostics",
				"--feature-gates=ClusterTopology=true,KubeadmBootstrapFormatIgnition=true")
		}
		if m == InMemoryManager {
			s.holdInMemoryLock(t, start)
		} else if err := start(); err != nil {
			t.Fatal(err)
		}
		return startedManager{m, filepath.Join(capiDir, "webhooks", manifest), ports[0], ports[1], ports[2], s.procs[len(s.procs)-1]}
	}
	var all []startedManager
	for _, m := range managers {
		all = append(all, launch(m))
	}
	dc := s.Dynamic(t)
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, m := range all {
		wg.Go(func() { errs[i] = s.awaitManager(dc, m) })
	}
	wg.Wait()
	for i, err := range errs {
		// Another process took a port between freePorts and the
		// manager's listen (tests start planes side by side): start it
		// again on other ports. CAPD holds the machine's one in-memory
		// lock from its first start, and its backend's ports are fixed.
		for try := 0; errors.Is(err, errPortTaken) && all[i].name != InMemoryManager && try < 3; try++ {
			all[i] = launch(all[i].name)
			err = s.awaitManager(dc, all[i])
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, s.logTail(all[i].name))
		}
	}
}

// managerPorts picks the ports a manager listens on; a test of the retry
// hands out a taken one.
var managerPorts = freePorts

// errPortTaken: a manager exited because a port it was given was taken.
var errPortTaken = errors.New("a port given to it was taken before it listened")

// writeServingCert writes a webhook serving certificate of the test CA for
// manager m and returns the folder holding it.
func (s *APIServer) writeServingCert(m string) (string, error) {
	certDir := filepath.Join(s.Dir, m+"-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return "", err
	}
	crt, key, err := servingCert(s.pki.ca, s.pki.caKey, m)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.crt"), crt, 0o600); err != nil {
		return "", err
	}
	return certDir, os.WriteFile(filepath.Join(certDir, "tls.key"), key, 0o600)
}

// startedManager is a Cluster API manager StartManagers started: its
// name, its webhook manifest, the ports it was given and its process.
type startedManager struct {
	name, manifest                           string
	webhookPort, healthPort, diagnosticsPort int
	proc                                     *proc
}

// awaitManager registers a started manager's webhooks and waits until it
// reports ready and its webhook and diagnostics servers answer. The time
// allowed counts from the manager's start, not from StartManagers' call:
// CAPD may first have waited for its machine-wide lock.
//
// Ready is not enough: controller-runtime opens the health port when the
// manager is made (manager.New) and the metrics (diagnostics) listener
// only as it starts, beside the webhook server (the metrics server's Start,
// pkg/metrics/server/server.go), so a manager whose diagnostics port
// was taken can answer /readyz and then exit on "address already in use"
// (seen in a gate run: StartManagers returned a manager that had gone).
func (s *APIServer) awaitManager(dc dynamic.Interface, m startedManager) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := s.registerWebhooks(ctx, dc, m.name, m.manifest, m.webhookPort); err != nil {
		return err
	}
	health := fmt.Sprintf("http://127.0.0.1:%d/readyz", m.healthPort)
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", m.diagnosticsPort)
	webhook := fmt.Sprintf("https://127.0.0.1:%d/", m.webhookPort)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := poll(ctx, func() (bool, error) {
		select {
		case <-m.proc.done:
			if strings.Contains(s.logTail(m.name), "address already in use") {
				return false, fmt.Errorf("testenv: %s exited: %w", m.name, errPortTaken)
			}
			return false, fmt.Errorf("testenv: %s exited", m.name)
		default:
		}
		for _, u := range []string{health, metrics, webhook} {
			res, err := hc.Get(u)
			if err != nil {
				return false, nil
			}
			res.Body.Close()
			if u != webhook && res.StatusCode != http.StatusOK {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return fmt.Errorf("testenv: %s did not become ready: %w", m.name, err)
	}
	return nil
}

// registerWebhooks applies a manager's webhook configurations with every
// service reference turned into a loopback URL and the test CA as bundle.
func (s *APIServer) registerWebhooks(ctx context.Context, dc dynamic.Interface, manager, manifest string, port int) error {
	objs, err := ReadObjects(manifest)
	if err != nil {
		return err
	}
	for _, o := range objs {
		res := map[string]string{
			"MutatingWebhookConfiguration":   "mutatingwebhookconfigurations",
			"ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
		}[o.GetKind()]
		if res == "" {
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			hm := h.(map[string]any)
			cc, _ := hm["clientConfig"].(map[string]any)
			svc, _ := cc["service"].(map[string]any)
			path, _ := svc["path"].(string)
			hm["clientConfig"] = map[string]any{
				"url":      fmt.Sprintf("https://127.0.0.1:%d%s", port, path),
				"caBundle": base64.StdEncoding.EncodeToString(s.pki.caPEM),
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
			return err
		}
		o.SetName(manager + "-" + strings.TrimSuffix(o.GetName(), "-configuration"))
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: res}
		if _, err := dc.Resource(gvr).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "magnetite-testenv", Force: true}); err != nil {
			return fmt.Errorf("testenv: register %s webhooks: %w", manager, err)
		}
	}
	return nil
}
