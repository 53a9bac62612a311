package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func clusterPairs(t *testing.T) map[Purpose]KeyPair {
	t.Helper()
	pairs, err := GenerateCluster()
	if err != nil {
		t.Fatal(err)
	}
	out := map[Purpose]KeyPair{}
	for _, kp := range pairs {
		out[kp.Purpose] = kp
	}
	if len(out) != 4 {
		t.Fatalf("GenerateCluster made %d distinct key pairs, want 4", len(out))
	}
	return out
}

func TestGeneratedCAsAreSelfSignedCAs(t *testing.T) {
	pairs := clusterPairs(t)
	seen := map[string]bool{}
	for _, p := range []Purpose{ClusterCA, EtcdCA, FrontProxyCA} {
		cert, key, err := ParseCA(pairs[p])
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
			t.Errorf("%s: IsCA=%v usage=%v, want a signing CA", p, cert.IsCA, cert.KeyUsage)
		}
		if err := cert.CheckSignatureFrom(cert); err != nil {
			t.Errorf("%s: not self-signed: %v", p, err)
		}
		if !reflect.DeepEqual(key.Public(), cert.PublicKey) {
			t.Errorf("%s: key does not match certificate", p)
		}
		if d := time.Until(cert.NotAfter); d < CAValidity-time.Hour {
			t.Errorf("%s: valid for %v only", p, d)
		}
		if seen[string(cert.Raw)] {
			t.Errorf("%s: same certificate as another CA", p)
		}
		seen[string(cert.Raw)] = true
	}
	// Cluster API keeps the service-account public key under tls.crt.
	sa := pairs[ServiceAccount]
	block, _ := pem.Decode(sa.Cert)
	if block == nil || block.Type != "PUBLIC KEY" {
		t.Fatalf("service-account tls.crt is not a PEM public key: %q", sa.Cert)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := parsePrivateKey(sa.Key)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(priv.Public(), pub) {
		t.Error("service-account public key does not match its private key")
	}
}

func TestSecretsHaveClusterAPINamesAndShape(t *testing.T) {
	pairs := clusterPairs(t)
	for p, suffix := range map[Purpose]string{ClusterCA: "-ca", EtcdCA: "-etcd", FrontProxyCA: "-proxy", ServiceAccount: "-sa"} {
		s := Secret("demo-1b4e28ba", "magnetite-p1", pairs[p])
		if s.GetName() != "demo-1b4e28ba"+suffix || s.GetNamespace() != "magnetite-p1" {
			t.Errorf("%s: secret %s/%s", p, s.GetNamespace(), s.GetName())
		}
		if s.Object["type"] != "cluster.x-k8s.io/secret" || s.GetLabels()["cluster.x-k8s.io/cluster-name"] != "demo-1b4e28ba" {
			t.Errorf("%s: type %v labels %v", p, s.Object["type"], s.GetLabels())
		}
		data := s.Object["data"].(map[string]any)
		crt, _ := base64.StdEncoding.DecodeString(data["tls.crt"].(string))
		key, _ := base64.StdEncoding.DecodeString(data["tls.key"].(string))
		if string(crt) != string(pairs[p].Cert) || string(key) != string(pairs[p].Key) {
			t.Errorf("%s: data does not round-trip", p)
		}
	}
}

// opensslCSR makes a key and CSR the way an operator would by hand.
func opensslCSR(t *testing.T, subject string, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatalf("openssl is needed to make a real CSR: %v", err)
	}
	dir := t.TempDir()
	cmdArgs := append([]string{"req", "-new", "-nodes", "-subj", subject,
		"-keyout", filepath.Join(dir, "key.pem"), "-out", filepath.Join(dir, "csr.pem")}, args...)
	out, err := exec.Command("openssl", cmdArgs...).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl req: %v\n%s", err, out)
	}
	csr, err := os.ReadFile(filepath.Join(dir, "csr.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return csr
}

func verifyClientCert(t *testing.T, ca KeyPair, certPEM []byte) *x509.Certificate {
	t.Helper()
	caCert, _, err := ParseCA(ca)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("signed result is not a PEM certificate: %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("signed certificate does not chain to the cluster CA for client auth: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a client certificate also verifies for server auth")
	}
	if cert.IsCA {
		t.Error("signed certificate is a CA")
	}
	return cert
}

func TestSignsOpenSSLCSRKeepingCNAndOrganization(t *testing.T) {
	pairs := clusterPairs(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"rsa", []string{"-newkey", "rsa:2048"}},
		{"ecdsa", []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"}},
		{"ed25519", []string{"-newkey", "ed25519"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csr := opensslCSR(t, "/CN=admin/O=system:masters", tc.args...)
			signed, err := SignClientCSR(pairs[ClusterCA], csr, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			cert := verifyClientCert(t, pairs[ClusterCA], signed)
			if cert.Subject.CommonName != "admin" || !reflect.DeepEqual(cert.Subject.Organization, []string{"system:masters"}) {
				t.Errorf("subject %v, want CN=admin O=system:masters", cert.Subject)
			}
			if d := time.Until(cert.NotAfter); d < ClientCertValidity-time.Hour || d > ClientCertValidity {
				t.Errorf("valid for %v", d)
			}
			// openssl reads it back as issued by the CA too.
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "ca.pem"), pairs[ClusterCA].Cert, 0o600)
			os.WriteFile(filepath.Join(dir, "cert.pem"), signed, 0o600)
			if out, err := exec.Command("openssl", "verify", "-purpose", "sslclient", "-CAfile", filepath.Join(dir, "ca.pem"),
				filepath.Join(dir, "cert.pem")).CombinedOutput(); err != nil {
				t.Errorf("openssl verify: %v\n%s", err, out)
			}
		})
	}
}

