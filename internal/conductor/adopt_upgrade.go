package conductor

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

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

// upgradeAdopted upgrades an adopted cluster to its template (the API
// moved the cluster to the new one) in its driver's way.
func (c *Conductor) upgradeAdopted(ctx context.Context, sc *scope, a *model.ForeignCluster, cl *unstructured.Unstructured) error {
	version := sc.template.Labels["kube_tag"]
	if version == "" {
		return permanentf("cluster template %s has no kube_tag label: clusters adopted from %s are upgraded to their template's kube_tag", sc.template.Name, a.Driver)
	}
	if a.Driver == driverMCH {
		return c.upgradeAdoptedMCH(ctx, sc, a, version)
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
// names (magnum-cluster-api's <stack_id>-cloud-config).
func (c *Conductor) adoptedImage(ctx context.Context, a *model.ForeignCluster, cl *unstructured.Unstructured, ref string) (facts.Image, error) {
	secretName := topologyVariable(cl, "clusterIdentityRefName")
	if secretName == "" {
		return facts.Image{}, permanentf("Cluster %s/%s names no cloud credentials (its clusterIdentityRefName variable) to look the image up with", a.Namespace, a.Name)
	}
	return c.imageAsIdentity(ctx, a, secretName, "", ref)
}

// imageAsIdentity looks ref up in Glance with the application credential
// of cloud cloudName ("" for the "default" or only one) in the clouds.yaml
// of Secret secretName (with its CA in "cacert"), as CAPO will when it
// builds the cluster's servers from it.
func (c *Conductor) imageAsIdentity(ctx context.Context, a *model.ForeignCluster, secretName, cloudName, ref string) (facts.Image, error) {
	if secretName == "" {
		return facts.Image{}, permanentf("the machine templates of %s's cluster %s name no cloud credentials to look the image up with", a.Driver, a.Name)
	}
	secret, err := c.mc.Get(ctx, "Secret", a.Namespace, secretName)
	if apierrors.IsNotFound(err) {
		return facts.Image{}, permanentf("the cloud credentials Secret %s/%s of cluster %s is gone", a.Namespace, secretName, a.Name)
	}
	if err != nil {
		return facts.Image{}, err
	}
	dc, err := cloud.ParseCloudsYAML(secretValue(secret, "clouds.yaml"), secretValue(secret, "cacert"), cloudName)
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

// An adopted magnum-capi-helm cluster is upgraded as `helm upgrade` of
// its openstack-cluster chart (0.27.0) with the new kubernetesVersion and
// machineImageId would change it: a new OpenStackMachineTemplate of the
// new image for the control plane and for each node group, named as the
// chart names them (the component's name and a checksum of the spec: its
// *.mt.name helpers in templates/_helpers.tpl), since CAPO refuses changes
// to a template's spec; then the KubeadmControlPlane's and each
// MachineDeployment's version and machine template reference, each by a
// JSON patch that tests the reference it replaces. The new templates
// carry Magnetite's labels, not Helm's: they are not in Helm's record of
// the release, and the cluster's delete finds them by those labels.

// mchUpgradeTarget is an object of the release whose version and machine
// template an upgrade changes, and where in it they are.
type mchUpgradeTarget struct {
	kind, name      string
	versionPath     []string
	templateRefPath []string
}

// upgradeAdoptedMCH upgrades an adopted magnum-capi-helm cluster.
func (c *Conductor) upgradeAdoptedMCH(ctx context.Context, sc *scope, a *model.ForeignCluster, version string) error {
	targets := []mchUpgradeTarget{{kind: "KubeadmControlPlane", name: a.ControlPlane,
		versionPath: []string{"spec", "version"}, templateRefPath: []string{"spec", "machineTemplate", "spec", "infrastructureRef"}}}
	for _, ng := range sc.nodeGroups {
		if ng.Role == model.RoleMaster {
			continue
		}
		targets = append(targets, mchUpgradeTarget{kind: "MachineDeployment", name: a.MachineDeploymentOf(ng),
			versionPath: []string{"spec", "template", "spec", "version"}, templateRefPath: []string{"spec", "template", "spec", "infrastructureRef"}})
	}
	var img facts.Image
	for i, tg := range targets {
		obj, err := c.mc.Get(ctx, tg.kind, a.Namespace, tg.name)
		if err != nil {
			return fmt.Errorf("read %s %s/%s of the release: %w", tg.kind, a.Namespace, tg.name, err)
		}
		ref, _, _ := unstructured.NestedStringMap(obj.Object, tg.templateRefPath...)
		if ref["kind"] != "OpenStackMachineTemplate" || ref["name"] == "" {
			return permanentf("%s %s/%s refers to no OpenStackMachineTemplate at %s", tg.kind, a.Namespace, tg.name, strings.Join(tg.templateRefPath, "."))
		}
		current, err := c.mc.Get(ctx, "OpenStackMachineTemplate", a.Namespace, ref["name"])
		if err != nil {
			return fmt.Errorf("read the machine template of %s %s: %w", tg.kind, tg.name, err)
		}
		if i == 0 {
			identity, _, _ := unstructured.NestedStringMap(current.Object, "spec", "template", "spec", "identityRef")
			if img, err = c.imageAsIdentity(ctx, a, identity["name"], identity["cloudName"], sc.template.ImageID); err != nil {
				return err
			}
		}
		next, err := mchMachineTemplate(current, img.ID)
		if err != nil {
			return err
		}
		if _, err := c.mc.Apply(ctx, sc.owner, next); err != nil {
			return classifyApplyError(err)
		}
		at := "/" + strings.Join(tg.versionPath, "/")
		refAt := "/" + strings.Join(tg.templateRefPath, "/") + "/name"
		patch, _ := json.Marshal([]map[string]any{
			{"op": "test", "path": refAt, "value": ref["name"]},
			{"op": "replace", "path": refAt, "value": next.GetName()},
			{"op": "replace", "path": at, "value": version},
		})
		if err := c.mc.JSONPatch(ctx, tg.kind, a.Namespace, tg.name, patch); err != nil {
			return classifyApplyError(err)
		}
	}
	c.event(ctx, sc.cluster.UUID, model.EventOperation, "", string(model.OpClusterUpgrade),
		fmt.Sprintf("set Kubernetes %s and image %s (%s) on %s's control plane and %d machine deployments (release %s/%s)", version, img.Name, img.ID, a.Driver, len(targets)-1, a.Namespace, a.HelmRelease))
	return nil
}

// chartChecksum matches the checksum suffix the openstack-cluster chart
// gives a machine or config template's name.
var chartChecksum = regexp.MustCompile(`-[0-9a-f]{8}$`)

// mchMachineTemplate is current with image, named as the chart names a
// template of that spec.
func mchMachineTemplate(current *unstructured.Unstructured, image string) (*unstructured.Unstructured, error) {
	return chartTemplate(current, chartChecksum.ReplaceAllString(current.GetName(), ""), "", func(spec map[string]any) {
		spec["image"] = map[string]any{"id": image}
	})
}

// chartTemplate is a machine or config template like current, its
// spec.template.spec changed by change, named as the openstack-cluster
// chart names one (its *.mt.name and *.kct.name helpers): base, then the
// first 8 hex digits of a SHA-256 of the spec, with chartLabels.
func chartTemplate(current *unstructured.Unstructured, base, group string, change func(spec map[string]any)) (*unstructured.Unstructured, error) {
	spec, ok, _ := unstructured.NestedMap(current.Object, "spec", "template", "spec")
	if !ok {
		return nil, permanentf("%s %s has no spec.template.spec", current.GetKind(), current.GetName())
	}
	if change != nil {
		change(spec) // NestedMap returned a deep copy
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": current.GetAPIVersion(), "kind": current.GetKind(),
		"metadata": map[string]any{"name": base + "-" + hex.EncodeToString(sum[:])[:8], "namespace": current.GetNamespace(), "labels": chartLabels(current, group)},
		"spec":     map[string]any{"template": map[string]any{"spec": spec}},
	}}, nil
}
