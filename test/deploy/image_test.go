package deploy

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
)

// moduleRoot is the repository's top directory (the tests run in
// test/deploy).
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestImageBuildsWithoutAnEngineAndItsBinaryServes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the image (a static binary and its layer); runs in the full suite")
	}
	out := t.TempDir()
	build := exec.Command("bash", "hack/image.sh")
	build.Dir = moduleRoot(t)
	build.Env = append(os.Environ(), "OUT="+out, "VERSION=v9.8.7-test", "REVISION=0123456789abcdef", "IMAGE=magnetite-test")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("hack/image.sh: %v\n%s", err, b)
	}

	// The layout is what skopeo's oci: transport reads: an index naming
	// the image by its tag.
	idx, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatalf("read the OCI layout: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v9.8.7-test" {
		t.Fatalf("layout index = %+v, want one image named v9.8.7-test", im.Manifests)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	// The tarball is what podman load and docker load take: the same image
	// under its tag.
	tag, _ := name.NewTag("magnetite-test:v9.8.7-test")
	fromTar, err := tarball.ImageFromPath(filepath.Join(out, "magnetite.tar"), &tag)
	if err != nil {
		t.Fatalf("read the image tarball: %v", err)
	}
	d1, _ := img.ConfigName()
	d2, err := fromTar.ConfigName()
	if err != nil || d1 != d2 {
		t.Fatalf("tarball config %s (%v), layout config %s: want the same image", d2, err, d1)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if u := cf.Config.User; u == "" || u == "0" || strings.HasPrefix(u, "0:") || strings.HasPrefix(u, "root") {
		t.Errorf("image user %q: want an unprivileged numeric user", u)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  "v9.8.7-test",
		"org.opencontainers.image.revision": "0123456789abcdef",
		"org.opencontainers.image.source":   "https://github.com/magnetite-io/magnetite",
	} {
		if got := cf.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Annotations["org.opencontainers.image.version"] != "v9.8.7-test" || m.MediaType != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("manifest %s annotations %v: want an OCI manifest annotated with the version", m.MediaType, m.Annotations)
	}

	root := filepath.Join(t.TempDir(), "rootfs")
	files := unpack(t, img, root)
	for _, shell := range []string{"bin/sh", "bin/bash", "usr/bin/sh"} {
		if _, ok := files[shell]; ok {
			t.Errorf("the image has %s: it needs no shell", shell)
		}
	}
	entry := cf.Config.Entrypoint
	if len(entry) != 1 || files[strings.TrimPrefix(entry[0], "/")] == nil {
		t.Fatalf("entrypoint %v is not a file of the image", entry)
	}
	if hdr := files[strings.TrimPrefix(entry[0], "/")]; hdr.Mode&0o111 == 0 {
		t.Errorf("%s mode %o: not executable", entry[0], hdr.Mode)
	}
	if hdr := files["var/lib/magnetite"]; hdr == nil || fmt.Sprint(hdr.Uid) != strings.Split(cf.Config.User, ":")[0] {
		t.Errorf("state directory %+v: want it owned by the image's user %s", hdr, cf.Config.User)
	}
	if passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd")); err != nil || !strings.Contains(string(passwd), ":"+strings.Split(cf.Config.User, ":")[0]+":") {
		t.Errorf("etc/passwd does not name the image's user %s: %s %v", cf.Config.User, passwd, err)
	}

	bin := filepath.Join(root, entry[0])
	version, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(version), "magnetite v9.8.7-test") {
		t.Fatalf("magnetite version from the image: %v\n%s", err, version)
	}
	// Static: it runs with nothing of the host's libraries, which is what
	// an image without a libc needs.
	if b, _ := os.ReadFile(bin); strings.Contains(string(b[:min(len(b), 4096)]), "ld-linux") {
		t.Error("the binary asks for a dynamic loader: want a static build")
	}

	// serve with the image's own environment (listen address, state
	// directory moved into the test's root), as the container runtime
	// gives it.
	addr := testmagnetite.FreeAddr(t)
	env := []string{"MAGNETITE_DEFAULT_STATE_DIR=" + filepath.Join(root, "var/lib/magnetite")}
	for _, kv := range cf.Config.Env {
		if k, _, _ := strings.Cut(kv, "="); k == "PATH" || k == "SSL_CERT_FILE" {
			env = append(env, kv)
		}
	}
	env = append(env, "MAGNETITE_API_LISTEN="+addr)
	serve := exec.Command(bin, cf.Config.Cmd...)
	serve.Env = env
	serve.Dir = root
	logPath := filepath.Join(t.TempDir(), "serve.log")
	logFile, _ := os.Create(logPath)
	serve.Stdout, serve.Stderr = logFile, logFile
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGTERM)
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("serve log:\n%s", b)
		}
	})
	if !contains(cf.Config.Env, "MAGNETITE_API_LISTEN=0.0.0.0:9511") {
		t.Errorf("image env %v: want the API on every address of the container", cf.Config.Env)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthcheck", nil)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK && string(body) == "OK" {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("serve from the image exited: %v", err)
		case <-ctx.Done():
			t.Fatalf("serve from the image did not answer /healthcheck with 200 OK: %v", err)
		case <-time.After(100 * time.Millisecond): // polling interval while serve starts
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// unpack extracts the image's layers into root, as a container runtime
// does, and returns the entries by path.
func unpack(t *testing.T, img v1.Image, root string) map[string]*tar.Header {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*tar.Header{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Clean(strings.TrimPrefix(hdr.Name, "/"))
			if p == ".." || strings.HasPrefix(p, "../") {
				t.Fatalf("layer entry %q leaves the root", hdr.Name)
			}
			files[p] = hdr
			dst := filepath.Join(root, p)
			switch hdr.Typeflag {
			case tar.TypeDir:
				// Owner write kept so the test can unpack into it and clean up.
				if err := os.MkdirAll(dst, os.FileMode(hdr.Mode&0o777)|0o700); err != nil {
					t.Fatal(err)
				}
			case tar.TypeReg:
				f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hdr.Mode&0o777))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.Copy(f, tr); err != nil {
					t.Fatal(err)
				}
				f.Close()
			default:
				t.Fatalf("layer entry %s has type %c: the image holds only files and directories", hdr.Name, hdr.Typeflag)
			}
		}
		rc.Close()
	}
	return files
}
