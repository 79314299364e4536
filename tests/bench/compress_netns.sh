#!/usr/bin/env bash
# Time to accuracy where the links are the bottleneck (issue 55): N
# network-namespace hosts (gossipctl compare --netns, root) on RATE links,
# the MLP, time to TARGET test accuracy (the workers' mean, evaluated
# EVALS times an epoch). Alternates, REPS times, a compare of the
# protocols in ALGOS in float32 with one of them in each compressed or
# local-step setting in SETTINGS (codec:H), so every figure has its float32
# references from the runs beside it. Prints one row per run and protocol,
# then the medians and the ratios (against float32 AllReduce-SGD and the
# protocol's own float32).
# Usage: compress_netns.sh (env: N, RATE, EPOCHS, EVALS, TARGET, REPS,
#   SETTINGS, ALGOS, OUT)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-8}; RATE=${RATE:-100mbit}; EPOCHS=${EPOCHS:-3}; EVALS=${EVALS:-4}; TARGET=${TARGET:-0.85}
REPS=${REPS:-3}; SETTINGS=${SETTINGS:-"int8:1 fp16:1 int8:4"}; ALGOS=${ALGOS:-crossover,sgp,allreduce}
OUT=${OUT:-$(mktemp -d)}
cmake --build build -j2 --target gossipd gossipctl >/dev/null
mkdir -p "$OUT"
cmp() {  # DIR, then compare's flags
  local dir=$1; shift
  ./build/bin/gossipctl compare --netns --bandwidth "$RATE" --workers "$N" --epochs "$EPOCHS" \
    --evals-per-epoch "$EVALS" --target "$TARGET" --out "$dir" "$@" > "$dir.log" 2>&1 ||
    { echo "failed: $dir: $(tail -1 "$dir.log")" >&2; return 1; }
}
for rep in $(seq "$REPS"); do
  cmp "$OUT/f32-r$rep" --algos "$ALGOS"
  for set in $SETTINGS; do
    c=${set%:*}; h=${set#*:}
    cmp "$OUT/$c-$h-r$rep" --algos "$ALGOS" --compress "$c" --local-steps "$h"
  done
done
python3 - "$OUT" "$REPS" "$SETTINGS" "$TARGET" <<'PY'
import json, statistics, sys
out, reps, settings, target = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4]
times = {}
print(f"| run | protocol | setting | s to {target} | final mean acc | round ms | bytes/worker/round |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for rep in range(1, reps + 1):
    for name, setting in [("f32", "none:1")] + [(s.replace(":", "-"), s) for s in settings]:
        for r in json.load(open(f"{out}/{name}-r{rep}/summary.json"))["results"]:
            t = r["seconds_to_target"]
            times.setdefault((r["algo"], setting), []).append(t if t >= 0 else float("inf"))
            print("| %d | %s | %s | %s | %.4f | %.1f | %s |" % (rep, r["algo"], setting,
                  "%.1f" % t if t >= 0 else "not reached", r["final_mean_accuracy"],
                  1000 / r["rounds_per_second"], f'{r["bytes_per_worker_per_round"]:,.0f}'))
med = {k: statistics.median(v) for k, v in times.items()}
ar = med.get(("allreduce", "none:1"))
print(f"\nmedians of {reps}:")
for algo in sorted({a for a, _ in med}):
    own = med[(algo, "none:1")]
    print(f"{algo} float32: {own:.1f} s")
    for s in settings:
        t = med.get((algo, s))
        if t is None: continue
        vs_ar = f"{ar / t:.2f}x faster than allreduce float32, " if ar else ""
        print(f"{algo} {s}: {t:.1f} s, {vs_ar}{own / t:.2f}x than {algo} float32")
PY
echo "(runs in $OUT)"
