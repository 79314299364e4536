#!/usr/bin/env bash
# Membership at N real processes (issue 53): N gossipd workers on loopback
# training a one-unit MLP with every step slowed to 5 s, so that the wire
# carries little but membership. Per size: loopback bytes per member per
# second over WINDOW s after SETTLE s (/proc/net/dev: what lo received,
# each byte once); one member SIGSTOPped for PAUSE_MS (shorter than the
# failure timeout: nobody may be evicted for it); then KILLS members
# SIGKILLed one at a time, each timed until no survivor's /status lists it
# (median and worst); members evicted that were never killed. Run with two
# builds to compare (the second defaults to none).
#
#   tests/bench/membership_traffic.sh [GOSSIPD [OLD_GOSSIPD]]
#   env: SIZES (12 36), WINDOW (20), SETTLE (15), FAILURE_MS (3000),
#        PAUSE_MS (2000), KILLS (10, at most half the members)
set -euo pipefail
cd "$(dirname "$0")/../.."
new=${1:-build/bin/gossipd}
old=${2:-}
SIZES=${SIZES:-"12 36"}
WINDOW=${WINDOW:-20}
SETTLE=${SETTLE:-15}
FAILURE_MS=${FAILURE_MS:-3000}
PAUSE_MS=${PAUSE_MS:-2000}
KILLS=${KILLS:-10}
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
  local bin=$1 n=$2 peers=""
  base=$((7400 + RANDOM % 400 * 8))
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
  # A pause shorter than the failure timeout: nobody may be evicted for it.
  kill -STOP "${pids[0]}"
  sleep "$(awk -v ms="$PAUSE_MS" 'BEGIN {print ms / 1000}')"
  kill -CONT "${pids[0]}"
  sleep $((FAILURE_MS / 1000 + 5))
  local times=() k victim kills=$((KILLS < n / 2 ? KILLS : n / 2))
  for ((k = 1; k <= kills; k++)); do
    victim=$((n - k))
    kill -9 "${pids[victim]}"
    times+=("$(gone_from_every_view "$victim" $((n - k)))")
  done
  local killed="" false
  for ((k = 1; k <= kills; k++)); do killed+=" w$((n - k)) "; done
  false=$(cat "$dir"/w*.log | grep -o "member 'w[0-9]*' evicted" | grep -o "w[0-9]*" | sort -u |
    while read -r id; do [[ $killed == *" $id "* ]] || echo "$id"; done | wc -l)
  local suspected sorted
  suspected=$(cat "$dir"/w*.log | grep -c "suspected" || true)
  sorted=$(printf '%s\n' "${times[@]}" | sort -n)
  echo "| $(basename "$bin") | $n | $SETTLE | $per | $(echo "$sorted" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}') | $(echo "$sorted" | tail -1) | $false | $suspected |"
  stop_all
}

# Seconds until no survivor among the first SURVIVORS lists w$VICTIM ("never" after 60 s).
gone_from_every_view() {  # VICTIM SURVIVORS
  local t0=$SECONDS i listed st
  while ((SECONDS - t0 < 60)); do
    listed=0
    for ((i = 0; i < $2; i++)); do
      st=$(curl -s "127.0.0.1:$((base + 4000 + i))/status" || true)
      if [[ $st == *"\"w$1\""* ]]; then listed=1; break; fi
    done
    ((listed)) || { echo $((SECONDS - t0)); return; }
    sleep 0.2
  done
  echo never
}

echo "| gossipd | members | settle (s) | loopback bytes per member per second | SIGKILLed member gone from every view, median (s) | worst (s) | live members evicted | suspicions logged |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for n in $SIZES; do
  measure "$new" "$n"
  [ -z "$old" ] || measure "$old" "$n"
done
