#!/usr/bin/env bash
# Installs the Debian packages gossipd needs to build, test and run.
# Idempotent: installs only what is missing; runs `apt-get update` once.
set -euo pipefail

packages=(
  build-essential cmake pkg-config lld
  libzmq3-dev cppzmq-dev libsodium-dev
  libprotobuf-dev protobuf-compiler
  libasio-dev libspdlog-dev libfmt-dev
  libopenblas-dev libgtest-dev libgmock-dev libcli11-dev zlib1g-dev
  libtrilinos-zoltan-dev libopenmpi-dev
  dataset-fashion-mnist
  gnuplot-nox iproute2
  python3-dev pybind11-dev python3-numpy python3-pytest python3-torch
)
# Extra groups, asked for by flag: --bench adds the OpenMPI and GraphBLAS references,
# --fuzz clang and its libFuzzer runtime (tests/fuzz/run.sh), --format
# clang-format (tests/format.sh), --soak curl (tests/soak/soak.sh reads
# /status with it), --deploy the engines deploy/ is tested under
# (prometheus and promtool, systemd-analyze, pip in a virtual environment,
# headless chromium for the status page, Slurm's controller, nodes and
# client with munge).
for arg in "$@"; do
  case "$arg" in
    --bench) packages+=(openmpi-bin libopenmpi-dev libgraphblas-dev) ;;
    --fuzz) packages+=(clang libclang-rt-14-dev) ;;
    --format) packages+=(clang-format) ;;
    --soak) packages+=(curl) ;;
    --deploy) packages+=(prometheus systemd python3-venv python3-pip chromium slurmctld slurmd slurm-client munge) ;;
    *) echo "install-deps.sh: unknown option '$arg' (known: --bench, --fuzz, --format, --soak, --deploy)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: missing packages: ${missing[*]}" >&2
  echo "install-deps.sh: run as root:  sudo sh -c '$cmd'" >&2
  exit 1
fi
echo "install-deps.sh: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
