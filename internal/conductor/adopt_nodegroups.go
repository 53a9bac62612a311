package conductor

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/model"
)

// A node group added to an adopted magnum-capi-helm cluster is made as the
// openstack-cluster chart (0.27.0) makes one from an entry of its
// nodeGroups value (templates/node-group/machine-deployment.yaml,
// openstack-machine-template.yaml, kubeadm-config-template.yaml): a
// MachineDeployment named "<release>-<sanitized name>" and labelled with
// the node group, with an OpenStackMachineTemplate of the group's flavor
// and a KubeadmConfigTemplate, both named by the chart's checksum, all
// like the release's first node group's. They carry Magnetite's labels,
// not Helm's: Helm's record of the release does not know them. A removed
// node group's MachineDeployment is deleted; once its machines are gone,
// the templates Magnetite made for it are deleted too.

// chartLabelNodeGroup is the openstack-cluster chart's node group label
// (its nodegroup.componentLabels helper).
const chartLabelNodeGroup = "capi.stackhpc.com/node-group"

// addMCHNodeGroup makes node group ng's objects in an adopted
// magnum-capi-helm release, unless its MachineDeployment exists.
func (c *Conductor) addMCHNodeGroup(ctx context.Context, sc *scope, a *model.ForeignCluster, ng *model.NodeGroup) error {
	name := a.MachineDeploymentOf(ng)
	switch _, err := c.mc.Get(ctx, "MachineDeployment", a.Namespace, name); {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return err
	}
	var like *unstructured.Unstructured
	for _, id := range slices.Sorted(maps.Keys(a.NodeGroups)) {
		md, err := c.mc.Get(ctx, "MachineDeployment", a.Namespace, a.NodeGroups[id])
		if err == nil {
			like = md
			break
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	if like == nil {
		return permanentf("release %s/%s has no node group left to make node group %s like", a.Namespace, a.HelmRelease, ng.Name)
	}
	group := model.CAPIHelmNodeGroupName(ng.Name)
	machineRef, _, _ := unstructured.NestedString(like.Object, "spec", "template", "spec", "infrastructureRef", "name")
	configRef, _, _ := unstructured.NestedString(like.Object, "spec", "template", "spec", "bootstrap", "configRef", "name")
	machine, err := c.mc.Get(ctx, "OpenStackMachineTemplate", a.Namespace, machineRef)
	if err != nil {
		return fmt.Errorf("read the machine template of %s: %w", like.GetName(), err)
	}
	config, err := c.mc.Get(ctx, "KubeadmConfigTemplate", a.Namespace, configRef)
	if err != nil {
		return fmt.Errorf("read the config template of %s: %w", like.GetName(), err)
	}
	newMachine, err := chartTemplate(machine, name, group, func(spec map[string]any) {
		if ng.FlavorID != nil && *ng.FlavorID != "" {
			spec["flavor"] = *ng.FlavorID
		}
	})
	if err != nil {
		return err
	}
	newConfig, err := chartTemplate(config, name, group, nil)
	if err != nil {
		return err
	}
	md, err := mchMachineDeployment(like, name, group, ng, newMachine.GetName(), newConfig.GetName())
	if err != nil {
		return err
	}
	for _, o := range []*unstructured.Unstructured{newMachine, newConfig, md} {
		labels := o.GetLabels()
		labels[LabelNodeGroupUUID] = ng.UUID
		o.SetLabels(labels)
		if _, err := c.mc.Apply(ctx, sc.owner, o); err != nil {
			return classifyApplyError(err)
		}
	}
	return nil
}

// mchMachineDeployment is node group ng's MachineDeployment, like like
// but for the group: its name, node group label and selector, size and
// templates.
func mchMachineDeployment(like *unstructured.Unstructured, name, group string, ng *model.NodeGroup, machineTemplate, configTemplate string) (*unstructured.Unstructured, error) {
	spec, ok, _ := unstructured.NestedMap(like.Object, "spec")
	if !ok {
		return nil, permanentf("MachineDeployment %s has no spec", like.GetName())
	}
	spec["replicas"] = int64(ng.NodeCount)
	for _, path := range [][]string{{"selector", "matchLabels"}, {"template", "metadata", "labels"}} {
		if labels, found, _ := unstructured.NestedStringMap(spec, path...); found {
			labels[chartLabelNodeGroup] = group
			if _, ours := labels[LabelNodeGroupUUID]; ours {
				// like's machines carry its node group's, from the
				// take-over.
				labels[LabelNodeGroupUUID] = ng.UUID
			}
			if err := unstructured.SetNestedStringMap(spec, labels, path...); err != nil {
				return nil, err
			}
		}
	}
	if err := unstructured.SetNestedField(spec, machineTemplate, "template", "spec", "infrastructureRef", "name"); err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(spec, configTemplate, "template", "spec", "bootstrap", "configRef", "name"); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": like.GetAPIVersion(), "kind": like.GetKind(),
		"metadata": map[string]any{"name": name, "namespace": like.GetNamespace(), "labels": chartLabels(like, group)},
		"spec":     spec,
	}}, nil
}

// removeMCHNodeGroup deletes node group ng's MachineDeployment from an
// adopted magnum-capi-helm release; Cluster API deletes its machines.
func (c *Conductor) removeMCHNodeGroup(ctx context.Context, a *model.ForeignCluster, ng *model.NodeGroup) error {
	_, err := c.mc.Delete(ctx, "MachineDeployment", a.Namespace, a.MachineDeploymentOf(ng))
	return err
}

// deleteMadeTemplates deletes the machine and config templates Magnetite
// made in an adopted cluster's namespace with the labels of selector: an
// upgrade's and added node groups'.
func (c *Conductor) deleteMadeTemplates(ctx context.Context, a *model.ForeignCluster, selector string) error {
	return c.deleteLabelled(ctx, a.Namespace, selector, "OpenStackMachineTemplate", "KubeadmConfigTemplate")
}

// chartLabels are a release object's labels without Helm's, which an
// object Magnetite makes beside the release must not carry (it is not the
// release's), with the node group's set to group when group is not "".
func chartLabels(o *unstructured.Unstructured, group string) map[string]any {
	labels := map[string]any{}
	for k, v := range o.GetLabels() {
		if k != "app.kubernetes.io/managed-by" && k != "helm.sh/chart" && k != "capi.stackhpc.com/managed-by" {
			labels[k] = v
		}
	}
	if group != "" {
		labels[chartLabelNodeGroup] = group
	}
	return labels
}
