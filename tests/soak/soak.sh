#!/usr/bin/env bash
# Soak test (not in CI): N workers (8) train for MINUTES (10) while every
# KILL_EVERY seconds (30) a random worker of the churn half (w4..w7) is
# SIGKILLed and restarted at once with its checkpoint directory and --join.
# The other half runs throughout, so its memory can be followed.
#
# Reports, per worker: rounds completed, test accuracy at the end, restarts,
# and for the processes alive from minute 2 to the end their peak RSS
# (VmHWM) at both times. Fails (exit 1) if any worker process died that the
# test did not kill, if a stable worker's peak RSS grew 10% or more from
# minute 2 to the end, or if a worker did not exit 0 on the final SIGTERM.
#
#   ./tests/soak/soak.sh                    # 8 workers, 10 minutes, crossover
#   N=8 MINUTES=10 KILL_EVERY=30 ALGO=sgp ./tests/soak/soak.sh
#
# Everything talks over ipc:// sockets in a temporary directory and HTTP on
# 127.0.0.1; logs and the summary go to out/soak/<time>/.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/control.sh

N="${N:-8}"
MINUTES="${MINUTES:-10}"
KILL_EVERY="${KILL_EVERY:-30}"
ALGO="${ALGO:-crossover}"
SEED="${SEED:-1}"
MARK="${MARK:-120}"  # seconds: when the first RSS reading is taken
for v in N MINUTES KILL_EVERY SEED MARK; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "soak.sh: $v='${!v}' is not a number" >&2; exit 2; }
done
[ "$N" -ge 4 ] || { echo "soak.sh: N must be at least 4" >&2; exit 2; }

./deploy/install-deps.sh --soak
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target gossipd >/dev/null
bin="$PWD/build/bin/gossipd"

