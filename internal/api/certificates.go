package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/certs"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// caCertTypes maps Magnum's ca_cert_type values to the cluster's CAs.
var caCertTypes = map[string]certs.Purpose{
	"":            certs.ClusterCA,
	"kubernetes":  certs.ClusterCA,
	"etcd":        certs.EtcdCA,
	"front-proxy": certs.FrontProxyCA,
	"front_proxy": certs.FrontProxyCA,
}

var certificateSchema = newSchema("certificate",
	str("cluster_uuid", 1, 255),
	text("csr", 1, 0),
	// Magnum's ca_cert_type is a free string where "" means the
	// Kubernetes CA.
	field{name: "ca_cert_type", kind: kEnum, enum: []string{"kubernetes", "etcd", "front-proxy", "front_proxy"}, emptyUnset: true},
)

// certificate is Magnum's certificate document. Private keys never appear.
type certificate struct {
	ClusterUUID string `json:"cluster_uuid"`
	CSR         string `json:"csr,omitempty"`
	PEM         string `json:"pem"`
	CACertType  string `json:"ca_cert_type,omitempty"`
	Links       []Link `json:"links"`
}

// clusterKeyPairs makes a new cluster's certificate authorities and
// service-account keys, for the create to store with the cluster row.
// Their keys come from the key pool when it has some.
func (s *Server) clusterKeyPairs(clusterUUID string) ([]*model.ClusterCertificate, error) {
	pairs, err := s.opts.KeyPool.GenerateCluster()
	if err != nil {
		return nil, err
	}
	out := make([]*model.ClusterCertificate, 0, len(pairs))
	for _, kp := range pairs {
		out = append(out, &model.ClusterCertificate{ClusterID: clusterUUID, Purpose: string(kp.Purpose), CertPEM: kp.Cert, KeyPEM: kp.Key})
	}
	return out, nil
}

func caPurpose(caCertType string) (certs.Purpose, error) {
	p, ok := caCertTypes[caCertType]
	if !ok {
		return "", badRequest("Invalid ca_cert_type %q: use kubernetes (the default), etcd or front-proxy.", caCertType)
	}
	return p, nil
}

// clusterCA reads one of a cluster's CAs.
func (s *Server) clusterCA(r *http.Request, c *model.Cluster, p certs.Purpose) (*model.ClusterCertificate, error) {
	ca, err := s.st.ClusterCertificate(r.Context(), c.UUID, string(p))
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound("Cluster %s has no %s certificate authority recorded.", c.Name, p)
	}
	return ca, err
}

// getCertificate is GET /v1/certificates/{ident}: the cluster's CA
// certificate (or its etcd or front-proxy CA with ?ca_cert_type=).
func (s *Server) getCertificate(w http.ResponseWriter, r *http.Request) error {
	p, err := caPurpose(r.URL.Query().Get("ca_cert_type"))
	if err != nil {
		return err
	}
	c, err := s.lookupCluster(r, "certificate:get")
	if err != nil {
		return err
	}
	ca, err := s.clusterCA(r, c, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, certificate{ClusterUUID: c.UUID, PEM: string(ca.CertPEM),
		Links: resourceLinks(baseURL(r), "certificates", c.UUID)})
	return nil
}

// signCertificate is POST /v1/certificates: sign a CSR with the cluster's
// CA. As in Magnum, a cluster that cannot be found is a 400 here: the body,
// not the URL, names it.
func (s *Server) signCertificate(w http.ResponseWriter, r *http.Request) error {
	vals, err := requestValues(r, certificateSchema, "cluster_uuid", "csr")
	if err != nil {
		return err
	}
	ident, csr := vals["cluster_uuid"].(string), vals["csr"].(string)
	caType, _ := vals["ca_cert_type"].(string)
	p, err := caPurpose(caType)
	if err != nil {
		return err
	}
	c, err := s.st.GetCluster(r.Context(), s.scope(r), ident)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return badRequest("Cluster %s could not be found.", ident)
		}
		return err
	}
	if err := s.authorize(r, "certificate:create", &auth.Target{ProjectID: c.ProjectID}); err != nil {
		return err
	}
	ca, err := s.clusterCA(r, c, p)
	if err != nil {
		return err
	}
	signed, err := certs.SignClientCSR(certs.KeyPair{Purpose: p, Cert: ca.CertPEM, Key: ca.KeyPEM}, []byte(csr), time.Now())
	if err != nil {
		if errors.Is(err, certs.ErrInvalidCSR) {
			return err // 400 (errorTable)
		}
		return fmt.Errorf("sign certificate for cluster %s: %w", c.UUID, err)
	}
	writeJSON(w, http.StatusCreated, certificate{ClusterUUID: c.UUID, CSR: csr, PEM: string(signed), CACertType: caType,
		Links: resourceLinks(baseURL(r), "certificates", c.UUID)})
	return nil
}

// rotateCertificate is PATCH /v1/certificates/{ident}. Rotating a live
// cluster's CA needs every node's certificates reissued and the machines
// rolled, which Cluster API's kubeadm control plane does not do on a CA
// change; Magnetite refuses it as Magnum does for drivers without rotation,
// rather than swap the CA and leave the cluster unable to trust itself.
func (s *Server) rotateCertificate(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.lookupCluster(r, "certificate:rotate_ca"); err != nil {
		return err
	}
	return badRequest("Rotating the CA certificate is not supported: Cluster API does not roll a cluster's machines onto a new CA. Create a new cluster to get new certificate authorities.")
}
