#!/usr/bin/env bash
# Installs what Strata needs to build and test on Debian 12, and nothing that is already there.
# Idempotent: safe to run on every build. Needs root (or sudo) only when something is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES=(
  # build
  meson ninja-build pkg-config g++ clang lld libclang-rt-14-dev clang-format-14 ccache python3
  # libraries
  libboost-dev librocksdb-dev libprotobuf-dev libprotoc-dev protobuf-compiler prometheus-cpp-dev
  libgtest-dev libgmock-dev librdkafka-dev libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev libssl-dev
  libre2-dev  # JSON Schema patterns checked on produced values (linear time, no recursion)
  libjemalloc-dev  # the broker's allocator (docs/benchmarks.md, "jemalloc")
  # cluster coordination (tests start their own etcd on loopback)
  etcd-server etcd-client  # etcdctl: the harness self-test checks its etcd with it
  # real clients used by the integration tests
  kcat python3-kafka python3-confluent-kafka python3-lz4 python3-snappy python3-zstandard
  # confluent-kafka's Schema Registry client and serializers (its Debian package lacks them)
  python3-requests python3-jsonschema python3-protobuf
  # the Python client package tools/python (test_python_client.py: venv install, lint)
  python3-venv python3-setuptools python3-wheel python3-pyflakes
  # reference servers and load generators of tools/bench.sh (lookup, registry)
  redis-server redis-tools wrk
)
# Node.js may come from another source (nodesource bundles npm and conflicts with Debian's npm):
# only ask Debian for it when the commands are absent.
command -v node >/dev/null 2>&1 || DEB_PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || DEB_PACKAGES+=(npm)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq || true
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages for the KafkaJS tests, pinned in test/integration/js/package.json.
if [ ! -d test/integration/js/node_modules/kafkajs ] ||
  [ ! -d test/integration/js/node_modules/@kafkajs/confluent-schema-registry ]; then
  echo "setup: installing npm packages for test/integration/js"
  (cd test/integration/js && npm install --no-audit --no-fund --loglevel=error)
fi
