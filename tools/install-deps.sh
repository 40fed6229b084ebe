#!/usr/bin/env bash
# Installs the Debian packages uringmq builds and tests with, if any is missing (idempotent).
# Runs as root on Debian 12; with sudo otherwise.
set -euo pipefail

packages=(build-essential cmake pkg-config liburing-dev libjemalloc-dev libisal-dev
          libgtest-dev libbenchmark-dev fio gnuplot-nox python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y --no-install-recommends "${missing[@]}"; then
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
