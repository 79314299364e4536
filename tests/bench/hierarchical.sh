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
cd "$(dirname "$0")/../.."
W=${1:-6}; G=${2:-2}; S=${3:-12}; E=${4:-2}
cmake --build build -j2 --target gossipd >/dev/null
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
peers=""
for ((i = 0; i < W; i++)); do peers+="${peers:+,}w$i=ipc://$dir/w$i.sock"; done
for owner in spread root; do
  pids=()
  start=$(date +%s.%N)
  for ((i = 0; i < W; i++)); do
    ./build/bin/gossipd run --id "w$i" --listen "ipc://$dir/w$i.sock" --peers "$peers" --algo crossover \
      --hierarchical --group "g$((i % G))" --group-owner "$owner" --segments "$S" --epochs "$E" --threads 1 \
      --quiet --consensus-every 0 > "$dir/$owner.w$i.log" 2>&1 &
    pids+=($!)
  done
  wait
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  rounds=$(sed -n 's/.*done: round \([0-9]*\).*/\1/p' "$dir/$owner.w0.log")
  acc=$(cat "$dir"/$owner.w*.log | sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p' | awk '{s+=$1} END {printf "%.4f", s/NR}')
  cat "$dir"/$owner.w*.log | sed -n 's/.*gossip_bytes_sent \([0-9]*\).*/\1/p' | awk -v o="$owner" -v r="$rounds" -v t="$secs" -v a="$acc" '
    { s += $1; if ($1 > m) m = $1; n++ }
    END { printf "%-6s rounds %d in %.1f s (%.1f rounds/s incl. start-up), mean test accuracy %s, inter-group bytes sent per member: mean %.1f MB, busiest %.1f MB (%.2fx the mean)\n", o, r, t, r / t, a, s / n / 1e6, m / 1e6, m / (s / n) }'
done
