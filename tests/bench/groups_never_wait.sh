#!/usr/bin/env bash
# Compute groups never wait for each other (issues 22, 41): 4 workers in 2
# groups (--algo groups --compute-groups 2) on one machine over ipc://; group
# 1 (w2, w3) is slowed with --inject-step-delay-ms (each of its steps takes
# that much longer: slow compute, its shards served as fast as ever), and
# group 0's step rate is compared with a run where nobody is slowed. Runs alternate,
# REPS of each; prints group 0's steps/s per run (w0's rounds over its
# training time, /status rounds_per_second at its last step: a group that is
# done serves its shards until the others are, which is not training time)
# and the medians, and w0's closing line as an owner (staleness included).
# Usage: [REPS=5] [EPOCHS=3] [DELAY_MS=20] tests/bench/groups_never_wait.sh
set -euo pipefail
REPS=${REPS:-5}; EPOCHS=${EPOCHS:-3}; DELAY_MS=${DELAY_MS:-20}
source "$(dirname "$0")/control.sh"
source "$(dirname "$0")/groups_lib.sh"
SLOW_FLAGS=(--inject-step-delay-ms "$DELAY_MS")

run() {  # TAG: one run; prints group 0's steps per second
  start_groups "$1" 4 2 --epochs "$EPOCHS" --test-limit 1000 --momentum auto
  for p in "${pids[@]}"; do wait "$p"; done
  control_field "$dir/$1.w0.control" "done" status.rounds_per_second | awk '{printf "%.1f\n", $1}'
}

: > "$dir/plain"; : > "$dir/slowed"
for ((r = 1; r <= REPS; r++)); do
  SLOW=""; p=$(run "plain$r"); echo "$p" >> "$dir/plain"
  SLOW="2 3"; s=$(run "slowed$r"); echo "$s" >> "$dir/slowed"
  echo "run $r: group 0 steps/s: nobody slowed $p, group 1 slowed by ${DELAY_MS} ms a step $s"
  for t in "plain$r" "slowed$r"; do echo "  $t: w0 $(closing "$t" 0 'compute group [0-9]* of [0-9]*: \(.*\)')"; done
done
mp=$(median < "$dir/plain"); ms=$(median < "$dir/slowed")
echo "medians of $REPS: nobody slowed $mp steps/s, group 1 slowed $ms steps/s: ratio $(echo "$ms $mp" | awk '{printf "%.3f", $1 / $2}')"
