package cli

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestCertificatesWithCLI drives what `openstack coe cluster config` and
// `openstack coe ca show|sign` do against Magnetite: the cluster CA exists
// from the create on, and the client certificate magnumclient asks for is
// signed by it with the subject it asked for.
func TestCertificatesWithCLI(t *testing.T) {
	requireCLI(t) // skips under -short
	t.Parallel()
	c := newCLI(t, startMagnetite(t))
	c.ok(t, "coe", "cluster", "template", "create", "k8s-vm", "--coe", "kubernetes", "--image", "ubuntu-jammy",
		"--external-network", "public", "--flavor", "m1.large")
	c.ok(t, "coe", "cluster", "create", "k1", "--cluster-template", "k8s-vm")

	caShown := c.ok(t, "coe", "ca", "show", "k1")
	ca := firstCert(t, caShown)
	if !ca.IsCA {
		t.Fatalf("coe ca show printed a certificate that is no CA:\n%s", caShown)
	}

	dir := t.TempDir()
	keyPath, csrPath := filepath.Join(dir, "key.pem"), filepath.Join(dir, "csr.pem")
	if out, err := exec.Command("openssl", "req", "-new", "-nodes", "-newkey", "rsa:2048", "-subj", "/CN=alice/O=developers",
		"-keyout", keyPath, "-out", csrPath).CombinedOutput(); err != nil {
		t.Fatalf("openssl req: %v\n%s", err, out)
	}
	signed := firstCert(t, c.ok(t, "coe", "ca", "sign", "k1", csrPath))
	if signed.Subject.CommonName != "alice" || !reflect.DeepEqual(signed.Subject.Organization, []string{"developers"}) {
		t.Errorf("coe ca sign: subject %v, want CN=alice O=developers", signed.Subject)
	}
	if err := signed.CheckSignatureFrom(ca); err != nil {
		t.Errorf("coe ca sign: not signed by the cluster CA: %v", err)
	}

	cfgDir := t.TempDir()
	out := c.ok(t, "coe", "cluster", "config", "k1", "--dir", cfgDir, "--output-certs")
	if !strings.Contains(out, "export KUBECONFIG="+filepath.Join(cfgDir, "config")) {
		t.Errorf("coe cluster config printed %q", out)
	}
	raw, err := os.ReadFile(filepath.Join(cfgDir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	var kc struct {
		Clusters []struct {
			Cluster map[string]string `json:"cluster"`
		} `json:"clusters"`
		Users []struct {
			User map[string]string `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(raw, &kc); err != nil || len(kc.Clusters) != 1 || len(kc.Users) != 1 {
		t.Fatalf("kubeconfig: %v\n%s", err, raw)
	}
	decode := func(field, v string) []byte {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatalf("kubeconfig %s: %v", field, err)
		}
		return b
	}
	if got := firstCert(t, string(decode("certificate-authority-data", kc.Clusters[0].Cluster["certificate-authority-data"]))); !got.Equal(ca) {
		t.Error("the kubeconfig's CA is not the cluster CA")
	}
	client := firstCert(t, string(decode("client-certificate-data", kc.Users[0].User["client-certificate-data"])))
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the kubeconfig's client certificate does not chain to the cluster CA: %v", err)
	}
	// What magnumclient asks for: kubectl then acts as an administrator.
	if client.Subject.CommonName != "admin" || !reflect.DeepEqual(client.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("client certificate subject %v, want CN=admin O=system:masters", client.Subject)
	}
	keyBlock, _ := pem.Decode(decode("client-key-data", kc.Users[0].User["client-key-data"]))
	if keyBlock == nil {
		t.Fatal("kubeconfig has no client key")
	}
	key, err := x509.ParsePKCS1PrivateKey(keyBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&key.PublicKey, client.PublicKey) {
		t.Error("the client key does not belong to the client certificate")
	}
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		if _, err := os.Stat(filepath.Join(cfgDir, f)); err != nil {
			t.Errorf("--output-certs: %v", err)
		}
	}

	stderr := c.fails(t, "coe", "ca", "sign", "k1", keyPath)
	if !strings.Contains(stderr, "Invalid CSR") {
		t.Errorf("signing a private key instead of a CSR printed %q", stderr)
	}
}

func firstCert(t *testing.T, text string) *x509.Certificate {
	t.Helper()
	i := strings.Index(text, "-----BEGIN CERTIFICATE-----")
	if i < 0 {
		t.Fatalf("no PEM certificate in %q", text)
	}
	block, _ := pem.Decode([]byte(text[i:]))
	if block == nil {
		t.Fatalf("no PEM certificate in %q", text)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
