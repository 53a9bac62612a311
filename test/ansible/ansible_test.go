// Package ansible runs Debian's ansible-playbook with the openstack.cloud
// collection (coe_cluster_template, coe_cluster, on python3-openstacksdk)
// against Magnetite behind a real Keystone, through a clouds.yaml: a
// playbook creates a template and a cluster, re-runs without changes,
// resizes and deletes.
package ansible

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
	"github.com/magnetite-io/magnetite/internal/testing/teststack"
)

// Debian's binaries; another python or ansible may be first on PATH.
const (
	ansiblePlaybook = "/usr/bin/ansible-playbook"
	collection      = "/usr/lib/python3/dist-packages/ansible_collections/openstack/cloud"
	sdkGuard        = "plugins/module_utils/openstack.py"
)

// cappedSDK is the version guard of Debian bookworm's openstack.cloud
// 1.10.0 (in ansible 7.7.0), which refuses bookworm's own openstacksdk
// 0.101.0 before any module runs: every openstack.cloud task fails with
// "Incompatible openstacksdk library found".
const cappedSDK = "MAXIMUM_SDK_VERSION = '0.98.999'"

// collectionsPath returns a collections folder holding a copy of Debian's
// openstack.cloud whose only change is that the upper bound on the SDK
// version is lifted (the coe modules call cloud-layer functions that
// openstacksdk 0.101 still has), as an operator on Debian bookworm must do.
// Once Debian ships a collection that accepts its SDK, the copy is
// unchanged.
func collectionsPath(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dst := filepath.Join(root, "ansible_collections", "openstack", "cloud")
	if err := os.CopyFS(dst, os.DirFS(collection)); err != nil {
		t.Fatalf("copy the openstack.cloud collection: %v", err)
	}
	guard := filepath.Join(dst, sdkGuard)
	b, err := os.ReadFile(guard)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(guard, []byte(strings.Replace(string(b), cappedSDK, "MAXIMUM_SDK_VERSION = None", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return root
}

// playbook keeps one template and one cluster of node_count workers
// present, or removes both (state=absent). The collection's coe_cluster
// neither waits for the cluster nor resizes one that exists, so the
// playbook waits on the status with the openstack CLI and resizes with
// `openstack coe cluster resize` only when the count differs: re-running it
// changes nothing.
const playbook = `
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    state: present
    node_count: 1
  environment:
    OS_CLOUD: magnetite
  tasks:
    - name: cluster template
      openstack.cloud.coe_cluster_template:
        cloud: magnetite
        name: ansible-mem
        coe: kubernetes
        image_id: ubuntu-2204-kube-v1.31.2
        external_network_id: public
        labels:
          kube_tag: v1.31.2
        state: present
      register: template
      when: state == "present"

    - name: cluster
      openstack.cloud.coe_cluster:
        cloud: magnetite
        name: ansible-demo
        cluster_template_id: "{{ template.id }}"
        master_count: 1
        node_count: "{{ node_count }}"
        state: present
      register: cluster
      when: state == "present"

    - name: resize
      ansible.builtin.command: openstack coe cluster resize ansible-demo {{ node_count }}
      # A cluster just created is answered with its uuid only, at the size asked.
      when: state == "present" and cluster.cluster.node_count | default(node_count) | int != node_count | int

    - name: wait until the cluster is up
      ansible.builtin.command: openstack coe cluster show ansible-demo -f value -c status
      register: status
      changed_when: false
      failed_when: status.rc != 0 or status.stdout.endswith("_FAILED")
      until: status.stdout in ["CREATE_COMPLETE", "UPDATE_COMPLETE"]
      retries: 120
      delay: 3
      when: state == "present"

    # coe_cluster finds the cluster by name and template; without the
    # template no cluster can be left on it.
    - name: find the template
      ansible.builtin.command: openstack coe cluster template show ansible-mem -f value -c uuid
      register: existing
      changed_when: false
      failed_when: existing.rc != 0 and "could not be found" not in existing.stderr
      when: state == "absent"

    - name: cluster deleted
      openstack.cloud.coe_cluster:
        cloud: magnetite
        name: ansible-demo
        cluster_template_id: "{{ existing.stdout }}"
        state: absent
      when: state == "absent" and existing.rc == 0

    - name: wait until the cluster is gone
      ansible.builtin.command: openstack coe cluster show ansible-demo -f value -c status
      register: gone
      changed_when: false
      failed_when: gone.rc != 0 and "could not be found" not in gone.stderr
      until: gone.rc != 0
      retries: 120
      delay: 3
      when: state == "absent"

    - name: cluster template deleted
      openstack.cloud.coe_cluster_template:
        cloud: magnetite
        name: ansible-mem
        coe: kubernetes
        image_id: ubuntu-2204-kube-v1.31.2
        state: absent
      when: state == "absent"
`

// recap matches the PLAY RECAP line of localhost.
var recap = regexp.MustCompile(`localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)`)

type runner struct {
	dir string
	env []string
}

// play runs the playbook with extra variables and returns its output and
// the recap's changed count; a failed run fails the test.
func (r *runner) play(t *testing.T, vars ...string) (string, int) {
	t.Helper()
	args := []string{"-i", "localhost,", "-e", "ansible_python_interpreter=/usr/bin/python3"}
	for _, v := range vars {
		args = append(args, "-e", v)
	}
	cmd := exec.CommandContext(t.Context(), ansiblePlaybook, append(args, "playbook.yml")...)
	cmd.Dir, cmd.Env = r.dir, r.env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("ansible-playbook %s: %s", strings.Join(vars, " "), time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("ansible-playbook %s: %v\n%s", strings.Join(vars, " "), err, out)
	}
	m := recap.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no PLAY RECAP for localhost:\n%s", out)
	}
	changed, _ := strconv.Atoi(m[2])
	return string(out), changed
}

// TestAnsibleOpenStackCloudCollection creates, re-runs, resizes and deletes
// with the playbook above.
func TestAnsibleOpenStackCloudCollection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Ansible against Keystone, Magnetite and a local Cluster API for minutes; runs in the full suite")
	}
	for _, f := range []string{ansiblePlaybook, collection, "/usr/bin/openstack"} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("%s is missing (Debian's ansible and python3-openstackclient, see hack/ci-packages.txt): %v", f, err)
		}
	}
	st := teststack.Start(t)

	dir := t.TempDir()
	clouds := fmt.Sprintf(`clouds:
  magnetite:
    auth:
      auth_url: %s
      username: %s
      password: %s
      project_name: %s
      user_domain_name: Default
      project_domain_name: Default
    region_name: %s
    interface: public
    identity_api_version: 3
`, st.Keystone.AuthURL(), teststack.User, teststack.Password, teststack.Project, testkeystone.Region)
	for name, body := range map[string]string{"clouds.yaml": clouds, "playbook.yml": playbook} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	r := &runner{dir: dir, env: []string{"HOME=" + home, "PATH=/usr/bin:/bin", "LANG=C.UTF-8",
		"OS_CLIENT_CONFIG_FILE=" + filepath.Join(dir, "clouds.yaml"),
		"ANSIBLE_COLLECTIONS_PATH=" + collectionsPath(t), "ANSIBLE_LOCAL_TEMP=" + filepath.Join(home, "tmp"), "ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0"}}
	if v := os.Getenv("TMPDIR"); v != "" {
		r.env = append(r.env, "TMPDIR="+v)
	}
	only := func() teststack.Cluster {
		t.Helper()
		cl := st.Clusters(t)
		if len(cl) != 1 {
			t.Fatalf("want one cluster, got %+v", cl)
		}
		return cl[0]
	}

	if out, changed := r.play(t); changed != 2 {
		t.Fatalf("first run changed %d tasks, want 2 (template and cluster):\n%s", changed, out)
	}
	if c := only(); c.Name != "ansible-demo" || c.Status != "CREATE_COMPLETE" || c.NodeCount != 1 {
		t.Fatalf("cluster after the first run: %+v", c)
	}
	uuid := only().UUID

	if out, changed := r.play(t); changed != 0 {
		t.Errorf("re-run changed %d tasks, want 0:\n%s", changed, out)
	}

	if out, changed := r.play(t, "node_count=2"); changed != 1 {
		t.Errorf("resize run changed %d tasks, want 1 (the resize):\n%s", changed, out)
	}
	if c := only(); c.UUID != uuid || c.NodeCount != 2 || c.Status != "UPDATE_COMPLETE" {
		t.Errorf("cluster after the resize run: %+v", c)
	}
	if out, changed := r.play(t, "node_count=2"); changed != 0 {
		t.Errorf("re-run at the new size changed %d tasks, want 0:\n%s", changed, out)
	}

	if out, changed := r.play(t, "state=absent"); changed != 2 {
		t.Errorf("delete run changed %d tasks, want 2 (cluster and template):\n%s", changed, out)
	}
	if out, changed := r.play(t, "state=absent"); changed != 0 {
		t.Errorf("delete re-run changed %d tasks, want 0:\n%s", changed, out)
	}
	st.RequireNothingLeft(t)
}
