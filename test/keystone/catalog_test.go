// Package keystone follows docs/keystone.md against a real Keystone: it runs
// the document's registration commands with Debian's openstack CLI, starts
// `magnetite serve` with the document's configuration, and checks that the
// CLI finds Magnetite through the catalog and is served with users' tokens.
package keystone

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

const (
	openstackBin    = "/usr/bin/openstack"
	servicePassword = "magnetite-catalog-test-password"
)

// docSteps returns the fenced blocks of docs/keystone.md that follow a
// "<!-- step: NAME -->" marker, by name.
func docSteps(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/keystone.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- step: ([a-z]+) -->\\s*```[a-z]*\\n(.*?)```")
	steps := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		steps[m[1]] = m[2]
	}
	for _, name := range []string{"register", "configure", "verify"} {
		if steps[name] == "" {
			t.Fatalf("docs/keystone.md has no %q step", name)
		}
	}
	return steps
}

func TestKeystoneRegistrationAsDocumented(t *testing.T) {
	ks := testkeystone.Start(t) // skips under -short
	testproc.Require(t, openstackBin)
	steps := docSteps(t)
	addr := testmagnetite.FreeAddr(t)
	magnetiteURL := "http://" + addr

	admin := cliEnv(ks, "admin", testkeystone.AdminPassword, "admin")
	admin = append(admin, "MAGNETITE_URL="+magnetiteURL, "MAGNETITE_PASSWORD="+servicePassword)
	run(t, admin, steps["register"])

	conf := strings.NewReplacer(
		"http://keystone.example.com:5000/v3", ks.AuthURL(),
		"MAGNETITE_PASSWORD", servicePassword,
	).Replace(steps["configure"])
	testmagnetite.Serve(t, addr, conf)

	project := ks.CreateProject("demo")
	alice := ks.CreateUser("alice", "alice-password")
	ks.Grant(alice, project, "member")
	user := cliEnv(ks, "alice", "alice-password", "demo")

	out := run(t, user, steps["verify"])
	if !strings.Contains(out, magnetiteURL+"/v1") {
		t.Errorf("the catalog does not show Magnetite's endpoint %s/v1:\n%s", magnetiteURL, out)
	}
	run(t, user, "openstack coe cluster template create --coe kubernetes --image ubuntu-2204-kube-v1.30.4 --external-network public k8s")
	if listed := run(t, user, "openstack coe cluster template list -f value -c name"); strings.TrimSpace(listed) != "k8s" {
		t.Errorf("alice's template list: %q, want k8s", listed)
	}

	res, err := http.Get(magnetiteURL + "/v1/clusters")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if want := fmt.Sprintf("Keystone uri=%q", ks.AuthURL()); res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != want {
		t.Errorf("without a token: %d %q, want 401 %q", res.StatusCode, res.Header.Get("WWW-Authenticate"), want)
	}
}

func cliEnv(ks *testkeystone.Keystone, user, password, project string) []string {
	return []string{
		"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + os.TempDir(),
		"OS_AUTH_URL=" + ks.AuthURL(), "OS_IDENTITY_API_VERSION=3", "OS_INTERFACE=public",
		"OS_USERNAME=" + user, "OS_PASSWORD=" + password, "OS_PROJECT_NAME=" + project,
		"OS_USER_DOMAIN_NAME=Default", "OS_PROJECT_DOMAIN_NAME=Default", "OS_REGION_NAME=" + testkeystone.Region,
	}
}

// run executes a shell script of the document and returns its output.
func run(t *testing.T, env []string, script string) string {
	t.Helper()
	cmd := exec.Command("/bin/bash", "-euo", "pipefail", "-c", script)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v running:\n%s\noutput:\n%s", err, script, out.String())
	}
	return out.String()
}
