#!/usr/bin/env bash
# Installs the Debian packages listed in hack/ci-packages.txt that are not
# installed yet. Needs root (CI runs as root); does nothing when all are present.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t wanted < <(grep -v '^\s*#' "$here/ci-packages.txt" | sed '/^\s*$/d')
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
# Keep daemons from starting on install; tests start what they need on loopback.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# A large install was seen to fail once on vanished temporary files; retry once.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" || \
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
