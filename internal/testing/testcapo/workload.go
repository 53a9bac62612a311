package testcapo

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

var (
	nodesGVR      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// workloads plays, for every cluster, what its machines do once CAPO has
// made their servers: the first control-plane server's kubeadm init brings
// up the cluster's API server behind the control plane endpoint, and every
// server's kubelet registers its Node with the server's provider ID.
//
// The API servers are one real kube-apiserver shared by the clusters, each
// reached through a front door of its own on 127.0.0.1 that serves a
// certificate signed by the cluster's CA (the <cluster>-ca Secret) and
// takes only client certificates that CA signed, as a kubeadm-made API
// server does. The front door opens when the cluster's first control-plane
// server is ACTIVE, so a cluster's control plane initialises only once its
// own server is up. No etcd member and no kubelet answer behind it: Cluster
// API's etcd and static-pod health checks of the control plane cannot pass,
// so clusters stop at provisioned machines with nodes.
type workloads struct {
	backend *rest.Config
	dc      dynamic.Interface

	mu    sync.Mutex
	ports map[string]int          // endpoint port by cluster (namespace/name)
	doors map[string]*http.Server // open front doors by cluster
	nodes map[string]bool         // registered nodes by server ID
}

// ServeWorkloads makes the stand-in play the machines' kubeadm and kubelets
// against backend (see workloads); without it clusters stop at the control
// plane's servers, as no API server answers at their endpoint.
func (c *Controller) ServeWorkloads(t testing.TB, backend *testenv.APIServer) {
	w := &workloads{backend: backend.Config, dc: backend.Dynamic(t),
		ports: map[string]int{}, doors: map[string]*http.Server{}, nodes: map[string]bool{}}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, d := range w.doors {
			_ = d.Close()
		}
	})
	c.mu.Lock()
	c.workloads = w
	c.mu.Unlock()
}

func (c *Controller) workloadsOf() *workloads {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.workloads
}

// endpointPort is the port the cluster's front door will listen on: chosen
// when CAPO sets the control plane endpoint, bound at kubeadm init.
func (w *workloads) endpointPort(key string) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.ports[key]; ok {
		return p, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	w.ports[key] = p
	return p, nil
}

// close shuts the cluster's front door, as deleting its servers does.
func (w *workloads) close(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d, ok := w.doors[key]; ok {
		_ = d.Close()
		delete(w.doors, key)
	}
}

// kubelet does, for a machine whose server is ACTIVE, what kubeadm and the
// kubelet on it would: the first control-plane server initialises the
// cluster (front door, kubeadm-config), then every server registers its
// Node once the cluster's API server answers.
func (c *Controller) kubelet(ctx context.Context, osc, o *unstructured.Unstructured) {
	w := c.workloadsOf()
	if w == nil {
		return
	}
	id, _, _ := unstructured.NestedString(o.Object, "status", "instanceID")
	if prov, _, _ := unstructured.NestedBool(o.Object, "status", "initialization", "provisioned"); !prov || id == "" {
		return
	}
	key := osc.GetNamespace() + "/" + osc.GetName()
	_, controlPlane := o.GetLabels()[labelCPMember]
	w.mu.Lock()
	_, open := w.doors[key]
	registered := w.nodes[id]
	w.mu.Unlock()
	if !open && controlPlane {
		if err := w.kubeadmInit(ctx, c.dc, osc, key); err != nil {
			c.t.Logf("testcapo: kubeadm init of %s: %v", key, err)
			return
		}
		open = true
	}
	if !open || registered {
		return
	}
	if err := w.registerNode(ctx, o, id, controlPlane); err != nil {
		c.t.Logf("testcapo: register node %s: %v", o.GetName(), err)
		return
	}
	w.mu.Lock()
	w.nodes[id] = true
	w.mu.Unlock()
}

