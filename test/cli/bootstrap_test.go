package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/openstack"
	"github.com/magnetite-io/magnetite/internal/testing/testbootstrap"
	"github.com/magnetite-io/magnetite/internal/testing/testcapo"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
)

var (
	secretsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	kubeadmConfigsGVR = schema.GroupVersionResource{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta2", Resource: "kubeadmconfigs"}
)

// jinjaFile is an extra file whose text jinja would read as a template:
// cloud-init must write it as the user gave it.
const (
	jinjaFilePath    = "/etc/motd.d/cluster"
	jinjaFileContent = "Welcome to {{ cluster }}: {% raw %} and {# a comment #} are not templates here.\n"
)

// jinjaFileLabel is the extra_files label that carries jinjaFile, as
// base64 of the whole list (the CLI splits a label value at commas).
var jinjaFileLabel = base64.StdEncoding.EncodeToString([]byte(
	"- path: " + jinjaFilePath + "\n  content: " + strconv.Quote(jinjaFileContent) + "\n  permissions: \"0644\"\n"))

// checkBootstrapOfClusters checks what every node of the clusters boots
// (checkNodeBootstrap): each has a control plane that runs kubeadm init
// and nodes that join, at the Kubernetes versions of testbootstrap, and
// vm1's nodes get its extra file as written.
func checkBootstrapOfClusters(ctx context.Context, t *testing.T, dc dynamic.Interface, capo *testcapo.Controller, cloud *testcloud.Cloud,
	uuids map[string]string, clusters ...string) {
	t.Helper()
	versions := map[string]bool{}
	for _, cluster := range clusters {
		commands := map[string]int{}
		for _, n := range checkNodeBootstrap(ctx, t, dc, capo, cloud, uuids[cluster]) {
			t.Logf("%s: %s (server %s, Kubernetes %s) runs kubeadm %s; user data %d bytes in base64, Magnetite's estimate %d",
				cluster, n.machine, n.server, n.version, n.kubeadmCommand, n.userDataBase64, n.estimate)
			commands[n.kubeadmCommand]++
			versions[n.version] = true
			if got := string(n.files[jinjaFilePath]); cluster == "vm1" && got != jinjaFileContent {
				t.Errorf("%s: %s holds %q, want the extra file as given, %q", cluster, jinjaFilePath, got, jinjaFileContent)
			}
		}
		if commands["init"] != 1 || commands["join"] == 0 {
			t.Errorf("%s: nodes run kubeadm %v, want one init and joins", cluster, commands)
		}
	}
	for _, v := range testbootstrap.KubeadmVersions {
		if !versions[v] {
			t.Errorf("no node runs Kubernetes %s (they run %v)", v, versions)
		}
	}
}

// bootedNode is what one machine's server boots: the kubeadm configuration
// cloud-init leaves on it and the node kubeadm registers.
type bootedNode struct {
	machine, server, version, kubeadmCommand string
	controlPlane                             bool
	// files are the files cloud-init writes, by path.
	files          map[string][]byte
	userDataBase64 int
	estimate       int
}

// checkNodeBootstrap reads, for every machine of a cluster on the CAPO
// stand-in, the bootstrap data Cluster API's kubeadm bootstrap provider
// wrote for it, as its server boots it: Debian's cloud-init renders the
// jinja template with the instance data of that server (Nova's host name
// and UUID), the kubeadm configuration cloud-init writes is validated by
// the kubeadm of the cluster's Kubernetes version, and it must register
// the node under the server's host name with the provider ID the machine
// carries. The data must also fit in Nova's user_data and within what
// Magnetite estimates for it when it checks a cluster's extra_files.
func checkNodeBootstrap(ctx context.Context, t *testing.T, dc dynamic.Interface, capo *testcapo.Controller, cloud *testcloud.Cloud, uuid string) []bootedNode {
	t.Helper()
	var booted []bootedNode
	for _, om := range clusterMachines(ctx, t, dc, capo, uuid) {
		machine := ownerMachine(ctx, t, dc, om)
		version, _, _ := unstructured.NestedString(machine.Object, "spec", "version")
		secretName, _, _ := unstructured.NestedString(machine.Object, "spec", "bootstrap", "dataSecretName")
		id, _, _ := unstructured.NestedString(om.Object, "status", "instanceID")
		providerID, _, _ := unstructured.NestedString(om.Object, "spec", "providerID")
		var server testcloud.Server
		for _, s := range cloud.Servers() {
			if s.ID == id {
				server = s
			}
		}
		if secretName == "" || server.ID == "" {
			t.Fatalf("machine %s has no bootstrap data (%q) or no server (%q)", machine.GetName(), secretName, id)
		}
		secret, err := dc.Resource(secretsGVR).Namespace(om.GetNamespace()).Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		value := secretData(t, secret, "value")
		if format := string(secretData(t, secret, "format")); format != "cloud-config" {
			t.Fatalf("%s: bootstrap format %q, want cloud-config", machine.GetName(), format)
		}
		_, controlPlane := machine.GetLabels()["cluster.x-k8s.io/control-plane"]
		node := bootedNode{machine: machine.GetName(), server: server.Name, version: version, controlPlane: controlPlane, files: map[string][]byte{},
			userDataBase64: base64.StdEncoding.EncodedLen(len(value)),
			estimate:       capi.UserDataSize(capi.OSProfile{Name: "ubuntu"}, controlPlane, bootstrapFiles(ctx, t, dc, machine))}

		host := testbootstrap.NovaHostname(server.Name)
		cfg := testbootstrap.Parse(t, testbootstrap.CloudConfig(t, value, testbootstrap.Instance{Hostname: host, ID: server.ID}))
		for _, f := range cfg.WriteFiles {
			node.files[f.Path] = f.Data(t)
		}
		var config []byte
		node.kubeadmCommand, config = cfg.KubeadmConfig(t)
		if err := testbootstrap.ValidateKubeadm(t, version, config); err != nil {
			t.Errorf("%s (server %s, Kubernetes %s): kubeadm refuses the configuration cloud-init writes: %v\n%s",
				machine.GetName(), server.Name, version, err, config)
		}
		name, args := testbootstrap.NodeRegistration(t, config, node.kubeadmCommand)
		if name != host {
			t.Errorf("%s: kubeadm would register node %q, want the server's host name %q", machine.GetName(), name, host)
		}
		if got := testbootstrap.KubeletArg(args["provider-id"]); got != providerID {
			t.Errorf("%s: kubelet's provider ID %q, want the machine's %q", machine.GetName(), args["provider-id"], providerID)
		}
		if node.userDataBase64 > openstack.NovaUserDataLimit {
			t.Errorf("%s: user data is %d bytes in base64, over Nova's %d", machine.GetName(), node.userDataBase64, openstack.NovaUserDataLimit)
		}
		if node.userDataBase64 > node.estimate {
			t.Errorf("%s: user data is %d bytes in base64, over Magnetite's estimate of %d", machine.GetName(), node.userDataBase64, node.estimate)
		}
		booted = append(booted, node)
	}
	return booted
}

func ownerMachine(ctx context.Context, t *testing.T, dc dynamic.Interface, om unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	for _, ref := range om.GetOwnerReferences() {
		if ref.Kind == "Machine" {
			m, err := dc.Resource(testcapo.Machines).Namespace(om.GetNamespace()).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("%s has no Machine owner", om.GetName())
	return nil
}

func secretData(t *testing.T, s *unstructured.Unstructured, key string) []byte {
	t.Helper()
	enc, _, _ := unstructured.NestedString(s.Object, "data", key)
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(b) == 0 {
		t.Fatalf("secret %s has no %s: %v", s.GetName(), key, err)
	}
	return b
}

// bootstrapFiles are the files of the machine's KubeadmConfig, as Cluster
// API's topology controller and the control plane made it from
// Magnetite's ClusterClass.
func bootstrapFiles(ctx context.Context, t *testing.T, dc dynamic.Interface, machine *unstructured.Unstructured) []capi.BootstrapFile {
	t.Helper()
	name, _, _ := unstructured.NestedString(machine.Object, "spec", "bootstrap", "configRef", "name")
	kc, err := dc.Resource(kubeadmConfigsGVR).Namespace(machine.GetNamespace()).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _, _ := unstructured.NestedSlice(kc.Object, "spec", "files")
	var files []capi.BootstrapFile
	for _, r := range raw {
		f, _ := r.(map[string]any)
		str := func(k string) string { s, _ := f[k].(string); return s }
		files = append(files, capi.BootstrapFile{Path: str("path"), Content: str("content"), Encoding: str("encoding"),
			Owner: str("owner"), Permissions: str("permissions")})
	}
	return files
}

// TestTheAPIRefusesExtraFilesTooLargeForNova creates, through Debian's
// openstack CLI, clusters whose extra_files would make the nodes'
// bootstrap data larger than Nova takes as user data: the API answers 400
// saying what to change, for the cluster and for a node group whose labels
// bring it there, and takes the same file compressed.
func TestTheAPIRefusesExtraFilesTooLargeForNova(t *testing.T) {
	requireCLI(t)
	t.Parallel()
	c := newCLI(t, startMagnetite(t))
	c.ok(t, "coe", "cluster", "template", "create", "k8s", "--coe", "kubernetes", "--image", "ubuntu-jammy",
		"--external-network", "public", "--flavor", "m1.large", "--master-flavor", "m1.medium", "--labels", "kube_tag=v1.36.3")
	// 40 KB of text (a label value holds at most 64 KiB): base64 of the whole
	// list, as the CLI splits a label
	// value at commas.
	var text strings.Builder
	for i := 0; text.Len() < 40_000; i++ {
		fmt.Fprintf(&text, "line %d of a configuration file that is far too large for user data\n", i)
	}
	label := func(encoding, content string) string {
		list := "- path: /etc/large.conf\n  content: " + strconv.Quote(content) + "\n"
		if encoding != "" {
			list += "  encoding: " + encoding + "\n"
		}
		return "extra_files=" + base64.StdEncoding.EncodeToString([]byte(list))
	}
	refused := c.fails(t, "coe", "cluster", "create", "large", "--cluster-template", "k8s", "--labels", label("", text.String()))
	for _, want := range []string{"(HTTP 400)", "the bootstrap data of the control-plane nodes would be about",
		fmt.Sprintf("over the %d Nova accepts as user data", openstack.NovaUserDataLimit), "make its files smaller (encoding gzip+base64 shrinks text)"} {
		if !strings.Contains(refused, want) {
			t.Errorf("cluster create with 40 KB of extra_files: %q lacks %q", refused, want)
		}
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte(text.String()))
	_ = w.Close()
	compressed := base64.StdEncoding.EncodeToString(gz.Bytes())
	c.ok(t, "coe", "cluster", "create", "compressed", "--cluster-template", "k8s", "--labels", label("gzip+base64", compressed))
	refused = c.fails(t, "coe", "nodegroup", "create", "compressed", "large", "--labels", label("", text.String()))
	if !strings.Contains(refused, "(HTTP 400)") || !strings.Contains(refused, "extra_files label takes") {
		t.Errorf("node group create with 40 KB of extra_files: %q", refused)
	}
}
