package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/client"
	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// kubeconfigDoc is the part of a kubeconfig the test reads.
type kubeconfigDoc struct {
	Clusters []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server string `json:"server"`
			CAData []byte `json:"certificate-authority-data"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			CertData []byte `json:"client-certificate-data"`
			KeyData  []byte `json:"client-key-data"`
		} `json:"user"`
	} `json:"users"`
	Contexts []struct {
		Name    string            `json:"name"`
		Context map[string]string `json:"context"`
	} `json:"contexts"`
	CurrentContext string `json:"current-context"`
}

func TestClusterConfigWritesAKubeconfigSignedByTheClusterCA(t *testing.T) {
	srv := testapi.Start(t)
	createTemplate(t, srv, "k8s")
	mustCLI(t, srv, "cluster", "create", "c1", "--cluster-template", "k8s")
	dir := filepath.Join(t.TempDir(), "kube")

	r := cli(t, srv, "cluster", "config", "c1", "--dir", dir)
	if r.err == nil || !strings.Contains(r.err.Error(), "cluster c1 has no API address yet (status CREATE_IN_PROGRESS)") {
		t.Fatalf("config before the API address is known: %v", r.err)
	}
	ctx := context.Background()
	c, err := srv.Store.GetCluster(ctx, store.Scope{AllProjects: true}, "c1")
	if err != nil {
		t.Fatal(err)
	}
	addr := "https://192.0.2.10:6443"
	c.APIAddress = &addr
	if err := srv.Store.ApplyClusterChange(ctx, store.ClusterChange{Cluster: c}); err != nil {
		t.Fatal(err)
	}

	out := mustCLI(t, srv, "cluster", "config", "c1", "--dir", dir)
	if want := "export KUBECONFIG=" + filepath.Join(dir, "config") + "\n"; out != want {
		t.Fatalf("config printed %q, want %q", out, want)
	}
	path := filepath.Join(dir, "config")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig %v mode %v; want 0600", err, st.Mode())
	}
	raw, _ := os.ReadFile(path)
	asJSON, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	var kc kubeconfigDoc
	if err := json.Unmarshal(asJSON, &kc); err != nil {
		t.Fatal(err)
	}
	if len(kc.Clusters) != 1 || kc.Clusters[0].Name != "c1" || kc.Clusters[0].Cluster.Server != addr ||
		kc.CurrentContext != "default" || kc.Contexts[0].Context["cluster"] != "c1" || kc.Contexts[0].Context["user"] != "admin" {
		t.Fatalf("kubeconfig:\n%s", raw)
	}
	// The CA is the cluster's, and it signed the client certificate for the
	// key next to it, as a cluster administrator.
	api, err := client.New(srv.URL, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	served, err := api.ClusterCA(ctx, c.UUID)
	if err != nil {
		t.Fatal(err)
	}
	caCert := parseCert(t, kc.Clusters[0].Cluster.CAData)
	if !caCert.Equal(parseCert(t, []byte(served.PEM))) {
		t.Fatal("the kubeconfig's CA is not the one GET /v1/certificates/{cluster} serves")
	}
	client := parseCert(t, kc.Users[0].User.CertData)
	if err := client.CheckSignatureFrom(caCert); err != nil {
		t.Fatalf("client certificate not signed by the kubeconfig's CA: %v", err)
	}
	if client.Subject.CommonName != "admin" || len(client.Subject.Organization) != 1 || client.Subject.Organization[0] != "system:masters" {
		t.Fatalf("client subject %v", client.Subject)
	}
	keyBlock, _ := pem.Decode(kc.Users[0].User.KeyData)
	key, err := x509.ParsePKCS1PrivateKey(keyBlock.Bytes)
	if err != nil || !key.PublicKey.Equal(client.PublicKey) {
		t.Fatalf("the key does not belong to the certificate: %v", err)
	}

	// An existing kubeconfig is kept unless forced.
	r = cli(t, srv, "cluster", "config", "c1", "--dir", dir)
	if r.err == nil || !strings.Contains(r.err.Error(), "exists; pass --force to overwrite it") {
		t.Fatalf("second config without --force: %v", r.err)
	}
	mustCLI(t, srv, "cluster", "config", "c1", "--dir", dir, "--force", "--output-certs")
	for _, f := range []string{"config", "ca.pem", "cert.pem", "key.pem"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v (want mode 0600)", f, err)
		}
	}
	caPEM, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if !parseCert(t, caPEM).Equal(caCert) {
		t.Error("ca.pem is not the CA the first kubeconfig carried")
	}
}

func parseCert(t *testing.T, p []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatalf("not PEM: %q", p)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
