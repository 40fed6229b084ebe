#!/usr/bin/env bash
# Installs the Debian packages uringmq builds and tests with, if any is missing (idempotent, quiet
# when everything is present). Runs as root on Debian 12; with sudo otherwise.
#   build/test: compilers, CMake, liburing, jemalloc, ISA-L, GoogleTest, Google Benchmark,
#               libsystemd (sd_notify), CLI11 (uringmq-ctl's command line), OpenSSL (TLS on
#               the remoting ports; the openssl tool makes the tests' certificates), clang
#               (libFuzzer targets), clang-format (tools/lint.sh); build-essential brings
#               dpkg-dev, whose dpkg-shlibdeps the .deb (cpack) needs
#   interop:    Node.js >= 18 with npm (tests/interop runs the npm client ali-ons)
#   grpc:       protoc (protobuf-compiler; libprotobuf-dev has the well-known types' .proto and
#               the runtime the generated code links), with which the build generates
#               net/grpc/proto's code and tests/grpc checks it against the official client;
#               nghttp2 (libnghttp2-dev), the gRPC endpoint's HTTP/2; libgrpc++-dev and
#               protobuf-compiler-grpc (grpc++ and its protoc plugin: bench/grpc_stack's
#               comparison server and load generator, built only where these are found)
#   benchmarks: fio, gnuplot, redis-server and beanstalkd (peers the broker is compared with)
set -euo pipefail

packages=(build-essential cmake pkg-config liburing-dev libjemalloc-dev libisal-dev
          libgtest-dev libbenchmark-dev libsystemd-dev libcli11-dev libssl-dev openssl clang
          clang-format fio protobuf-compiler libprotobuf-dev
          libnghttp2-dev libgrpc++-dev protobuf-compiler-grpc
          gnuplot-nox python3 redis-server beanstalkd)

# Node.js: keep an existing node >= 18 (e.g. NodeSource's, which bundles npm); Debian's nodejs
# and npm only when node is missing or older.
node_major=0
if command -v node >/dev/null 2>&1; then
  node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
fi
if [ "$node_major" -lt 18 ]; then
  packages+=(nodejs npm)
elif ! command -v npm >/dev/null 2>&1; then
  packages+=(npm)
fi

# The RocketMQ Java distribution beside the repository (tests/interop/java): a JDK and the
# Debian jars its class path names, only where that distribution is present.
if "$(dirname "$0")/find-rocketmq-java.sh" >/dev/null; then
  packages+=(openjdk-17-jdk-headless libnetty-java libcommons-lang3-java libcommons-validator-java
             libslf4j-java libguava-java libcommons-cli-java liblogback-java libjna-java
             libcommons-codec-java libcommons-collections3-java libyaml-snake-java)
fi

# The replication fault campaign (tests/faults/campaign*): nft for its partitions and packet
# loss inside network namespaces, ip (iproute2) for the namespaces and their veth pairs.
packages+=(nftables iproute2)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Benchmark peers are tools, not services: do not let their packages start daemons here.
policy_added=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod +x /usr/sbin/policy-rc.d
  policy_added=1
fi
trap '[ $policy_added -eq 0 ] || $sudo rm -f /usr/sbin/policy-rc.d' EXIT
if ! $sudo apt-get install -y --no-install-recommends "${missing[@]}"; then
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
