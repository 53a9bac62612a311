package api_test

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

func parsePEMCert(t *testing.T, s string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(s))
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("not a PEM certificate: %q", s)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// magnumclientCSR makes the request `openstack coe cluster config` sends:
// a fresh RSA 2048 key and a CSR for CN=admin, O=system:masters.
func magnumclientCSR(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatalf("openssl is needed to make a real CSR: %v", err)
	}
	dir := t.TempDir()
	out, err := exec.Command("openssl", "req", "-new", "-nodes", "-newkey", "rsa:2048", "-subj", "/CN=admin/O=system:masters",
		"-keyout", filepath.Join(dir, "key.pem"), "-out", filepath.Join(dir, "csr.pem")).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl req: %v\n%s", err, out)
	}
	csr, err := os.ReadFile(filepath.Join(dir, "csr.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return string(csr)
}

func TestClusterCAIsServedFromCreateOn(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	cluster := c.createCluster(c.createTemplate(nil), map[string]any{"name": "k1"})

	// No conductor has run: the CA exists because the create made it.
	byUUID := c.getObject("/v1/certificates/" + cluster)
	if got := sortedKeys(byUUID); !reflect.DeepEqual(got, []string{"cluster_uuid", "links", "pem"}) {
		t.Errorf("certificate document has keys %v, want cluster_uuid, links, pem", got)
	}
	if byUUID["cluster_uuid"] != cluster {
		t.Errorf("cluster_uuid %v, want %s", byUUID["cluster_uuid"], cluster)
	}
	links := byUUID["links"].([]any)
	if len(links) != 2 || !strings.HasSuffix(links[0].(map[string]any)["href"].(string), "/v1/certificates/"+cluster) {
		t.Errorf("links %v", links)
	}
	ca := parsePEMCert(t, byUUID["pem"].(string))
	if !ca.IsCA || ca.Subject.CommonName != "kubernetes" {
		t.Errorf("cluster CA: IsCA=%v CN=%q", ca.IsCA, ca.Subject.CommonName)
	}
	if byName := c.getObject("/v1/certificates/k1"); byName["pem"] != byUUID["pem"] {
		t.Error("the CA looked up by name differs from the one looked up by UUID")
	}
	if c.getObject("/v1/certificates/" + cluster + "?ca_cert_type=kubernetes")["pem"] != byUUID["pem"] {
		t.Error("ca_cert_type=kubernetes is not the cluster CA")
	}

	seen := map[string]string{"kubernetes": byUUID["pem"].(string)}
	for typ, cn := range map[string]string{"etcd": "etcd-ca", "front-proxy": "front-proxy-ca", "front_proxy": "front-proxy-ca"} {
		pemText := c.getObject("/v1/certificates/" + cluster + "?ca_cert_type=" + typ)["pem"].(string)
		if got := parsePEMCert(t, pemText).Subject.CommonName; got != cn {
			t.Errorf("ca_cert_type=%s: CN %q, want %q", typ, got, cn)
		}
		if pemText == seen["kubernetes"] {
			t.Errorf("ca_cert_type=%s returned the cluster CA", typ)
		}
	}
	r := c.must(http.StatusBadRequest, "GET", "/v1/certificates/"+cluster+"?ca_cert_type=sa", nil)
	assertMagnumError(t, r, `Invalid ca_cert_type "sa": use kubernetes (the default), etcd or front-proxy.`)

	// Private keys are never part of an answer.
	for _, path := range []string{"/v1/certificates/" + cluster, "/v1/certificates/" + cluster + "?ca_cert_type=etcd",
		"/v1/clusters/" + cluster, "/v1/clusters/detail"} {
		if body := c.must(http.StatusOK, "GET", path, nil).Body; strings.Contains(string(body), "PRIVATE KEY") {
			t.Errorf("GET %s returned a private key", path)
		}
	}
}

func TestSignsMagnumclientCSRWithTheClusterCA(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	cluster := c.createCluster(c.createTemplate(nil), map[string]any{"name": "k1"})
	ca := parsePEMCert(t, c.getObject("/v1/certificates/" + cluster)["pem"].(string))
	csr := magnumclientCSR(t)

	for _, ident := range []string{cluster, "k1"} {
		doc := c.must(http.StatusCreated, "POST", "/v1/certificates", map[string]any{"cluster_uuid": ident, "csr": csr}).object(t)
		if doc["cluster_uuid"] != cluster || doc["csr"] != csr || len(doc["links"].([]any)) != 2 {
			t.Errorf("sign response %v", doc)
		}
		cert := parsePEMCert(t, doc["pem"].(string))
		roots := x509.NewCertPool()
		roots.AddCert(ca)
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("signed certificate does not chain to the cluster CA: %v", err)
		}
		if cert.Subject.CommonName != "admin" || !reflect.DeepEqual(cert.Subject.Organization, []string{"system:masters"}) {
			t.Errorf("subject %v, want the CSR's CN=admin O=system:masters", cert.Subject)
		}
	}

	etcd := parsePEMCert(t, c.getObject("/v1/certificates/" + cluster + "?ca_cert_type=etcd")["pem"].(string))
	doc := c.must(http.StatusCreated, "POST", "/v1/certificates",
		map[string]any{"cluster_uuid": cluster, "csr": csr, "ca_cert_type": "etcd"}).object(t)
	if err := parsePEMCert(t, doc["pem"].(string)).CheckSignatureFrom(etcd); err != nil || doc["ca_cert_type"] != "etcd" {
		t.Errorf("ca_cert_type=etcd: signed by the etcd CA: %v; response ca_cert_type %v", err, doc["ca_cert_type"])
	}
}

