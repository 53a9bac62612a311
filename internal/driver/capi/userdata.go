package capi

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
)

// BootstrapFile is a file the kubeadm bootstrap provider writes on a node
// (an entry of a KubeadmConfig's spec.files).
type BootstrapFile struct {
	Path, Content, Encoding, Owner, Permissions string
}

// What Cluster API's kubeadm bootstrap provider (v1.14) writes into a
// node's bootstrap data besides the files Magnetite asks for: the header,
// the kubeadm configuration, its commands and, on control-plane nodes, the
// cluster's certificate authorities and service-account keys. On the
// Secrets it wrote for Magnetite's clusters it came to about 14 KiB for
// the first control-plane node and 1.4 KiB for a worker (test/cli's
// checkNodeBootstrap compares every real Secret with UserDataSize); the
// rest is room for longer certificate SAN lists, OIDC and audit settings
// and a user's SSH key.
const (
	bootstrapOverheadControlPlane = 18 << 10
	bootstrapOverheadWorker       = 4 << 10
	// Ignition carries the same content as JSON of data URLs, each
	// character outside the URL's unreserved set escaped in three.
	ignitionOverheadControlPlane = 20 << 10
	ignitionOverheadWorker       = 8 << 10
)

// UserDataSize is an upper bound of the size, base64-encoded as an
// infrastructure provider sends it to a compute API, of the bootstrap data
// of a node of os that carries files.
func UserDataSize(os OSProfile, controlPlane bool, files []BootstrapFile) int {
	n := bootstrapOverheadWorker
	switch {
	case os.Ignition && controlPlane:
		n = ignitionOverheadControlPlane
	case os.Ignition:
		n = ignitionOverheadWorker
	case controlPlane:
		n = bootstrapOverheadControlPlane
	}
	for _, f := range files {
		n += fileSize(os, f)
	}
	return base64.StdEncoding.EncodedLen(n)
}

// fileSize is the room a file takes in the bootstrap data: in a
// cloud-config, a write_files entry whose content is a literal block
// indented by six spaces (bootstrap/kubeadm/pkg/cloudinit/files.go); in
// Ignition, a storage file whose content is a data URL.
func fileSize(os OSProfile, f BootstrapFile) int {
	const fields = len("-   path: \n    encoding: \"\"\n    owner: \n    permissions: ''\n    content: |\n")
	if os.Ignition {
		// A base64 file reaches the data URL decoded, where every byte
		// outside the unreserved set takes three.
		data := []byte(f.Content)
		if f.Encoding == "base64" {
			if b, err := base64.StdEncoding.DecodeString(f.Content); err == nil {
				data = b
			}
		}
		n := 4*fields + len(f.Path) + len(f.Owner) + len(f.Permissions)
		for _, c := range data {
			n++
			if !unreserved(c) {
				n += 2
			}
		}
		return n
	}
	lines := strings.Count(f.Content, "\n") + 1
	return fields + len(f.Path) + len(f.Encoding) + len(f.Owner) + len(f.Permissions) + len(f.Content) + 7*lines
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0
}

// UserDataLimit is implemented by infrastructures whose servers receive
// the bootstrap data through an API that bounds its size.
type UserDataLimit interface {
	// UserDataLimit is the longest bootstrap data the API takes, in
	// base64 characters, and the API's name for messages.
	UserDataLimit() (int, string)
}

// nodeFiles lists the files of a group's nodes as BootstrapFiles.
func nodeFiles(list []any) []BootstrapFile {
	var out []BootstrapFile
	for _, v := range list {
		m, _ := v.(map[string]any)
		str := func(k string) string { s, _ := m[k].(string); return s }
		out = append(out, BootstrapFile{Path: str("path"), Content: str("content"), Encoding: str("encoding"),
			Owner: str("owner"), Permissions: str("permissions")})
	}
	return out
}

// checkUserData refuses a cluster whose nodes' bootstrap data would be too
// large for the infrastructure's compute API, and warns when it comes
// close: the API would refuse every server at create, long after
// Magnetite accepted the cluster.
func (d *Driver) checkUserData(p *Plan) error {
	lim, ok := d.infra.(UserDataLimit)
	if !ok {
		return nil
	}
	limit, service := lim.UserDataLimit()
	var problems []string
	for _, node := range []struct {
		what         string
		controlPlane bool
		files        []any
	}{{"control-plane", true, d.controlPlaneFiles(p)}, {"worker", false, files(p, false)}} {
		files := nodeFiles(node.files)
		size := UserDataSize(p.OS, node.controlPlane, files)
		if node.controlPlane {
			// Each certificate SAN is a list item of the kubeadm
			// configuration's apiServer.certSANs.
			for _, san := range p.CertSANs {
				size += base64.StdEncoding.EncodedLen(len(san) + 12)
			}
		}
		extra := 0
		for _, f := range files[:min(len(p.ExtraFiles), len(files))] {
			extra += fileSize(p.OS, f)
		}
		extra = base64.StdEncoding.EncodedLen(extra)
		switch {
		case size > limit:
			problems = append(problems, fmt.Sprintf("the bootstrap data of the %s nodes would be about %d bytes once base64-encoded, "+
				"over the %d %s accepts as user data; the extra_files label takes %d of them: make its files smaller "+
				"(encoding gzip+base64 shrinks text) or fewer, or fetch large files from a URL in a script instead",
				node.what, size, limit, service, extra))
		case size > limit*9/10:
			p.warn("the bootstrap data of the %s nodes is about %d bytes once base64-encoded, close to the %d %s accepts as user data (extra_files takes %d)",
				node.what, size, limit, service, extra)
		}
	}
	if len(problems) > 0 {
		return &driver.ValidationError{Problems: problems}
	}
	return nil
}

// CheckLabels implements driver.LabelChecker: the API refuses, at create,
// extra_files that would make the nodes' bootstrap data too large. The
// image's os_distro is not known there; the template's cluster_distro
// stands for it, a cloud-config when it names no profile (the conductor's
// render checks again with the image's).
func (d *Driver) CheckLabels(ct *model.ClusterTemplate, l map[string]string) error {
	if _, ok := d.infra.(UserDataLimit); !ok {
		return nil
	}
	v := labels.Values(l)
	files, err := v.ExtraFiles()
	if err != nil {
		return nil // the label schema says what is wrong with them
	}
	p := &Plan{OS: osProfiles["ubuntu"], ExtraFiles: files, KeystoneAuth: v.Bool(labels.KeystoneAuthEnabled),
		CertSANs: v.List(labels.APIServerCertSANs)}
	if ct != nil && ct.ClusterDistro != nil {
		if os, ok := osProfiles[*ct.ClusterDistro]; ok {
			p.OS = os
		}
	}
	return d.checkUserData(p)
}
