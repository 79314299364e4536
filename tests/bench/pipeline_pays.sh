#!/usr/bin/env bash
# Issue 39's pipeline claims in one command: for each case, the plan
# `gossipd run --algo pipeline` makes by default (every K x D = PROCS, M and
# schedule, priced by `gossipctl plan pipeline --procs PROCS`) against
# `gossipd train --threads 1` at the same global batch, run alternately
# REPS times, one OpenBLAS thread per process:
#
#   mlp  --hidden 1024 x 7, batch 512 (the issue's (a)), and the pure
#        pipeline K = 2, D = 1 (schedule and M the planner's), and the
#        same under 1f1b-async (M = 1), which the planner only runs when
#        named
#   cnn  batch 128 (the issue's (b))
#
# Samples per second: the serial run's epoch figure (training only); a
# pipeline run's is its global batch x the last process's rounds per
# second (training only). The planner's two best plans are each run as
# given and their measured step set against the predicted one.
#
#   tests/bench/pipeline_pays.sh [BUILD_DIR]        (default: ./build)
# Env: PROCS=2  REPS=5  CASES="mlp cnn"  MLP_LIMIT=15360  CNN_LIMIT=12800
#      OUT=out/bench/pipeline_pays-DATE
# With PROCS > the cores, the processes share cores: say so with the figures.
set -euo pipefail
export LC_ALL=C OPENBLAS_NUM_THREADS=1
cd "$(dirname "$0")/../.."
build=$(realpath -m "${1:-build}")
procs=${PROCS:-2}
reps=${REPS:-5}
cases=${CASES:-mlp cnn}
out=${OUT:-out/bench/pipeline_pays-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(realpath "$out")
[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target gossipd gossipctl >/dev/null
gossipd="$build/bin/gossipd"
# The profile the planner prices with: this run's own, made once per case.
cache=(--cache-dir "$out/profile")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
trap 'exit 130' INT TERM

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
json_num() { grep -o "\"$1\":[0-9.e+-]*" | head -n 1 | cut -d: -f2; }

# Serial samples per second of one run.
serial() {  # tag
  "$gossipd" train "${model[@]}" "${data[@]}" --metrics-out "$out/$1.jsonl" >"$out/$1.log" 2>&1
  tail -n 1 "$out/$1.jsonl" | json_num samples_per_second
}

# One run of PROCS pipeline processes with extra flags: prints the step
# time (s) of the last process. tag flags...
pipeline() {
  local tag=$1 i peers="" base=$((21000 + RANDOM % 20000))
  shift
  for ((i = 0; i < procs; i++)); do peers+="${peers:+,}p$i=tcp://127.0.0.1:$((base + i))"; done
  pids=()
  for ((i = 0; i < procs; i++)); do
    rm -f "$out/$tag-p$i.jsonl"
    timeout 900 "$gossipd" run --id "p$i" --listen "tcp://127.0.0.1:$((base + i))" --peers "$peers" --algo pipeline \
      "$@" "${model[@]}" "${data[@]}" "${cache[@]}" --quiet --metrics-out "$out/$tag-p$i.jsonl" >"$out/$tag-p$i.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < procs; i++)); do
    wait "${pids[i]}" || { echo "pipeline_pays.sh: $tag p$i failed:" >&2; tail -n 5 "$out/$tag-p$i.log" >&2; exit 1; }
  done
  pids=()
  tail -n 1 "$out/$tag-p$((procs - 1)).jsonl" | json_num rounds_per_second | awk '{ printf "%.6f", 1 / $1 }'
}

# Flags that run plan N (1-based) of a ranking's JSON as given.
plan_flags() {  # json n
  local p
  p=$(grep -o '{"stages"[^}]*}' "$1" | sed -n "$2p")
  echo "--stages $(json_num stages <<<"$p") --replicas $(json_num replicas <<<"$p")" \
    "--micro-batches $(json_num micros <<<"$p")" \
    "--schedule $(grep -o '"schedule":"[^"]*"' <<<"$p" | cut -d'"' -f4)" \
    "--partition $(grep -o '"partition":"[^"]*"' <<<"$p" | cut -d'"' -f4)"
}

table=$out/table.md
: >"$table"
echo "pipeline_pays.sh: PROCS=$procs REPS=$reps on $(nproc) cores -> $out" >&2
for c in $cases; do
  case $c in
    mlp) batch=512; limit=${MLP_LIMIT:-15360}; model=(--model mlp --hidden 1024,1024,1024,1024,1024,1024,1024) ;;
    cnn) batch=128; limit=${CNN_LIMIT:-12800}; model=(--model cnn) ;;
    *) echo "pipeline_pays.sh: unknown case $c (mlp, cnn)" >&2; exit 2 ;;
  esac
  data=(--batch "$batch" --threads 1 --train-limit "$limit" --test-limit 200 --epochs 1)
  "$build/bin/gossipctl" plan pipeline "${model[@]}" --batch "$batch" --procs "$procs" "${cache[@]}" --json \
    --top 2 >"$out/$c-plan.json"
  "$build/bin/gossipctl" plan pipeline "${model[@]}" --batch "$batch" --procs "$procs" "${cache[@]}" --top 6 \
    >"$out/$c-plan.md"
  read -ra first <<<"$(plan_flags "$out/$c-plan.json" 1)"
  read -ra second <<<"$(plan_flags "$out/$c-plan.json" 2)"
  : >"$out/$c.txt"
  for ((r = 1; r <= reps; r++)); do
    s=$(serial "$c-serial-r$r")
    a=$(pipeline "$c-auto-r$r")
    p1=$(pipeline "$c-first-r$r" "${first[@]}")
    p2=$(pipeline "$c-second-r$r" "${second[@]}")
    k2=0 k2a=0
    if [[ $c == mlp && $procs -eq 2 ]]; then
      k2=$(pipeline "$c-k2-r$r" --stages 2 --replicas 1)
      k2a=$(pipeline "$c-k2a-r$r" --stages 2 --replicas 1 --schedule 1f1b-async)
    fi
    echo "$s $a $p1 $p2 $k2 $k2a" >>"$out/$c.txt"
    echo "  $c rep $r: serial $s samples/s, planned step ${a}s, first ${p1}s, second ${p2}s, K=2 ${k2}s, async ${k2a}s" >&2
  done
  chosen=$(grep -o 'pipeline plan [^:]*' "$out/$c-auto-r1-p0.log" | head -n 1 | sed 's/pipeline plan //')
  k2plan=$(grep -o 'pipeline plan [^:]*' "$out/$c-k2-r1-p0.log" 2>/dev/null | head -n 1 | sed 's/pipeline plan //' || true)
  k2aplan=$(grep -o 'pipeline plan [^:]*' "$out/$c-k2a-r1-p0.log" 2>/dev/null | head -n 1 | sed 's/pipeline plan //' || true)
  col() { cut -d' ' -f"$1" "$out/$c.txt"; }
  sm=$(col 1 | median); sb=$(col 1 | sort -g | tail -n 1)
  {
    echo "### $c, global batch $batch, $procs processes ($(nproc) cores), median of $reps alternating runs"
    echo
    echo "| run | samples/s (median) | best | against the serial median |"
    echo "| --- | --- | --- | --- |"
    echo "| gossipd train --threads 1 | $sm | $sb | 1.00x |"
    rate() { col "$1" | awk -v b="$batch" '{ print b / $1 }'; }
    pm=$(rate 2 | median); pb=$(rate 2 | sort -g | tail -n 1)
    awk -v n="planned: $chosen" -v m="$pm" -v b="$pb" -v s="$sm" 'BEGIN { printf "| %s | %.0f | %.0f | **%.2fx** |\n", n, m, b, m / s }'
    if [[ -n $k2plan ]]; then
      km=$(rate 5 | median); kb=$(rate 5 | sort -g | tail -n 1)
      awk -v n="pure pipeline: $k2plan" -v m="$km" -v b="$kb" -v s="$sm" 'BEGIN { printf "| %s | %.0f | %.0f | **%.2fx** |\n", n, m, b, m / s }'
      km=$(rate 6 | median); kb=$(rate 6 | sort -g | tail -n 1)
      awk -v n="pure pipeline, named: $k2aplan" -v m="$km" -v b="$kb" -v s="$sm" 'BEGIN { printf "| %s | %.0f | %.0f | %.2fx |\n", n, m, b, m / s }'
    fi
    echo
    echo "| plan (ranked) | predicted step ms | measured step ms (median) | measured / predicted |"
    echo "| --- | --- | --- | --- |"
    for n in 1 2; do
      p=$(grep -o '{"stages"[^}]*}' "$out/$c-plan.json" | sed -n "${n}p")
      predicted=$(json_num step_s <<<"$p")
      measured=$(col $((n + 2)) | median)
      name="$(json_num stages <<<"$p")x$(json_num replicas <<<"$p") $(grep -o '"schedule":"[^"]*"' <<<"$p" | cut -d'"' -f4) M=$(json_num micros <<<"$p")"
      awk -v n="$n. $name" -v p="$predicted" -v m="$measured" 'BEGIN { printf "| %s | %.2f | %.2f | %.2f |\n", n, p * 1e3, m * 1e3, m / p }'
    done
    if [[ -n $k2plan ]]; then  # the pure pipeline's own plan, as its log says
      predicted=$(grep -o '[0-9.]* ms a step predicted' "$out/$c-k2-r1-p0.log" | head -n 1 | cut -d' ' -f1)
      awk -v n="pure pipeline: ${k2plan% partition*}" -v p="$predicted" -v m="$(col 5 | median)" \
        'BEGIN { printf "| %s | %.2f | %.2f | %.2f |\n", n, p, m * 1e3, m * 1e3 / p }'
    fi
    echo
  } >>"$table"
done
cat "$table"
