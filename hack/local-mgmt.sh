#!/usr/bin/env bash
# Runs a local Cluster API management plane on 127.0.0.1, in the background:
# etcd, kube-apiserver, Cluster API's core manager, the kubeadm bootstrap and
# control-plane managers and CAPD with its in-memory backend (workload
# clusters without machines or Docker). Binaries come from
# hack/build-testbin.sh (built on first use, several minutes).
#
#   hack/local-mgmt.sh [start]   start (or report the running plane)
#   hack/local-mgmt.sh stop      stop every process this script started
#   hack/local-mgmt.sh status    say what runs
#
# State (certificates, etcd data, logs, pids) lives in
# ${MAGNETITE_MGMT_DIR:-<state dir>/mgmt}, where the state dir is
# $XDG_STATE_HOME/magnetite or ~/.local/state/magnetite, as for magnetite.
# The admin kubeconfig is written there as kubeconfig, mode 0600; point
# Magnetite at it with [management] kubeconfig (start prints the line).
#
# Ports: kube-apiserver on ${MAGNETITE_MGMT_PORT:-16443}; etcd, manager
# webhooks, health and metrics on the ports just above it (up to +19).
# CAPD's in-memory backend always uses port 19000 and 20000 upwards (one
# port per workload cluster), so only one CAPD can run on a machine: a lock
# file in the temp folder, shared with the Go tests, keeps a second away.
# start fails at once while another CAPD holds it, or waits for it up to
# ${MAGNETITE_MGMT_CAPD_WAIT:-0} seconds.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state_root="${XDG_STATE_HOME:-$HOME/.local/state}/magnetite"
dir="${MAGNETITE_MGMT_DIR:-$state_root/mgmt}"
base="${MAGNETITE_MGMT_PORT:-16443}"
capd_lock="${TMPDIR:-/tmp}/magnetite-capd-inmemory.lock"
capd_wait="${MAGNETITE_MGMT_CAPD_WAIT:-0}"

apiserver_port=$base
etcd_port=$((base + 1))
etcd_peer_port=$((base + 2))
managers=(capi-manager kubeadm-bootstrap-manager kubeadm-control-plane-manager capd-manager)
webhooks=(core kubeadm-bootstrap kubeadm-control-plane capd)

log() { echo "local-mgmt: $*" >&2; }
die() {
	log "$*"
	exit 1
}

# port_of <manager index> <0 webhook | 1 health | 2 metrics>
port_of() { echo $((base + 4 + $1 * 4 + $2)); }

running() {
	local pidfile="$dir/run/$1.pid" pid
	[[ -f "$pidfile" ]] || return 1
	pid="$(cat "$pidfile")"
	kill -0 "$pid" 2>/dev/null
}

# wait_until <seconds> <what> <command...> polls the command until it succeeds.
wait_until() {
	local limit=$1 what=$2
	shift 2
	local deadline=$((SECONDS + limit))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			die "$what did not come up within ${limit}s; see $dir/logs"
		fi
		sleep 0.5
	done
}

# launch <name> <command...> starts a process in its own session, logging
# to logs/<name>.log, and records its pid.
launch() {
	local name=$1
	shift
	setsid "$@" >"$dir/logs/$name.log" 2>&1 </dev/null &
	echo $! >"$dir/run/$name.pid"
}

