package addons

// The values below use each upstream chart's own keys (its values.yaml).
// Image repositories follow container_infra_prefix the way Magnum does: a
// mirror holding every image under the prefix by its upstream name.

const controlPlaneLabel = "node-role.kubernetes.io/control-plane"

// cloudConfigSecret is the workload cluster's kube-system Secret holding
// cloud.conf (credentials, [LoadBalancer] settings such as the Octavia
// provider), which Magnetite delivers beside the addons.
const cloudConfigSecret = "cloud-config"

func controlPlaneOnly() (map[string]any, []any) {
	return map[string]any{controlPlaneLabel: ""},
		[]any{map[string]any{"key": controlPlaneLabel, "operator": "Exists", "effect": "NoSchedule"},
			map[string]any{"key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists", "effect": "NoSchedule"}}
}

func image(c Cluster, name string) map[string]any {
	return map[string]any{"repository": c.Registry + "/" + name}
}

// values returns the namespace and values of an addon's charts.
func values(addon string, c Cluster) (string, map[string]any) {
	sel, tol := controlPlaneOnly()
	reg := c.Registry != ""
	switch addon {
	case Calico:
		pool := map[string]any{"cidr": c.PodCIDR, "encapsulation": "VXLANCrossSubnet", "natOutgoing": "Enabled",
			"nodeSelector": "all()", "blockSize": int64(26)}
		inst := map[string]any{"calicoNetwork": map[string]any{"ipPools": []any{pool}}}
		v := map[string]any{"installation": inst}
		if reg {
			inst["registry"] = c.Registry + "/"
			v["tigeraOperator"] = map[string]any{"registry": c.Registry}
		}
		return "tigera-operator", v
	case Cilium:
		v := map[string]any{
			"cluster":        map[string]any{"name": c.Name},
			"ipam":           map[string]any{"mode": "cluster-pool", "operator": map[string]any{"clusterPoolIPv4PodCIDRList": []any{c.PodCIDR}}},
			"routingMode":    "tunnel",
			"tunnelProtocol": "vxlan",
		}
		if reg {
			v["image"] = map[string]any{"repository": c.Registry + "/cilium", "useDigest": false}
			v["operator"] = map[string]any{"image": map[string]any{"repository": c.Registry + "/operator", "useDigest": false}}
		}
		return "kube-system", v
	case CloudControllerManager:
		v := map[string]any{
			"secret":       map[string]any{"enabled": true, "create": false, "name": cloudConfigSecret},
			"cluster":      map[string]any{"name": c.Name},
			"nodeSelector": sel,
			"tolerations":  tol,
		}
		if reg {
			v["image"] = image(c, "openstack-cloud-controller-manager")
		}
		return "kube-system", v
	case CinderCSI:
		plugin := map[string]any{"controllerPlugin": map[string]any{"nodeSelector": sel, "tolerations": tol}}
		csi := map[string]any{"plugin": plugin}
		if reg {
			plugin["image"] = image(c, "cinder-csi-plugin")
			for key, img := range map[string]string{"attacher": "csi-attacher", "provisioner": "csi-provisioner",
				"snapshotter": "csi-snapshotter", "resizer": "csi-resizer", "livenessprobe": "livenessprobe",
				"nodeDriverRegistrar": "csi-node-driver-registrar"} {
				csi[key] = map[string]any{"image": image(c, img)}
			}
		}
		return "kube-system", map[string]any{
			// cloud.conf comes from the cloud-config Secret, not the host.
			"secret":       map[string]any{"enabled": true, "create": false, "hostMount": false, "name": cloudConfigSecret},
			"clusterID":    c.Name,
			"storageClass": map[string]any{"enabled": false},
			"csi":          csi,
		}
	case ManilaCSI:
		cm := map[string]any{"clusterID": c.Name}
		if reg {
			cm["image"] = image(c, "manila-csi-plugin")
		}
		return "kube-system", map[string]any{
			"csimanila": cm,
			"shareProtocols": []any{map[string]any{"protocolSelector": "NFS", "fsGroupPolicy": "None",
				"fwdNodePluginEndpoint": map[string]any{"dir": "/var/lib/kubelet/plugins/csi-nfsplugin", "sockFile": "csi.sock"}}},
		}
	case KeystoneAuth:
		v := map[string]any{"nodeSelector": sel, "tolerations": tol, "conf": map[string]any{}}
		if reg {
			v["image"] = image(c, "k8s-keystone-auth")
		}
		return "kube-system", v
	case MetricsServer:
		// kubeadm's kubelets serve self-signed certificates.
		v := map[string]any{"args": []any{"--kubelet-insecure-tls"}}
		if reg {
			v["image"] = image(c, "metrics-server")
		}
		return "kube-system", v
	}
	return "kube-system", map[string]any{}
}

// WithKeystone sets k8s-keystone-auth's Keystone endpoint and CA, which the
// conductor knows ([cluster_credentials]); other releases are unchanged.
func (r Release) WithKeystone(authURL string, caCert []byte) Release {
	if r.Addon != KeystoneAuth {
		return r
	}
	conf := map[string]any{"auth_url": authURL}
	if len(caCert) > 0 {
		conf["ca_cert"] = string(caCert)
	}
	vals := make(map[string]any, len(r.Values))
	for k, v := range r.Values {
		vals[k] = v
	}
	vals["conf"] = conf
	r.Values = vals
	return r
}
