// Package keystone follows docs/keystone.md against a real Keystone: it runs
// the document's registration commands with Debian's openstack CLI, starts
// `magnetite serve` with the document's configuration, and checks that the
// CLI finds Magnetite through the catalog and is served with users' tokens.
package keystone

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testkeystone"
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
	if _, err := os.Stat(openstackBin); err != nil {
		t.Fatalf("%s is missing: install the packages of hack/ci-packages.txt (bash hack/ci-deps.sh as root)", openstackBin)
	}
	steps := docSteps(t)
	addr := freeAddr(t)
	magnetiteURL := "http://" + addr

	admin := cliEnv(ks, "admin", testkeystone.AdminPassword, "admin")
	admin = append(admin, "MAGNETITE_URL="+magnetiteURL, "MAGNETITE_PASSWORD="+servicePassword)
	run(t, admin, steps["register"])

	conf := strings.NewReplacer(
		"http://keystone.example.com:5000/v3", ks.AuthURL(),
		"MAGNETITE_PASSWORD", servicePassword,
	).Replace(steps["configure"])
	startMagnetite(t, addr, conf)

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

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startMagnetite builds and runs `magnetite serve` with conf as a drop-in,
// and waits until it answers.
func startMagnetite(t *testing.T, addr, conf string) {
	t.Helper()
	dir := t.TempDir()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" {
		t.Fatalf("find the module root: %v", err)
	}
	bin := filepath.Join(dir, "magnetite")
	build := exec.Command("go", "build", "-o", bin, "./cmd/magnetite")
	build.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/magnetite: %v\n%s", err, out)
	}
	confDir := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(confDir, 0o700); err != nil {
		t.Fatal(err)
	}
	main := fmt.Sprintf("[DEFAULT]\nstate_dir = %s\nhost = keystone-test\n", filepath.Join(dir, "state"))
	if err := os.WriteFile(filepath.Join(dir, "magnetite.conf"), []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "20-keystone.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file", filepath.Join(dir, "magnetite.conf"), "--config-dir", confDir, "serve", "--listen", addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("magnetite serve log:\n%s", b)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("magnetite serve exited:\n%s", b)
		default:
		}
		if res, err := http.Get("http://" + addr + "/v1/"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("magnetite serve did not answer within 30s:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
