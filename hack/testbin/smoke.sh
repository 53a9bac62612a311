#!/usr/bin/env bash
# Smoke test for the binaries hack/build-testbin.sh builds: checks their
# versions, starts etcd and kube-apiserver on 127.0.0.1 the way the tests do
# (self-signed certificates, a token file, RBAC, service-account keys), lists
# namespaces, dry-runs a server-side apply of a Cluster API CRD, and stops
# both servers again. Everything it creates lives in one temporary folder
# that is removed on exit.
#
# Usage: hack/testbin/smoke.sh   (after hack/build-testbin.sh)
set -euo pipefail

K8S_VERSION=v1.36.3
ETCD_VERSION=v3.6.16
CAPI_VERSION=v1.14.2

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
testbin="${MAGNETITE_TESTBIN:-$repo/.testbin}"
k8s="$testbin/k8s-$K8S_VERSION"
capi="$testbin/capi-$CAPI_VERSION"

log() { echo "smoke: $*" >&2; }
fail() {
	log "FAIL: $*"
	exit 1
}

for f in "$k8s"/{kube-apiserver,kubectl,etcd} \
	"$capi"/{capi-manager,kubeadm-bootstrap-manager,kubeadm-control-plane-manager,capd-manager}; do
	[[ -x "$f" ]] || fail "$f is missing; run hack/build-testbin.sh"
done

# --- versions and flags -------------------------------------------------------

out="$("$k8s/kube-apiserver" --version)"
[[ "$out" == "Kubernetes $K8S_VERSION" ]] || fail "kube-apiserver --version: $out"
log "kube-apiserver: $out"

out="$("$k8s/etcd" --version)"
grep -q "^etcd Version: ${ETCD_VERSION#v}\$" <<<"$out" || fail "etcd --version: $out"
log "etcd: $(head -n1 <<<"$out")"

out="$("$k8s/kubectl" version --client)"
grep -q "Client Version: $K8S_VERSION\$" <<<"$out" || fail "kubectl version --client: $out"
log "kubectl: $(head -n1 <<<"$out")"

for m in capi-manager kubeadm-bootstrap-manager kubeadm-control-plane-manager capd-manager; do
	"$capi/$m" --help >/dev/null 2>&1 || fail "$m --help exited $?"
	log "$m --help: ok"
done

# --- a real API server --------------------------------------------------------

tmp="$(mktemp -d "${TMPDIR:-/tmp}/magnetite-smoke.XXXXXX")"
pids=()
cleanup() {
	local rc=$? pid i l
	# Show the servers' logs as they were at the failure, not their shutdown.
	if [[ $rc -ne 0 ]]; then
		for l in "$tmp"/*.log; do
			[[ -f "$l" ]] || continue
			log "--- last lines of $(basename "$l")"
			tail -n 20 "$l" >&2
		done
	fi
	# Stop the API server before etcd, and only the processes started here.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		pid="${pids[i]}"
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$tmp"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port prints a loopback TCP port nothing listens on (racy, as any such
# check is, but fine for a smoke test).
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

# wait_for <what> <seconds> <command...> retries the command four times a second.
wait_for() {
	local what="$1" seconds="$2"
	shift 2
	local i
	for ((i = 0; i < seconds * 4; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.25
	done
	fail "$what not ready after ${seconds}s"
}

pki="$tmp/pki"
mkdir -p "$pki"
(
	cd "$pki"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=magnetite-smoke-ca" \
		-keyout ca.key -out ca.crt 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
		-keyout apiserver.key -out apiserver.csr 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >apiserver.ext
	openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 \
		-extfile apiserver.ext -out apiserver.crt 2>/dev/null
	openssl genrsa -out sa.key 2048 2>/dev/null
	openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
)
token="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
echo "$token,smoke-admin,smoke-admin,system:masters" >"$pki/tokens.csv"

etcd_client="$(free_port)"
etcd_peer="$(free_port)"
api_port="$(free_port)"

"$k8s/etcd" \
	--name=smoke \
	--data-dir="$tmp/etcd" \
	--listen-client-urls="http://127.0.0.1:$etcd_client" \
	--advertise-client-urls="http://127.0.0.1:$etcd_client" \
	--listen-peer-urls="http://127.0.0.1:$etcd_peer" \
	--initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer" \
	--initial-cluster="smoke=http://127.0.0.1:$etcd_peer" \
	--unsafe-no-fsync \
	>"$tmp/etcd.log" 2>&1 &
pids+=($!)
start=$SECONDS
wait_for etcd 30 curl -fsS "http://127.0.0.1:$etcd_client/health"
log "etcd ready on 127.0.0.1:$etcd_client after $((SECONDS - start))s"

"$k8s/kube-apiserver" \
	--etcd-servers="http://127.0.0.1:$etcd_client" \
	--bind-address=127.0.0.1 \
	--advertise-address=127.0.0.1 \
	--secure-port="$api_port" \
	--cert-dir="$tmp/apiserver-certs" \
	--tls-cert-file="$pki/apiserver.crt" \
	--tls-private-key-file="$pki/apiserver.key" \
	--client-ca-file="$pki/ca.crt" \
	--token-auth-file="$pki/tokens.csv" \
	--authorization-mode=RBAC \
	--service-account-issuer="https://127.0.0.1:$api_port" \
	--service-account-key-file="$pki/sa.pub" \
	--service-account-signing-key-file="$pki/sa.key" \
	--service-cluster-ip-range=10.0.0.0/24 \
	--disable-admission-plugins=ServiceAccount \
	--allow-privileged=true \
	>"$tmp/kube-apiserver.log" 2>&1 &
pids+=($!)
start=$SECONDS
wait_for kube-apiserver 90 curl -fsS --cacert "$pki/ca.crt" \
	-H "Authorization: Bearer $token" "https://127.0.0.1:$api_port/readyz"
log "kube-apiserver ready on 127.0.0.1:$api_port after $((SECONDS - start))s"

export KUBECONFIG="$tmp/kubeconfig"
kubectl() { "$k8s/kubectl" "$@"; }
kubectl config set-cluster smoke --server="https://127.0.0.1:$api_port" \
	--certificate-authority="$pki/ca.crt" --embed-certs >/dev/null
kubectl config set-credentials smoke --token="$token" >/dev/null
kubectl config set-context smoke --cluster=smoke --user=smoke >/dev/null
kubectl config use-context smoke >/dev/null

out="$(kubectl get ns -o name)"
grep -qx namespace/default <<<"$out" || fail "kubectl get ns: $out"
log "kubectl get ns: $(tr '\n' ' ' <<<"$out")"

crd="$capi/crds/core/cluster.x-k8s.io_clusters.yaml"
out="$(kubectl apply --server-side --dry-run=server -f "$crd")"
log "kubectl apply --server-side --dry-run=server: $out"
grep -q 'clusters.cluster.x-k8s.io serverside-applied (server dry run)' <<<"$out" ||
	fail "unexpected apply output"

log "PASS"