pki() {
	local p="$dir/pki"
	[[ -f "$p/admin.crt" ]] && return
	mkdir -p "$p"
	(
		umask 077
		cd "$p"
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=magnetite-local-mgmt-ca" \
			-keyout ca.key -out ca.crt 2>/dev/null
		serving() { # serving <name> <CN>
			openssl req -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
			openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -out "$1.crt" \
				-extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n') 2>/dev/null
		}
		serving apiserver kube-apiserver
		serving webhook cluster-api-webhooks
		openssl req -newkey rsa:2048 -nodes -subj "/CN=magnetite-admin/O=system:masters" \
			-keyout admin.key -out admin.csr 2>/dev/null
		openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -out admin.crt \
			-extfile <(printf 'extendedKeyUsage=clientAuth\n') 2>/dev/null
		openssl genrsa -out sa.key 2048 2>/dev/null
		openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
		rm -f ./*.csr ca.srl
	)
}

write_kubeconfig() {
	local p="$dir/pki" tmp="$dir/kubeconfig.tmp"
	(
		umask 077
		cat >"$tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: magnetite-local-mgmt
  cluster:
    server: https://127.0.0.1:$apiserver_port
    certificate-authority-data: $(base64 -w0 "$p/ca.crt")
users:
- name: magnetite-admin
  user:
    client-certificate-data: $(base64 -w0 "$p/admin.crt")
    client-key-data: $(base64 -w0 "$p/admin.key")
contexts:
- name: magnetite-local-mgmt
  context: {cluster: magnetite-local-mgmt, user: magnetite-admin}
current-context: magnetite-local-mgmt
EOF
	)
	chmod 0600 "$tmp"
	mv -f "$tmp" "$dir/kubeconfig"
}

# webhook_manifest <manifest> <manager> <port> rewrites Cluster API's webhook
# configuration so the API server calls the manager on loopback: each
# service reference becomes a URL, with the local CA as bundle, and the
# configurations get the manager's name (upstream names collide).
webhook_manifest() {
	local ca
	ca="$(base64 -w0 "$dir/pki/ca.crt")"
	awk -v port="$3" -v ca="$ca" -v prefix="$2-" '
		/^  name: / && !inhooks { sub(/name: /, "name: " prefix); print; next }
		/^webhooks:/ { inhooks = 1 }
		/^---/ { inhooks = 0 }
		/^    service:$/ { svc = 1; next }
		svc && /^      (name|namespace): / { next }
		svc && /^      path: / {
			path = $2
			print "    url: https://127.0.0.1:" port path
			print "    caBundle: " ca
			svc = 0
			next
		}
		{ print }
	' "$1"
}

kubectl_() { "$k8s_dir/kubectl" --kubeconfig "$dir/kubeconfig" "$@"; }

start() {
	local all=1 i
	for m in etcd kube-apiserver "${managers[@]}"; do running "$m" || all=""; done
	if [[ -n "$all" ]]; then
		log "already running; kubeconfig: $dir/kubeconfig"
		return
	fi
	stop_all quiet
	command -v openssl >/dev/null || die "openssl is needed to make certificates"
	command -v flock >/dev/null || die "flock (util-linux) is needed"
	local dirs
	dirs="$(bash "$repo/hack/build-testbin.sh" --only mgmt)"
	k8s_dir="$(grep '/k8s-' <<<"$dirs")"
	capi_dir="$(grep '/capi-' <<<"$dirs")"
	mkdir -p "$dir/logs" "$dir/run"
	chmod 0700 "$dir"
	pki
	write_kubeconfig
	local p="$dir/pki"

	launch etcd "$k8s_dir/etcd" --name=local-mgmt --data-dir="$dir/etcd" \
		--listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
		--listen-peer-urls="http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer_port" \
		--initial-cluster="local-mgmt=http://127.0.0.1:$etcd_peer_port" --unsafe-no-fsync
	wait_until 60 etcd curl -sf "http://127.0.0.1:$etcd_port/health"

	launch kube-apiserver "$k8s_dir/kube-apiserver" --etcd-servers="http://127.0.0.1:$etcd_port" \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$apiserver_port" \
		--cert-dir="$dir/apiserver" --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" \
		--client-ca-file="$p/ca.crt" --authorization-mode=RBAC \
		--service-account-issuer="https://127.0.0.1:$apiserver_port" --service-account-key-file="$p/sa.pub" \
		--service-account-signing-key-file="$p/sa.key" --service-cluster-ip-range=10.0.0.0/24 \
		--disable-admission-plugins=ServiceAccount --allow-privileged=true
	wait_until 120 kube-apiserver kubectl_ get --raw /readyz

	log "installing Cluster API's CRDs"
	kubectl_ apply --server-side --force-conflicts -f "$capi_dir/crds/core" >/dev/null
	for prov in kubeadm-bootstrap kubeadm-control-plane capd; do
		kubectl_ apply --server-side --force-conflicts -f "$capi_dir/crds/$prov" >/dev/null
		# Cluster API reads which version of a provider's CRD implements its
		# contract from this label.
		for f in "$capi_dir/crds/$prov"/*.yaml; do
			kubectl_ label --overwrite -f "$f" cluster.x-k8s.io/v1beta2=v1beta2 >/dev/null
		done
	done
	kubectl_ wait --for condition=established --timeout=120s crd --all >/dev/null

	mkdir -p "$dir/webhook-certs"
	cp "$p/webhook.crt" "$dir/webhook-certs/tls.crt"
	cp "$p/webhook.key" "$dir/webhook-certs/tls.key"
	for i in "${!managers[@]}"; do
		local m=${managers[$i]} wport hport mport
		wport=$(port_of "$i" 0)
		hport=$(port_of "$i" 1)
		mport=$(port_of "$i" 2)
		# shellcheck disable=SC2054 # the commas are inside --feature-gates
		local args=(--kubeconfig="$dir/kubeconfig" --leader-elect=false
			--webhook-cert-dir="$dir/webhook-certs" --webhook-port="$wport"
			--health-addr="127.0.0.1:$hport" --diagnostics-address="127.0.0.1:$mport" --insecure-diagnostics
			--feature-gates=ClusterTopology=true,KubeadmBootstrapFormatIgnition=true)
		if [[ $m == capd-manager ]]; then
			# The machine-wide lock is taken here on descriptor 9, which CAPD
			# inherits: it holds the lock for as long as it runs, with no gap
			# between this check and its start for another CAPD to slip into.
			exec 9>"$capd_lock"
			flock -w "$capd_wait" 9 || die "another CAPD runs on this machine (a test or another local-mgmt); lock $capd_lock"
			launch "$m" env POD_IP=127.0.0.1 "$capi_dir/$m" "${args[@]}"
			exec 9>&-
		else
			launch "$m" "$capi_dir/$m" "${args[@]}"
		fi
		webhook_manifest "$capi_dir/webhooks/${webhooks[$i]}.yaml" "$m" "$wport" |
			kubectl_ apply --server-side --force-conflicts -f - >/dev/null
	done
	for i in "${!managers[@]}"; do
		wait_until 180 "${managers[$i]}" curl -sf "http://127.0.0.1:$(port_of "$i" 1)/readyz"
		wait_until 60 "${managers[$i]} webhooks" curl -sk -o /dev/null "https://127.0.0.1:$(port_of "$i" 0)/"
	done
	log "management plane up; kubeconfig: $dir/kubeconfig"
	log "for Magnetite: [management] kubeconfig = $dir/kubeconfig"
}

# stop_all [quiet] ends the processes in reverse start order: SIGTERM, then
# SIGKILL after 15 seconds.
stop_all() {
	local names=(etcd kube-apiserver "${managers[@]}") i name pid
	for ((i = ${#names[@]} - 1; i >= 0; i--)); do
		name=${names[$i]}
		[[ -f "$dir/run/$name.pid" ]] || continue
		pid="$(cat "$dir/run/$name.pid")"
		if kill -0 "$pid" 2>/dev/null; then
			[[ "${1:-}" == quiet ]] || log "stopping $name ($pid)"
			kill -TERM "$pid" 2>/dev/null || true
			local deadline=$((SECONDS + 15))
			while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
			kill -KILL "$pid" 2>/dev/null || true
		fi
		rm -f "$dir/run/$name.pid"
	done
}

status() {
	local rc=0
	for m in etcd kube-apiserver "${managers[@]}"; do
		if running "$m"; then
			echo "$m: running (pid $(cat "$dir/run/$m.pid"))"
		else
			echo "$m: stopped"
			rc=3
		fi
	done
	[[ -f "$dir/kubeconfig" ]] && echo "kubeconfig: $dir/kubeconfig"
	return $rc
}

case "${1:-start}" in
start) start ;;
stop) stop_all ;;
status) status ;;
*)
	echo "usage: $0 [start|stop|status]" >&2
	exit 2
	;;
esac
