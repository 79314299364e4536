#!/usr/bin/env bash
# Trainer speed: a full MLP training step vs raw cblas_sgemm on the same GEMM
# shapes, measured in the same run, with 1 and 2 OpenBLAS threads.
# Target: ratio >= 0.75 with one thread.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
cmake --build "$build" -j2 --target gossipctl >/dev/null
"$build/bin/gossipctl" bench trainer --model mlp --batch 256 --threads 1,2 --steps 50 --trials 9 |
  tee /dev/stderr |
  awk -F'"ratio":' '/"threads":1,/ { split($2, a, "}"); r = a[1] + 0;
       printf "one-thread ratio %.3f: %s\n", r, (r >= 0.75 ? "meets the 0.75 target" : "BELOW the 0.75 target");
       bad = r < 0.75 } END { exit bad }'
