package magnumimport

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/model"
)

// ClusterAPIReader reads the management cluster (*mgmt.Client).
type ClusterAPIReader interface {
	Get(ctx context.Context, kind, namespace, name string) (*unstructured.Unstructured, error)
	List(ctx context.Context, kind, namespace, selector string) ([]unstructured.Unstructured, error)
}

// The two Magnum drivers that build clusters with Cluster API name their
// Cluster after the Magnum cluster's stack_id, each in its own namespace:
//   - magnum-cluster-api (v0.38.1, magnum_cluster_api/objects.py
//     Cluster.for_magnum_cluster): namespace magnum-system, stack_id
//     "kube-" and five random characters;
//   - magnum-capi-helm (1.4.0, magnum_capi_helm/driver_utils.py
//     cluster_namespace and chart_release_name): the Helm release, named
//     by stack_id, in namespace "<[capi_helm] namespace_prefix>-<project id
//     without anything but [a-z0-9]>", whose openstack-cluster chart names
//     the Cluster after the release.
const (
	driverMCA = "magnum-cluster-api"
	driverMCH = "magnum-capi-helm"

	mcaNamespace = "magnum-system"
	// DefaultCAPIHelmNamespacePrefix is magnum-capi-helm's default
	// [capi_helm] namespace_prefix.
	DefaultCAPIHelmNamespacePrefix = "magnum"
)

var notProjectIDChars = regexp.MustCompile("[^a-z0-9]")

// foreignCandidates are where a Cluster API driver of Magnum put the
// cluster's Cluster, in the order they are looked at.
func foreignCandidates(c *magnumCluster, helmPrefix string) []model.ForeignCluster {
	stack := deref(c.StackID)
	if stack == "" {
		return nil
	}
	project := notProjectIDChars.ReplaceAllString(strings.ToLower(c.ProjectID), "")
	return []model.ForeignCluster{
		{Driver: driverMCA, Namespace: mcaNamespace, Name: stack},
		{Driver: driverMCH, Namespace: helmPrefix + "-" + project, Name: stack},
	}
}

// findForeignCluster looks for the Cluster a Magnum Cluster API driver made
// for c. It returns nil and the places looked at when there is none.
func findForeignCluster(ctx context.Context, r ClusterAPIReader, c *magnumCluster, helmPrefix string) (*model.ForeignCluster, []string, error) {
	var looked []string
	for _, cand := range foreignCandidates(c, helmPrefix) {
		_, err := r.Get(ctx, "Cluster", cand.Namespace, cand.Name)
		if err == nil {
			return &cand, nil, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("look for cluster %s's Cluster API objects in the management cluster: %w", c.UUID, err)
		}
		looked = append(looked, cand.Namespace+"/"+cand.Name)
	}
	return nil, looked, nil
}
