package capi

import (
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/labels"
)

var subdomainUnsafe = regexp.MustCompile(`[^a-z0-9.-]+`)

// ConfigMapName is the bundle's ConfigMap, magnetite-addon-<name>-<version>.
func (a AddonBundle) ConfigMapName() string {
	return strings.Trim(subdomainUnsafe.ReplaceAllString(strings.ToLower("magnetite-addon-"+a.Name+"-"+a.Version), "-"), "-.")
}

// addonTag returns a version label, or the cloud provider's version, or
// v1.<kube minor>.0, the cloud provider release that matches Kubernetes.
func addonTag(p *Plan, name string) string {
	if v := p.Labels.String(name); v != "" {
		return v
	}
	if v := p.Labels.String(labels.CloudProviderTag); v != "" {
		return v
	}
	return "v" + p.KubeMinor() + ".0"
}

// bundles lists the addon bundles the cluster uses, in apply order.
func (d *Driver) bundles(p *Plan) []AddonBundle {
	var out []AddonBundle
	switch p.NetworkDriver {
	case "calico":
		out = append(out, AddonBundle{Name: "calico", Version: p.Labels.String(labels.CalicoTag)})
	case "cilium":
		out = append(out, AddonBundle{Name: "cilium", Version: p.Labels.String(labels.CiliumTag)})
	}
	out = append(out, d.infra.CloudProviderAddons(p)...)
	if p.CinderCSI {
		out = append(out, AddonBundle{Name: "cinder-csi", Version: addonTag(p, labels.CinderCSIPluginTag)})
	}
	if p.ManilaCSI {
		out = append(out, AddonBundle{Name: "manila-csi", Version: addonTag(p, labels.ManilaCSIPluginTag)})
	}
	if p.KeystoneAuth {
		out = append(out, AddonBundle{Name: "k8s-keystone-auth", Version: addonTag(p, labels.K8sKeystoneAuthTag)})
	}
	return out
}

// buildAddons renders the cluster's addon ConfigMap and the
// ClusterResourceSet that applies it and the bundles to the workload
// cluster.
func (d *Driver) buildAddons(p *Plan) ([]map[string]any, error) {
	if !d.infra.Addons() {
		return nil, nil
	}
	data := map[string]any{}
	cni, err := yamlDocs(cniObjects(p))
	if err != nil {
		return nil, err
	}
	data["cni.yaml"] = cni
	if sc := storageClasses(p); len(sc) > 0 {
		s, err := yamlDocs(sc)
		if err != nil {
			return nil, err
		}
		data["storage.yaml"] = s
	}
	configName := p.Name + "-addon-config"
	cm := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": configName, "labels": map[string]any{LabelClusterUUID: p.UUID}},
		"data":     data,
	}
	var resources []any
	for _, s := range d.infra.Secrets(p) {
		if strings.HasSuffix(s.Name, "-addon") {
			resources = append(resources, map[string]any{"kind": "Secret", "name": s.Name})
		}
	}
	bs := d.bundles(p)
	// The CNI bundle first (its CRDs), then the cluster's own settings,
	// then the rest.
	if len(bs) > 0 {
		resources = append(resources, map[string]any{"kind": "ConfigMap", "name": bs[0].ConfigMapName()})
	}
	resources = append(resources, map[string]any{"kind": "ConfigMap", "name": configName})
	for _, b := range bs[1:] {
		resources = append(resources, map[string]any{"kind": "ConfigMap", "name": b.ConfigMapName()})
	}
	crs := map[string]any{
		"apiVersion": d.opts.APIVersions.addons(), "kind": "ClusterResourceSet",
		"metadata": map[string]any{"name": p.Name + "-addons", "labels": map[string]any{LabelClusterUUID: p.UUID}},
		"spec": map[string]any{
			"clusterSelector": map[string]any{"matchLabels": map[string]any{LabelClusterUUID: p.UUID}},
			"strategy":        "Reconcile",
			"resources":       resources,
		},
	}
	return []map[string]any{cm, crs}, nil
}

// cniObjects are the cluster-specific CNI settings; the bundle carries
// the CNI itself.
func cniObjects(p *Plan) []map[string]any {
	switch p.NetworkDriver {
	case "cilium":
		return []map[string]any{{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cilium-config", "namespace": "kube-system"},
			"data": map[string]any{
				"cluster-name":                p.Name,
				"ipam":                        "cluster-pool",
				"cluster-pool-ipv4-cidr":      p.PodCIDR,
				"cluster-pool-ipv4-mask-size": "24",
				"routing-mode":                "tunnel",
				"tunnel-protocol":             "vxlan",
				"enable-ipv4":                 "true",
				"enable-ipv6":                 "false",
			},
		}}
	}
	spec := map[string]any{
		"calicoNetwork": map[string]any{
			"ipPools": []any{map[string]any{
				"cidr": p.PodCIDR, "encapsulation": "VXLANCrossSubnet", "natOutgoing": "Enabled",
				"nodeSelector": "all()", "blockSize": int64(26),
			}},
		},
	}
	if p.ImageRepository != "" {
		spec["registry"] = p.ImageRepository + "/"
	}
	return []map[string]any{{
		"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
		"metadata": map[string]any{"name": "default"},
		"spec":     spec,
	}}
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
