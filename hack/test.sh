#!/usr/bin/env bash
# The full test suite: installs what it needs (Debian packages, binaries
# built from Go modules), builds magnetite once for every test that runs
# it, vets every package and links every package's test binary, then runs
# every test on one Cluster API plane that all packages share (hack/testrun).
# `go test -short ./...` is the fast unit loop that needs none of it.
#
# Usage: hack/test.sh [--repeat N] [--json FILE] [packages]
#   --repeat N  runs the packages N times, each on a fresh plane, and ends
#               with the failures per test (the flake gate)
#   --json FILE keeps every event of go test -json, passing tests' log
#               lines included
set -euo pipefail
cd "$(dirname "$0")/.."
bash hack/ci-deps.sh
if [ -x hack/build-testbin.sh ] || [ -f hack/build-testbin.sh ]; then
  bash hack/build-testbin.sh
fi
export MAGNETITE_TESTBIN="${MAGNETITE_TESTBIN:-$PWD/.testbin}"

# One build of magnetite, as the README installs it, for every package that
# runs it (testmagnetite.Build reads the path); git ignores _output.
echo "== go build ./cmd/magnetite"
mkdir -p _output/test
go build -tags kustomize_disable_go_plugin_support -o _output/test/magnetite ./cmd/magnetite
export MAGNETITE_TEST_BINARY="$PWD/_output/test/magnetite"

# The packages named on the command line (all when none is), for go vet
# and the image's build below; testrun reads the flags.
packages=() skip=
for arg in "$@"; do
  if [ -n "$skip" ]; then skip=; continue; fi
  case "$arg" in
    --repeat|--json|-p|--parallel|--timeout|--save-order) skip=1 ;;
    -*) ;;
    *) packages+=("$arg") ;;
  esac
done
echo "== go vet"
go vet "${packages[@]:-./...}"
# testrun then links every package's test binary (go test -c) before the
# plane starts, and runs the binaries itself: the compiles and links are
# part of the build, not of the test phase, where they would run beside
# tests that wait on conditions while their controllers keep working.
#
# When test/deploy runs, compile the packages of the image's binary, in
# hack/image.sh's flavour (CGO_ENABLED=0, -trimpath: every package
# compiled apart from the above), which its image build then only links.
# Should the two scripts' flags part, that build compiles again inside the
# test phase: slower, not wrong.
if [ ${#packages[@]} -eq 0 ] || go list "${packages[@]}" | grep -qx 'github.com/magnetite-io/magnetite/test/deploy'; then
  echo "== go build of the image's packages"
  CGO_ENABLED=0 go list -trimpath -tags kustomize_disable_go_plugin_support -export -deps ./cmd/magnetite > /dev/null
fi
echo "== go test"
go build -o _output/test/testrun ./hack/testrun
exec _output/test/testrun "$@"