dir=$(mktemp -d /tmp/gossipd_soak_XXXXXX)
mkdir -p "$dir/ckpt"
out="out/soak/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
declare -a pid gen killed_by_us restarts port
cleanup() {
  for i in "${!pid[@]}"; do kill -9 "${pid[$i]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

endpoint() { echo "ipc://$dir/w$1.sock"; }
peers=""
for ((i = 0; i < N; i++)); do peers+="${peers:+,}w$i=$(endpoint "$i")"; done

# start I initial|join
start() {
  local i=$1 how=$2 membership
  if [ "$how" = initial ]; then
    membership=(--peers "$peers")
  else
    local others=""
    for ((j = 0; j < N; j++)); do [ "$j" = "$i" ] || others+="${others:+,}$(endpoint "$j")"; done
    membership=(--join "$others")
  fi
  gen[$i]=$((${gen[$i]:-0} + 1))
  local log="$out/w$i.${gen[$i]}.log"
  OPENBLAS_NUM_THREADS=1 "$bin" run --id "w$i" --listen "$(endpoint "$i")" "${membership[@]}" \
    --algo "$ALGO" --seed "$SEED" --epochs 100000 --threads 1 --cluster-id soak --http 127.0.0.1:0 \
    --checkpoint-dir "$dir/ckpt/w$i" --checkpoint-every 200 --quiet --metrics-out "$out/w$i.jsonl" \
    --control-out "$out/w$i.${gen[$i]}.control" >"$log" 2>&1 &
  pid[$i]=$!
  killed_by_us[$i]=0
  port[$i]=""
}

http_port() {  # I -> port (waits up to 60 s for the worker's listening record)
  local i=$1 t
  for ((t = 0; t < 600; t++)); do
    if [ -z "${port[$i]}" ]; then
      port[$i]=$(control_http_port "$out/w$i.${gen[$i]}.control" || true)
    fi
    [ -n "${port[$i]}" ] && { echo "${port[$i]}"; return; }
    kill -0 "${pid[$i]}" 2>/dev/null || break
    sleep 0.1
  done
  echo ""
}

status_field() {  # I FIELD
  local p
  p=$(http_port "$1")
  [ -n "$p" ] || { echo "?"; return; }
  curl -s --max-time 2 "http://127.0.0.1:$p/status" 2>/dev/null |
    grep -o "\"$2\":\"\{0,1\}[0-9.e+-]*" | head -n 1 | sed 's/.*:"\{0,1\}//' || echo "?"
}

hwm_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

crashes=0
check_alive() {
  for ((i = 0; i < N; i++)); do
    if ! kill -0 "${pid[$i]}" 2>/dev/null && [ "${killed_by_us[$i]}" = 0 ]; then
      crashes=$((crashes + 1))
      echo "soak: w$i (pid ${pid[$i]}) died on its own; last lines of its log:" >&2
      tail -n 5 "$out/w$i.${gen[$i]}.log" >&2
      killed_by_us[$i]=1  # counted once
    fi
  done
}

echo "soak: $N workers ($ALGO), $MINUTES min, a churn worker killed and restarted every $KILL_EVERY s; logs in $out"
for ((i = 0; i < N; i++)); do start "$i" initial; done
for ((i = 0; i < N; i++)); do
  if [ -z "$(http_port "$i")" ]; then
    echo "soak: w$i did not start:" >&2
    tail -n 5 "$out/w$i.1.log" >&2
    exit 1
  fi
done

begin=$SECONDS
end=$((begin + MINUTES * 60))
next_kill=$((begin + KILL_EVERY))
declare -a hwm2 pid2
minute2_taken=0
RANDOM=$SEED
kills=0
while [ $SECONDS -lt $end ]; do
  sleep 1
  check_alive
  if [ $minute2_taken = 0 ] && [ $((SECONDS - begin)) -ge "$MARK" ]; then
    for ((i = 0; i < N; i++)); do hwm2[$i]=$(hwm_kb "${pid[$i]}"); pid2[$i]=${pid[$i]}; done
    minute2_taken=1
  fi
  if [ $SECONDS -ge $next_kill ] && [ $SECONDS -lt $((end - 5)) ]; then
    v=$((N / 2 + RANDOM % (N - N / 2)))
    killed_by_us[$v]=1
    kill -9 "${pid[$v]}" 2>/dev/null || true
    wait "${pid[$v]}" 2>/dev/null || true
    kills=$((kills + 1))
    restarts[$v]=$((${restarts[$v]:-0} + 1))
    echo "soak: $((SECONDS - begin)) s: SIGKILLed w$v, restarting it with --join"
    start "$v" join
    next_kill=$((next_kill + KILL_EVERY))
  fi
done
check_alive

# Final figures, then SIGTERM everyone and check they exit 0.
report="$out/summary.txt"
{
  echo "soak: $N workers, $ALGO, $MINUTES min, $kills SIGKILL+restart (every $KILL_EVERY s, churn half w$((N / 2))..w$((N - 1)))"
  printf '%-4s %9s %9s %9s %14s %14s %8s\n' worker rounds accuracy restarts "peak RSS @${MARK}s" "peak RSS end" growth
} >"$report"
grow_fail=0
for ((i = 0; i < N; i++)); do
  rounds=$(status_field "$i" round)
  acc=$(status_field "$i" test_accuracy)
  h_end=$(hwm_kb "${pid[$i]}")
  if [ "${pid2[$i]:-}" = "${pid[$i]}" ] && [ "${hwm2[$i]:-0}" -gt 0 ]; then
    growth=$(awk -v a="${hwm2[$i]}" -v b="$h_end" 'BEGIN { printf "%.1f%%", 100 * (b - a) / a }')
    if awk -v a="${hwm2[$i]}" -v b="$h_end" 'BEGIN { exit !((b - a) / a >= 0.10) }'; then grow_fail=1; fi
    h2="$((hwm2[$i] / 1024)) MiB"
  else
    growth="restarted"
    h2="-"
  fi
  printf '%-4s %9s %9s %9s %14s %14s %8s\n' "w$i" "$rounds" "$acc" "${restarts[$i]:-0}" "$h2" \
    "$((h_end / 1024)) MiB" "$growth" >>"$report"
done

exit_fail=0
for ((i = 0; i < N; i++)); do kill -TERM "${pid[$i]}" 2>/dev/null || true; done
for ((i = 0; i < N; i++)); do
  code=0
  wait "${pid[$i]}" || code=$?
  if [ "$code" != 0 ]; then
    exit_fail=1
    echo "w$i exited $code after SIGTERM" >>"$report"
  fi
done
echo "crashes of workers the test did not kill: $crashes" >>"$report"
cat "$report"
if [ $crashes -gt 0 ] || [ $grow_fail = 1 ] || [ $exit_fail = 1 ]; then
  echo "soak: FAILED" >&2
  exit 1
fi
echo "soak: passed"
