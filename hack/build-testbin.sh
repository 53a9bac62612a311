#!/usr/bin/env bash
# Builds, from pinned Go modules, the real binaries Magnetite's tests run
# (kube-apiserver, etcd, kubectl, kubeadm at two Kubernetes minors, the
# Cluster API managers and CAPD with its in-memory backend, OpenTofu and the
# OpenStack provider it drives Magnetite with) and copies the CRDs and webhook
# manifests they need.
#
# Everything lands in ${MAGNETITE_TESTBIN:-<repo>/.testbin}, in one folder per
# version, and anything already there is kept: a warm run only checks files.
# The module definitions live in hack/testbin/<name>/ (go.mod, go.sum,
# tools.go); see hack/testbin/README.md.
#
# Usage: hack/build-testbin.sh [--only mgmt|k8s|capi|iac]
# (mgmt: only what a local management plane runs, for hack/local-mgmt.sh)
set -euo pipefail

# Keep these in step with hack/testbin/*/go.mod; the script refuses to build
# if they disagree.
K8S_VERSION=v1.36.3
# kubeadm of the previous minor too: the tests read the bootstrap data of
# clusters at both versions with the kubeadm of their own version.
KUBEADM_PREVIOUS_VERSION=v1.35.4
ETCD_VERSION=v3.6.16
CAPI_VERSION=v1.14.2
# The proxy refuses sigs.k8s.io/cluster-api/test v1.14.2; v1.14.0 is the
# newest it serves, and CAPD is built from it against cluster-api v1.14.2.
CAPI_TEST_VERSION=v1.14.0
# The infrastructure-as-code clients test/terraform runs: OpenTofu and the
# OpenStack provider it loads through a dev_overrides CLI configuration.
TOFU_VERSION=v1.12.6
OPENSTACK_PROVIDER_VERSION=v3.4.0

usage() {
	echo "usage: $0 [--only mgmt|k8s|capi|iac]" >&2
	exit 2
}

only=""
while [[ $# -gt 0 ]]; do
	case "$1" in
	--only)
		[[ $# -ge 2 ]] || usage
		only="$2"
		shift 2
		;;
	--only=*)
		only="${1#--only=}"
		shift
		;;
	-h | --help) usage ;;
	*) usage ;;
	esac
done
case "$only" in
"" | mgmt | k8s | capi | iac) ;;
*) usage ;;
esac

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
modules="$repo/hack/testbin"
testbin="${MAGNETITE_TESTBIN:-$repo/.testbin}"
k8s_dir="$testbin/k8s-$K8S_VERSION"
kubeadm_previous_dir="$testbin/k8s-$KUBEADM_PREVIOUS_VERSION"
capi_dir="$testbin/capi-$CAPI_VERSION"
tofu_dir="$testbin/opentofu-$TOFU_VERSION"
provider_dir="$testbin/terraform-provider-openstack-$OPENSTACK_PROVIDER_VERSION"

log() { echo "build-testbin: $*" >&2; }

# go_env is set up on first use so a fully cached run never starts the go tool.
go_ready=""
go_env() {
	[[ -n "$go_ready" ]] && return
	command -v go >/dev/null || {
		log "go is not on PATH"
		exit 1
	}
	# The throwaway modules must not be pulled into a go.work the repo may have.
	export GOWORK=off
	# Two packages at a time keeps a cold kube-apiserver build near 2-3 GB.
	export GOFLAGS="-p=${MAGNETITE_TESTBIN_JOBS:-2} -mod=readonly ${GOFLAGS:-}"
	export CGO_ENABLED=0
	gomodcache="$(go env GOMODCACHE)"
	go_ready=1
}

