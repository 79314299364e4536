#!/usr/bin/env bash
# Accuracy targets of the local trainer on the full Fashion-MNIST split:
#   mlp, 15 epochs: test accuracy >= 0.885;  cnn, 12 epochs: >= 0.91.
# Takes ~1 min (mlp) and ~15 min (cnn) on one core. Usage: accuracy.sh [mlp|cnn|all]
set -euo pipefail
cd "$(dirname "$0")/../.."
which=${1:-all}
cmake --build build -j2 --target gossipd >/dev/null
out=out/bench
mkdir -p "$out"
status=0
check() {  # model epochs target
  rm -f "$out/$1.jsonl"
  ./build/bin/gossipd train --model "$1" --epochs "$2" --threads 1 --metrics-out "$out/$1.jsonl"
  acc=$(tail -n 1 "$out/$1.jsonl" | sed 's/.*"test_accuracy":\([0-9.]*\).*/\1/')
  if awk -v a="$acc" -v t="$3" 'BEGIN { exit !(a >= t) }'; then
    echo "$1: final test accuracy $acc (target >= $3): met"
  else
    echo "$1: final test accuracy $acc (target >= $3): NOT met"; status=1
  fi
}
[ "$which" = cnn ] || check mlp 15 0.885
[ "$which" = mlp ] || check cnn 12 0.91
exit $status