func TestCertificateRequestsRefusedWithReasons(t *testing.T) {
	srv := testapi.Start(t)
	c := newClient(t, srv)
	cluster := c.createCluster(c.createTemplate(nil), nil)
	csr := magnumclientCSR(t)
	for _, tc := range []struct {
		name   string
		caller *client
		method string
		path   string
		body   any
		status int
		detail string
	}{
		{"unknown cluster", c, "GET", "/v1/certificates/nope", nil, 404, "Cluster nope could not be found."},
		{"sign for unknown cluster", c, "POST", "/v1/certificates", map[string]any{"cluster_uuid": "nope", "csr": csr}, 400, "Cluster nope could not be found."},
		{"garbage CSR", c, "POST", "/v1/certificates", map[string]any{"cluster_uuid": cluster, "csr": "hello"}, 400,
			`Invalid CSR: expected a PEM block "CERTIFICATE REQUEST".`},
		{"certificate instead of CSR", c, "POST", "/v1/certificates", map[string]any{"cluster_uuid": cluster,
			"csr": c.getObject("/v1/certificates/" + cluster)["pem"]}, 400, `Invalid CSR: the PEM block is a "CERTIFICATE", expected "CERTIFICATE REQUEST".`},
		{"data after the CSR", c, "POST", "/v1/certificates", map[string]any{"cluster_uuid": cluster, "csr": csr + "trailing garbage\n"}, 400,
			`Invalid CSR: there is data after the PEM block; send exactly one "CERTIFICATE REQUEST".`},
		{"two CSRs", c, "POST", "/v1/certificates", map[string]any{"cluster_uuid": cluster, "csr": csr + csr}, 400, "data after the PEM block"},
		{"no CSR", c, "POST", "/v1/certificates", map[string]any{"cluster_uuid": cluster}, 400,
			"Invalid input for field/attribute csr. Value: null. Mandatory field missing."},
		{"no cluster", c, "POST", "/v1/certificates", map[string]any{"csr": csr}, 400,
			"Invalid input for field/attribute cluster_uuid. Value: null. Mandatory field missing."},
		{"unknown attribute", c, "POST", "/v1/certificates", map[string]any{"cluster_uuid": cluster, "csr": csr, "key": "x"}, 400,
			"Unknown attribute for argument certificate: key"},
		{"bad ca_cert_type", c, "POST", "/v1/certificates", map[string]any{"cluster_uuid": cluster, "csr": csr, "ca_cert_type": "sa"}, 400, ""},
		{"another project cannot see the cluster", c.as("other", "member"), "GET", "/v1/certificates/" + cluster, nil, 404, ""},
		{"another project cannot sign", c.as("other", "member"), "POST", "/v1/certificates", map[string]any{"cluster_uuid": cluster, "csr": csr}, 400, ""},
		{"a reader of the project cannot sign", c.as("default", "reader"), "POST", "/v1/certificates", map[string]any{"cluster_uuid": cluster, "csr": csr}, 403, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.caller.do(tc.method, tc.path, tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			if tc.detail != "" {
				assertMagnumError(t, r, tc.detail)
			}
		})
	}

	// The project's own members and readers get what their roles allow.
	c.as("default", "reader").must(http.StatusOK, "GET", "/v1/certificates/"+cluster, nil)
	c.as("default", "member").must(http.StatusCreated, "POST", "/v1/certificates", map[string]any{"cluster_uuid": cluster, "csr": csr})
}
