#!/usr/bin/env bash
# A joiner's download from one member against several at once (issue 53):
# N gossipd workers on loopback train Crossover-SGD on an MLP of about 16 MB
# of parameters (784-2560-768-10: 3.98 M floats, and as many of momentum),
# and joiners enter one at a time, alternately with --join-donors 1 and
# --join-donors DONORS, each leaving (SIGTERM) once it is admitted. Per
# joiner: the seconds from its launch until its /status says it joined (it
# was admitted: the round it enters at is announced; its process start on
# the loaded machine included), the join's own milliseconds from its first
# HELLO to its admission, and the download's (from the first share asked to
# the last float checked), from its /status's `joined`. Prints a row per
# joiner and the medians.
#
#   tests/bench/join_donors.sh [GOSSIPD]
#   env: N (36), DONORS (4), REPS (3 of each), HIDDEN (2560,768), BATCH (16), KEEP (keep the logs)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/bin/gossipd}
N=${N:-36}
DONORS=${DONORS:-4}
REPS=${REPS:-3}
HIDDEN=${HIDDEN:-2560,768}
BATCH=${BATCH:-16}
dir=$(mktemp -d); [ -z "${KEEP:-}" ] || echo "files in $dir"
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
trap 'stop_all; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT

base=$((7400 + RANDOM % 400 * 8))
common=(--algo crossover --hidden "$HIDDEN" --batch "$BATCH" --epochs 1000 --train-limit $((N * 256)) --test-limit 100
  --threads 1 --quiet --segment-deadline-ms 5000 --timeout-ms 60000 --startup-timeout-ms 120000)
peers=""
for ((i = 0; i < N; i++)); do peers+="${peers:+,}w$i=tcp://127.0.0.1:$((base + i))"; done
for ((i = 0; i < N; i++)); do
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$bin" run --id "w$i" --listen "tcp://127.0.0.1:$((base + i))" \
    --peers "$peers" "${common[@]}" --http "127.0.0.1:$((base + 4000 + i))" >"$dir/w$i.log" 2>&1 &
  pids+=($!)
done

round_of() { { curl -s "127.0.0.1:$1/status" || true; } | grep -o '"round": *"*[0-9]*' | grep -o '[0-9]*$' || echo 0; }
t0=$SECONDS
until [ "$(round_of $((base + 4000)))" -ge 3 ]; do
  ((SECONDS - t0 < 600)) || { echo "the cluster made no 3 rounds in 600 s" >&2; exit 1; }
  sleep 1
done
echo "cluster of $N training (round $(round_of $((base + 4000))) after $((SECONDS - t0)) s)"

join_once() {  # ID DONORS -> "seconds join_ms answer_ms download_ms wait_ms shares distinct_donors reasked taken_over"
  local id=$1 donors=$2 port=$((base + 3000 + RANDOM % 900)) start pid st=""
  start=$(date +%s.%N)
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$bin" run --id "$id" --listen "tcp://127.0.0.1:0" \
    --join "tcp://127.0.0.1:$base" --join-donors "$donors" "${common[@]}" --http "127.0.0.1:$port" \
    >"$dir/$id.log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    st=$({ curl -s "127.0.0.1:$port/status" || true; } | tr -d '\n ')
    [[ $st == *'"joined":'* ]] && break
    sleep 0.1
  done
  local took
  took=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN {print a - b}')
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  [[ $st == *'"joined":'* ]] || { echo "$id never joined: $(tail -2 "$dir/$id.log")" >&2; exit 1; }
  local ms join answer n distinct re wait taken list
  ms=$(grep -o '"download_ms":[0-9.e+]*' <<<"$st" | cut -d: -f2)
  join=$(grep -o '"join_ms":[0-9.e+]*' <<<"$st" | cut -d: -f2)
  answer=$(grep -o '"answer_ms":[0-9.e+]*' <<<"$st" | cut -d: -f2)
  wait=$(grep -o '"snapshot_wait_ms":[0-9.e+]*' <<<"$st" | cut -d: -f2)
  list=$(grep -o '"donors":\[[^]]*\]' <<<"$st" | sed 's/.*\[//; s/\]//')
  n=$(tr ',' '\n' <<<"$list" | wc -l)
  distinct=$(tr ',' '\n' <<<"$list" | sort -u | wc -l)
  re=$(grep -o '"shares_reasked":[0-9]*' <<<"$st" | cut -d: -f2 || true)
  taken=$(grep -o '"shares_taken_over":[0-9]*' <<<"$st" | cut -d: -f2 || true)
  printf '%.2f %.0f %.0f %.0f %.0f %d %d %d %d\n' "$took" "$join" "$answer" "$ms" "$wait" "$n" "$distinct" "${re:-0}" "${taken:-0}"
}

echo "| joiner | --join-donors | shares | donors that sent one | launch to admitted (s) | HELLO to admitted (ms) | of it to the contact's answer (ms) | download (ms) | of it waiting for a donor's snapshot (ms) | shares asked again | taken over |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
: >"$dir/one"; : >"$dir/many"
for ((r = 0; r < REPS; r++)); do
  for d in 1 "$DONORS"; do
    id="j${r}d$d"
    read -r took join answer ms wait n distinct re taken < <(join_once "$id" "$d")
    echo "| $id | $d | $n | $distinct | $took | $join | $answer | $ms | $wait | $re | $taken |"
    if [ "$d" = 1 ]; then f=one; else f=many; fi
    echo "$took $ms $((ms - wait)) $join $answer" >>"$dir/$f"
    sleep 3  # its LEAVE reaches every member before the next joiner's table is taken
  done
done
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
echo
for f in one many; do
  echo "medians, $([ $f = one ] && echo "one donor" || echo "$DONORS donors"): $(cut -d' ' -f1 "$dir/$f" | median) s launch to admitted," \
    "$(cut -d' ' -f4 "$dir/$f" | median) ms HELLO to admitted ($(cut -d' ' -f5 "$dir/$f" | median) to the answer)," \
    "$(cut -d' ' -f2 "$dir/$f" | median) ms download," \
    "$(cut -d' ' -f3 "$dir/$f" | median) ms of it streaming"
done
