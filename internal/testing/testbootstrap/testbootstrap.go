// Package testbootstrap reads the bootstrap data a node boots with the way
// the node does: Debian's cloud-init renders the jinja template of a
// cloud-config with the instance's metadata, and a real kubeadm, built
// from Go modules at the cluster's Kubernetes version by
// hack/build-testbin.sh, validates the kubeadm configuration it finds in
// write_files.
package testbootstrap

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	ignition "github.com/flatcar/ignition/config/v2_3"
	"github.com/vincent-petithory/dataurl"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

// cloudInitBin is Debian's cloud-init (package cloud-init, 22.4 in
// bookworm).
const cloudInitBin = "/usr/bin/cloud-init"

// KubeadmVersions are the Kubernetes versions whose kubeadm
// hack/build-testbin.sh builds: two minors, so that the configuration
// Cluster API writes is read by the kubeadm of the cluster it is for.
var KubeadmVersions = []string{"v1.36.3", "v1.35.4"}

// Instance is what cloud-init's OpenStack data source reads from Nova's
// metadata service about a server and exposes to jinja templates
// (instance-data.json's v1 keys): its short host name and its UUID.
type Instance struct {
	Hostname         string
	ID               string
	AvailabilityZone string
	// MetaData are further keys of the metadata the data source reads
	// (ds.meta_data): on Metal3, what CAPM3 renders for the host and
	// Ironic puts on its config drive (meta_data.json).
	MetaData map[string]string
}

// instanceData is the part of /run/cloud-init/instance-data.json a
// template can read on an OpenStack instance. cloud-init 22.4 builds it in
// cloudinit/sources/__init__.py (_get_standardized_metadata) and makes
// each v1 key a top-level template variable as well.
func (i Instance) instanceData() map[string]any {
	metaData := map[string]any{
		"uuid":              i.ID,
		"name":              i.Hostname,
		"hostname":          i.Hostname,
		"availability_zone": i.AvailabilityZone,
	}
	for k, v := range i.MetaData {
		metaData[k] = v
	}
	return map[string]any{
		"v1": map[string]any{
			"cloud_name":        "openstack",
			"platform":          "openstack",
			"subplatform":       "metadata (http://169.254.169.254)",
			"local_hostname":    i.Hostname,
			"instance_id":       i.ID,
			"availability_zone": i.AvailabilityZone,
			"region":            nil,
		},
		"ds": map[string]any{"meta_data": metaData},
	}
}

// CloudConfig renders userData as cloud-init renders a `## template:
// jinja` part on the instance (`cloud-init devel render`, the handler
// cloud-init runs at boot), and returns the resulting cloud-config. It
// fails the test when cloud-init cannot render it or a template variable
// is unknown to the instance data (cloud-init would leave
// CI_MISSING_JINJA_VAR in its place).
func CloudConfig(t testing.TB, userData []byte, inst Instance) []byte {
	t.Helper()
	testproc.Require(t, cloudInitBin)
	dir := t.TempDir()
	data, err := json.Marshal(inst.instanceData())
	if err != nil {
		t.Fatal(err)
	}
	ud, id := filepath.Join(dir, "user-data"), filepath.Join(dir, "instance-data.json")
	if err := os.WriteFile(ud, userData, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(id, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cloudInitBin, "devel", "render", "-i", id, ud)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cloud-init could not render the user data: %v: %s", err, stderr.String())
	}
	if strings.Contains(string(out), "CI_MISSING_JINJA_VAR") {
		t.Fatalf("the user data uses template variables cloud-init does not have: %s\n%s", stderr.String(), out)
	}
	if !strings.HasPrefix(string(out), "#cloud-config") {
		t.Fatalf("cloud-init's rendering is not a cloud-config:\n%s", out)
	}
	return out
}

// File is one entry of a cloud-config's write_files.
type File struct {
	Path        string `json:"path"`
	Content     string `json:"content"`
	Encoding    string `json:"encoding"`
	Owner       string `json:"owner"`
	Permissions string `json:"permissions"`
}

// CloudConfigDoc is the part of a cloud-config the tests read.
type CloudConfigDoc struct {
	WriteFiles []File `json:"write_files"`
	RunCmd     []any  `json:"runcmd"`
}

