package certs

import (
	"encoding/base64"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Cluster API's names for what these Secrets carry.
const (
	SecretType       = "cluster.x-k8s.io/secret"
	LabelClusterName = "cluster.x-k8s.io/cluster-name"
	TLSCrtKey        = "tls.crt"
	TLSKeyKey        = "tls.key"
)

// SecretName is the name Cluster API looks for: <cluster>-<purpose>, where
// cluster is the name of the Cluster object.
func SecretName(clusterName string, p Purpose) string { return clusterName + "-" + string(p) }

// Secret is kp as the Secret Cluster API reads instead of generating its
// own. It has no owner reference: Cluster API leaves Secrets it did not
// generate alone, so whoever deletes the cluster deletes these too.
func Secret(clusterName, namespace string, kp KeyPair) *unstructured.Unstructured {
	s := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":      SecretName(clusterName, kp.Purpose),
			"namespace": namespace,
			"labels":    map[string]any{LabelClusterName: clusterName},
		},
		"type": SecretType,
		"data": map[string]any{
			TLSCrtKey: base64.StdEncoding.EncodeToString(kp.Cert),
			TLSKeyKey: base64.StdEncoding.EncodeToString(kp.Key),
		},
	}}
	return s
}
