#!/usr/bin/env bash
# The main job on the embedded default: installs what is missing, builds, and
# compares Crossover-SGD, SGP and AllReduce-SGD on a local cluster of 4
# gossipd workers training the MLP on Fashion-MNIST (a few minutes on 2
# cores), then prints where the report is.
# Extra arguments go to `gossipctl compare`, e.g. ./deploy/quickstart.sh --epochs 8
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target gossipd gossipctl
out=out/quickstart/$(date +%Y%m%d-%H%M%S)
./build/bin/gossipctl compare --workers 4 --algos crossover,sgp,allreduce --model mlp --epochs 10 --batch 64 \
  --lr 0.05 --out "$out" "$@"
echo "quickstart: open $out/report.html (or read $out/report.md)"
