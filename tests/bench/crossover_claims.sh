#!/usr/bin/env bash
# The Crossover-SGD paper's two claims, measured with gossipctl simulate
# (issue 54): every worker a real replica (gossipd run's members in one
# process), times from the time model at BANDWIDTH.
#   scaling:     node scalability. N = NS workers at a fixed per-worker
#                batch BATCH, EPOCHS epochs: Crossover-SGD flat and
#                hierarchical (groups of 8 workers, --groups N/8), SGP and
#                AllReduce-SGD, the same learning rate LR for all.
#   large-batch: N = LB_WORKERS workers, per-worker batch BATCH x K for K in
#                KS, the trainer's large-batch recipe as compare --preset
#                large-batch runs it (learning rate x K, LARS with eta 0.02,
#                2 epochs of linear warm-up) for every protocol.
#   hosts:       the scaling runs' modelled rounds with PER_HOST workers on
#                each host (--workers-per-host; hierarchical: a group a
#                host), time only.
# Prints one markdown row per protocol and configuration: final mean test
# accuracy, the averaged model's, rounds, modelled round ms and training
# time to the end.
# Usage: crossover_claims.sh [scaling|hosts|large-batch|all] (env: NS, EPOCHS, PER_HOST,
#   BATCH, LR, KS, LB_WORKERS, BANDWIDTH, TEST_LIMIT, OUT)
set -euo pipefail
cd "$(dirname "$0")/../.."
WHAT=${1:-all}
NS=${NS:-"16 32 64 128 256"}; EPOCHS=${EPOCHS:-10}; BATCH=${BATCH:-64}; LR=${LR:-0.05}
KS=${KS:-"1 2 4 8 16"}; PER_HOST=${PER_HOST:-8}; LB_WORKERS=${LB_WORKERS:-16}; BANDWIDTH=${BANDWIDTH:-100mbit}
TEST_LIMIT=${TEST_LIMIT:-0}; OUT=${OUT:-$(mktemp -d)}
cmake --build build -j2 --target gossipctl >/dev/null
mkdir -p "$OUT"
# "| config | algo | final | averaged | rounds | round ms | seconds |" per result of a summary.json
rows() {
  python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))
for r in s["results"]:
    rps = r.get("rounds_per_second", 0)
    print("| %s | %s | %.4f | %.4f | %d | %.1f | %.1f |" % (sys.argv[2], r["algo"] + sys.argv[3],
          r.get("final_mean_accuracy", 0), r.get("averaged_model_accuracy", 0), int(r.get("rounds", 0)),
          1000 / rps if rps else 0, r.get("wall_seconds", 0)))' "$@"
}
sim() {  # DIR, then simulate's flags
  local dir=$1; shift
  ./build/bin/gossipctl simulate --bandwidth "$BANDWIDTH" --epochs "$EPOCHS" --test-limit "$TEST_LIMIT" \
    --out "$dir" "$@" > "$dir.log" 2>&1 || { echo "| $dir | failed: $(tail -1 "$dir.log") |"; return 1; }
}
echo "| configuration | protocol | final mean acc | averaged model acc | rounds | modelled round ms | modelled s |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
if [ "$WHAT" = scaling ] || [ "$WHAT" = all ]; then
  for n in $NS; do
    sim "$OUT/n$n" --workers "$n" --batch "$BATCH" --lr "$LR" --algos crossover,sgp,allreduce &&
      rows "$OUT/n$n/summary.json" "N=$n" ""
    sim "$OUT/n$n-h" --workers "$n" --batch "$BATCH" --lr "$LR" --algos crossover --groups $((n / 8)) &&
      rows "$OUT/n$n-h/summary.json" "N=$n" " hierarchical ($((n / 8)) groups)"
  done
fi
if [ "$WHAT" = hosts ] || [ "$WHAT" = all ]; then
  # The same rounds with PER_HOST workers a host (the paper's groups each on
  # one): time only, the accuracies are the scaling runs' (nothing skipped).
  for n in $NS; do
    sim "$OUT/n$n-hosts" --no-train --workers "$n" --batch "$BATCH" --workers-per-host "$PER_HOST" \
      --algos crossover,sgp,allreduce && rows "$OUT/n$n-hosts/summary.json" "N=$n, $PER_HOST a host" ""
    sim "$OUT/n$n-hosts-h" --no-train --workers "$n" --batch "$BATCH" --workers-per-host "$PER_HOST" \
      --algos crossover --groups $((n / PER_HOST)) &&
      rows "$OUT/n$n-hosts-h/summary.json" "N=$n, $PER_HOST a host" " hierarchical ($((n / PER_HOST)) groups)"
  done
fi
if [ "$WHAT" = large-batch ] || [ "$WHAT" = all ]; then
  for k in $KS; do
    sim "$OUT/k$k" --workers "$LB_WORKERS" --batch $((BATCH * k)) --lr "$(echo "$LR * $k" | bc -l)" \
      --optimizer lars --lars-eta 0.02 --warmup-epochs 2 --algos crossover,sgp,allreduce &&
      rows "$OUT/k$k/summary.json" "batch x$k ($((BATCH * k))/worker)" ""
  done
fi
echo "(runs in $OUT)"
