#!/usr/bin/env bash
# Membership at N real processes (issue 53): N gossipd workers on loopback
# training a one-unit MLP with every step slowed to 5 s, so that the wire
# carries little but membership. Per size: loopback bytes per member per
# second over WINDOW s (/proc/net/dev: what lo received, each byte once), then a member SIGKILLed and the
# seconds until every survivor's /status no longer lists it. Run with two
# builds to compare (the second defaults to none).
#
#   tests/bench/membership_traffic.sh [GOSSIPD [OLD_GOSSIPD]]
#   env: SIZES (12 36), WINDOW (20), SETTLE (15), FAILURE_MS (3000)
set -euo pipefail
cd "$(dirname "$0")/../.."
new=${1:-build/bin/gossipd}
old=${2:-}
SIZES=${SIZES:-"12 36"}
WINDOW=${WINDOW:-20}
SETTLE=${SETTLE:-15}
FAILURE_MS=${FAILURE_MS:-3000}
dir=$(mktemp -d)
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
trap 'stop_all; rm -rf "$dir"' EXIT

lo_bytes() { awk '$1 == "lo:" {printf "%.0f\n", $2}' /proc/net/dev; }

measure() {  # BIN N
  local bin=$1 n=$2 base=$((7400 + RANDOM % 400 * 8)) peers=""
  for ((i = 0; i < n; i++)); do peers+="${peers:+,}w$i=tcp://127.0.0.1:$((base + i))"; done
  for ((i = 0; i < n; i++)); do
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$bin" run --id "w$i" --listen "tcp://127.0.0.1:$((base + i))" \
      --peers "$peers" --algo crossover --hidden 1 --epochs 100000 --train-limit $((n * 64)) --test-limit 100 \
      --inject-step-delay-ms 5000 --failure-timeout-ms "$FAILURE_MS" --threads 1 --quiet \
      --http "127.0.0.1:$((base + 4000 + i))" >"$dir/w$i.log" 2>&1 &
    pids+=($!)
  done
  sleep "$SETTLE"
  local b0 b1
  b0=$(lo_bytes)
  sleep "$WINDOW"
  b1=$(lo_bytes)
  local per=$(((b1 - b0) / WINDOW / n))
  kill -9 "${pids[n - 1]}"
  local t0=$SECONDS gone=0
  while ((SECONDS - t0 < 60)); do
    gone=1
    for ((i = 0; i < n - 1; i++)); do
      if curl -s "127.0.0.1:$((base + 4000 + i))/status" | grep -q "\"w$((n - 1))\""; then gone=0; break; fi
    done
    ((gone)) && break
    sleep 0.2
  done
  local detect=$((SECONDS - t0))
  ((gone)) || detect="never"
  local evicted=0
  for ((i = 0; i < n - 1; i++)); do
    evicted=$((evicted + $(grep -c "evicted (" "$dir/w$i.log" || true)))
  done
  local suspected
  suspected=$(cat "$dir"/w*.log | grep -c "suspected" || true)
  echo "| $(basename "$bin") | $n | $per | $detect | $((evicted - (n - 1))) | $suspected |"
  stop_all
}

echo "| gossipd | members | loopback bytes per member per second | SIGKILLed member gone from every view (s, 1 s resolution) | evictions beyond the dead member's | suspicions logged |"
echo "| --- | --- | --- | --- | --- | --- |"
for n in $SIZES; do
  measure "$new" "$n"
  [ -z "$old" ] || measure "$old" "$n"
done