// Parse reads a cloud-config as cloud-init does (YAML).
func Parse(t testing.TB, cloudConfig []byte) CloudConfigDoc {
	t.Helper()
	var doc CloudConfigDoc
	if err := yaml.Unmarshal(cloudConfig, &doc); err != nil {
		t.Fatalf("the rendered cloud-config is not YAML cloud-init can read: %v\n%s", err, cloudConfig)
	}
	return doc
}

// Data is what cloud-init writes to the file: content decoded as its
// encoding says (cloudinit/config/cc_write_files.py,
// canonicalize_extraction).
func (f File) Data(t testing.TB) []byte {
	t.Helper()
	content := []byte(f.Content)
	switch strings.ToLower(strings.TrimSpace(f.Encoding)) {
	case "", "text/plain":
		return content
	case "b64", "base64":
		return decodeBase64(t, f, content)
	case "gz", "gzip":
		return gunzip(t, f, content)
	case "gz+base64", "gzip+base64", "gz+b64", "gzip+b64":
		return gunzip(t, f, decodeBase64(t, f, content))
	}
	t.Fatalf("%s: encoding %q is not one cloud-init knows", f.Path, f.Encoding)
	return nil
}

func decodeBase64(t testing.TB, f File, content []byte) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(string(content))
	if err != nil {
		t.Fatalf("%s: encoding %s but content is not base64: %v", f.Path, f.Encoding, err)
	}
	return b
}

func gunzip(t testing.TB, f File, content []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(content))
	if err == nil {
		content, err = io.ReadAll(r)
	}
	if err != nil {
		t.Fatalf("%s: encoding %s but content is not gzip: %v", f.Path, f.Encoding, err)
	}
	return content
}

// File returns the write_files entry at path.
func (d CloudConfigDoc) File(t testing.TB, path string) File {
	t.Helper()
	for _, f := range d.WriteFiles {
		if f.Path == path {
			return f
		}
	}
	var paths []string
	for _, f := range d.WriteFiles {
		paths = append(paths, f.Path)
	}
	t.Fatalf("the cloud-config writes no %s (it writes %s)", path, strings.Join(paths, ", "))
	return File{}
}

// kubeadmCommand is how Cluster API's kubeadm bootstrap provider runs
// kubeadm in runcmd (bootstrap/kubeadm/pkg/cloudinit, v1.14).
var kubeadmCommand = regexp.MustCompile(`kubeadm (init|join) --config (\S+)`)

// KubeadmConfig returns what the node's runcmd runs, "init" or "join",
// and the kubeadm configuration file it runs it with, as cloud-init
// writes it, failing the test when runcmd runs no kubeadm.
func (d CloudConfigDoc) KubeadmConfig(t testing.TB) (string, []byte) {
	t.Helper()
	for _, c := range d.RunCmd {
		line, ok := c.(string)
		if !ok {
			b, _ := yaml.Marshal(c)
			line = string(b)
		}
		if m := kubeadmCommand.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			return m[1], d.File(t, m[2]).Data(t)
		}
	}
	t.Fatalf("runcmd runs no kubeadm init or join: %v", d.RunCmd)
	return "", nil
}