// kubeadmInit opens the cluster's front door with a serving certificate
// from its CA and writes the kubeadm-config ConfigMap, Cluster API's sign
// that kubeadm init finished.
func (w *workloads) kubeadmInit(ctx context.Context, mgmt dynamic.Interface, osc *unstructured.Unstructured, key string) error {
	port, err := w.endpointPort(key)
	if err != nil {
		return err
	}
	cluster := osc.GetLabels()[labelCluster]
	s, err := mgmt.Resource(secretsGVR).Namespace(osc.GetNamespace()).Get(ctx, cluster+"-ca", metav1.GetOptions{})
	if err != nil {
		return err
	}
	caPEM, err := secretBytes(s, "tls.crt")
	if err != nil {
		return err
	}
	caKeyPEM, err := secretBytes(s, "tls.key")
	if err != nil {
		return err
	}
	serving, err := servingCertificate(caPEM, caKeyPEM)
	if err != nil {
		return err
	}
	clients := x509.NewCertPool()
	clients.AppendCertsFromPEM(caPEM)
	ln, err := tls.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{
		Certificates: []tls.Certificate{serving}, ClientCAs: clients, ClientAuth: tls.RequireAndVerifyClientCert,
		NextProtos: []string{"http/1.1"}})
	if err != nil {
		return err
	}
	target, err := url.Parse(w.backend.Host)
	if err != nil {
		ln.Close()
		return err
	}
	// HTTP/1.1 to the API server too, so that upgrades (Cluster API's
	// port-forwards to etcd pods) reach it and get its answer: there is
	// no such pod.
	backend := rest.CopyConfig(w.backend)
	backend.NextProtos = []string{"http/1.1"}
	transport, err := rest.TransportFor(backend)
	if err != nil {
		ln.Close()
		return err
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	proxy.FlushInterval = -1 // watches stream
	door := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = door.Serve(ln) }()
	w.mu.Lock()
	w.doors[key] = door
	w.mu.Unlock()

	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "kubeadm-config", "namespace": "kube-system"},
		"data":     map[string]any{"ClusterConfiguration": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"}}}
	if _, err := w.dc.Resource(configMapsGVR).Namespace("kube-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// registerNode creates the server's Node, Ready, with the provider ID and
// addresses CAPO reported, as the kubelet registers it.
func (w *workloads) registerNode(ctx context.Context, o *unstructured.Unstructured, id string, controlPlane bool) error {
	labels := map[string]any{"kubernetes.io/hostname": o.GetName()}
	if controlPlane {
		labels["node-role.kubernetes.io/control-plane"] = ""
	}
	node := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": o.GetName(), "labels": labels},
		"spec":     map[string]any{"providerID": "openstack:///" + id}}}
	created, err := w.dc.Resource(nodesGVR).Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = w.dc.Resource(nodesGVR).Get(ctx, o.GetName(), metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	var addrs []any
	list, _, _ := unstructured.NestedSlice(o.Object, "status", "addresses")
	for _, a := range list {
		m := a.(map[string]any)
		if m["type"] == "InternalIP" {
			addrs = append(addrs, map[string]any{"type": "InternalIP", "address": m["address"]})
		}
	}
	addrs = append(addrs, map[string]any{"type": "Hostname", "address": o.GetName()})
	now := time.Now().UTC().Format(time.RFC3339)
	created.Object["status"] = map[string]any{
		"addresses": addrs,
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "KubeletReady",
			"message": "kubelet is posting ready status", "lastHeartbeatTime": now, "lastTransitionTime": now}},
	}
	_, err = w.dc.Resource(nodesGVR).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

func secretBytes(s *unstructured.Unstructured, key string) ([]byte, error) {
	enc, _, _ := unstructured.NestedString(s.Object, "data", key)
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("secret %s has no %s", s.GetName(), key)
	}
	return b, nil
}

// servingCertificate is kubeadm's apiserver certificate, for 127.0.0.1,
// signed by the cluster's CA.
func servingCertificate(caPEM, caKeyPEM []byte) (tls.Certificate, error) {
	ca, err := tls.X509KeyPair(caPEM, caKeyPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost", "kubernetes", "kubernetes.default"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey.(crypto.Signer))
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
