#!/usr/bin/env bash
# The row-parallel inference against the serial command as a user runs it:
# `gossipctl sparse infer DIR --inputs K` alone on the machine (no partner
# process waiting beside it), alternated PAIRS times with `gossipctl bench
# sparse DIR --inputs K --procs P` (REPS timed runs after one warm-up; its
# best). Both figures are the inference's own seconds, files loaded (each
# command prints them). Prints a JSON line per pair, then the medians and
# bests of both and the ratios: best over best, median over median.
#
#   tests/bench/sparse_alone.sh DIR [BUILD_DIR]     (default: ./build)
# DIR: `gossipctl sparse generate --neurons 4096 --layers 120 --out DIR`.
# Env: PAIRS=3  INPUTS=6000  PROCS=2  REPS=3  PARTITION=hypergraph
set -euo pipefail
export LC_ALL=C OPENBLAS_NUM_THREADS=1
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${1:?usage: tests/bench/sparse_alone.sh DIR [BUILD_DIR] (DIR: the --out of gossipctl sparse generate)}"
build=$(realpath -m "${2:-$root/build}")
pairs="${PAIRS:-3}"
inputs="${INPUTS:-6000}"
procs="${PROCS:-2}"
reps="${REPS:-3}"
partition="${PARTITION:-hypergraph}"

[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target gossipctl >/dev/null
gossipctl="$build/bin/gossipctl"

serial=() parallel=()
for ((i = 1; i <= pairs; i++)); do
  # "gossipctl sparse infer: ..., 6000 inputs, 9.428 s, ..."
  said=$("$gossipctl" sparse infer "$dir" --inputs "$inputs" 2>&1) || { echo "$said" >&2; exit 1; }
  s=$(sed -nE 's/.* inputs, ([0-9.]+) s,.*/\1/p' <<<"$said")
  [ -n "$s" ] || { echo "sparse_alone.sh: gossipctl sparse infer printed no time: $said" >&2; exit 1; }
  line=$("$gossipctl" bench sparse "$dir" --inputs "$inputs" --procs "$procs" --partition "$partition" \
    --reps "$reps" --warmup 1)
  [[ "$line" == *'"exact":true'* ]] || { echo "sparse_alone.sh: not exact: $line" >&2; exit 1; }
  p=$(sed -E 's/.*"min_seconds":([0-9.]+).*/\1/' <<<"$line")
  serial+=("$s")
  parallel+=("$p")
  echo "{\"pair\":$i,\"serial_alone_seconds\":$s,\"procs\":$procs,\"parallel_best_seconds\":$p}"
done

python3 - "${serial[*]}" "${parallel[*]}" "$procs" <<'PY'
import statistics, sys
s = [float(x) for x in sys.argv[1].split()]
p = [float(x) for x in sys.argv[2].split()]
print(f"serial alone: median {statistics.median(s):.3f} s, best {min(s):.3f}; "
      f"P = {sys.argv[3]}: median {statistics.median(p):.3f} s, best {min(p):.3f}; "
      f"speed-up best/best {min(s) / min(p):.2f}x, median/median {statistics.median(s) / statistics.median(p):.2f}x")
PY
