#!/usr/bin/env bash
# Open connections at N real processes (issue 53): N gossipd workers on
# loopback train Crossover-SGD to the end twice, without a bound on
# outbound connections and with --max-connections BOUND. Every second each
# process's descriptors (/proc/PID/fd), its outbound connections to
# members' control ports and the inbound ones to its own (ss) are counted;
# the table gives the most any process held, the least-recently-used closes
# and the closes senders were asked for (/metrics, read while the workers
# linger after training), the segments
# skipped, and whether the two runs ended with the same parameters (the
# same seed: equal only when no exchange was lost).
#
#   tests/bench/connection_bound.sh [GOSSIPD]
#   env: N (36), BOUND (16), EPOCHS (3), PER_WORKER (1024 samples, batches of 16),
#        DEADLINE_MS (gossipd's --segment-deadline-ms), ONLY_BOUND (skip the unbounded run),
#        KEEP (keep the logs), DEBUG (print every sample)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/bin/gossipd}
N=${N:-36}
BOUND=${BOUND:-16}
EPOCHS=${EPOCHS:-3}
PER_WORKER=${PER_WORKER:-1024}
dir=$(mktemp -d); [ -z "${KEEP:-}" ] || echo "files in $dir"
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
trap 'stop_all; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT

# The most outbound connections any process holds now: established, from a
# port that is not a member's to a member's control port (BASE .. BASE+N-1).
most_outbound() {  # BASE
  { ss -tnpH state established 2>/dev/null || true; } | awk -v lo="$1" -v hi="$(($1 + N))" '
    { split($3, l, ":"); split($4, r, ":"); lp = l[length(l)] + 0; rp = r[length(r)] + 0;
      if (rp >= lo && rp < hi && !(lp >= lo && lp < hi) && match($0, /pid=[0-9]+/)) n[substr($0, RSTART, RLENGTH)]++ }
    END { m = 0; for (p in n) if (n[p] > m) m = n[p]; print m }'
}

# The most inbound connections any member's control port holds now:
# established, to a member's control port (BASE .. BASE+N-1), by that port.
most_inbound() {  # BASE
  { ss -tnH state established 2>/dev/null || true; } | awk -v lo="$1" -v hi="$(($1 + N))" '
    { split($3, l, ":"); lp = l[length(l)] + 0; if (lp >= lo && lp < hi) n[lp]++ }
    END { m = 0; for (p in n) if (n[p] > m) m = n[p]; print m }'
}

ended() { cat "$dir"/w*.json 2>/dev/null | grep -c '"event": *"\(done\|failed\|stopped\)"' || true; }

metric() {  # PORT NAME
  { curl -s "127.0.0.1:$1/metrics" || true; } | awk -v m="$2" '$1 == m {printf "%.0f\n", $2; f = 1} END {if (!f) print 0}'
}

rejects() {  # PORT -> "reason count" for each reason this member dropped messages for
  { curl -s "127.0.0.1:$1/metrics" || true; } |
    sed -n 's/^gossipd_messages_rejected_total{reason="\([a-z_]*\)"} \([0-9.e+]*\)$/\1 \2/p' | awk '$2 > 0'
}

run() {  # BOUND
  local bound=$1 base=$((7400 + RANDOM % 400 * 8)) peers="" i
  for ((i = 0; i < N; i++)); do peers+="${peers:+,}w$i=tcp://127.0.0.1:$((base + i))"; done
  rm -f "$dir"/*.json
  for ((i = 0; i < N; i++)); do
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$bin" run --id "w$i" --listen "tcp://127.0.0.1:$((base + i))" \
      --peers "$peers" --algo crossover --hidden 16 --batch 16 --epochs "$EPOCHS" --train-limit $((N * PER_WORKER)) \
      --test-limit 200 --threads 1 --quiet ${DEADLINE_MS:+--segment-deadline-ms "$DEADLINE_MS"} --max-connections "$bound" --linger-ms 600000 --control-out "$dir/w$i.json" \
      --http "127.0.0.1:$((base + 4000 + i))" >"$dir/w$i.log" 2>&1 &
    pids+=($!)
  done
  local fds=0 out=0 in=0 t0=$SECONDS f o
  while ((SECONDS - t0 < 900)) && [ "$(ended)" -lt "$N" ]; do
    for ((i = 0; i < N; i++)); do
      f=$({ ls "/proc/${pids[i]}/fd" 2>/dev/null || true; } | wc -l)
      ((f > fds)) && fds=$f
    done
    o=$(most_outbound "$base")
    ((o > out)) && out=$o
    o=$(most_inbound "$base")
    ((o > in)) && in=$o
    [ -z "${DEBUG:-}" ] || echo "$((SECONDS - t0)) s: descriptors $fds, outbound $out, inbound $in" >&2
    sleep 1
  done
  local seconds=$((SECONDS - t0)) lru=0 over=0 asked=0 released=0 failed skipped hashes rejected
  for ((i = 0; i < N; i++)); do  # they linger: their counters are still served
    lru=$((lru + $(metric $((base + 4000 + i)) gossipd_connections_closed_lru_total)))
    over=$((over + $(metric $((base + 4000 + i)) gossipd_connections_over_bound_total)))
    asked=$((asked + $(metric $((base + 4000 + i)) gossipd_connections_close_asked_total)))
    released=$((released + $(metric $((base + 4000 + i)) gossipd_connections_closed_on_request_total)))
  done
  # Messages dropped on arrival, by reason, all members: a segment that came
  # after its round's deadline is "stale" (late), not lost.
  rejected=$(for ((i = 0; i < N; i++)); do rejects $((base + 4000 + i)); done |
    awk '{n[$1] += $2} END {for (r in n) printf "%s%s %d", (k++ ? ", " : ""), r, n[r]; if (!k) printf "none"}')
  stop_all
  failed=$(cat "$dir"/w*.json | grep -c '"event": *"failed"' || true)
  skipped=$(cat "$dir"/w*.json | grep -o '"segments_skipped": *"*[0-9]*' | grep -o '[0-9]*$' | awk '{s += $1} END {print s + 0}')
  hashes=$(cat "$dir"/w*.json | grep -o '"param_hash": *"[^"]*"' | sort | md5sum | cut -c1-8)
  echo "| $N | ${bound/#0/none} | $fds | $out | $in | $lru | $over | $asked / $released | $skipped | $rejected | $failed | $seconds | $hashes |"
}

echo "| members | --max-connections | most descriptors of a process | most outbound connections of a process | most inbound connections of a process | LRU closes (all members) | opened past the bound | senders asked to close / closed | segments skipped | messages dropped on arrival | processes failed | seconds | parameters (hash of all) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
[ -n "${ONLY_BOUND:-}" ] || run 0
run "$BOUND"
