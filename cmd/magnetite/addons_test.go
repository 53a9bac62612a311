package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/testing/testcharts"
)

// TestAddonsMirrorAndList: `magnetite addons mirror DIR` downloads every
// pinned chart with its digest from a chart repository; `addons list`
// shows the pins and, with [addons] source = DIR, that they come from DIR.
func TestAddonsMirrorAndList(t *testing.T) {
	repo := testcharts.Serve(t)
	tmp := t.TempDir()
	conf := filepath.Join(tmp, "magnetite.conf")
	if err := os.WriteFile(conf, []byte("[addons]\nsource = "+repo.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "mirror")
	out, err := runMagnetite(t, "addons", "mirror", dir, "--config-file", conf, "--config-dir", tmp)
	if err != nil {
		t.Fatalf("addons mirror: %v\n%s", err, out)
	}
	n := len(addons.Charts())
	if !strings.Contains(out, "tigera-operator") || !strings.Contains(out, "index.yaml in "+dir) {
		t.Errorf("mirror output:\n%s", out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if len(files) != n {
		t.Errorf("%d archives in %s, want %d", len(files), dir, n)
	}

	if err := os.WriteFile(conf, []byte("[addons]\nsource = "+dir+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = runMagnetite(t, "addons", "list", "--kube-version", "v1.33.1", "--config-file", conf, "--config-dir", tmp)
	if err != nil {
		t.Fatalf("addons list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+len(addons.Names) { // header and one row per addon
		t.Errorf("addons list for 1.33 has %d lines:\n%s", len(lines), out)
	}
	for _, want := range []string{"calico", "1.33", "v3.31.7", "tigera-operator v3.31.7", "openstack-cinder-csi 2.33.1", dir} {
		if !strings.Contains(out, want) {
			t.Errorf("addons list lacks %q:\n%s", want, out)
		}
	}

	t.Run("a source without a chart writes nothing", func(t *testing.T) {
		ks, _ := addons.Pinned(addons.KeystoneAuth, "1.33")
		partial := testcharts.Serve(t, ks.Charts...)
		empty := filepath.Join(tmp, "partial")
		out, err := runMagnetite(t, "addons", "mirror", empty, "--from", partial.URL, "--config-dir", tmp, "--config-file", conf)
		if err == nil || !strings.Contains(err.Error(), "holds no chart k8s-keystone-auth") {
			t.Fatalf("mirror from a source without k8s-keystone-auth: %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(empty, "index.yaml")); err == nil {
			t.Error("an index was written although a chart was missing")
		}
	})
}
