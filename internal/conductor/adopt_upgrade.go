package conductor

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/model"
)

// An adopted magnum-cluster-api cluster is upgraded as that driver
// upgrades one (upgrade_cluster in magnum_cluster_api/driver.py, v0.38.1):
// the whole cluster at once, whatever node group the request named, to the
// new template's kube_tag and image. The driver writes the Cluster again
// from the Magnum cluster; of what that changes on an upgrade, the Cluster
// carries the topology's version, and the imageUUID and hardwareDiskBus
// variables, cluster-wide and in each machine deployment's overrides
// (resources.py: Cluster.get_object, generate_machine_deployment; the
// image is looked up in Glance by the template's image_id, by ID or name).
// Cluster API's topology controller rolls the control plane and then the
// machine deployments onto them.
//
// The fields are changed with a JSON patch that tests the entry it
// replaces, not by server-side apply: they stay the driver's fields, and
// Magnetite's later applies (labels, replicas), which do not name them,
// leave them as they are.

// mcaUpgrade is what an upgrade of a magnum-cluster-api cluster sets.
type mcaUpgrade struct {
	version string
	image   string // Glance ID
	diskBus string // the image's hw_disk_bus, "" when it has none
}

// mcaUpgradePatch is the JSON patch that upgrades cl. Each variable is
// replaced only where the Cluster has it (a ClusterClass without
// hardwareDiskBus refuses a value for it), each replace guarded by a test
// of the entry's name.
func mcaUpgradePatch(cl *unstructured.Unstructured, up mcaUpgrade) ([]byte, error) {
	if _, ok, _ := unstructured.NestedString(cl.Object, "spec", "topology", "version"); !ok {
		return nil, permanentf("Cluster %s/%s has no topology version to upgrade", cl.GetNamespace(), cl.GetName())
	}
	ops := []map[string]any{{"op": "replace", "path": "/spec/topology/version", "value": up.version}}
	values := map[string]string{"imageUUID": up.image, "hardwareDiskBus": up.diskBus}
	setVariables := func(path string, list []any) {
		for i, v := range list {
			entry, ok := v.(map[string]any)
			if !ok {
				continue
			}
			name, _ := entry["name"].(string)
			value, set := values[name]
			if !set {
				continue
			}
			at := fmt.Sprintf("%s/%d", path, i)
			ops = append(ops, map[string]any{"op": "test", "path": at + "/name", "value": name},
				map[string]any{"op": "replace", "path": at + "/value", "value": value})
		}
	}
	vars, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "variables")
	setVariables("/spec/topology/variables", vars)
	mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
	for i, md := range mds {
		m, ok := md.(map[string]any)
		if !ok {
			continue
		}
		overrides, _, _ := unstructured.NestedSlice(m, "variables", "overrides")
		at := fmt.Sprintf("/spec/topology/workers/machineDeployments/%d", i)
		ops = append(ops, map[string]any{"op": "test", "path": at + "/name", "value": m["name"]})
		setVariables(at+"/variables/overrides", overrides)
	}
	return json.Marshal(ops)
}

// upgradeAdopted upgrades an adopted magnum-cluster-api cluster to its
// template (the API moved the cluster to the new one).
func (c *Conductor) upgradeAdopted(ctx context.Context, sc *scope, a *model.ForeignCluster, cl *unstructured.Unstructured) error {
	version := sc.template.Labels["kube_tag"]
	if version == "" {
		return permanentf("cluster template %s has no kube_tag label: magnum-cluster-api clusters are upgraded to their template's kube_tag", sc.template.Name)
	}
	img, err := c.adoptedImage(ctx, a, cl, sc.template.ImageID)
	if err != nil {
		return err
	}
	patch, err := mcaUpgradePatch(cl, mcaUpgrade{version: version, image: img.ID, diskBus: img.Properties["hw_disk_bus"]})
	if err != nil {
		return err
	}
	if err := c.mc.JSONPatch(ctx, "Cluster", a.Namespace, a.Name, patch); err != nil {
		return classifyApplyError(err)
	}
	c.event(ctx, sc.cluster.UUID, model.EventOperation, "", string(model.OpClusterUpgrade),
		fmt.Sprintf("set Kubernetes %s and image %s (%s) on %s's Cluster %s/%s; Cluster API rolls the control plane, then the workers", version, img.Name, img.ID, a.Driver, a.Namespace, a.Name))
	return nil
}

// adoptedImage looks ref up in Glance as the cluster: with the application
// credential of the clouds.yaml Secret its Cluster's identity variable
// names (magnum-cluster-api's <stack_id>-cloud-config, with its CA in
// "cacert"), as CAPO will when it builds the cluster's servers.
func (c *Conductor) adoptedImage(ctx context.Context, a *model.ForeignCluster, cl *unstructured.Unstructured, ref string) (facts.Image, error) {
	secretName := ""
	vars, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "variables")
	for _, v := range vars {
		if m, ok := v.(map[string]any); ok && m["name"] == "clusterIdentityRefName" {
			secretName, _ = m["value"].(string)
		}
	}
	if secretName == "" {
		return facts.Image{}, permanentf("Cluster %s/%s names no cloud credentials (its clusterIdentityRefName variable) to look the image up with", a.Namespace, a.Name)
	}
	secret, err := c.mc.Get(ctx, "Secret", a.Namespace, secretName)
	if apierrors.IsNotFound(err) {
		return facts.Image{}, permanentf("the cloud credentials Secret %s/%s of Cluster %s is gone", a.Namespace, secretName, a.Name)
	}
	if err != nil {
		return facts.Image{}, err
	}
	dc, err := cloud.ParseCloudsYAML(secretValue(secret, "clouds.yaml"), secretValue(secret, "cacert"))
	if err != nil {
		return facts.Image{}, permanentf("Secret %s/%s: %v", a.Namespace, secretName, err)
	}
	img, found, err := dc.FindImage(ctx, ref)
	if errors.Is(err, cloud.ErrInvalid) {
		return facts.Image{}, permanentf("look image %s up as cluster %s: %v", ref, a.Name, err)
	}
	if err != nil {
		return facts.Image{}, fmt.Errorf("look image %s up in Glance as the cluster: %w", ref, err)
	}
	if !found {
		return facts.Image{}, permanentf("image %s of the cluster's new template is not in Glance for the cluster's project", ref)
	}
	return img, nil
}

// secretValue is one value of a Secret read as unstructured, decoded.
func secretValue(secret *unstructured.Unstructured, key string) []byte {
	data, _, _ := unstructured.NestedString(secret.Object, "data", key)
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil
	}
	return raw
}
