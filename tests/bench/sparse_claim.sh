#!/usr/bin/env bash
# The sparse mode's serial inference (gossipctl sparse infer's kernels,
# daemon/modes/sparse/net) against SuiteSparse:GraphBLAS, on the Sparse
# DNN Graph Challenge's networks as `gossipctl sparse generate` writes them
# (RadiX-Net, 32 edges per neuron, inputs from Fashion-MNIST). One thread
# each, the two timed alternately REPS times in one run
# (tests/bench/sparse_vs_graphblas.cc); the table shows medians and bests
# of edges/s (inputs x edges / seconds) and whether the categories and the
# final activations agree. Exits 1 when they do not.
#
#   tests/bench/sparse_claim.sh [BUILD_DIR]      (default: ./build)
# Env: WIDTHS="1024 4096"  LAYERS=120  INPUTS=6000 (of the 60000; 0: all)  REPS=3
#      NETS=/tmp/gossipd-sparse-nets (generated networks, kept and reused)
#      OUT=out/bench/sparse_claim-DATE
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
widths="${WIDTHS:-1024 4096}"
layers="${LAYERS:-120}"
inputs="${INPUTS:-6000}"
reps="${REPS:-3}"
nets="${NETS:-/tmp/gossipd-sparse-nets}"
out="${OUT:-$root/out/bench/sparse_claim-$(date +%F)}"

"$root/deploy/install-deps.sh" --bench
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target gossipctl sparse_vs_graphblas >/dev/null
mkdir -p "$out" "$nets"

for n in $widths; do
  if [[ ! -f "$nets/neuron$n/n$n-l$layers.tsv" || ! -f "$nets/sparse-images-$n.tsv" ]]; then
    "$build/bin/gossipctl" sparse generate --neurons "$n" --layers "$layers" --out "$nets" --force
  fi
  "$build/bin/sparse_vs_graphblas" "$nets" "$n" "$layers" "$inputs" "$reps" | tee "$out/n$n.jsonl"
done

echo
echo "| N | L | inputs | ours edges/s, median (best) | GraphBLAS edges/s, median (best) | ours / GraphBLAS | categories, activations |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
status=0
for n in $widths; do
  line=$(grep '^summary:' "$out/n$n.jsonl")
  # summary: N=.. L=.. inputs=.. reps=..  ours A edges/s (best B)  GraphBLAS C edges/s (best D)  ratio of medians Rx  ...: V (max |diff| M)
  read -r ours ours_best gb gb_best ratio verdict <<<"$(sed -E \
    's/.*ours ([^ ]+) edges\/s \(best ([^)]+)\)  GraphBLAS ([^ ]+) edges\/s \(best ([^)]+)\)  ratio of medians ([^ ]+)  categories and activations: ([^ ]+).*/\1 \2 \3 \4 \5 \6/' <<<"$line")"
  count=$(grep -o '"inputs":[0-9]*' "$out/n$n.jsonl" | head -1 | cut -d: -f2)
  echo "| $n | $layers | $count | $ours ($ours_best) | $gb ($gb_best) | $ratio | $verdict |"
  [[ "$verdict" == same ]] || status=1
done
exit $status
