#!/usr/bin/env bash
# The full test suite: installs what it needs (Debian packages, binaries
# built from Go modules), then vets and runs every test. `go test -short ./...`
# is the fast unit loop that needs none of it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash hack/ci-deps.sh
if [ -x hack/build-testbin.sh ] || [ -f hack/build-testbin.sh ]; then
  bash hack/build-testbin.sh
fi
export MAGNETITE_TESTBIN="${MAGNETITE_TESTBIN:-$PWD/.testbin}"
echo "== go vet"
go vet ./...
echo "== go test"
go test -count=1 -timeout 60m ./...
