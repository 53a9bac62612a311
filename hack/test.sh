#!/usr/bin/env bash
# The full test suite: installs what it needs (Debian packages, binaries
# built from Go modules), builds magnetite once for every test that runs
# it, vets every package and compiles the tests' packages, then runs every
# test on one Cluster API plane that all packages share (hack/testrun).
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

echo "== go vet"
go vet ./...
# Compile every package's test variant now, as part of the build: go test
# then only links. On a fresh machine's empty build cache the compiles
# otherwise run inside the test phase, beside the tests, and every test that
# waits on a condition waits longer while its controllers keep working.
echo "== go build of the tests' packages"
go list -test -export -deps ./... > /dev/null
# And the packages of the image's binary, in hack/image.sh's flavour
# (CGO_ENABLED=0, -trimpath: every package compiled apart from the above),
# which test/deploy's image build then only links. Should the two scripts'
# flags part, that build compiles again inside the test phase: slower, not
# wrong.
CGO_ENABLED=0 go list -trimpath -tags kustomize_disable_go_plugin_support -export -deps ./cmd/magnetite > /dev/null
echo "== go test"
go build -o _output/test/testrun ./hack/testrun
exec _output/test/testrun "$@"
