package capi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/openstack"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testbootstrap"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// serverID is the UUID of the Nova server the first control-plane machine
// boots on: what the metadata service gives cloud-init as instance_id
// and coreos-metadata as COREOS_OPENSTACK_INSTANCE_UUID.
const serverID = "5d8c1f7e-3a41-4b7e-9c55-2f1e0b6a9d10"

// TestEveryOSProfileBootsTheControlPlaneClusterAPIWrites applies a cluster
// of every OS profile the OpenStack infrastructure renders (cloud-init on
// Ubuntu, Debian and Rocky Linux, VMs and bare metal; Ignition on
// Flatcar), at each Kubernetes version testbootstrap has a kubeadm of, to
// an API server running Cluster API's core, kubeadm bootstrap and control
// plane managers, plays CAPO's part for the OpenStackCluster (the control
// plane endpoint, provisioned) and reads the bootstrap data the bootstrap
// provider writes for the first control-plane machine as its server does:
// Debian's cloud-init renders a cloud-config with the server's host name
// and UUID, or Flatcar's Ignition config library parses and validates the
// Ignition and the kubeadm.sh it writes runs Magnetite's commands that
// fill in the metadata agent's variables. The kubeadm of the cluster's
// version validates the configuration that results, which must register
// the node under the server's host name with the provider ID CAPO gives
// the machine (openstack:///<server UUID>). Extra files reach the node as
// written, and Flatcar's data fits within Magnetite's estimate of it
// (test/cli checks the cloud-configs' against every real Secret).
func TestEveryOSProfileBootsTheControlPlaneClusterAPIWrites(t *testing.T) {
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
	const (
		motd   = "Welcome to {{ cluster }}\n"
		sysctl = "vm.max_map_count=262144\n"
	)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte(sysctl))
	_ = w.Close()
	extraFiles := "- path: /etc/motd.d/cluster\n  content: \"Welcome to {{ cluster }}\\n\"\n" +
		"- path: /etc/sysctl.d/90-maps.conf\n  encoding: gzip+base64\n  content: " + base64.StdEncoding.EncodeToString(gz.Bytes())

	// The golden cases of each profile: os_distro ubuntu (VMs, and all
	// bare metal on an Ironic flavor with a config drive), debian,
	// rocky and flatcar.
	profiles := []struct{ name, golden, format string }{
		{"ubuntu", "vm-only", "cloud-config"},
		{"ubuntu-bare-metal", "bm-only", "cloud-config"},
		{"debian", "os-debian", "cloud-config"},
		{"rockylinux", "os-rockylinux", "cloud-config"},
		{"flatcar", "os-flatcar", "ignition"},
	}
	type applied struct{ profile, format, version, cluster string }
	var clusters []applied
	for _, p := range profiles {
		for _, version := range testbootstrap.KubeadmVersions {
			req := caseRequest(t, p.golden)
			req.APIVersions = served
			name := p.name + "-" + strings.ReplaceAll(version, ".", "-")
			req.Cluster.Name, req.Cluster.StackID = name, &name
			req.Cluster.UUID = fmt.Sprintf("%s%04x", req.Cluster.UUID[:len(req.Cluster.UUID)-4], len(clusters))
			testbootstrap.SetLabels(req, map[string]string{"kube_tag": version, "extra_files": extraFiles})
			res := mustRender(t, req)
			var clusterName string
			for _, o := range res.Objects {
				if _, err := testenv.ServerSideApply(ctx, dc, mapper, o, false); err != nil {
					t.Fatalf("%s: apply %s %s: %v", name, o.GetKind(), o.GetName(), err)
				}
				if o.GetKind() == "Cluster" {
					clusterName = o.GetName()
				}
			}
			clusters = append(clusters, applied{p.name, p.format, version, clusterName})
		}
	}
	for _, c := range clusters {
		t.Run(c.profile+"/"+c.version, func(t *testing.T) {
			t.Parallel()
			// CAPO's part: the API load balancer's address, then provisioned.
			testbootstrap.ProvisionInfrastructure(t, dc, mapper, testenv.GoldenNamespace, c.cluster, "192.0.2.10")
			machine, format, value := testbootstrap.FirstControlPlane(t, dc, mapper, testenv.GoldenNamespace, c.cluster)
			if format != c.format {
				t.Fatalf("bootstrap format %q, want %s", format, c.format)
			}
			host := testbootstrap.NovaHostname(machine.GetName())
			var config []byte
			var files map[string][]byte
			if format == "ignition" {
				files, config = flatcarKubeadmConfig(t, value, host)
			} else {
				doc := testbootstrap.Parse(t, testbootstrap.CloudConfig(t, value, testbootstrap.Instance{Hostname: host, ID: serverID}))
				files = map[string][]byte{}
				for _, f := range doc.WriteFiles {
					files[f.Path] = f.Data(t)
				}
				var command string
				command, config = doc.KubeadmConfig(t)
				if command != "init" {
					t.Errorf("the first control-plane node runs kubeadm %s, want init", command)
				}
			}
			if err := testbootstrap.ValidateKubeadm(t, c.version, config); err != nil {
				t.Errorf("%v\n%s", err, config)
			}
			name, args := testbootstrap.NodeRegistration(t, config, "init")
			if name != host {
				t.Errorf("kubeadm would register node %q, want the server's host name %q\n%s", name, host, config)
			}
			if got, want := testbootstrap.KubeletArg(args["provider-id"]), "openstack:///"+serverID; got != want {
				t.Errorf("kubelet's provider ID %q, want CAPO's %q\n%s", args["provider-id"], want, config)
			}
			if got := string(files["/etc/motd.d/cluster"]); got != motd {
				t.Errorf("the extra file holds %q, want %q", got, motd)
			}
			if got := string(files["/etc/sysctl.d/90-maps.conf"]); got != sysctl {
				t.Errorf("the gzip+base64 extra file holds %q, want %q", got, sysctl)
			}
			size := base64.StdEncoding.EncodedLen(len(value))
			t.Logf("%s bootstrap data of the first control plane: %d bytes in base64", format, size)
			if size > openstack.NovaUserDataLimit {
				t.Errorf("the bootstrap data is %d bytes in base64, over Nova's limit", size)
			}
			if format != "ignition" {
				return
			}
			estimate := capi.UserDataSize(capi.OSProfile{Name: "flatcar", Ignition: true}, true,
				[]capi.BootstrapFile{{Path: "/etc/motd.d/cluster", Content: motd, Permissions: "0644"},
					{Path: "/etc/sysctl.d/90-maps.conf", Content: base64.StdEncoding.EncodeToString([]byte(sysctl)), Encoding: "base64", Permissions: "0644"}})
			if size > estimate {
				t.Errorf("the Ignition is %d bytes in base64, over Magnetite's estimate %d", size, estimate)
			}
		})
	}
}

// flatcarKubeadmConfig reads Ignition bootstrap data as a Flatcar server
// on OpenStack boots it: Flatcar's Ignition config library parses and
// validates it, and the commands of the kubeadm.sh it writes, up to
// kubeadm, run on its files with the variables coreos-metadata sets from
// Nova's metadata (whose hostname carries Nova's dhcp_domain). It returns
// the files Ignition writes and the kubeadm configuration those commands
// leave.
func flatcarKubeadmConfig(t *testing.T, value []byte, host string) (map[string][]byte, []byte) {
	t.Helper()
	files := testbootstrap.IgnitionFiles(t, value)
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
	return files, config
}
