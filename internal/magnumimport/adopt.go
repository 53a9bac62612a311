package magnumimport

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/model"
)

// What the two drivers put on their objects, read from their sources:
//   - magnum-cluster-api v0.38.1 (magnum_cluster_api/resources.py Cluster
//     and mutate_machine_deployment): one Cluster with a managed topology of
//     its ClusterClass; each worker node group is a topology machine
//     deployment named after the node group, the control plane the
//     topology's; Cluster API names the objects.
//   - magnum-capi-helm 1.4.0 (magnum_capi_helm/driver.py
//     _process_node_groups, driver_utils.py sanitized_name) with the
//     capi-helm-charts openstack-cluster chart (0.27.0,
//     templates/node-group/machine-deployment.yaml and
//     control-plane/kubeadm-control-plane.yaml): a MachineDeployment per
//     worker node group named "<release>-<sanitized node group name>" and
//     labelled capi.stackhpc.com/node-group, and the KubeadmControlPlane the
//     Cluster's controlPlaneRef names; Helm keeps the release in Secrets
//     labelled owner=helm.
const (
	chartLabelCluster   = "capi.stackhpc.com/cluster"
	chartLabelNodeGroup = "capi.stackhpc.com/node-group"
	helmReleaseSelector = "owner=helm,name="
)

// adoptionProblem checks that found's objects have the shape its driver
// gives them, so that Magnetite can resize and delete the cluster in place,
// and records in found what it needs to. It returns why the cluster must
// stay read-only, or "".
func adoptionProblem(ctx context.Context, r ClusterAPIReader, found *model.ForeignCluster, groups []*magnumNodeGroup) (string, error) {
	cl, err := r.Get(ctx, "Cluster", found.Namespace, found.Name)
	if err != nil {
		return "", err
	}
	var workers []*magnumNodeGroup
	for _, g := range groups {
		if g.Role != "master" {
			workers = append(workers, g)
		}
	}
	found.NodeGroups = map[string]string{}
	topo, hasTopology, _ := unstructured.NestedMap(cl.Object, "spec", "topology")
	switch found.Driver {
	case driverMCA:
		if !hasTopology {
			return "its Cluster has no managed topology, which magnum-cluster-api always gives it", nil
		}
		mds, _, _ := unstructured.NestedSlice(topo, "workers", "machineDeployments")
		var names []string
		for _, md := range mds {
			if m, ok := md.(map[string]any); ok {
				if n, _ := m["name"].(string); n != "" {
					names = append(names, n)
				}
			}
		}
		for _, g := range workers {
			if !slices.Contains(names, g.Name) {
				return fmt.Sprintf("node group %s has no machine deployment in the Cluster's topology (it has %s)", g.Name, strings.Join(names, ", ")), nil
			}
			found.NodeGroups[g.UUID] = g.Name
		}
		return "", nil
	case driverMCH:
		if hasTopology {
			return "its Cluster has a managed topology, which magnum-capi-helm's chart never gives it", nil
		}
		kind, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneRef", "kind")
		cp, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneRef", "name")
		if kind != "KubeadmControlPlane" || cp == "" {
			return fmt.Sprintf("its Cluster's control plane is a %q, not the KubeadmControlPlane the chart makes", kind), nil
		}
		if _, err := r.Get(ctx, "KubeadmControlPlane", found.Namespace, cp); apierrors.IsNotFound(err) {
			return fmt.Sprintf("its KubeadmControlPlane %s is gone", cp), nil
		} else if err != nil {
			return "", err
		}
		found.ControlPlane = cp
		mds, err := r.List(ctx, "MachineDeployment", found.Namespace, chartLabelCluster+"="+found.Name)
		if err != nil {
			return "", err
		}
		byGroup := map[string]string{}
		for _, md := range mds {
			if g := md.GetLabels()[chartLabelNodeGroup]; g != "" {
				byGroup[g] = md.GetName()
			}
		}
		for _, g := range workers {
			md, ok := byGroup[model.CAPIHelmNodeGroupName(g.Name)]
			if !ok {
				return fmt.Sprintf("node group %s has no MachineDeployment labelled %s=%s", g.Name, chartLabelNodeGroup, model.CAPIHelmNodeGroupName(g.Name)), nil
			}
			found.NodeGroups[g.UUID] = md
		}
		releases, err := r.List(ctx, "Secret", found.Namespace, helmReleaseSelector+found.Name)
		if err != nil {
			return "", err
		}
		if len(releases) == 0 {
			return fmt.Sprintf("no Helm release %s is kept in namespace %s, so Magnetite could not delete what the chart made", found.Name, found.Namespace), nil
		}
		found.HelmRelease = found.Name
		return "", nil
	}
	return fmt.Sprintf("Magnetite does not know the shape of %s's objects", found.Driver), nil
}
