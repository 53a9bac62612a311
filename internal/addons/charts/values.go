package charts

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/addons"
)

// ImageValues points every image a chart's values name at a registry
// mirror, as container_infra_prefix asks: each map of the chart's own
// values.yaml with a "repository" gets registry/<last part of the upstream
// name> (registry.k8s.io/sig-storage/csi-resizer -> <registry>/csi-resizer),
// and digests, which a mirror need not keep, are not used. Reading the
// chart's own keys covers images the pinned table never named (Cilium's
// envoy, Manila's sidecars).
func ImageValues(chartValues map[string]any, registry string) map[string]any {
	out := map[string]any{}
	for k, v := range chartValues {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if sub := ImageValues(m, registry); len(sub) > 0 {
			out[k] = sub
		}
	}
	if repo, ok := chartValues["repository"].(string); ok && repo != "" {
		out["repository"] = registry + "/" + repo[strings.LastIndex(repo, "/")+1:]
		if _, ok := chartValues["useDigest"]; ok {
			out["useDigest"] = false
		}
	}
	return out
}

// copyValues copies a values tree, which CoalesceTables changes in place.
func copyValues(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		if m, ok := x.(map[string]any); ok {
			x = copyValues(m)
		}
		out[k] = x
	}
	return out
}

// keystoneCADir is where the webhook finds a private Keystone CA.
const keystoneCADir = "/etc/magnetite/keystone"

// withKeystoneCA gives k8s-keystone-auth the CA of a private Keystone: the
// chart has no value for it, so the rendered DaemonSet gets a ConfigMap
// with the CA mounted and the webhook's own --keystone-ca-file flag
// (cloud-provider-openstack pkg/identity/keystone/config.go).
func withKeystoneCA(objs []*unstructured.Unstructured, rel addons.Release) ([]*unstructured.Unstructured, error) {
	const name = "k8s-keystone-auth-ca"
	patched := 0
	for _, u := range objs {
		if u.GetKind() != "DaemonSet" {
			continue
		}
		spec, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
		vols, _, _ := unstructured.NestedSlice(spec, "volumes")
		spec["volumes"] = append(vols, map[string]any{"name": name, "configMap": map[string]any{"name": name}})
		cs, _, _ := unstructured.NestedSlice(spec, "containers")
		for i := range cs {
			c := cs[i].(map[string]any)
			mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
			c["volumeMounts"] = append(mounts, map[string]any{"name": name, "mountPath": keystoneCADir, "readOnly": true})
			args, _, _ := unstructured.NestedSlice(c, "args")
			c["args"] = append(args, "--keystone-ca-file", keystoneCADir+"/ca.crt")
		}
		spec["containers"] = cs
		if err := unstructured.SetNestedMap(u.Object, spec, "spec", "template", "spec"); err != nil {
			return nil, err
		}
		patched++
	}
	if patched != 1 {
		return nil, fmt.Errorf("%s renders %d DaemonSets, Magnetite expects the webhook's one to give it the Keystone CA", rel.Pin.Charts[0], patched)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": rel.Namespace},
		"data":     map[string]any{"ca.crt": string(rel.KeystoneCA)},
	}}
	return append([]*unstructured.Unstructured{cm}, objs...), nil
}
