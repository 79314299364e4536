#!/usr/bin/env bash
# Issue 20's pipeline claims, measured in one command on this machine: the
# CNN at a batch of BATCH, one OpenBLAS thread per process, TRAIN_LIMIT
# training samples (one epoch) per run.
#
#   1. Speed-up: the serial trainer (gossipd train) against the pipeline in
#      2 stages on 2 processes (--schedule 1f1b, --partition auto), same
#      global batch, run alternately REPS times: training samples per second
#      (the run's rounds per second x BATCH, evaluations left out), median
#      and best, and the ratio of the medians. The paper's claim: near
#      linear (the issue's target: >= 1.7x on 2 cores).
#   2. Bubble: --schedule gpipe at K = 2 and 4 (auto partitions), each
#      stage's measured bubble (1 - its compute / the span of its batch's
#      passes, mean over steps, from /status), the mean over stages against
#      GPipe's (K-1)/(M+K-1), which assumes equal stages: on the CNN (no
#      two stages of it are equal) and on an MLP with --hidden
#      BUBBLE_HIDDEN, whose dense layers cost about the same (one per stage
#      at K = 4). K = 4 runs 4 processes on 2 cores.
#   3. Planner: the plan `gossipctl plan pipeline` makes for 1 and for 2
#      stages under each schedule (its partition and predicted step time)
#      against the step time measured running that partition and schedule.
#   4. Merge: `gossipctl plan pipeline --stages MERGE_K --bandwidth
#      BANDWIDTH`: its fastest MERGE_K-stage partition and the merged plan,
#      each run by `gossipctl compare --netns --bandwidth BANDWIDTH` (one
#      network namespace per stage, tc-capped links; root) for one epoch of
#      MERGE_LIMIT samples: step time (the last stage's rounds per second).
#
# Each pipeline process serves /status on 127.0.0.1 and lingers after its
# last step, so its final figures are read after training. Needs curl.
# Takes ~6 min at the defaults. OUT keeps the logs, plan and table.md.
#
#   tests/bench/pipeline_claim.sh [BUILD_DIR]        (default: ./build)
# Env: BATCH=128  MICROS=16  TRAIN_LIMIT=6400  REPS=3  MERGE_K=4  BANDWIDTH=100mbit  MERGE_LIMIT=1280
#      BUBBLE_HIDDEN=1024,560,1024,560
#      SECTIONS="speedup plans bubble merge"  OUT=out/bench/pipeline_claim-DATE
set -euo pipefail
export LC_ALL=C OPENBLAS_NUM_THREADS=1
source "$(dirname "$0")/control.sh"
cd "$(dirname "$0")/../.."
build=$(realpath -m "${1:-build}")
batch=${BATCH:-128}
micros=${MICROS:-16}
limit=${TRAIN_LIMIT:-6400}
reps=${REPS:-3}
merge_k=${MERGE_K:-4}
bandwidth=${BANDWIDTH:-100mbit}
merge_limit=${MERGE_LIMIT:-1280}
bubble_hidden=${BUBBLE_HIDDEN:-1024,560,1024,560}
sections=" ${SECTIONS:-speedup plans bubble merge} "
out=${OUT:-out/bench/pipeline_claim-$(date +%Y%m%d-%H%M%S)}
command -v curl >/dev/null || { echo "pipeline_claim.sh: needs curl" >&2; exit 2; }
[[ $sections != *" merge "* || $(id -u) -eq 0 ]] || { echo "pipeline_claim.sh: merge needs root (netns)" >&2; exit 2; }
((batch % micros == 0)) || { echo "pipeline_claim.sh: MICROS must divide BATCH" >&2; exit 2; }