func TestSignedByEtcdCADoesNotChainToClusterCA(t *testing.T) {
	pairs := clusterPairs(t)
	signed, err := SignClientCSR(pairs[EtcdCA], opensslCSR(t, "/CN=etcd-client", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	verifyClientCert(t, pairs[EtcdCA], signed)
	caCert, _, _ := ParseCA(pairs[ClusterCA])
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	block, _ := pem.Decode(signed)
	cert, _ := x509.ParseCertificate(block.Bytes)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
		t.Error("certificate signed by the etcd CA verifies against the cluster CA")
	}
}

func csrFromKey(t *testing.T, key crypto.Signer, subject pkix.Name) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestRejectsBadCSRs(t *testing.T) {
	pairs := clusterPairs(t)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	weak, _ := rsa.GenerateKey(rand.Reader, 1024)
	good := csrFromKey(t, ec, pkix.Name{CommonName: "admin"})
	block, _ := pem.Decode(good)
	tampered := append([]byte(nil), block.Bytes...)
	tampered[len(tampered)-3] ^= 0xff // inside the signature
	for _, tc := range []struct {
		name, csr, mentions string
	}{
		{"empty", "", "PEM block"},
		{"not PEM", "hello", "PEM block"},
		{"a certificate", string(pairs[ClusterCA].Cert), `"CERTIFICATE"`},
		{"garbage DER", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte{1, 2, 3}})), "invalid certificate signing request"},
		{"bad signature", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered})), "signature"},
		{"no CN", string(csrFromKey(t, ec, pkix.Name{Organization: []string{"system:masters"}})), "common name"},
		{"weak RSA", string(csrFromKey(t, weak, pkix.Name{CommonName: "admin"})), "1024 bits"},
	} {
		_, err := SignClientCSR(pairs[ClusterCA], []byte(tc.csr), time.Now())
		if !errors.Is(err, ErrInvalidCSR) || !strings.Contains(err.Error(), tc.mentions) {
			t.Errorf("%s: err = %v, want ErrInvalidCSR mentioning %q", tc.name, err, tc.mentions)
		}
	}
}

func TestClientCertNeverOutlivesItsCA(t *testing.T) {
	pairs := clusterPairs(t)
	caCert, _, _ := ParseCA(pairs[ClusterCA])
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	late := caCert.NotAfter.Add(-24 * time.Hour)
	signed, err := SignClientCSR(pairs[ClusterCA], csrFromKey(t, ec, pkix.Name{CommonName: "admin"}), late)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(signed)
	cert, _ := x509.ParseCertificate(block.Bytes)
	if cert.NotAfter.After(caCert.NotAfter) {
		t.Errorf("client certificate expires %v, after its CA %v", cert.NotAfter, caCert.NotAfter)
	}
}

// CAPD's in-memory backend type-asserts the cluster and etcd CA keys to
// *rsa.PrivateKey; kubeadm and Cluster API default to RSA too.
func TestKeysAreRSAInPKCS1(t *testing.T) {
	for p, kp := range clusterPairs(t) {
		block, _ := pem.Decode(kp.Key)
		if block == nil || block.Type != "RSA PRIVATE KEY" {
			t.Fatalf("%s: key is not a PEM \"RSA PRIVATE KEY\"", p)
		}
		key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if key.N.BitLen() != 2048 {
			t.Errorf("%s: %d-bit key", p, key.N.BitLen())
		}
	}
}
