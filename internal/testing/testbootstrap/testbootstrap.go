// Package testbootstrap reads the bootstrap data a node boots with the way
// the node does: Debian's cloud-init renders the jinja template of a
// cloud-config with the instance's metadata, and a real kubeadm, built
// from Go modules at the cluster's Kubernetes version by
// hack/build-testbin.sh, validates the kubeadm configuration it finds in
// write_files.
package testbootstrap

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ignition "github.com/flatcar/ignition/config/v2_3"
	"github.com/vincent-petithory/dataurl"
	"sigs.k8s.io/yaml"

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
}

// instanceData is the part of /run/cloud-init/instance-data.json a
// template can read on an OpenStack instance. cloud-init 22.4 builds it in
// cloudinit/sources/__init__.py (_get_standardized_metadata) and makes
// each v1 key a top-level template variable as well.
func (i Instance) instanceData() map[string]any {
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
		"ds": map[string]any{
			"meta_data": map[string]any{
				"uuid":              i.ID,
				"name":              i.Hostname,
				"hostname":          i.Hostname,
				"availability_zone": i.AvailabilityZone,
			},
		},
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

// Content is what cloud-init writes to the file: content decoded as its
// encoding says (cloudinit/config/cc_write_files.py, decode_perms and
// canonicalize_extraction).
func (f File) Data(t testing.TB) []byte {
	t.Helper()
	switch f.Encoding {
	case "", "text/plain":
		return []byte(f.Content)
	case "b64", "base64":
		b, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			t.Fatalf("%s: encoding %s but content is not base64: %v", f.Path, f.Encoding, err)
		}
		return b
	}
	t.Fatalf("%s: encoding %q is not one this test decodes", f.Path, f.Encoding)
	return nil
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
