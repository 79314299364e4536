#!/usr/bin/env bash
# Issue 19's grid claims, measured in one command: the wide MLP
# (--hidden 2048,2048,2048) at a grid batch of 512 on 8 processes, every grid
# shape run for STEPS training steps by `gossipctl compare --algos grid:8x1,...`
# in network-namespace hosts capped at BANDWIDTH (and on loopback), next to
# what `gossipctl plan grid` predicts for it.
#
#   1. The paper's claim: per shape the planner's words per process per step
#      (by kind), communication and step time, against the measured step time
#      and communication per step (the training thread waiting on the grid's
#      collectives), each the median over steps 2..STEPS of every process
#      (the first sets up the connections) and the mean, the payload bytes per
#      step the transport counted / the prediction (mean over the processes),
#      and the shapes ranked by predicted and by measured (median) step time.
#   2. Communication as modelled: alpha (half the round trip of a 64-byte
#      message) and beta (PING_BYTES) from `gossipctl bench pingpong`, given to
#      the planner (--latency-us, --bandwidth); per shape the measured mean
#      communication per step / the planner's alpha-beta prediction. The bench
#      runs its two ranks on loopback only (it binds 127.0.0.1): the loopback
#      run is priced with the measured alpha and beta, the netns run with the
#      measured alpha and the links' tc rate (BANDWIDTH) as beta.
#
# The per-step figures come from every worker's /status, polled every POLL
# seconds: round / rounds_per_second is the training time at the end of the
# step it was read after, comm_ms_per_round x round the communication time up
# to then, both exact whenever a step is read at least once (steps missed
# are left out; the table says how many were timed), and the communication
# seconds by kind (GridStatus), which table 3 sets against each kind's words
# at beta. Needs root (network namespaces)
# and curl. On a shared machine: nice -n 10 tests/bench/grid_claim.sh
# Takes ~6 min on 2 cores (3.5 with NETWORKS=netns). OUT keeps compare's outputs, the poll traces
# (NET.trace), the plans and the table (table.md).
#
#   tests/bench/grid_claim.sh [BUILD_DIR]        (default: ./build)
# Env: STEPS=8 (>= 3)  SHAPES="8x1 4x2 2x4 1x8"  HIDDEN=2048,2048,2048  BATCH=512 (the grid's)
#      BANDWIDTH=100mbit  NETWORKS="netns loopback"  REPS=20 (pingpong repetitions)
#      PING_BYTES=16777216  POLL=0.2  TEST_LIMIT=500  GFLOPS (the planner's --gflops;
#      unset: sgemm measured on one thread, times cores / processes where
#      the processes outnumber the cores)  OUT=out/bench/grid_claim-DATE
set -euo pipefail
export LC_ALL=C OPENBLAS_NUM_THREADS=1
source "$(dirname "$0")/control.sh"
cd "$(dirname "$0")/../.."
build=$(realpath -m "${1:-build}")
steps=${STEPS:-8}
read -r -a shapes <<<"${SHAPES:-8x1 4x2 2x4 1x8}"
hidden=${HIDDEN:-2048,2048,2048}
batch=${BATCH:-512}
bandwidth=${BANDWIDTH:-100mbit}
read -r -a networks <<<"${NETWORKS:-netns loopback}"
reps=${REPS:-20}
ping_bytes=${PING_BYTES:-16777216}
poll_s=${POLL:-0.2}
test_limit=${TEST_LIMIT:-500}
out=${OUT:-out/bench/grid_claim-$(date +%Y%m%d-%H%M%S)}
ctl="$build/bin/gossipctl"

