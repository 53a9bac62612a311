package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/magnetite-io/magnetite/internal/fault"
)

// Purpose names one of a cluster's key pairs by the suffix Cluster API gives
// its Secret: <cluster>-ca, <cluster>-etcd, <cluster>-proxy, <cluster>-sa.
type Purpose string

const (
	ClusterCA      Purpose = "ca"
	EtcdCA         Purpose = "etcd"
	FrontProxyCA   Purpose = "proxy"
	ServiceAccount Purpose = "sa"
)

// Purposes lists every key pair a cluster gets, in a fixed order.
var Purposes = []Purpose{ClusterCA, EtcdCA, FrontProxyCA, ServiceAccount}

// commonNames are kubeadm's names for its certificate authorities.
var commonNames = map[Purpose]string{
	ClusterCA:    "kubernetes",
	EtcdCA:       "etcd-ca",
	FrontProxyCA: "front-proxy-ca",
}

// Validity periods. CAs live as long as Cluster API's own (ten years);
// client certificates a year, and never past their CA.
const (
	CAValidity         = 10 * 365 * 24 * time.Hour
	ClientCertValidity = 365 * 24 * time.Hour
)

// KeyPair is one PEM-encoded key pair. For ServiceAccount, Cert holds the
// public key (Cluster API keeps it under tls.crt).
type KeyPair struct {
	Purpose Purpose
	Cert    []byte
	Key     []byte
}

// Errors a caller maps to a 400.
var (
	ErrInvalidCSR = errors.New("certs: invalid certificate signing request")
)

// GenerateCluster makes a fresh set of key pairs for one cluster: three
// self-signed CAs and the service-account key pair. Keys are RSA 2048 in
// PKCS #1, as Cluster API generates them itself: every provider accepts
// them (the in-memory backend accepts nothing else). It makes every key
// itself; see KeyPool.GenerateCluster for keys made ahead of time.
func GenerateCluster() ([]KeyPair, error) {
	var p *KeyPool
	return p.GenerateCluster()
}

// GenerateCluster makes one cluster's key pairs with keys from the pool.
// Keys the pool does not have are made concurrently: an RSA key takes a
// good fraction of a second on a busy CPU.
func (p *KeyPool) GenerateCluster() ([]KeyPair, error) {
	out := make([]KeyPair, len(Purposes))
	errs := make([]error, len(Purposes))
	var wg sync.WaitGroup
	for i, purpose := range Purposes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key, err := p.Take()
			if err != nil {
				errs[i] = fmt.Errorf("certs: generate %s key: %w", purpose, err)
				return
			}
			out[i], errs[i] = keyPair(purpose, key)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// keyPair encodes key for purpose, with a self-signed CA certificate
// unless it is the service-account key.
func keyPair(p Purpose, key *rsa.PrivateKey) (KeyPair, error) {
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if p == ServiceAccount {
		pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
		if err != nil {
			return KeyPair{}, err
		}
		return KeyPair{Purpose: p, Cert: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), Key: keyPEM}, nil
	}
	serial, err := serialNumber()
	if err != nil {
		return KeyPair{}, err
	}
	skid, err := subjectKeyID(key.Public())
	if err != nil {
		return KeyPair{}, err
	}
	now := time.Now().UTC()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonNames[p]},
		// Tolerate clocks a little behind ours.
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SubjectKeyId:          skid,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("certs: self-sign %s: %w", p, err)
	}
	return KeyPair{Purpose: p, Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), Key: keyPEM}, nil
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// subjectKeyID is the SHA-1 of the public key's bits (RFC 5280, 4.2.1.2).
func subjectKeyID(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if _, err := asn1.Unmarshal(der, &spki); err != nil {
		return nil, err
	}
	sum := sha1.Sum(spki.PublicKey.Bytes)
	return sum[:], nil
}

// ParseCA decodes a CA key pair for signing.
func ParseCA(kp KeyPair) (*x509.Certificate, crypto.Signer, error) {
	block, _ := pem.Decode(kp.Cert)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("certs: %s: no PEM certificate", kp.Purpose)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: %s: %w", kp.Purpose, err)
	}
	if !cert.IsCA {
		return nil, nil, fmt.Errorf("certs: %s: certificate is not a CA", kp.Purpose)
	}
	key, err := parsePrivateKey(kp.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: %s: %w", kp.Purpose, err)
	}
	return cert, key, nil
}

func parsePrivateKey(p []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(p)
	if block == nil {
		return nil, errors.New("no PEM private key")
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("private key is neither SEC 1, PKCS #1 nor PKCS #8")
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key of type %T cannot sign", k)
	}
	return s, nil
}

// SignClientCSR signs a PEM certificate signing request with the CA as a
// client certificate. The subject is the CSR's own: Kubernetes reads the
// user name from its CN and the groups from its O (magnumclient asks for
// CN=admin, O=system:masters). Requested extensions are not copied: the
// result can only authenticate a client, never serve or sign.
func SignClientCSR(ca KeyPair, csrPEM []byte, now time.Time) ([]byte, error) {
	caCert, caKey, err := ParseCA(ca)
	if err != nil {
		return nil, err
	}
	csr, err := ParseCSR(csrPEM)
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	skid, err := subjectKeyID(csr.PublicKey)
	if err != nil {
		return nil, fault.New(ErrInvalidCSR, "%v", err)
	}
	usage := x509.KeyUsageDigitalSignature
	if _, isRSA := csr.PublicKey.(*rsa.PublicKey); isRSA {
		usage |= x509.KeyUsageKeyEncipherment
	}
	notAfter := now.Add(ClientCertValidity)
	if notAfter.After(caCert.NotAfter) {
		notAfter = caCert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		RawSubject:            csr.RawSubject,
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              notAfter,
		KeyUsage:              usage,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  false,
		SubjectKeyId:          skid,
		AuthorityKeyId:        caCert.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, csr.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: sign: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// ParseCSR decodes and checks a PEM certificate signing request: its
// signature must verify, its subject must name a user (CN), and its key must
// be strong enough.
func ParseCSR(csrPEM []byte) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode(csrPEM)
	if block == nil {
		return nil, fault.New(ErrInvalidCSR, "expected a PEM block \"CERTIFICATE REQUEST\"")
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fault.New(ErrInvalidCSR, "there is data after the PEM block; send exactly one \"CERTIFICATE REQUEST\"")
	}
	if block.Type != "CERTIFICATE REQUEST" && block.Type != "NEW CERTIFICATE REQUEST" {
		return nil, fault.New(ErrInvalidCSR, "the PEM block is a %q, expected \"CERTIFICATE REQUEST\"", block.Type)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fault.New(ErrInvalidCSR, "%v", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fault.New(ErrInvalidCSR, "its signature does not verify: %v", err)
	}
	if csr.Subject.CommonName == "" {
		return nil, fault.New(ErrInvalidCSR, "the subject has no common name (CN); Kubernetes takes the user name from it")
	}
	switch k := csr.PublicKey.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return nil, fault.New(ErrInvalidCSR, "an RSA key of %d bits is too weak; use at least 2048", k.N.BitLen())
		}
	case *ecdsa.PublicKey, ed25519.PublicKey:
	default:
		return nil, fault.New(ErrInvalidCSR, "unsupported key type %T", k)
	}
	return csr, nil
}

// AdminKeyAndCSR makes a new RSA key and a PEM certificate signing request
// for a cluster administrator (CN=admin, O=system:masters), the request
// `openstack coe cluster config` sends. The key is PEM PKCS#1.
func AdminKeyAndCSR() (keyPEM, csrPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
	}, key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	csrPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	return keyPEM, csrPEM, nil
}
