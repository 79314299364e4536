#!/usr/bin/env bash
# Hierarchical Crossover-SGD: the inter-group exchange spread over a group's
# members (member k owns segments s = k mod size; our default) against the
# paper's root-only scheme, on one machine over ipc://. Runs W workers in G
# groups for E epochs with --segments N and prints, per scheme, the mean
# rounds/s, the test accuracy, and the inter-group bytes each member sent
# (the in-group allreduce is the same in both): the busiest member against
# the mean shows how evenly the inter-group traffic is spread.
# Usage: hierarchical.sh [workers=6] [groups=2] [segments=12] [epochs=2]
set -euo pipefail
source "$(dirname "$0")/control.sh"
cd "$(dirname "$0")/../.."
W=${1:-6}; G=${2:-2}; S=${3:-12}; E=${4:-2}
cmake --build build -j2 --target gossipd >/dev/null
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
peers=""
for ((i = 0; i < W; i++)); do peers+="${peers:+,}w$i=ipc://$dir/w$i.sock"; done
# FIELD of every worker's done record (--control-out) in run $owner; a
# worker that has none is left out.
done_field() { for f in "$dir/$owner".w*.control; do control_field "$f" "done" "$1" || true; done; }
for owner in spread root; do
  pids=()
  start=$(date +%s.%N)
  for ((i = 0; i < W; i++)); do
    ./build/bin/gossipd run --id "w$i" --listen "ipc://$dir/w$i.sock" --peers "$peers" --algo crossover \
      --hierarchical --group "g$((i % G))" --group-owner "$owner" --segments "$S" --epochs "$E" --threads 1 \
      --quiet --consensus-every 0 --control-out "$dir/$owner.w$i.control" > "$dir/$owner.w$i.log" 2>&1 &
    pids+=($!)
  done
  wait
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  rounds=$(control_field "$dir/$owner.w0.control" "done" round || true)
  acc=$(done_field status.test_accuracy | awk '{s+=$1} END {printf "%.4f", s/NR}')
  done_field status.bytes_sent | awk -v o="$owner" -v r="$rounds" -v t="$secs" -v a="$acc" '
    { s += $1; if ($1 > m) m = $1; n++ }
    END { printf "%-6s rounds %d in %.1f s (%.1f rounds/s incl. start-up), mean test accuracy %s, inter-group bytes sent per member: mean %.1f MB, busiest %.1f MB (%.2fx the mean)\n", o, r, t, r / t, a, s / n / 1e6, m / 1e6, m / (s / n) }'
done