// NodeRegistration returns the node name and kubelet arguments of a
// kubeadm configuration's InitConfiguration (command "init") or
// JoinConfiguration ("join"): what kubeadm registers the node as.
func NodeRegistration(t testing.TB, config []byte, command string) (string, map[string]string) {
	t.Helper()
	kind := map[string]string{"init": "InitConfiguration", "join": "JoinConfiguration"}[command]
	for _, doc := range strings.Split(string(config), "\n---") {
		var c struct {
			Kind             string `json:"kind"`
			NodeRegistration struct {
				Name             string `json:"name"`
				KubeletExtraArgs []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"kubeletExtraArgs"`
			} `json:"nodeRegistration"`
		}
		if err := yaml.Unmarshal([]byte(doc), &c); err != nil {
			t.Fatalf("kubeadm configuration document is not YAML: %v\n%s", err, doc)
		}
		if c.Kind != kind {
			continue
		}
		args := map[string]string{}
		for _, a := range c.NodeRegistration.KubeletExtraArgs {
			args[a.Name] = a.Value
		}
		return c.NodeRegistration.Name, args
	}
	t.Fatalf("the kubeadm configuration has no %s:\n%s", kind, config)
	return "", nil
}

// KubeletArg is a kubelet argument as kubelet receives it: kubeadm writes
// the arguments to kubelet's environment file (/var/lib/kubelet/
// kubeadm-flags.env), and systemd's word splitting of
// $KUBELET_KUBEADM_ARGS in the kubelet unit takes away the single quotes
// CAPO puts around the instance ID in the provider ID.
func KubeletArg(value string) string { return strings.ReplaceAll(value, "'", "") }

// Kubeadm is the path of the kubeadm built for version, failing the test
// when hack/build-testbin.sh has not built it.
func Kubeadm(t testing.TB, version string) string {
	t.Helper()
	bin, err := testenv.Testbin()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(bin, "k8s-"+version, "kubeadm")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing (%v); build it with hack/build-testbin.sh", p, err)
	}
	return p
}

// ValidateKubeadm runs `kubeadm config validate` of the kubeadm built for
// version on a kubeadm configuration file and returns its error, with
// kubeadm's output, if kubeadm refuses it.
func ValidateKubeadm(t testing.TB, version string, config []byte) error {
	t.Helper()
	kubeadm := Kubeadm(t, version)
	f := filepath.Join(t.TempDir(), "kubeadm.yaml")
	if err := os.WriteFile(f, config, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubeadm, "config", "validate", "--config", f).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubeadm %s config validate: %v: %s", version, err, out)
	}
	return nil
}

// NovaHostname is the host name Nova gives a server of that name, which
// its metadata service serves and cloud-init takes as local_hostname
// (nova/utils.py sanitize_hostname; cloud-init keeps the part before the
// first dot of the metadata's hostname, which Nova suffixes with its
// dhcp_domain).
func NovaHostname(name string) string {
	if len(name) > 63 {
		name = name[:63]
	}
	name = strings.NewReplacer(" ", "-", "_", "-", ".", "-").Replace(name)
	name = strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || r == '_' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') {
			return r
		}
		return -1
	}, name)
	return strings.Trim(strings.ToLower(name), ".-")
}

// IgnitionFiles parses bootstrap data in Ignition's spec 2.3 (what Cluster
// API's kubeadm bootstrap provider makes of its Container Linux Config)
// with Flatcar's Ignition config library, failing the test on any error
// its validation reports, and returns the files it writes by path, their
// data URLs decoded as Ignition does.
func IgnitionFiles(t testing.TB, data []byte) map[string][]byte {
	t.Helper()
	cfg, report, err := ignition.Parse(data)
	if err != nil || report.IsFatal() {
		t.Fatalf("Ignition refuses the bootstrap data: %v %s\n%s", err, report, data)
	}
	if len(report.Entries) > 0 {
		// Its validator takes the embedded TLS of ignition.security for
		// an unknown key "tls" and warns; Ignition boots on warnings.
		t.Logf("Ignition warns about the bootstrap data: %s", report)
	}
	files := map[string][]byte{}
	for _, f := range cfg.Storage.Files {
		if f.Contents.Compression != "" {
			t.Fatalf("%s: compression %q is not one this test decodes", f.Path, f.Contents.Compression)
		}
		u, err := dataurl.DecodeString(f.Contents.Source)
		if err != nil {
			t.Fatalf("%s: source is not a data URL Ignition can read: %v", f.Path, err)
		}
		files[f.Path] = u.Data
	}
	return files
}

// ProvisionInfrastructure plays the infrastructure provider's part for a
// cluster whose objects a test applied: once Cluster API's topology
// controller has made the cluster's infrastructure object (an
// OpenStackCluster, a Metal3Cluster), it sets the control plane endpoint
// when host is not empty (CAPO writes the API load balancer's address;
// Magnetite's Metal3 clusters carry kube-vip's) and marks the object
// provisioned as the contract of its version says: status.ready at
// v1beta1, status.initialization.provisioned at v1beta2. The bootstrap
// provider then writes the first control-plane machine's data.
func ProvisionInfrastructure(t testing.TB, dc dynamic.Interface, mapper meta.RESTMapper, namespace, cluster, host string) {
	t.Helper()
	ctx := context.Background()
	var ref map[string]any
	testenv.WaitFor(t, "the infrastructure object of cluster "+cluster, 2*time.Minute, func() (bool, string) {
		c, err := dc.Resource(resource(t, mapper, "cluster.x-k8s.io", "Cluster")).Namespace(namespace).Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ref, _, _ = unstructured.NestedMap(c.Object, "spec", "infrastructureRef")
		return ref["name"] != nil, "no infrastructureRef yet"
	})
	// A v1beta2 Cluster's reference names the group, a v1beta1 one the
	// apiVersion.
	group, _ := ref["apiGroup"].(string)
	if av, ok := ref["apiVersion"].(string); ok {
		group, _, _ = strings.Cut(av, "/")
	}
	kind, _ := ref["kind"].(string)
	name, _ := ref["name"].(string)
	infra := dc.Resource(resource(t, mapper, group, kind)).Namespace(namespace)
	// Cluster API writes the object too (its owner reference, labels): a
	// write that meets a newer version reads it again, as a controller's
	// would.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		o, err := infra.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if host != "" {
			_ = unstructured.SetNestedMap(o.Object, map[string]any{"host": host, "port": int64(6443)}, "spec", "controlPlaneEndpoint")
			if o, err = infra.Update(ctx, o, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		if strings.HasSuffix(o.GetAPIVersion(), "/v1beta1") {
			_ = unstructured.SetNestedField(o.Object, true, "status", "ready")
		} else {
			_ = unstructured.SetNestedField(o.Object, true, "status", "initialization", "provisioned")
		}
		_, err = infra.UpdateStatus(ctx, o, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("provision %s %s: %v", kind, name, err)
	}
}

// FirstControlPlane waits until Cluster API's kubeadm bootstrap provider
// has written the bootstrap data of a cluster's first control-plane
// machine, and returns the machine and the data's format ("cloud-config"
// or "ignition") and value, as the Secret holds them.
func FirstControlPlane(t testing.TB, dc dynamic.Interface, mapper meta.RESTMapper, namespace, cluster string) (unstructured.Unstructured, string, []byte) {
	t.Helper()
	ctx := context.Background()
	machines := dc.Resource(resource(t, mapper, "cluster.x-k8s.io", "Machine")).Namespace(namespace)
	var machine unstructured.Unstructured
	var secretName string
	testenv.WaitFor(t, "the first control-plane machine's bootstrap data", 3*time.Minute, func() (bool, string) {
		list, err := machines.List(ctx, metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/control-plane,cluster.x-k8s.io/cluster-name=" + cluster})
		if err != nil || len(list.Items) == 0 {
			return false, "no control-plane machine yet"
		}
		machine = list.Items[0]
		secretName, _, _ = unstructured.NestedString(machine.Object, "spec", "bootstrap", "dataSecretName")
		return secretName != "", "no bootstrap data yet"
	})
	secret, err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(namespace).Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := func(key string) []byte {
		enc, _, _ := unstructured.NestedString(secret.Object, "data", key)
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil || len(b) == 0 {
			t.Fatalf("bootstrap Secret %s has no %s: %v", secretName, key, err)
		}
		return b
	}
	return machine, string(data("format")), data("value")
}

func resource(t testing.TB, mapper meta.RESTMapper, group, kind string) schema.GroupVersionResource {
	t.Helper()
	m, err := mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	return m.Resource
}

// SetLabels sets labels on a request's template, cluster and node groups:
// a case's template labels were merged into its cluster's and node
// groups' when it was read, so a label changed on the template alone
// would not reach the nodes.
func SetLabels(req driver.Request, labels map[string]string) {
	maps := []*map[string]string{&req.Template.Labels, &req.Cluster.Labels}
	for _, ng := range req.NodeGroups {
		maps = append(maps, &ng.Labels)
	}
	for _, m := range maps {
		if *m == nil {
			*m = map[string]string{}
		}
		for k, v := range labels {
			(*m)[k] = v
		}
	}
}
