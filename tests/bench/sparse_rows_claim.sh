#!/usr/bin/env bash
# Issue 21's claims on the row-parallel inference, measured in one command:
# `gossipctl bench sparse` on the challenge's RadiX-Nets (L = LAYERS,
# INPUTS inputs from Fashion-MNIST), plain and with every layer's neurons
# shuffled (`sparse generate --shuffle 7`), for block, random and
# hypergraph partitions:
#   - P in LOCAL_PROCS as local processes on loopback (one core each);
#   - P in NETNS_PROCS as hosts of their own: one network namespace per
#     process, every link capped at BANDWIDTH (tc tbf; root).
# Each line is one bench run: the serial reference timed in the same run,
# the slowest process's time per inference batch (median of REPS after one
# warm-up; best), edges/s, and `exact` (the reference's categories, the
# planner's bytes per product). Then the paper's claim checked on the
# words: the hypergraph partition never moves more than the best of block
# and random, and on the shuffled networks at P >= 4 (the issue's P = 4 and
# 8) at most half of block's.
# Exits 1 when a run is not exact or the claim fails.
#
#   tests/bench/sparse_rows_claim.sh [BUILD_DIR]      (default: ./build)
# Env: WIDTHS="1024 4096"  LAYERS=120  INPUTS=500  REPS=3  LOCAL_PROCS="2"
#      NETNS_PROCS="4 8"  BANDWIDTH=1gbit  NETS=/tmp/gossipd-sparse-rows-nets
#      OUT=out/bench/sparse_rows_claim-DATE
set -euo pipefail
export LC_ALL=C OPENBLAS_NUM_THREADS=1
root="$(cd "$(dirname "$0")/../.." && pwd)"
build=$(realpath -m "${1:-$root/build}")
widths="${WIDTHS:-1024 4096}"
layers="${LAYERS:-120}"
inputs="${INPUTS:-500}"
reps="${REPS:-3}"
local_procs="${LOCAL_PROCS:-2}"
netns_procs="${NETNS_PROCS:-4 8}"
bandwidth="${BANDWIDTH:-1gbit}"
nets="${NETS:-/tmp/gossipd-sparse-rows-nets}"
out="${OUT:-$root/out/bench/sparse_rows_claim-$(date +%Y%m%d-%H%M%S)}"
[[ -z "$netns_procs" || $(id -u) -eq 0 ]] || { echo "sparse_rows_claim.sh: NETNS_PROCS needs root" >&2; exit 2; }

[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target gossipctl >/dev/null
gossipctl="$build/bin/gossipctl"
mkdir -p "$out" "$nets"
runs="$out/runs.jsonl"
: >"$runs"

# field NAME LINE: a JSON field's value (numbers and plain strings).
field() { sed -E "s/.*\"$1\":\"?([^\",}]*)\"?[,}].*/\1/" <<<"$2"; }

for n in $widths; do
  for shuffle in 0 7; do
    dir="$nets/n$n-s$shuffle"
    if [[ ! -f "$dir/neuron$n/n$n-l$layers.tsv" || ! -f "$dir/sparse-images-$n.tsv" ]]; then
      "$gossipctl" sparse generate --neurons "$n" --layers "$layers" --inputs "$inputs" --shuffle "$shuffle" \
        --out "$dir" --force >/dev/null
    fi
    for p in $local_procs $netns_procs; do
      hosts=()
      [[ " $netns_procs " == *" $p "* ]] && hosts=(--netns --bandwidth "$bandwidth")
      for part in block random hypergraph; do
        line=$("$gossipctl" bench sparse "$dir" --procs "$p" --partition "$part" --reps "$reps" --warmup 1 \
          --timeout-ms 300000 "${hosts[@]}") || true
        [[ $line == \{* ]] || { echo "sparse_rows_claim.sh: bench sparse failed on $dir, P = $p, $part" >&2; exit 1; }
        echo "{\"shuffle\":$shuffle,${line#\{}" | tee -a "$runs"
      done
    done
  done
done

echo
echo "| N | neurons | P | hosts | partition | words per product | imbalance | seconds per batch, median (best) | edges/s | serial seconds (P = 1) | serial edges/s | exact |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
status=0
while read -r l; do
  s=$(field shuffle "$l")
  printf '| %s | %s | %s | %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s |\n' "$(field neurons "$l")" \
    "$([[ $s == 0 ]] && echo as generated || echo shuffled)" "$(field procs "$l")" "$(field hosts "$l")" \
    "$(field partition "$l")" "$(field words_per_product "$l")" "$(field imbalance "$l")" \
    "$(field seconds "$l")" "$(field min_seconds "$l")" "$(field edges_per_s "$l")" \
    "$(field serial_seconds "$l")" "$(field serial_edges_per_s "$l")" "$(field exact "$l")"
  [[ $(field exact "$l") == true ]] || status=1
done <"$runs"

echo
echo "The claim on words per product (hypergraph against the best baseline; on shuffled networks at P >= 4 against half of block's):"
for n in $widths; do
  for shuffle in 0 7; do
    for p in $local_procs $netns_procs; do
      w() { grep "\"shuffle\":$shuffle,.*\"partition\":\"$1\",\"procs\":$p,\"neurons\":$n," "$runs" |
        sed -E 's/.*"words_per_product":([0-9.]+).*/\1/'; }
      b=$(w block) r=$(w random) h=$(w hypergraph)
      verdict=$(awk -v b="$b" -v r="$r" -v h="$h" -v s="$shuffle" -v p="$p" 'BEGIN {
        best = b < r ? b : r; ok = h <= best && (s == 0 || p < 4 || h <= b / 2);
        printf "%s (hypergraph %.1f, block %.1f, random %.1f: %.2f of block)", ok ? "holds" : "FAILS", h, b, r, h / b }')
      echo "- N = $n, $([[ $shuffle == 0 ]] && echo as generated || echo shuffled), P = $p: $verdict"
      [[ $verdict == holds* ]] || status=1
    done
  done
done
exit $status
