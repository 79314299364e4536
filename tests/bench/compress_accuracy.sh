#!/usr/bin/env bash
# --compress measured (issue 55), with gossipctl simulate: every worker a
# real replica (gossipd run's members in one process, held bit for bit to
# compare's processes by tests/daemon/simulate_test.cc), the bytes counted
# as the daemon counts them, times from the time model.
#   accuracy: the quickstart's setup (4 workers, MLP, batch 64, lr 0.05,
#             EPOCHS epochs) for SEEDS, every codec and, for the settings
#             in LOCAL (codec:H[:M]), H local steps between exchanges (and
#             an outer step of momentum M: crossover and allreduce alone);
#             Crossover-SGD flat and hierarchical (2 groups), SGP and OSGP
#             (ALGOS, empty for none; HIER=0 leaves out the hierarchical runs), and
#             AllReduce-SGD (its collectives in the codec; local SGD at H > 1):
#             the median final mean test accuracy, its difference from
#             float32's (points), and the bytes per worker and round against
#             float32's (the hierarchy's group averages included).
#   groups:   compute groups (groups:2, 4 workers, the accuracy setup) in
#             every codec, with gossipctl compare (4 processes on loopback:
#             simulate has no time model for them, and their groups run
#             asynchronously, so a run is not repeatable bit for bit).
#   time:     N8 workers on BANDWIDTH links (modelled), the modelled training
#             seconds to TARGET of every codec and protocol, AllReduce-SGD in
#             float32 beside them (the time model's prediction; the network
#             namespaces measure it with compare --netns).
# Usage: compress_accuracy.sh [accuracy|groups|time|all] (env: SEEDS, EPOCHS, CODECS,
#   LOCAL, ALGOS, HIER, N8, BANDWIDTH, TARGET, OUT)
set -euo pipefail
cd "$(dirname "$0")/../.."
WHAT=${1:-all}
SEEDS=${SEEDS:-"1 2 3"}; EPOCHS=${EPOCHS:-10}; CODECS=${CODECS:-"none fp16 bf16 int8"}
LOCAL=${LOCAL:-"none:4 int8:4 none:4:0.5 none:4:0.9"}; ALGOS=${ALGOS-crossover,sgp,osgp}; HIER=${HIER:-1}
settings=()  # codec:H
for c in $CODECS; do settings+=("$c:1"); done
for l in $LOCAL; do settings+=("$l"); done
N8=${N8:-8}; BANDWIDTH=${BANDWIDTH:-100mbit}; TARGET=${TARGET:-0.85}; OUT=${OUT:-$(mktemp -d)}
cmake --build build -j2 --target gossipctl >/dev/null
mkdir -p "$OUT"
sim() {  # DIR, then simulate's flags
  local dir=$1; shift
  ./build/bin/gossipctl simulate --out "$dir" "$@" > "$dir.log" 2>&1 ||
    { echo "failed: $dir: $(tail -1 "$dir.log")" >&2; return 1; }
}
table() {  # every run made so far, one row per protocol and setting
  python3 - "$OUT" "$SEEDS" "${settings[*]}" <<'PY'
import json, os, statistics, sys
out, seeds, codecs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
acc, byt = {}, {}
for c in codecs:
    for s in seeds:
        for suffix, tag in (("", ""), ("-h", " hierarchical"), ("-g", "")):
            if not os.path.exists(f"{out}/acc-{c.replace(':', '-')}-s{s}{suffix}"): continue
            for r in json.load(open(f"{out}/acc-{c.replace(':', '-')}-s{s}{suffix}/summary.json"))["results"]:
                key = (c, r["algo"] + tag)
                acc.setdefault(key, []).append(r["final_mean_accuracy"])
                byt.setdefault(key, []).append(r["bytes_per_worker_per_round"])
print("| protocol | codec:H | median final mean acc (seeds) | vs float32 (points) | bytes/worker/round | vs float32 |")
print("| --- | --- | --- | --- | --- | --- |")
for algo in sorted({k[1] for k in acc}):
    base_acc = statistics.median(acc[("none:1", algo)]) if ("none:1", algo) in acc else None
    base_b = statistics.median(byt[("none:1", algo)]) if ("none:1", algo) in byt else None
    for c in codecs:
        if (c, algo) not in acc: continue
        a, b = statistics.median(acc[(c, algo)]), statistics.median(byt[(c, algo)])
        d = "%+.2f" % (100 * (a - base_acc)) if base_acc is not None else "-"
        r = "%.3fx" % (b / base_b) if base_b else "-"
        print(f"| {algo} | {c} | {a:.4f} ({' '.join('%.4f' % x for x in acc[(c, algo)])}) | {d} | {b:,.0f} | {r} |")
PY
}
common=(--workers 4 --model mlp --epochs "$EPOCHS" --batch 64 --lr 0.05)
if [ "$WHAT" = accuracy ] || [ "$WHAT" = all ]; then
  for seed in $SEEDS; do
    for set in "${settings[@]}"; do
      IFS=: read -r c h m <<< "$set"; m=${m:-0}
      f=(--compress "$c" --local-steps "$h" --outer-momentum "$m")
      algos=$ALGOS,allreduce
      [ "$m" = 0 ] || algos=crossover,allreduce
      sim "$OUT/acc-${set//:/-}-s$seed" "${common[@]}" --seed "$seed" "${f[@]}" --algos "${algos#,}"
      [ "$HIER" = 0 ] ||
        sim "$OUT/acc-${set//:/-}-s$seed-h" "${common[@]}" --seed "$seed" "${f[@]}" --algos crossover --groups 2
    done
  done
fi
if [ "$WHAT" = groups ] || [ "$WHAT" = all ]; then
  for seed in $SEEDS; do
    for c in $CODECS; do
      dir="$OUT/acc-$c-1-s$seed-g"
      ./build/bin/gossipctl compare --out "$dir" "${common[@]}" --seed "$seed" --compress "$c" --algos groups:2 \
        > "$dir.log" 2>&1 || { echo "failed: $dir: $(tail -1 "$dir.log")" >&2; exit 1; }
    done
  done
fi
[ "$WHAT" = time ] || table
if [ "$WHAT" = time ] || [ "$WHAT" = all ]; then
  sim "$OUT/time-allreduce" --workers "$N8" --bandwidth "$BANDWIDTH" --target "$TARGET" --epochs "$EPOCHS" \
    --algos allreduce
  for c in $CODECS; do
    sim "$OUT/time-$c" --workers "$N8" --bandwidth "$BANDWIDTH" --target "$TARGET" --epochs "$EPOCHS" \
      --compress "$c" --algos crossover,sgp
  done
  python3 - "$OUT" "$CODECS" "$TARGET" <<'PY'
import json, sys
out, codecs, target = sys.argv[1], sys.argv[2].split(), sys.argv[3]
print(f"| protocol | codec | modelled s to {target} | final mean acc | modelled round ms | bytes/worker/round |")
print("| --- | --- | --- | --- | --- | --- |")
for name, c in [("time-allreduce", "none")] + [(f"time-{c}", c) for c in codecs]:
    for r in json.load(open(f"{out}/{name}/summary.json"))["results"]:
        t = r["train_seconds_to_target"]
        print("| %s | %s | %s | %.4f | %.1f | %s |" % (r["algo"], c, "%.1f" % t if t >= 0 else "not reached",
              r["final_mean_accuracy"], 1000 / r["rounds_per_second"], f'{r["bytes_per_worker_per_round"]:,.0f}'))
PY
fi
echo "(runs in $OUT)"
