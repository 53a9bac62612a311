package capi

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/labels"
)

// addonReleases chooses the cluster's addon releases from the pinned
// table: the CNI, the cloud controller manager, the CSI drivers,
// k8s-keystone-auth and metrics-server as the cluster asks.
func (d *Driver) addonReleases(p *Plan) ([]addons.Release, error) {
	if !d.infra.Addons() || p.KeepsAddons() {
		return nil, nil
	}
	tag := func(name string) addons.Tag { return addons.Tag{Label: name, Value: p.Labels.String(name)} }
	rels, problems := addons.Select(addons.Cluster{
		Name: p.Name, ProjectID: p.ProjectID, KubeVersion: p.KubeVersion, NetworkDriver: p.NetworkDriver,
		PodCIDR: p.PodCIDR, ServiceCIDR: p.ServiceCIDR, Registry: p.ImageRepository,
		CloudProvider: d.infra.CloudControllerManager(), CinderCSI: p.CinderCSI, ManilaCSI: p.ManilaCSI,
		KeystoneAuth: p.KeystoneAuth, MetricsServer: p.Labels.Bool(labels.MetricsServerEnabled),
		Tags: map[string]addons.Tag{
			addons.Calico: tag(labels.CalicoTag), addons.Cilium: tag(labels.CiliumTag),
			addons.CloudControllerManager: tag(labels.CloudProviderTag), addons.CinderCSI: tag(labels.CinderCSIPluginTag),
			addons.ManilaCSI: tag(labels.ManilaCSIPluginTag), addons.KeystoneAuth: tag(labels.K8sKeystoneAuthTag),
		},
	})
	if len(problems) > 0 {
		return nil, &driver.ValidationError{Problems: problems}
	}
	return rels, nil
}

// addonConfigMapName is the first ConfigMap of an addon; the parts after
// it (an addon larger than one ConfigMap holds) end in -2, -3, ...
func addonConfigMapName(p *Plan, addon string, part int) string {
	n := p.Name + "-addon-" + addon
	if part > 0 {
		n += fmt.Sprintf("-%d", part+1)
	}
	return n
}

// buildAddons renders the ConfigMaps carrying the cluster's addons and the
// ClusterResourceSet that applies them, in order, to the workload cluster:
// the cloud credentials Secret, then each release (the CNI first), then the
// cluster's StorageClasses. A release the conductor did not render (a
// preview) is named by the ConfigMap it would get.
func (d *Driver) buildAddons(p *Plan, rels []addons.Release, rendered []driver.RenderedAddon) ([]map[string]any, []string, error) {
	if !d.infra.Addons() || p.KeepsAddons() {
		return nil, nil, nil
	}
	byAddon := map[string]driver.RenderedAddon{}
	for _, r := range rendered {
		byAddon[r.Addon] = r
	}
	var objs []map[string]any
	var warnings []string
	var resources []any
	for _, s := range d.infra.Secrets(p) {
		if strings.HasSuffix(s.Name, "-addon") {
			resources = append(resources, map[string]any{"kind": "Secret", "name": s.Name})
		}
	}
	for _, rel := range rels {
		r, ok := byAddon[rel.Addon]
		switch {
		case ok && r.Override != "":
			resources = append(resources, map[string]any{"kind": "ConfigMap", "name": r.Override})
		case ok:
			parts, warn, err := addons.Pack(rel.Addon, r.Docs, addons.MaxConfigMapData)
			if err != nil {
				return nil, nil, &driver.ValidationError{Problems: []string{err.Error()}}
			}
			warnings = append(warnings, warn...)
			for i, docs := range parts {
				name := addonConfigMapName(p, rel.Addon, i)
				objs = append(objs, addonConfigMap(p, rel, name, strings.Join(docs, "---\n")))
				resources = append(resources, map[string]any{"kind": "ConfigMap", "name": name})
			}
		default:
			resources = append(resources, map[string]any{"kind": "ConfigMap", "name": addonConfigMapName(p, rel.Addon, 0)})
		}
	}
	if sc := storageClasses(p); len(sc) > 0 {
		s, err := yamlDocs(sc)
		if err != nil {
			return nil, nil, err
		}
		configName := p.Name + "-addon-config"
		objs = append(objs, map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": configName, "labels": map[string]any{LabelClusterUUID: p.UUID}},
			"data":     map[string]any{"storage.yaml": s},
		})
		resources = append(resources, map[string]any{"kind": "ConfigMap", "name": configName})
	}
	crs := map[string]any{
		"apiVersion": p.Versions.addons(), "kind": "ClusterResourceSet",
		"metadata": map[string]any{"name": p.Name + "-addons", "labels": map[string]any{LabelClusterUUID: p.UUID}},
		"spec": map[string]any{
			"clusterSelector": map[string]any{"matchLabels": map[string]any{LabelClusterUUID: p.UUID}},
			"strategy":        "Reconcile",
			"resources":       resources,
		},
	}
	return append(objs, crs), warnings, nil
}

func addonConfigMap(p *Plan, rel addons.Release, name, data string) map[string]any {
	var charts []string
	for _, c := range rel.Pin.Charts {
		charts = append(charts, c.String())
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name,
			"labels":      map[string]any{LabelClusterUUID: p.UUID, driver.LabelAddon: rel.Addon},
			"annotations": map[string]any{driver.AnnotationAddonCharts: strings.Join(charts, ", ")}},
		"data": map[string]any{rel.Addon + ".yaml": data},
	}
}

func storageClasses(p *Plan) []map[string]any {
	var out []map[string]any
	sc := func(name, provisioner string, isDefault bool, params map[string]any) map[string]any {
		m := map[string]any{
			"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
			"metadata":             map[string]any{"name": name},
			"provisioner":          provisioner,
			"allowVolumeExpansion": true,
			"reclaimPolicy":        "Delete",
			"volumeBindingMode":    "WaitForFirstConsumer",
		}
		if isDefault {
			m["metadata"].(map[string]any)["annotations"] = map[string]any{"storageclass.kubernetes.io/is-default-class": "true"}
		}
		if params != nil {
			m["parameters"] = params
		}
		return m
	}
	if p.CinderCSI {
		out = append(out, sc("cinder", "cinder.csi.openstack.org", true, nil))
	}
	if p.ManilaCSI {
		out = append(out, sc("manila", "nfs.manila.csi.openstack.org", !p.CinderCSI, map[string]any{
			"type":           "default",
			"shareNetworkID": p.Labels.String(labels.ManilaCSIShareNetworkID),
			"csi.storage.k8s.io/provisioner-secret-name":       "manila-csi-credentials",
			"csi.storage.k8s.io/provisioner-secret-namespace":  "kube-system",
			"csi.storage.k8s.io/node-stage-secret-name":        "manila-csi-credentials",
			"csi.storage.k8s.io/node-stage-secret-namespace":   "kube-system",
			"csi.storage.k8s.io/node-publish-secret-name":      "manila-csi-credentials",
			"csi.storage.k8s.io/node-publish-secret-namespace": "kube-system",
		}))
	}
	return out
}

func yamlDocs(objs []map[string]any) (string, error) {
	var b strings.Builder
	for i, o := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		y, err := yaml.Marshal(o)
		if err != nil {
			return "", err
		}
		b.Write(y)
	}
	return b.String(), nil
}
