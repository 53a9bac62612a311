#!/usr/bin/env bash
# The full test suite: installs what it needs (Debian packages, binaries
# built from Go modules), builds magnetite once for every test that runs
# it, then vets and runs every test. `go test -short ./...` is the fast
# unit loop that needs none of it.
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
echo "== go test"
go test -count=1 -timeout 60m ./...
