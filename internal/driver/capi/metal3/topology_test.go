package metal3_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestClusterAPIBuildsTheMetal3Topology applies golden renders for real to
// an API server running Cluster API's core and kubeadm managers, with
// CAPM3's, baremetal-operator's and IPAM's CRDs, and checks what Cluster
// API's topology engine builds from them with the ClusterClass patches:
// the Metal3Cluster's endpoint is kube-vip's address, the control plane's
// Metal3MachineTemplate carries the image, data template and node reuse,
// the KubeadmControlPlane writes the kube-vip static pod, and the control
// plane's MachineHealthCheck remediates with the Metal3 reboot template
// when auto-healing is on. (Machine deployments follow once a control
// plane machine runs, which needs CAPM3 and hosts.) The v1beta1 renders
// run with CAPM3 v1.12.7's CRDs, the v1beta2 renders with v1.13.2's.
func TestClusterAPIBuildsTheMetal3Topology(t *testing.T) {
	for _, at := range capm3Releases {
		t.Run(at.release, func(t *testing.T) { buildsMetal3Topology(t, at.release, at.version) })
	}
}

func buildsMetal3Topology(t *testing.T, release, version string) {
	ctx, dc, mapper := managementCluster(t, release)
	list := func(group, kind, cluster string) []unstructured.Unstructured {
		m, err := mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		l, err := dc.Resource(m.Resource).Namespace(testenv.GoldenNamespace).List(ctx,
			metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/cluster-name=" + cluster})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	// built waits until Cluster API has made an object of kind for the
	// cluster that satisfies ok, and returns it.
	built := func(t *testing.T, group, kind, cluster string, ok func(u *unstructured.Unstructured) bool) *unstructured.Unstructured {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
			for _, u := range list(group, kind, cluster) {
				if ok(&u) {
					return &u
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("Cluster API built no %s for %s as expected within 3m", kind, cluster)
			}
			time.Sleep(wait)
		}
	}
	cases := []struct {
		golden, cluster, vip string
		nodeReuse, healing   bool
	}{
		{"ip-pools", "static-6a1e28ba", "192.168.111.20", false, true},
		{"node-reuse", "storage-6a1e28ba", "192.168.111.5", true, true},
		{"control-plane-and-workers", "edge-6a1e28ba", "192.168.111.5", false, false},
	}
	for _, c := range cases {
		objs, err := testenv.ReadObjects(filepath.Join("testdata", "golden", version, c.golden+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if _, err := testenv.ServerSideApply(ctx, dc, mapper, o, false); err != nil {
				t.Fatalf("%s: apply %s %s: %v", c.golden, o.GetKind(), o.GetName(), err)
			}
		}
	}
	always := func(*unstructured.Unstructured) bool { return true }
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			infra := built(t, "infrastructure.cluster.x-k8s.io", "Metal3Cluster", c.cluster, always)
			if host, _, _ := unstructured.NestedString(infra.Object, "spec", "controlPlaneEndpoint", "host"); host != c.vip {
				t.Errorf("Metal3Cluster endpoint %q, want kube-vip's %s", host, c.vip)
			}
			m := built(t, "infrastructure.cluster.x-k8s.io", "Metal3MachineTemplate", c.cluster, func(u *unstructured.Unstructured) bool {
				data, _, _ := unstructured.NestedString(u.Object, "spec", "template", "spec", "dataTemplate", "name")
				return data == c.cluster+"-default-master"
			})
			reuse, _, _ := unstructured.NestedBool(m.Object, "spec", "nodeReuse")
			url, _, _ := unstructured.NestedString(m.Object, "spec", "template", "spec", "image", "url")
			if reuse != c.nodeReuse || !strings.HasPrefix(url, "https://images.example.com/") {
				t.Errorf("control plane Metal3MachineTemplate: nodeReuse %v (want %v), image %q", reuse, c.nodeReuse, url)
			}
			kcp := built(t, "controlplane.cluster.x-k8s.io", "KubeadmControlPlane", c.cluster, always)
			files, _, _ := unstructured.NestedSlice(kcp.Object, "spec", "kubeadmConfigSpec", "files")
			var vip string
			for _, f := range files {
				if fm := f.(map[string]any); fm["path"] == "/etc/kubernetes/manifests/kube-vip.yaml" {
					vip, _ = fm["content"].(string)
				}
			}
			if !strings.Contains(vip, "value: "+c.vip) {
				t.Errorf("KubeadmControlPlane files lack kube-vip announcing %s: %v", c.vip, files)
			}
			if !c.healing {
				return
			}
			built(t, "cluster.x-k8s.io", "MachineHealthCheck", c.cluster, func(u *unstructured.Unstructured) bool {
				spec, _ := json.Marshal(u.Object["spec"])
				return strings.Contains(string(spec), `"kind":"Metal3RemediationTemplate"`) &&
					strings.Contains(string(spec), `"name":"`+c.cluster+`-control-plane-remediation"`)
			})
		})
	}
	// Without auto-healing there is nothing to remediate.
	if mhcs := list("cluster.x-k8s.io", "MachineHealthCheck", "edge-6a1e28ba"); len(mhcs) != 0 {
		t.Errorf("auto_healing_enabled=false still made %d MachineHealthChecks", len(mhcs))
	}
}
