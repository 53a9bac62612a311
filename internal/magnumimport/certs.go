package magnumimport

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/magnetite-io/magnetite/internal/certs"
	"github.com/magnetite-io/magnetite/internal/model"
)

// caRef is one of the CAs Magnum made for a cluster
// (generate_certificates_to_cluster in
// magnum/conductor/handlers/common/cert_manager.py) and the purpose
// Magnetite keeps it under.
type caRef struct {
	purpose string
	what    string
	ref     *string
}

func caRefs(c *magnumCluster) []caRef {
	return []caRef{
		{string(certs.ClusterCA), "Kubernetes CA", c.CACertRef},
		{string(certs.EtcdCA), "etcd CA", c.EtcdCACertRef},
		{string(certs.FrontProxyCA), "front-proxy CA", c.FrontProxyCACertRef},
	}
}

// caOf reads one CA of a cluster from Magnum's x509keypair table, where
// cert_manager_type = x509keypair keeps the certificate, its key
// encrypted with a random passphrase, and the passphrase
// (magnum/common/cert_manager/x509keypair_cert_manager.py). A reference
// that is a URL is a Barbican container (cert_manager_type = barbican);
// one with no row is a file on a Magnum conductor's disk
// (cert_manager_type = local).
func caOf(src *magnumDB, c *magnumCluster, ref caRef, certDir string) (*model.ClusterCertificate, error) {
	r := strings.TrimSpace(deref(ref.ref))
	if r == "" {
		return nil, errors.New("none recorded by Magnum for this cluster; the cluster is imported without it and its CA must be supplied")
	}
	kp, ok := src.KeyPairs[r]
	if !ok && certDir != "" {
		var err error
		if kp, err = keyPairFromDir(certDir, r); err != nil {
			return nil, err
		}
		ok = kp != nil
	}
	if !ok {
		if strings.Contains(r, "://") {
			return nil, fmt.Errorf("kept in Barbican by Magnum (%s, cert_manager_type = barbican), which the import does not read; the cluster is imported without it: export the container's certificate, private key and passphrase as %s.crt, .key and .pass into a directory and import again with --cert-dir", r, path.Base(r))
		}
		return nil, fmt.Errorf("x509keypair %s is not in Magnum's database: Magnum kept it outside (cert_manager_type = local, on a conductor's disk); the cluster is imported without it: import again with --cert-dir naming a copy of that conductor's [certificates] storage_path", r)
	}
	cert, err := parseCertificate(kp.Certificate)
	if err != nil {
		return nil, fmt.Errorf("x509keypair %s: %w", r, err)
	}
	der, err := decryptPrivateKey([]byte(kp.PrivateKey), deref(kp.Passphrase))
	if err != nil {
		return nil, fmt.Errorf("x509keypair %s: %w", r, err)
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("x509keypair %s: read the private key: %w", r, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok || !samePublicKey(signer.Public(), cert.PublicKey) {
		return nil, fmt.Errorf("x509keypair %s: its private key does not belong to its certificate", r)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("x509keypair %s: its certificate is not a CA", r)
	}
	var keyPEM []byte
	if rk, ok := key.(*rsa.PrivateKey); ok {
		// The form Magnetite writes its own CA keys in (internal/certs).
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)})
	} else {
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	return &model.ClusterCertificate{ClusterID: c.UUID, Purpose: ref.purpose, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// keyPairFromDir reads a CA from files laid out as Magnum's local
// certificate manager writes them into [certificates] storage_path
// (magnum/common/cert_manager/local_cert_manager.py): <ref>.crt, <ref>.key
// and, when the key is encrypted, <ref>.pass. A Barbican reference is a
// URL; its last segment (the container's UUID) names the files. It returns
// nil when there is no <ref>.crt.
func keyPairFromDir(dir, ref string) (*magnumKeyPair, error) {
	base := filepath.Join(dir, path.Base(ref))
	cert, err := os.ReadFile(base + ".crt")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(base + ".key")
	if err != nil {
		return nil, fmt.Errorf("%s.crt has no key beside it: %w", base, err)
	}
	kp := &magnumKeyPair{UUID: ref, Certificate: string(cert), PrivateKey: string(key)}
	pass, err := os.ReadFile(base + ".pass")
	switch {
	case err == nil:
		p := strings.TrimRight(string(pass), "\r\n")
		kp.Passphrase = &p
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	return kp, nil
}

func parseCertificate(text string) (*x509.Certificate, error) {
	block, _ := pem.Decode([]byte(text))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("its certificate is not a PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func samePublicKey(a, b crypto.PublicKey) bool {
	switch k := a.(type) {
	case *rsa.PublicKey:
		return k.Equal(b)
	case *ecdsa.PublicKey:
		return k.Equal(b)
	}
	return false
}