[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target gossipd gossipctl >/dev/null
mkdir -p "$out"
out=$(realpath "$out")
gossipd="$build/bin/gossipd"
model=(--model cnn)
data=(--batch "$batch" --threads 1 --train-limit "$limit" --test-limit 500 --epochs 1)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# Serial samples per second (training only) of one run.
serial() {
  "$gossipd" train "${model[@]}" "${data[@]}" --metrics-out "$out/serial.jsonl" >"$out/serial.log" 2>&1
  tail -n 1 "$out/serial.jsonl" | sed -n 's/.*"samples_per_second":\([0-9.e+-]*\).*/\1/p' | awk '{ printf "%.1f", $1 }'
}

# One pipeline run: K schedule partition tag. Prints "step_s bubble_mean
# bubbles..." from the stages' final /status (the last stage's step time).
pipeline() {
  local k=$1 schedule=$2 partition=$3 tag=$4 peers="" i
  local -a ports=()
  for ((i = 0; i < k; i++)); do ports+=($((21000 + RANDOM % 20000))); done
  for ((i = 0; i < k; i++)); do peers+="${peers:+,}p$i=tcp://127.0.0.1:${ports[i]}"; done
  pids=()
  for ((i = 0; i < k; i++)); do
    rm -f "$out/$tag-p$i.control"  # appended to: a reused OUT's old records
    "$gossipd" run --id "p$i" --listen "tcp://127.0.0.1:${ports[i]}" --peers "$peers" --algo pipeline \
      --stages "$k" --micro-batches "$micros" --schedule "$schedule" --partition "$partition" "${model[@]}" "${data[@]}" \
      --http 127.0.0.1:0 --linger-ms 60000 --quiet --control-out "$out/$tag-p$i.control" >"$out/$tag-p$i.log" 2>&1 &
    pids+=($!)
  done
  local -a status=()
  for ((i = 0; i < k; i++)); do
    until control_field "$out/$tag-p$i.control" "done" event >/dev/null; do
      kill -0 "${pids[i]}" 2>/dev/null || { echo "pipeline_claim.sh: $tag p$i failed:" >&2; cat "$out/$tag-p$i.log" >&2; exit 1; }
      sleep 0.5
    done
    local port
    port=$(control_http_port "$out/$tag-p$i.control" || true)
    status+=("$(curl -s --max-time 5 "http://127.0.0.1:$port/status")")
  done
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=()
  printf '%s\n' "${status[@]}" >"$out/$tag.status"
  printf '%s\n' "${status[@]}" | awk '
    function num(key,   m) { return match($0, "\"" key "\":[0-9.e+-]+") ? substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3) + 0 : 0 }
    { b[NR] = num("bubble"); s += b[NR]; rps = num("rounds_per_second") }
    END { printf "%.6f %.4f", 1 / rps, s / NR; for (i = 1; i <= NR; i++) printf " %.3f", b[i]; print "" }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "pipeline_claim.sh: CNN, batch $batch, $micros micro-batches, $limit samples, $reps reps -> $out" >&2
: >"$out/speedup.txt"
[[ $sections == *" speedup "* ]] || reps=0
for ((r = 1; r <= reps; r++)); do
  s=$(serial)
  p=$(pipeline 2 1f1b auto "speedup-r$r")
  echo "$s $(awk -v b="$batch" '{ printf "%.1f", b / $1 }' <<<"$p") $p" >>"$out/speedup.txt"
  echo "  rep $r: serial $s samples/s, pipeline $(cut -d' ' -f2 "$out/speedup.txt" | tail -n 1) samples/s" >&2
done

: >"$out/plans.txt"
[[ $sections == *" plans "* ]] && for k in 1 2; do
  for schedule in gpipe 1f1b 1f1b-async; do
    "$build/bin/gossipctl" plan pipeline --model cnn --stages "$k" --batch "$batch" --micro-batches "$micros" \
      --schedule "$schedule" --json >"$out/plan-$k-$schedule.json"
    part=$(grep -o '"partition":"[0-9,]*"' "$out/plan-$k-$schedule.json" | head -n 1 | sed 's/.*:"\(.*\)"/\1/')
    predicted=$(grep -o "\"$schedule\":[0-9.e+-]*" "$out/plan-$k-$schedule.json" | head -n 1 | cut -d: -f2)
    parts=$(awk -F, '{ print NF }' <<<"$part")
    measured=$(pipeline "$parts" "$schedule" "$part" "plan-$part-$schedule" | cut -d' ' -f1)
    echo "$part $schedule $predicted $measured" >>"$out/plans.txt"
  done
done

: >"$out/bubble.txt"
if [[ $sections == *" bubble "* ]]; then
  for k in 2 4; do echo "cnn $k $(pipeline "$k" gpipe auto "bubble-cnn-k$k")" >>"$out/bubble.txt"; done
  model=(--model mlp --hidden "$bubble_hidden")
  for k in 2 4; do echo "mlp:$bubble_hidden $k $(pipeline "$k" gpipe auto "bubble-mlp-k$k")" >>"$out/bubble.txt"; done
  model=(--model cnn)
fi

# One compare run of a partition in netns hosts: its step time (s).
netns_step() {  # partition tag
  local k workers per
  k=$(awk -F, '{ print NF }' <<<"$1")
  per=$((batch / k))
  "$build/bin/gossipctl" compare --netns --bandwidth "$bandwidth" --workers "$k" --algos "pipeline:$k" \
    --partition "$1" --micro-batches "$micros" --model cnn --batch "$per" --epochs 1 --train-limit "$merge_limit" \
    --test-limit 200 --out "$out/$2" >"$out/$2.log" 2>&1
  tail -n 1 "$out/$2/pipeline-$k/w$((k - 1)).jsonl" | sed -n 's/.*"rounds_per_second":\([0-9.e+-]*\).*/\1/p' |
    awk '{ printf "%.6f", 1 / $1 }'
}

: >"$out/merge.txt"
if [[ $sections == *" merge "* ]]; then
  "$build/bin/gossipctl" plan pipeline --model cnn --stages "$merge_k" --batch "$batch" --micro-batches "$micros" \
    --bandwidth "$bandwidth" --json >"$out/plan-merge.json"
  merged=$(grep -o '"partition":"[0-9,]*"' "$out/plan-merge.json" | head -n 1 | sed 's/.*:"\(.*\)"/\1/')
  unmerged=$(grep -o "{\"stages\":$merge_k,\"partition\":\"[0-9,]*\",\"step_s\":[0-9.e+-]*" "$out/plan-merge.json")
  predicted_merged=$(grep -o '"by_count".*' "$out/plan-merge.json" | grep -o "\"partition\":\"$merged\",\"step_s\":[0-9.e+-]*" | cut -d: -f3)
  predicted_unmerged=${unmerged##*:}
  unmerged=$(sed 's/.*"partition":"\([0-9,]*\)".*/\1/' <<<"$unmerged")
  for part in "$unmerged" "$merged"; do
    echo "$part $(netns_step "$part" "merge-$(tr , - <<<"$part")")" >>"$out/merge.txt"
  done
  sed -i "1s/\$/ $predicted_unmerged/; 2s/\$/ $predicted_merged/" "$out/merge.txt"
fi

{
  if [[ -s $out/speedup.txt ]]; then
    echo "### Speed-up: CNN, batch $batch, $micros micro-batches, 1f1b, 2 stages on 2 processes vs gossipd train"
    echo
    echo "| | serial samples/s | pipeline samples/s | speed-up |"
    echo "| --- | --- | --- | --- |"
    sm=$(cut -d' ' -f1 "$out/speedup.txt" | median); pm=$(cut -d' ' -f2 "$out/speedup.txt" | median)
    sb=$(cut -d' ' -f1 "$out/speedup.txt" | sort -g | tail -n 1); pb=$(cut -d' ' -f2 "$out/speedup.txt" | sort -g | tail -n 1)
    echo "| median of $reps | $sm | $pm | $(awk -v a="$pm" -v b="$sm" 'BEGIN { printf "%.2fx", a / b }') |"
    echo "| best | $sb | $pb | $(awk -v a="$pb" -v b="$sb" 'BEGIN { printf "%.2fx", a / b }') |"
    echo
  fi
  echo "### Bubble under gpipe (mean over stages; each stage's in brackets)"
  echo
  echo "| model | K | M | measured | (K-1)/(M+K-1) | measured / model |"
  echo "| --- | --- | --- | --- | --- | --- |"
  while read -r name k step mean rest; do
    gpipe=$(awk -v k="$k" -v m="$micros" 'BEGIN { printf "%.4f", (k - 1) / (m + k - 1) }')
    echo "| $name | $k | $micros | $mean ($rest) | $gpipe | $(awk -v a="$mean" -v b="$gpipe" 'BEGIN { printf "%.2f", a / b }') |"
  done <"$out/bubble.txt"
  echo
  echo "### Planner at K = 2: predicted against measured step time"
  echo
  echo "| partition | schedule | predicted ms | measured ms | measured / predicted |"
  echo "| --- | --- | --- | --- | --- |"
  while read -r part schedule predicted measured; do
    awk -v p="$part" -v s="$schedule" -v a="$predicted" -v b="$measured" \
      'BEGIN { printf "| %s | %s | %.2f | %.2f | %.2f |\n", p, s, a * 1e3, b * 1e3, b / a }'
  done <"$out/plans.txt"
  echo
  echo "### Memory: activations held, predicted (in flight x one micro-batch's stash) against measured (1f1b)"
  echo
  echo "| partition | stage | predicted bytes | measured bytes |"
  echo "| --- | --- | --- | --- |"
  if [[ -s $out/plan-2-1f1b.json ]]; then
    part=$(grep -o '"partition":"[0-9,]*"' "$out/plan-2-1f1b.json" | head -n 1 | sed 's/.*:"\(.*\)"/\1/')
    grep -o '"in_flight":[0-9]*,"stash_floats":[0-9]*' "$out/plan-2-1f1b.json" |
      awk -F'[:,]' '{ print 4 * $2 * $4 }' >"$out/memory.predicted"
    sed -n 's/.*"most_stashed_bytes":"\{0,1\}\([0-9]*\).*/\1/p' "$out/plan-$part-1f1b.status" >"$out/memory.measured"
    paste -d' ' "$out/memory.predicted" "$out/memory.measured" |
      awk -v p="$part" '{ printf "| %s | %d | %d | %d |\n", p, NR - 1, $1, $2 }'
  fi
  echo
  echo "### Merge: the CNN at $bandwidth (netns), at most $merge_k stages"
  echo
  echo "| plan | partition | predicted ms | measured ms |"
  echo "| --- | --- | --- | --- |"
  n=0
  while read -r part measured predicted; do
    n=$((n + 1))
    awk -v w="$([[ $n == 1 ]] && echo "fastest $merge_k-stage" || echo merged)" -v p="$part" -v a="$predicted" \
      -v b="$measured" 'BEGIN { printf "| %s | %s | %.1f | %.1f |\n", w, p, a * 1e3, b * 1e3 }'
  done <"$out/merge.txt"
} | tee "$out/table.md"
