// Command imagebuild writes the OCI image of a static magnetite binary
// without a container engine: one layer holding the binary, a passwd and
// group file naming an unprivileged user, the CA bundle of the build host
// and the directories the server writes to. hack/image.sh builds the binary
// and calls it; the result is an OCI image layout (skopeo copy
// oci:DIR:TAG, crane push --index DIR) and an image tarball
// (podman load -i, docker load -i).
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user: the UID distroless images use for "nonroot", so file
// ownership on volumes and securityContext.runAsUser agree with them.
const (
	uid      = 65532
	userName = "magnetite"
	stateDir = "/var/lib/magnetite"
	binPath  = "/usr/local/bin/magnetite"
)

type options struct {
	binary, caBundle       string
	layoutDir, tarballPath string
	tag                    string
	version, revision      string
	source                 string
	arch                   string
	created                time.Time
}

func main() {
	var o options
	var epoch int64
	flag.StringVar(&o.binary, "binary", "", "static magnetite binary to put in the image (required)")
	flag.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle installed as the image's trusted roots; empty for none")
	flag.StringVar(&o.layoutDir, "oci-layout", "", "directory to write the OCI image layout to")
	flag.StringVar(&o.tarballPath, "tarball", "", "file to write the image tarball (podman load / docker load) to")
	flag.StringVar(&o.tag, "tag", "magnetite:dev", "image reference recorded in the layout and the tarball")
	flag.StringVar(&o.version, "version", "dev", "version recorded in the image's labels and annotations")
	flag.StringVar(&o.revision, "revision", "", "source revision recorded in the labels (empty when unknown)")
	flag.StringVar(&o.source, "source", "https://github.com/magnetite-io/magnetite", "source repository recorded in the labels")
	flag.StringVar(&o.arch, "arch", "amd64", "architecture of the binary")
	flag.Int64Var(&epoch, "created", 0, "creation time in Unix seconds (SOURCE_DATE_EPOCH); 0 gives a reproducible image dated 1970")
	flag.Parse()
	o.created = time.Unix(epoch, 0).UTC()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.binary == "" || (o.layoutDir == "" && o.tarballPath == "") {
		return errors.New("need -binary and at least one of -oci-layout and -tarball")
	}
	ref, err := name.NewTag(o.tag)
	if err != nil {
		return fmt.Errorf("tag %q: %w", o.tag, err)
	}
	img, err := build(o)
	if err != nil {
		return err
	}
	if o.layoutDir != "" {
		p, err := layout.Write(o.layoutDir, empty.Index)
		if err != nil {
			return fmt.Errorf("write layout: %w", err)
		}
		// ref.name is what skopeo's oci:DIR:NAME and podman's oci: transport
		// look the image up by.
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": ref.TagStr(),
		})); err != nil {
			return fmt.Errorf("write layout: %w", err)
		}
	}
	if o.tarballPath != "" {
		if err := tarball.WriteToFile(o.tarballPath, ref, img); err != nil {
			return fmt.Errorf("write tarball: %w", err)
		}
	}
	return nil
}

// annotations are the OCI image spec's pre-defined keys; they go both into
// the config's labels (what podman inspect and Kubernetes tooling show) and
// the manifest's annotations (what registries and skopeo inspect show).
func annotations(o options) map[string]string {
	a := map[string]string{
		"org.opencontainers.image.title":       "magnetite",
		"org.opencontainers.image.description": "OpenStack Magnum v1 API building Kubernetes clusters with Cluster API",
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.source":      o.source,
		"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
	}
	if o.revision != "" {
		a["org.opencontainers.image.revision"] = o.revision
	}
	return a
}

func build(o options) (v1.Image, error) {
	layerTar, err := rootfs(o)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   v1.Time{Time: o.created},
		CreatedBy: "hack/imagebuild: " + binPath,
		Comment:   "magnetite " + o.version,
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = o.arch, "linux"
	cf.Created = v1.Time{Time: o.created}
	cf.Config = v1.Config{
		User:       strconv.Itoa(uid) + ":" + strconv.Itoa(uid),
		Entrypoint: []string{binPath},
		Cmd:        []string{"serve"},
		WorkingDir: stateDir,
		Env: []string{
			"PATH=/usr/local/bin",
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
			// A container is reached through its pod or port mapping, never
			// its loopback; the state directory is the image's own.
			"MAGNETITE_API_LISTEN=0.0.0.0:9511",
			"MAGNETITE_DEFAULT_STATE_DIR=" + stateDir,
		},
		ExposedPorts: map[string]struct{}{"9511/tcp": {}},
		Volumes:      map[string]struct{}{stateDir: {}},
		Labels:       annotations(o),
		StopSignal:   "SIGTERM",
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, annotations(o)).(v1.Image), nil
}

// rootfs is the layer: no shell, no package manager, nothing but what
// magnetite reads at run time.
func rootfs(o options) ([]byte, error) {
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(path string, mode int64, owner int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path + "/", Mode: mode, Uid: owner, Gid: owner, ModTime: o.created, Format: tar.FormatPAX})
	}
	file := func(path string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: mode, Size: int64(len(data)), ModTime: o.created, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:Magnetite:%s:/sbin/nologin\n", userName, uid, uid, stateDir)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", userName, uid)
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("etc/magnetite", 0o755, 0) },
		func() error { return dir("etc/magnetite/magnetite.conf.d", 0o755, 0) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("usr", 0o755, 0) },
		func() error { return dir("usr/local", 0o755, 0) },
		func() error { return dir("usr/local/bin", 0o755, 0) },
		func() error { return file(binPath[1:], 0o755, bin) },
		func() error { return dir("var", 0o755, 0) },
		func() error { return dir("var/lib", 0o755, 0) },
		// 0700 is what serve makes its state directory anyway.
		func() error { return dir(stateDir[1:], 0o700, uid) },
	}
	if o.caBundle != "" {
		ca, err := os.ReadFile(o.caBundle)
		if err != nil {
			return nil, fmt.Errorf("CA bundle: %w", err)
		}
		steps = append(steps,
			func() error { return dir("etc/ssl", 0o755, 0) },
			func() error { return dir("etc/ssl/certs", 0o755, 0) },
			func() error { return file("etc/ssl/certs/ca-certificates.crt", 0o644, ca) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