procs=$((${shapes[0]%x*} * ${shapes[0]#*x}))
for s in "${shapes[@]}"; do
  (( ${s%x*} * ${s#*x} == procs )) || { echo "grid_claim.sh: SHAPES must all have $procs cells ($s)" >&2; exit 2; }
done
((steps >= 3)) || { echo "grid_claim.sh: STEPS must be >= 3" >&2; exit 2; }
((batch % procs == 0)) || { echo "grid_claim.sh: BATCH must be a multiple of $procs" >&2; exit 2; }
[[ " ${networks[*]} " != *" netns "* || $(id -u) -eq 0 ]] || { echo "grid_claim.sh: netns needs root" >&2; exit 2; }
command -v curl >/dev/null || { echo "grid_claim.sh: needs curl" >&2; exit 2; }

[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target gossipd gossipctl >/dev/null
mkdir -p "$out"
out=$(realpath "$out")
start=$(date +%s)
dir=$(mktemp -d)
cmp=""
cleanup() {
  if [[ -n $cmp ]] && kill -0 "$cmp" 2>/dev/null; then
    kill -TERM "$cmp" 2>/dev/null || true  # compare stops its workers and deletes its namespaces
    wait "$cmp" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,}\"]*\).*/\1/p"; }
calc() { awk "BEGIN { printf $1 }"; }
# The JSON object of one shape in a `plan grid --json` answer.
shape_json() { sed 's/},{"grid"/}\n{"grid"/g' "$1" | grep "\"grid\":\"$2\""; }
plan() {  # latency_us bandwidth -> the plan's JSON
  "$ctl" plan grid --model mlp --hidden "$hidden" --batch "$batch" --procs "$procs" --latency-us "$1" \
    --bandwidth "$2" ${GFLOPS:+--gflops "$GFLOPS"} --json
}
known() { awk 'NF == 2 && $2 != "-"'; }  # "shape value" lines that have a value
# The shapes ordered by column $2 of "shape value" lines: "4x2 < 8x1 < ...".
order() { sort -g -k2 | awk '{ printf "%s%s", (NR > 1 ? " < " : ""), $1 }'; }

# --- the compute rate a process gets: sgemm on one thread, shared where the
# processes outnumber the cores (8 processes on 2 cores: a quarter each) ---
gflops_how="--gflops"
if [[ -z ${GFLOPS:-} ]]; then
  one=$(plan 10 "$bandwidth" | field flops_per_s)
  cores=$(nproc)
  share=$(calc "\"%.4f\", ($cores < $procs ? $cores / $procs : 1)")
  GFLOPS=$(calc "\"%.3f\", $one * $share / 1e9")
  gflops_how="sgemm it measured on one thread, $(calc "\"%.1f\", $one / 1e9"), x $share: $procs processes on $cores cores"
fi

# --- alpha and beta: gossipctl bench pingpong (two ranks on loopback) -------
# Over the sockets (--path tcp), as the netns hosts talk (and as measured before shared memory).
pingpong() { "$ctl" bench pingpong --path tcp --bytes "$1" --reps "$reps" | field seconds; }
alpha_s=$(pingpong 64)
big_s=$(pingpong "$ping_bytes")
alpha_us=$(calc "\"%.2f\", $alpha_s * 1e6")
beta_bits=$(calc "\"%.0f\", 8 * $ping_bytes / ($big_s - $alpha_s)")
plan "$alpha_us" "$beta_bits" >"$out/plan_loopback.json"
plan "$alpha_us" "$bandwidth" >"$out/plan_netns.json"

# --- the runs ---------------------------------------------------------------
# Every worker's /status, about every POLL seconds until compare exits, one
# line per worker per pass: time entry/id round, the training time at the end
# of that step (round / rounds_per_second: exact, whenever it is read before
# the next step ends), the communication time up to then (comm_ms_per_round x
# round), and the payload bytes per step by kind (forward, input gradient,
# weight gradient, halo) and the communication seconds up to then by kind.
poll() {  # compare_pid compare_out
  local pid args id host entry port t map
  local -A label
  while kill -0 "$1" 2>/dev/null; do
    local -a urls=()
    map=""
    for pid in $(pgrep -P "$1" || true); do
      if [[ -z ${label[$pid]:-} ]]; then
        args=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || continue
        id=$(sed -n 's/.* --id \([^ ]*\) .*/\1/p' <<<"$args")
        host=$(sed -n 's/.* --http \([^ ]*\):0 .*/\1/p' <<<"$args")
        entry=$(sed -n 's/.* --cluster-id compare-\([^ ]*\) .*/\1/p' <<<"$args")
        port=$(control_http_port "$2/$entry/$id.control" || true)
        [[ -n $id && -n $port ]] || continue
        label[$pid]="http://$host:$port/status=$entry/$id"
      fi
      urls+=("${label[$pid]%=*}")
      map+="${label[$pid]} "
    done
    t=$EPOCHREALTIME
    if ((${#urls[@]} > 0)); then
      { curl -s --max-time 1 -w '\n@@ %{url_effective}\n' "${urls[@]}" || true; } | awk -v t="$t" -v map="$map" '
        function num(f,  v) {
          if (!match(body, "\"" f "\":\"?[-0-9.eE+]+")) return ""
          v = substr(body, RSTART, RLENGTH); sub(/^"[^"]*":"?/, "", v); return v + 0
        }
        BEGIN { n = split(map, m, " "); for (i = 1; i <= n; i++) { split(m[i], kv, "="); lab[kv[1]] = kv[2] } }
        !/^@@ / { body = body $0; next }
        ($2 in lab) && (r = num("round")) > 0 && (rps = num("rounds_per_second")) > 0 {
          printf "%s %s %d %.9f %.9f %.0f %.0f %.0f %.0f %.9f %.9f %.9f %.9f\n", t, lab[$2], r, r / rps,
            num("comm_ms_per_round") * r / 1000, num("forward_bytes_per_step"), num("input_gradient_bytes_per_step"),
            num("weight_gradient_bytes_per_step"), num("halo_bytes_per_step"), num("forward_seconds_per_step") * r,
            num("input_gradient_seconds_per_step") * r, num("weight_gradient_seconds_per_step") * r,
            num("halo_seconds_per_step") * r
        }
        { body = "" }'
    fi
    sleep "$poll_s"
  done
}

# Per shape of a run: "grid-SHAPE step_median step_mean comm_median comm_mean bytes_per_step
# steps_timed processes fwd_s ingrad_s wgrad_s halo_s", seconds per step over every process's
# steps 2..STEPS (the first holds the connections' set-up); means from each process's totals,
# bytes its last reading.
measure() {  # trace shape
  awk -v e="grid-$2" -v N="$steps" '
    function median(v, n,  i, j, x) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
      return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { split($2, a, "/") } a[1] != e { next }
    { id = a[2]; r = $3; E[id, r] = $4; C[id, r] = $5; last[id] = r; bytes[id] = $6 + $7 + $8 + $9
      for (k = 1; k <= 4; k++) K[id, r, k] = $(9 + k) }
    END {
      n = 0; procs = 0; step = 0; comm = 0; by = 0
      for (id in last) {
        first = 0
        for (r = 1; r <= last[id]; r++) {
          if (!((id, r) in E)) continue
          if (r > 1 && ((id, r - 1) in E)) { d[++n] = E[id, r] - E[id, r - 1]; c[n] = C[id, r] - C[id, r - 1] }
          if (!first) first = r
        }
        if (last[id] < N || first == 0 || first == N) continue
        procs++; by += bytes[id]
        step += (E[id, N] - E[id, first]) / (N - first); comm += (C[id, N] - C[id, first]) / (N - first)
        for (k = 1; k <= 4; k++) kind[k] += (K[id, N, k] - K[id, first, k]) / (N - first)
      }
      if (n == 0 || procs == 0) { print e, "-", "-", "-", "-", "-", n, procs, "-", "-", "-", "-"; exit }
      printf "%s %.3f %.3f %.3f %.3f %.0f %d %d %.3f %.3f %.3f %.3f\n", e, median(d, n), step / procs, median(c, n),
        comm / procs, by / procs, n, procs, kind[1] / procs, kind[2] / procs, kind[3] / procs, kind[4] / procs
    }' "$1"
}

algos=$(printf 'grid:%s,' "${shapes[@]}")
algos=${algos%,}
declare -A loads
for net in "${networks[@]}"; do
  extra=()
  [[ $net == netns ]] && extra=(--netns --bandwidth "$bandwidth")
  loads[$net]="load $(cut -d' ' -f1-3 /proc/loadavg) before"
  "$ctl" compare --workers "$procs" --algos "$algos" --model mlp --epochs 1 --batch $((batch / procs)) \
    --train-limit $((steps * batch)) --test-limit "$test_limit" --threads 1 --hidden "$hidden" \
    --out "$out/$net" "${extra[@]}" >"$out/$net.log" 2>&1 &
  cmp=$!
  poll "$cmp" "$out/$net" >"$out/$net.trace"
  wait "$cmp" || echo "grid_claim.sh: gossipctl compare ($net) exited with $?: $(tail -n1 "$out/$net.log")" >&2
  cmp=""
  loads[$net]+=", $(cut -d' ' -f1-3 /proc/loadavg) after"
  for s in "${shapes[@]}"; do measure "$out/$net.trace" "$s"; done >"$out/$net.measured"
done

# --- the tables -------------------------------------------------------------
m() { awk -v e="grid-$2" -v k="$3" '$1 == e { print $k }' "$out/$1.measured" 2>/dev/null; }  # net shape column
pj() { shape_json "$out/plan_$1.json" "$2" | field "$3"; }                                      # plan shape field
words() { calc "\"%.3fM\", $1 / 1e6"; }
main=${networks[0]}
{
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  echo "grid_claim.sh at $commit, $(date +%F): mlp --hidden $hidden, grid batch $batch, $procs processes," \
    "$steps steps per shape; $(nproc) cores; the planner's compute at" \
    "$(calc "\"%.1f\", $(field flops_per_s <"$out/plan_netns.json") / 1e9") GFLOP/s per process" \
    "($gflops_how)"
  for net in "${networks[@]}"; do
    echo "$net: $( [[ $net == netns ]] && echo "one namespace per process, $bandwidth per host each way" ||
      echo "TCP loopback"), ${loads[$net]}"
  done
  echo
  echo "### 1. The paper's claim, measured ($main)"
  echo
  echo "Predicted: \`gossipctl plan grid --latency-us $alpha_us --bandwidth $( [[ $main == netns ]] && echo "$bandwidth" || echo "$beta_bits")\`" \
    "(input gradient reduce-scattered, as the grid runs it); words = floats one process sends per step."
  echo
  echo "| grid | words fwd | words in-grad | words w-grad | words halo | words total | pred comm s | pred step s |" \
    "meas step s: median (mean) | meas comm s/step: median (mean) | meas bytes/step ÷ pred |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for s in "${shapes[@]}"; do
    if [[ -n $(pj "$main" "$s" refused) ]]; then echo "| $s | refused: $(pj "$main" "$s" refused) |"; continue; fi
    total=$(pj "$main" "$s" total)
    step="$(m "$main" "$s" 2) ($(m "$main" "$s" 3))"
    comm="$(m "$main" "$s" 4) ($(m "$main" "$s" 5))"
    bytes=$(m "$main" "$s" 6)
    echo "| $s | $(words "$(pj "$main" "$s" forward)") | $(words "$(pj "$main" "$s" input_gradient)") |" \
      "$(words "$(pj "$main" "$s" weight_gradient)") | $(words "$(pj "$main" "$s" halo)") | **$(words "$total")** |" \
      "$(calc "\"%.3f\", $(pj "$main" "$s" communication_s)") | $(calc "\"%.3f\", $(pj "$main" "$s" step_s)") |" \
      "$step | $comm | $( [[ -n $bytes && $bytes != - ]] && calc "\"%.4f\", $bytes / (4 * $total)" || echo -) |"
  done
  echo
  predicted=$(for s in "${shapes[@]}"; do echo "$s $(pj "$main" "$s" step_s)"; done | known | order)
  measured=$(for s in "${shapes[@]}"; do echo "$s $(m "$main" "$s" 2)"; done | known | order)
  echo "Fastest first, predicted: $predicted; measured: $measured;" \
    "same order: $( [[ $predicted == "$measured" ]] && echo yes || echo NO)."
  best=$(for s in "${shapes[@]}"; do
    if ((${s%x*} > 1 && ${s#*x} > 1)); then echo "$s $(m "$main" "$s" 2)"; fi; done | known | sort -g -k2 | head -n1)
  pure_model=$(m "$main" "${procs}x1" 2)
  pure_batch=$(m "$main" "1x${procs}" 2)
  if [[ -n $best && -n $pure_model && -n $pure_batch && $pure_model != - && $pure_batch != - ]]; then
    echo "Best interior grid ${best% *} (${best#* } s) faster than ${procs}x1 ($pure_model s) and 1x${procs} ($pure_batch s):" \
      "$(calc "\"%s\", (${best#* } < $pure_model && ${best#* } < $pure_batch) ? \"yes\" : \"NO\"")."
  fi
  echo
  echo "### 2. Communication as modelled"
  echo
  echo "gossipctl bench pingpong (its two ranks on loopback: it cannot run across namespaces)," \
    "median of $reps: alpha = $alpha_us us (64 B, half the round trip)," \
    "beta = $(calc "\"%.2f\", $beta_bits / 8e9") GB/s ($ping_bytes B: bytes / (time - alpha))." \
    "loopback: planner at that alpha and beta; netns: at that alpha and the tc rate $bandwidth."
  echo
  header="| grid | messages/step"
  rule="| --- | ---"
  for net in "${networks[@]}"; do
    header+=" | $net: alpha-beta comm s | $net: meas comm s/step (mean) | $net: meas ÷ pred"
    rule+=" | --- | --- | ---"
  done
  echo "$header |"
  echo "$rule |"
  for s in "${shapes[@]}"; do
    row="| $s | $(pj "${networks[0]}" "$s" messages)"
    for net in "${networks[@]}"; do
      pred=$(pj "$net" "$s" communication_s)
      comm=$(m "$net" "$s" 5)
      row+=" | $(calc "\"%.4f\", ${pred:-0}") | ${comm:--} | $( [[ -n $comm && $comm != - ]] && calc "\"%.2f\", $comm / $pred" || echo -)"
    done
    echo "$row |"
  done
  echo
  echo "### 3. Where the communication goes ($main)"
  echo
  echo "Per kind: the planner's words x 4 bytes at beta (latency left out), against the seconds per step each" \
    "process waited on that kind's collectives (mean over the processes)."
  echo
  echo "| grid | fwd pred s | fwd meas s | in-grad pred s | in-grad meas s | w-grad pred s | w-grad meas s |" \
    "halo pred s | halo meas s |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  beta=$(field bandwidth_bytes_per_s <"$out/plan_$main.json")  # bytes per second
  for s in "${shapes[@]}"; do
    [[ -n $(pj "$main" "$s" refused) ]] && continue
    row="| $s"
    col=9
    for kind in forward input_gradient weight_gradient halo; do
      row+=" | $(calc "\"%.3f\", 4 * $(pj "$main" "$s" "$kind") / $beta") | $(m "$main" "$s" $col)"
      col=$((col + 1))
    done
    echo "$row |"
  done
  echo
  if (($(nproc) < procs)); then
    echo "$procs processes on $(nproc) cores: on loopback a process's communication time includes waiting for" \
      "peers that wait for a core, which the alpha-beta model does not price."
  fi
  echo
  echo "Steps timed (steps 2..$steps of every process): $(for net in "${networks[@]}"; do for s in "${shapes[@]}"; do
    echo -n "$net $s $(m "$net" "$s" 7) over $(m "$net" "$s" 8) processes; "; done; done)/status polled every $poll_s s."
} | tee "$out/table.md"
echo "grid_claim.sh: $(($(date +%s) - start)) s; compare reports, poll traces and this table in $out"
