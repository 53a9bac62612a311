package capi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/openstack"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testbootstrap"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestFlatcarControlPlaneBootsTheIgnitionClusterAPIWrites applies a Flatcar
// cluster, at each Kubernetes version testbootstrap has a kubeadm of, to
// an API server running Cluster API's core, kubeadm bootstrap and control
// plane managers, plays CAPO's part for the OpenStackCluster (the control
// plane endpoint, provisioned) and reads the bootstrap data the bootstrap
// provider writes for the first control-plane machine as Flatcar does:
// Flatcar's Ignition config library parses and validates it, the
// kubeadm.sh it writes runs Magnetite's commands that fill in the
// metadata agent's variables, and the kubeadm of the cluster's version
// validates the configuration that results. The node must register under
// the server's host name with the provider ID CAPO gives the machine, and
// the data must fit within Magnetite's estimate of it.
func TestFlatcarControlPlaneBootsTheIgnitionClusterAPIWrites(t *testing.T) {
	env, dc, mapper := testenv.StartGolden(t, []string{"capo"}, testenv.CoreManager, testenv.KubeadmBootstrapManager, testenv.KubeadmControlPlaneManager)
	ctx := context.Background()
	// Rendered at the versions the plane serves, as the conductor renders.
	mc, err := mgmt.NewForConfig(env.Config, mgmt.Options{Kinds: builtin.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	served, err := mc.APIVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resource := func(group, kind string) schema.GroupVersionResource {
		m, err := mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		return m.Resource
	}
	ns := testenv.GoldenNamespace
	const sysctl = "vm.max_map_count=262144\n"
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte(sysctl))
	_ = w.Close()
	gzipped := base64.StdEncoding.EncodeToString(gz.Bytes())
	for i, version := range testbootstrap.KubeadmVersions {
		req := caseRequest(t, "os-flatcar")
		req.APIVersions = served
		name := "flatcar-" + strings.ReplaceAll(version, ".", "-")
		req.Cluster.Name, req.Cluster.StackID = name, &name
		req.Cluster.UUID = req.Cluster.UUID[:len(req.Cluster.UUID)-1] + string(rune('a'+i))
		req.Template.Labels = map[string]string{"kube_tag": version, "extra_files": "- path: /etc/motd.d/cluster\n" +
			"  content: \"Welcome to {{ cluster }}\\n\"\n- path: /etc/sysctl.d/90-maps.conf\n  encoding: gzip+base64\n  content: " + gzipped}
		res := mustRender(t, req)
		var clusterName string
		for _, o := range res.Objects {
			if _, err := testenv.ServerSideApply(ctx, dc, mapper, o, false); err != nil {
				t.Fatalf("%s: apply %s %s: %v", version, o.GetKind(), o.GetName(), err)
			}
			if o.GetKind() == "Cluster" {
				clusterName = o.GetName()
			}
		}
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			clusters := dc.Resource(resource("cluster.x-k8s.io", "Cluster")).Namespace(ns)
			var infraName string
			testenv.WaitFor(t, "the cluster's OpenStackCluster", 2*time.Minute, func() (bool, string) {
				c, err := clusters.Get(ctx, clusterName, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				infraName, _, _ = unstructured.NestedString(c.Object, "spec", "infrastructureRef", "name")
				return infraName != "", "no infrastructureRef yet"
			})
			// CAPO's part: the API load balancer's address, then provisioned.
			osc := dc.Resource(resource("infrastructure.cluster.x-k8s.io", "OpenStackCluster")).Namespace(ns)
			o, err := osc.Get(ctx, infraName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_ = unstructured.SetNestedMap(o.Object, map[string]any{"host": "192.0.2.10", "port": int64(6443)}, "spec", "controlPlaneEndpoint")
			if o, err = osc.Update(ctx, o, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			// Cluster API's v1beta1 contract (CAPO v0.14) reads status.ready,
			// its v1beta2 contract status.initialization.provisioned.
			if strings.HasSuffix(o.GetAPIVersion(), "/v1beta1") {
				_ = unstructured.SetNestedField(o.Object, true, "status", "ready")
			} else {
				_ = unstructured.SetNestedField(o.Object, true, "status", "initialization", "provisioned")
			}
			if _, err := osc.UpdateStatus(ctx, o, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}

			machines := dc.Resource(resource("cluster.x-k8s.io", "Machine")).Namespace(ns)
			var machine unstructured.Unstructured
			var secretName string
			testenv.WaitFor(t, "the first control-plane machine's bootstrap data", 3*time.Minute, func() (bool, string) {
				list, err := machines.List(ctx, metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/control-plane,cluster.x-k8s.io/cluster-name=" + clusterName})
				if err != nil || len(list.Items) == 0 {
					return false, "no control-plane machine yet"
				}
				machine = list.Items[0]
				secretName, _, _ = unstructured.NestedString(machine.Object, "spec", "bootstrap", "dataSecretName")
				return secretName != "", "no bootstrap data yet"
			})
			secret, err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(ns).Get(ctx, secretName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			data := func(key string) []byte {
				enc, _, _ := unstructured.NestedString(secret.Object, "data", key)
				b, _ := base64.StdEncoding.DecodeString(enc)
				return b
			}
			if f := string(data("format")); f != "ignition" {
				t.Fatalf("bootstrap format %q, want ignition", f)
			}
			value := data("value")
			files := testbootstrap.IgnitionFiles(t, value)
			if got := string(files["/etc/motd.d/cluster"]); got != "Welcome to {{ cluster }}\n" {
				t.Errorf("the extra file holds %q", got)
			}
			if got := string(files["/etc/sysctl.d/90-maps.conf"]); got != sysctl {
				t.Errorf("the gzip+base64 extra file holds %q, want %q", got, sysctl)
			}

			// What coreos-metadata writes for the server (the metadata's
			// hostname carries Nova's dhcp_domain), and kubeadm.sh's
			// commands up to kubeadm, run on the node's files.
			const serverID = "5d8c1f7e-3a41-4b7e-9c55-2f1e0b6a9d10"
			host := testbootstrap.NovaHostname(machine.GetName())
			root := t.TempDir()
			for path, content := range files {
				p := filepath.Join(root, path)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, content, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			script, _, _ := strings.Cut(string(files["/etc/kubeadm.sh"]), "kubeadm init")
			if script == string(files["/etc/kubeadm.sh"]) {
				t.Fatalf("kubeadm.sh runs no kubeadm init:\n%s", script)
			}
			cmd := exec.Command("/bin/bash", "-c", strings.ReplaceAll(script, "/etc/", root+"/etc/"))
			cmd.Env = append(os.Environ(), "COREOS_OPENSTACK_HOSTNAME="+host+".novalocal", "COREOS_OPENSTACK_INSTANCE_UUID="+serverID)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("kubeadm.sh's commands before kubeadm: %v: %s\n%s", err, out, script)
			}
			config, err := os.ReadFile(filepath.Join(root, "etc", "kubeadm.yml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := testbootstrap.ValidateKubeadm(t, version, config); err != nil {
				t.Errorf("%v\n%s", err, config)
			}
			for _, want := range []string{"name: " + host + "\n", "value: openstack:///" + serverID + "\n"} {
				if !strings.Contains(string(config), want) {
					t.Errorf("the kubeadm configuration lacks %q:\n%s", want, config)
				}
			}

			size := base64.StdEncoding.EncodedLen(len(value))
			estimate := capi.UserDataSize(capi.OSProfile{Name: "flatcar", Ignition: true}, true,
				[]capi.BootstrapFile{{Path: "/etc/motd.d/cluster", Content: "Welcome to {{ cluster }}\n", Permissions: "0644"},
					{Path: "/etc/sysctl.d/90-maps.conf", Content: base64.StdEncoding.EncodeToString([]byte(sysctl)), Encoding: "base64", Permissions: "0644"}})
			t.Logf("Ignition of the first control plane: %d bytes in base64, Magnetite's estimate %d", size, estimate)
			if size > estimate || size > openstack.NovaUserDataLimit {
				t.Errorf("the Ignition is %d bytes in base64, over Magnetite's estimate %d or Nova's limit", size, estimate)
			}
		})
	}
}
