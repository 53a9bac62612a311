#!/usr/bin/env bash
# Magnetite on a local Cluster API management plane, with embedded defaults
# (SQLite, noauth) and clusters on Cluster API's in-memory infrastructure:
# starts the plane (hack/local-mgmt.sh; builds kube-apiserver, etcd and the
# Cluster API managers from Go modules on first use, ~15 minutes cold), serves
# the Magnum v1 API on 127.0.0.1:9511 with the conductor, creates a demo
# cluster and shows its progress until CREATE_COMPLETE, then keeps serving
# until Ctrl-C, which stops everything it started.
#
#   bash hack/run-local.sh            # demo cluster "demo"
#   MAGNETITE_DEMO=0 bash hack/run-local.sh   # serve only
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state="${XDG_STATE_HOME:-$HOME/.local/state}/magnetite"
listen="${MAGNETITE_LISTEN:-127.0.0.1:9511}"
mkdir -p "$state"

# The management plane's scripts need curl and openssl.
missing=()
for c in curl openssl; do command -v "$c" >/dev/null || missing+=("$c"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${missing[@]}"
fi

bash "$repo/hack/local-mgmt.sh" start
kubeconfig="${MAGNETITE_MGMT_DIR:-$state/mgmt}/kubeconfig"

bin="$state/bin/magnetite"
mkdir -p "$state/bin"
(cd "$repo" && go build -tags kustomize_disable_go_plugin_support -o "$bin" ./cmd/magnetite)

conf="$state/local.conf"
cat > "$conf" <<CONF
# Written by hack/run-local.sh.
[DEFAULT]
state_dir = $state
[api]
listen = $listen
[auth]
noauth_roles = admin,member
[management]
kubeconfig = $kubeconfig
# The local plane runs no kube-controller-manager, whose namespace controller
# finishes deleting namespaces: keep each project's namespace.
delete_empty_namespaces = false
[conductor]
infrastructure = inmemory
CONF

"$bin" --config-file "$conf" serve >"$state/serve.log" 2>&1 &
serve_pid=$!
cleanup() {
  kill "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true
  bash "$repo/hack/local-mgmt.sh" stop || true
}
trap cleanup EXIT INT TERM

export OS_ENDPOINT="http://$listen/v1" OS_TOKEN=local
for _ in $(seq 1 100); do
  "$bin" cluster list >/dev/null 2>&1 && break
  kill -0 "$serve_pid" 2>/dev/null || { cat "$state/serve.log"; exit 1; }
  sleep 0.2
done
echo "Magnetite: Magnum v1 API on http://$listen/v1 (log: $state/serve.log)"

if [ "${MAGNETITE_DEMO:-1}" != 0 ]; then
  "$bin" template show demo-template >/dev/null 2>&1 || \
    "$bin" template create demo-template --coe kubernetes --image ubuntu-2204-kube-v1.31.2 --labels kube_tag=v1.31.2 >/dev/null
  if ! "$bin" cluster show demo >/dev/null 2>&1; then
    "$bin" cluster create demo --cluster-template demo-template --master-count 1 --node-count 1 --wait
  else
    "$bin" cluster show demo --watch
  fi
  cat <<MSG

Try:
  export OS_ENDPOINT=$OS_ENDPOINT OS_TOKEN=local
  $bin cluster list
  $bin cluster resize demo 2 --wait
  $bin cluster config demo --dir /tmp/demo && kubectl --kubeconfig /tmp/demo/config get nodes
  openstack --os-auth-type admin_token --os-endpoint $OS_ENDPOINT --os-token x coe cluster show demo
MSG
fi
echo "Serving until Ctrl-C."
wait "$serve_pid"
