package addons

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// The values below use each upstream chart's own keys (its values.yaml);
// TestEveryValueIsAKeyOfTheChart in addons/charts checks them against the
// pinned chart. Images follow container_infra_prefix through
// charts.ImageValues, which reads the chart's own image keys.

const controlPlaneLabel = "node-role.kubernetes.io/control-plane"

// cloudConfigSecret is the workload cluster's kube-system Secret holding
// cloud.conf (credentials, [LoadBalancer] settings such as the Octavia
// provider) and ca.crt, which Magnetite delivers beside the addons.
const cloudConfigSecret = "cloud-config"

// CloudConfigDir is where cloud.conf's ca-file expects the cloud-config
// Secret: every component that reads cloud.conf mounts it there.
const CloudConfigDir = "/etc/config"

// ciliumNameMax is the longest cluster name Cilium accepts (its values.yaml,
// cluster.name).
const ciliumNameMax = 32

func controlPlaneOnly() (map[string]any, []any) {
	return map[string]any{controlPlaneLabel: ""},
		[]any{map[string]any{"key": controlPlaneLabel, "operator": "Exists", "effect": "NoSchedule"},
			map[string]any{"key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists", "effect": "NoSchedule"}}
}

// CiliumClusterName is the cluster's name as Cilium takes it: the object
// name when it fits, else its head and a hash of the whole name, so two
// clusters never share one.
func CiliumClusterName(objectName string) string {
	if len(objectName) <= ciliumNameMax {
		return objectName
	}
	sum := sha256.Sum256([]byte(objectName))
	head := strings.TrimRight(objectName[:ciliumNameMax-9], "-")
	return head + "-" + hex.EncodeToString(sum[:])[:8]
}

// chartMinor is the Kubernetes minor of a cloud-provider-openstack chart
// version (2.31.8 -> 31).
func chartMinor(version string) string {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

// values returns the namespace and values of an addon's charts.
func values(addon string, c Cluster, pin Pin) (string, map[string]any) {
	sel, tol := controlPlaneOnly()
	reg := c.Registry != ""
	switch addon {
	case Calico:
		// VXLAN between every pair of nodes: Neutron's port security drops
		// packets whose source is a pod address unless the port allows it,
		// and CAPO's ports carry no allowed-address-pairs for the pod
		// network (docs/addons.md).
		pool := map[string]any{"cidr": c.PodCIDR, "encapsulation": "VXLAN", "natOutgoing": "Enabled",
			"nodeSelector": "all()", "blockSize": int64(26)}
		inst := map[string]any{"calicoNetwork": map[string]any{"ipPools": []any{pool}, "bgp": "Disabled"}}
		v := map[string]any{"installation": inst}
		if reg {
			inst["registry"] = c.Registry + "/"
			v["tigeraOperator"] = map[string]any{"registry": c.Registry}
			v["calicoctl"] = map[string]any{"image": c.Registry + "/calico/ctl"}
		}
		return "tigera-operator", v
	case Cilium:
		return "kube-system", map[string]any{
			"cluster":        map[string]any{"name": CiliumClusterName(c.Name)},
			"ipam":           map[string]any{"mode": "cluster-pool", "operator": map[string]any{"clusterPoolIPv4PodCIDRList": []any{c.PodCIDR}}},
			"routingMode":    "tunnel",
			"tunnelProtocol": "vxlan",
		}
	case CloudControllerManager:
		return "kube-system", map[string]any{
			"secret":       map[string]any{"enabled": true, "create": false, "name": cloudConfigSecret},
			"cluster":      map[string]any{"name": c.Name},
			"nodeSelector": sel,
			"tolerations":  tol,
		}
	case CinderCSI:
		// Charts 2.31 and 2.32 read cloud.conf from /etc/kubernetes; the
		// Secret is mounted there as well as at CloudConfigDir, where
		// cloud.conf's ca-file points.
		mounts := []any{map[string]any{"name": "cloud-config", "mountPath": CloudConfigDir, "readOnly": true}}
		if m := chartMinor(pin.Charts[len(pin.Charts)-1].Version); m == "31" || m == "32" {
			mounts = append(mounts, map[string]any{"name": "cloud-config", "mountPath": "/etc/kubernetes", "readOnly": true})
		}
		plugin := map[string]any{
			"controllerPlugin": map[string]any{"nodeSelector": sel, "tolerations": tol},
			// The chart's default adds the host's /etc/cacert; the CA comes
			// with the Secret instead.
			"volumes":      []any{},
			"volumeMounts": mounts,
		}
		return "kube-system", map[string]any{
			// cloud.conf comes from the cloud-config Secret, not the host.
			"secret":       map[string]any{"enabled": true, "create": false, "hostMount": false, "name": cloudConfigSecret},
			"clusterID":    c.Name,
			"storageClass": map[string]any{"enabled": false},
			"csi":          map[string]any{"plugin": plugin},
		}
	case NFSCSI:
		// Manila's node plugin forwards NFS mounts to this driver's node
		// plugin; the controller is not needed (Manila provisions).
		return "kube-system", map[string]any{
			"controller":          map[string]any{"replicas": int64(0)},
			"externalSnapshotter": map[string]any{"enabled": false, "customResourceDefinitions": map[string]any{"enabled": false}},
		}
	case ManilaCSI:
		return "kube-system", map[string]any{
			"csimanila": map[string]any{"clusterID": c.Name},
			"shareProtocols": []any{map[string]any{"protocolSelector": "NFS", "fsGroupPolicy": "None",
				"fwdNodePluginEndpoint": map[string]any{"dir": "/var/lib/kubelet/plugins/csi-nfsplugin", "sockFile": "csi.sock"}}},
		}
	case SnapshotController:
		return "kube-system", map[string]any{}
	case KeystoneAuth:
		// openstackAuthUrl comes with WithKeystone; the chart's RBAC
		// policies grant the cluster owner's project.
		return "kube-system", map[string]any{"nodeSelector": sel, "tolerations": tol, "projectId": c.ProjectID}
	case MetricsServer:
		// kubeadm's kubelets serve self-signed certificates.
		return "kube-system", map[string]any{"args": []any{"--kubelet-insecure-tls"}}
	}
	return "kube-system", map[string]any{}
}

// WithKeystone sets k8s-keystone-auth's Keystone endpoint and the CA that
// signs it, which the conductor knows ([cluster_credentials]); other
// releases are unchanged. The chart has no option for a CA: the renderer
// adds it to the webhook (charts.Render).
func (r Release) WithKeystone(authURL string, caCert []byte) Release {
	if r.Addon != KeystoneAuth {
		return r
	}
	vals := make(map[string]any, len(r.Values)+1)
	for k, v := range r.Values {
		vals[k] = v
	}
	vals["openstackAuthUrl"] = authURL
	r.Values = vals
	r.KeystoneCA = caCert
	return r
}
