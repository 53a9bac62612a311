#!/usr/bin/env bash
# Builds Magnetite's OCI image without a container engine: a static binary
# (CGO off) and one layer written by hack/imagebuild with
# github.com/google/go-containerregistry.
#
#   bash hack/image.sh                       # _output/image/{oci,magnetite.tar}
#   VERSION=v1.2.0 OUT=/tmp/img bash hack/image.sh
#   skopeo copy oci:_output/image/oci:v1.2.0 docker://registry.example.net/magnetite:v1.2.0
#   podman load -i _output/image/magnetite.tar
#
# Sites that build with their own tools use the Containerfile beside this
# script instead (podman build -f hack/Containerfile .).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
REVISION="${REVISION:-$(git rev-parse HEAD 2>/dev/null || true)}"
OUT="${OUT:-_output/image}"
IMAGE="${IMAGE:-magnetite}"
ARCH="${GOARCH:-$(go env GOARCH)}"
mkdir -p "$OUT"
rm -rf "$OUT/oci" "$OUT/magnetite.tar"
# The tag keeps Go's plugin loader out of the binary (see README, Install).
# hack/test.sh compiles these packages with the same flags before the tests
# (test/deploy runs this script): keep the two in step.
CGO_ENABLED=0 GOOS=linux GOARCH="$ARCH" go build -trimpath -tags kustomize_disable_go_plugin_support \
    -ldflags "-s -w -X github.com/magnetite-io/magnetite/internal/version.Version=$VERSION" \
    -o "$OUT/magnetite" ./cmd/magnetite
go run ./hack/imagebuild -binary "$OUT/magnetite" -arch "$ARCH" \
    -version "$VERSION" -revision "$REVISION" -tag "$IMAGE:$VERSION" \
    -created "${SOURCE_DATE_EPOCH:-0}" \
    -oci-layout "$OUT/oci" -tarball "$OUT/magnetite.tar"
echo "image $IMAGE:$VERSION: OCI layout $OUT/oci, tarball $OUT/magnetite.tar"