# module_version <module dir> <module path> prints the version the module
# definition in hack/testbin resolves <module path> to.
module_version() {
	(cd "$1" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$2")
}

check_pin() {
	local dir="$1" mod="$2" want="$3" got
	got="$(module_version "$dir" "$mod")"
	if [[ "$got" != "$want" ]]; then
		log "$dir/go.mod resolves $mod to $got, this script pins $want"
		exit 1
	fi
}

# build <module dir> <package> <output> [go build args...] builds into a
# temporary file and renames it, so an interrupted build leaves nothing behind
# that a later run would mistake for a finished binary.
build() {
	local dir="$1" pkg="$2" out="$3"
	shift 3
	if [[ -x "$out" ]]; then
		return
	fi
	go_env
	mkdir -p "$(dirname "$out")"
	log "building $(basename "$out") from $pkg"
	local start=$SECONDS
	(cd "$dir" && go build -trimpath -o "$out.tmp.$$" "$@" "$pkg") || {
		rm -f "$out.tmp.$$"
		exit 1
	}
	mv -f "$out.tmp.$$" "$out"
	log "built $(basename "$out") in $((SECONDS - start))s"
}

# need <-d|-f> <path> stops the build when a folder or file it copies from
# is missing.
need() {
	test "$1" "$2" || {
		log "missing $2"
		exit 1
	}
}

# copy_tree <source folder> <target folder> copies the YAML files of a folder
# from the module cache (read-only there) into a folder that appears whole.
copy_tree() {
	local src="$1" dst="$2"
	[[ -d "$dst" ]] && return
	need -d "$src"
	mkdir -p "$(dirname "$dst")"
	rm -rf "$dst.tmp.$$"
	mkdir "$dst.tmp.$$"
	cp "$src"/*.yaml "$dst.tmp.$$/"
	chmod 0644 "$dst.tmp.$$"/*.yaml
	mv "$dst.tmp.$$" "$dst"
}

# copy_file <source file> <target file> copies one file the same way.
copy_file() {
	local src="$1" dst="$2"
	[[ -f "$dst" ]] && return
	need -f "$src"
	mkdir -p "$(dirname "$dst")"
	cp "$src" "$dst.tmp.$$"
	chmod 0644 "$dst.tmp.$$"
	mv "$dst.tmp.$$" "$dst"
}

# version_ldflags <package> <version> prints the -X flags Kubernetes' own build
# sets, so the binaries report the real version instead of v0.0.0-master.
version_ldflags() {
	local pkg="$1" version="$2" major minor
	major="${version#v}"
	major="${major%%.*}"
	minor="${version#v*.}"
	minor="${minor%%.*}"
	printf -- '-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean ' \
		"$pkg" "$version" "$pkg" "$major" "$pkg" "$minor" "$pkg"
}

# k8s_ldflags <version> prints the link flags of a Kubernetes command.
k8s_ldflags() {
	echo "-s -w $(version_ldflags k8s.io/component-base/version "$1")$(version_ldflags k8s.io/client-go/pkg/version "$1")"
}

# build_plane_k8s builds what a management plane runs: etcd, kube-apiserver
# and kubectl.
build_plane_k8s() {
	local want=("$k8s_dir/kube-apiserver" "$k8s_dir/kubectl" "$k8s_dir/etcd")
	local f missing=""
	for f in "${want[@]}"; do [[ -x "$f" ]] || missing=1; done
	[[ -n "$missing" ]] || return 0

	go_env
	check_pin "$modules/k8s" k8s.io/kubernetes "$K8S_VERSION"
	check_pin "$modules/etcd" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
	# Quickest first, so a broken toolchain or module cache shows up early.
	build "$modules/etcd" go.etcd.io/etcd/server/v3 "$k8s_dir/etcd" -ldflags "-s -w"
	build "$modules/k8s" k8s.io/kubernetes/cmd/kubectl "$k8s_dir/kubectl" -ldflags "$(k8s_ldflags "$K8S_VERSION")"
	build "$modules/k8s" k8s.io/kubernetes/cmd/kube-apiserver "$k8s_dir/kube-apiserver" -ldflags "$(k8s_ldflags "$K8S_VERSION")"
}

# build_k8s adds kubeadm at two Kubernetes minors, which the tests read
# nodes' bootstrap data with.
build_k8s() {
	build_plane_k8s
	if [[ ! -x "$k8s_dir/kubeadm" ]]; then
		go_env
		build "$modules/k8s" k8s.io/kubernetes/cmd/kubeadm "$k8s_dir/kubeadm" -ldflags "$(k8s_ldflags "$K8S_VERSION")"
	fi
	if [[ ! -x "$kubeadm_previous_dir/kubeadm" ]]; then
		go_env
		check_pin "$modules/kubeadm-1.35" k8s.io/kubernetes "$KUBEADM_PREVIOUS_VERSION"
		build "$modules/kubeadm-1.35" k8s.io/kubernetes/cmd/kubeadm "$kubeadm_previous_dir/kubeadm" \
			-ldflags "$(k8s_ldflags "$KUBEADM_PREVIOUS_VERSION")"
	fi
}

build_capi() {
	local want=(
		"$capi_dir/capi-manager"
		"$capi_dir/kubeadm-bootstrap-manager"
		"$capi_dir/kubeadm-control-plane-manager"
		"$capi_dir/capd-manager"
	)
	local providers=(core kubeadm-bootstrap kubeadm-control-plane capd)
	local f p missing=""
	for f in "${want[@]}"; do [[ -x "$f" ]] || missing=1; done
	for p in "${providers[@]}"; do
		[[ -d "$capi_dir/crds/$p" && -f "$capi_dir/webhooks/$p.yaml" ]] || missing=1
	done
	[[ -n "$missing" ]] || return 0

	go_env
	check_pin "$modules/capi" sigs.k8s.io/cluster-api "$CAPI_VERSION"
	check_pin "$modules/capi" sigs.k8s.io/cluster-api/api "$CAPI_VERSION"
	check_pin "$modules/capi" sigs.k8s.io/cluster-api/test "$CAPI_TEST_VERSION"

	# Sources (and the CRDs among them) come from the module cache; download
	# is a no-op when they are there already.
	(cd "$modules/capi" && go mod download sigs.k8s.io/cluster-api sigs.k8s.io/cluster-api/test)
	local core="$gomodcache/sigs.k8s.io/cluster-api@$CAPI_VERSION"
	local capd="$gomodcache/sigs.k8s.io/cluster-api/test@$CAPI_TEST_VERSION/infrastructure/docker"

	copy_tree "$core/core/config/crd/bases" "$capi_dir/crds/core"
	copy_tree "$core/bootstrap/kubeadm/config/crd/bases" "$capi_dir/crds/kubeadm-bootstrap"
	copy_tree "$core/controlplane/kubeadm/config/crd/bases" "$capi_dir/crds/kubeadm-control-plane"
	copy_tree "$capd/config/crd/bases" "$capi_dir/crds/capd"
	copy_file "$core/core/config/webhook/manifests.yaml" "$capi_dir/webhooks/core.yaml"
	copy_file "$core/bootstrap/kubeadm/config/webhook/manifests.yaml" "$capi_dir/webhooks/kubeadm-bootstrap.yaml"
	copy_file "$core/controlplane/kubeadm/config/webhook/manifests.yaml" "$capi_dir/webhooks/kubeadm-control-plane.yaml"
	copy_file "$capd/config/webhook/manifests.yaml" "$capi_dir/webhooks/capd.yaml"

	local ldflags
	ldflags="-s -w $(version_ldflags sigs.k8s.io/cluster-api/version "$CAPI_VERSION")"
	build "$modules/capi" sigs.k8s.io/cluster-api/bootstrap/kubeadm "$capi_dir/kubeadm-bootstrap-manager" -ldflags "$ldflags"
	build "$modules/capi" sigs.k8s.io/cluster-api/controlplane/kubeadm "$capi_dir/kubeadm-control-plane-manager" -ldflags "$ldflags"
	build "$modules/capi" sigs.k8s.io/cluster-api/core "$capi_dir/capi-manager" -ldflags "$ldflags"
	build "$modules/capi" sigs.k8s.io/cluster-api/test/infrastructure/docker "$capi_dir/capd-manager" -ldflags "$ldflags"
}

# build_iac builds OpenTofu and the OpenStack provider. Neither has a module
# definition in hack/testbin: each is built at its own pinned release with
# the dependencies its own go.mod and go.sum pin.
build_iac() {
	if [[ ! -x "$tofu_dir/tofu" ]]; then
		go_env
		# OpenTofu's go.mod has replace directives, which go install
		# refuses, so it is built as the main module of a copy of its source.
		local src
		src="$(GOFLAGS= go mod download -json "github.com/opentofu/opentofu@$TOFU_VERSION" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
		need -d "$src"
		local copy
		copy="$(mktemp -d)"
		cp -R "$src/." "$copy"
		chmod -R u+w "$copy"
		# As OpenTofu's release build links it, so it reports v1.12.x, not -dev.
		build "$copy" ./cmd/tofu "$tofu_dir/tofu" -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no"
		rm -rf "$copy"
	fi
	local provider="$provider_dir/terraform-provider-openstack"
	if [[ ! -x "$provider" ]]; then
		go_env
		log "building terraform-provider-openstack $OPENSTACK_PROVIDER_VERSION"
		local start=$SECONDS gobin
		gobin="$(mktemp -d)"
		# go install of a module at a version takes no -mod flag.
		GOFLAGS="-p=${MAGNETITE_TESTBIN_JOBS:-2}" GOBIN="$gobin" go install -trimpath -ldflags "-s -w" \
			"github.com/terraform-provider-openstack/terraform-provider-openstack/v3@$OPENSTACK_PROVIDER_VERSION"
		mkdir -p "$provider_dir"
		mv -f "$gobin/terraform-provider-openstack" "$provider"
		rm -rf "$gobin"
		log "built terraform-provider-openstack in $((SECONDS - start))s"
	fi
}

case "$only" in
mgmt)
	build_plane_k8s
	build_capi
	;;
k8s) build_k8s ;;
capi) build_capi ;;
iac) build_iac ;;
*)
	build_k8s
	build_capi
	build_iac
	;;
esac

case "$only" in
mgmt) echo "$k8s_dir" ;;
k8s | "") printf '%s\n' "$k8s_dir" "$kubeadm_previous_dir" ;;
esac
case "$only" in
mgmt | capi | "") echo "$capi_dir" ;;
esac
case "$only" in
iac | "") printf '%s\n' "$tofu_dir" "$provider_dir" ;;
esac
