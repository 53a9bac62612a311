package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/inmemory"
	"github.com/magnetite-io/magnetite/internal/driver/capi/openstack"
	"github.com/magnetite-io/magnetite/internal/model"
)

// extraFile is an extra_files label with one text file of about n bytes
// in 64-character lines.
func extraFile(n int) string {
	line := strings.Repeat("x", 63) + "\n"
	content := strings.Repeat(line, n/len(line))
	b, _ := yaml.Marshal([]map[string]string{{"path": "/etc/big.conf", "content": content}})
	return string(b)
}

// controlPlaneSize is Magnetite's estimate of the control plane's user
// data with one extra file of about n bytes and the keystone webhook.
func controlPlaneSize(n int) int {
	line := strings.Repeat("x", 63) + "\n"
	return capi.UserDataSize(capi.OSProfile{Name: "ubuntu"}, true, []capi.BootstrapFile{
		{Path: "/etc/big.conf", Content: strings.Repeat(line, n/len(line))},
		{Path: "/etc/kubernetes/keystone-webhook.yaml", Content: strings.Repeat("k", 600), Permissions: "0600", Owner: "root:root"}})
}

// fileFor returns the size of an extra file that brings the control
// plane's user data to about the given share of Nova's limit.
func fileFor(share float64) int {
	n := 0
	for controlPlaneSize(n+64) < int(share*openstack.NovaUserDataLimit) {
		n += 64
	}
	return n
}

func TestRenderRefusesExtraFilesThatNovaWouldRefuse(t *testing.T) {
	render := func(t *testing.T, n int) (string, error) {
		tmpl, cluster := splitCase(t, "several-nodegroups", func(tmpl, _ map[string]any) {
			tmpl["labels"].(map[string]any)["extra_files"] = extraFile(n)
		})
		_, stderr, err := runRender(t, "--template", tmpl, "--cluster", cluster, "--facts", filepath.Join(renderCases, "facts.yaml"))
		return stderr, err
	}
	stderr, err := render(t, fileFor(1.02))
	if err == nil || !strings.Contains(err.Error(), "the bootstrap data of the control-plane nodes would be about") ||
		!strings.Contains(err.Error(), fmt.Sprintf("over the %d Nova accepts as user data; the extra_files label takes", openstack.NovaUserDataLimit)) ||
		!strings.Contains(err.Error(), "make its files smaller") {
		t.Errorf("a file over Nova's limit: %v (stderr %q)", err, stderr)
	}
	stderr, err = render(t, fileFor(0.95))
	if err != nil || !strings.Contains(stderr, "warning: the bootstrap data of the control-plane nodes is about") {
		t.Errorf("a file close to Nova's limit: %v, stderr %q; want a warning", err, stderr)
	}
	stderr, err = render(t, fileFor(0.5))
	if err != nil || strings.Contains(stderr, "bootstrap data") {
		t.Errorf("a file well within Nova's limit: %v, stderr %q", err, stderr)
	}
}

func TestAPIRefusesExtraFilesThatNovaWouldRefuse(t *testing.T) {
	reg, err := builtin.Registry(capi.Options{}, "openstack", inmemory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check := driverLabels(reg)
	ct := &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{COE: "kubernetes", ServerType: "vm", Labels: map[string]string{}}}
	big := map[string]string{"extra_files": extraFile(fileFor(1.02)), "keystone_auth_enabled": "true"}
	if err := check(ct, big); err == nil || !strings.Contains(err.Error(), "extra_files label takes") {
		t.Errorf("files over Nova's limit: %v", err)
	}
	if err := check(ct, map[string]string{"extra_files": extraFile(fileFor(0.95))}); err != nil {
		t.Errorf("files within Nova's limit: %v", err)
	}
	// Flatcar's Ignition carries each file as a data URL, where every
	// space and newline takes three bytes: 20 KB of words fits a
	// cloud-config but not Ignition.
	flatcar := "flatcar"
	ign := &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{COE: "kubernetes", ServerType: "vm", ClusterDistro: &flatcar, Labels: map[string]string{}}}
	b, _ := yaml.Marshal([]map[string]string{{"path": "/etc/words", "content": strings.Repeat("a b c d e f g h\n", 20_000/16)}})
	words := map[string]string{"extra_files": string(b)}
	if err := check(ign, words); err == nil || !strings.Contains(err.Error(), "extra_files label takes") {
		t.Errorf("Flatcar: 20 KB of words: %v; want Nova's limit", err)
	}
	if err := check(ct, words); err != nil {
		t.Errorf("cloud-config: 20 KB of words: %v", err)
	}
	// A schema error is the schema's to report, in its own words.
	if err := check(ct, map[string]string{"extra_files": "- path: relative\n  content: x\n"}); err == nil || strings.Contains(err.Error(), "Nova") {
		t.Errorf("an invalid extra_files label: %v", err)
	}
}
