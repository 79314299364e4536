#!/usr/bin/env bash
# The main job on the embedded default: installs what is missing, builds, and
# trains the MLP on Fashion-MNIST with one worker, printing progress per epoch.
# (Becomes the local-cluster comparison once that exists.)
# Extra arguments go to `gossipd train`, e.g. ./deploy/quickstart.sh --model cnn
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target gossipd gossipctl
out=out/quickstart
mkdir -p "$out"
rm -f "$out/metrics.jsonl"
./build/bin/gossipd train --model mlp --epochs 15 --threads 1 --metrics-out "$out/metrics.jsonl" "$@"
echo "quickstart: per-epoch metrics in $out/metrics.jsonl"
