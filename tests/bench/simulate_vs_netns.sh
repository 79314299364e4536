#!/usr/bin/env bash
# gossipctl simulate's time model held to the network: for each N, a
# `gossipctl compare --netns --bandwidth RATE` run (N network-namespace
# hosts on a private bridge, root) of Crossover-SGD, SGP and AllReduce-SGD,
# then the model of each protocol (`simulate --no-train`) at the same N,
# rate, tbf burst (256 KiB, as compare shapes its links) and rounds, its step
# the compute the run measured (round time less
# the time waited on the exchange: the model prices links, the step is its
# input). With STRAGGLE_MS > 0 a second run slows worker w1's every step by
# that much (gossipd run --inject-step-delay-ms, through a --gossipd
# wrapper) and the model gets the same straggler (--stragglers w1=(step +
# delay) / step). Prints measured and modelled round ms and their ratio.
# Usage: simulate_vs_netns.sh [workers="8 16"] [rate=100mbit] [straggle_ms=40]
set -euo pipefail
cd "$(dirname "$0")/../.."
NS=${1:-"8 16"}; RATE=${2:-100mbit}; STRAGGLE=${3:-40}
ALGOS=crossover,sgp,allreduce
cmake --build build -j2 --target gossipd gossipctl >/dev/null
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/slow-w1" <<WRAP
#!/bin/sh
# gossipd, with worker w1's steps slowed by ${STRAGGLE} ms
for a in "\$@"; do [ "\$a" = w1 ] && exec "$PWD/build/bin/gossipd" "\$@" --inject-step-delay-ms ${STRAGGLE}; done
exec "$PWD/build/bin/gossipd" "\$@"
WRAP
chmod +x "$dir/slow-w1"
# "algo round_ms comm_ms rounds" per protocol of a summary.json
rows() {
  python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["results"]:
    rps = r.get("rounds_per_second", 0)
    print(r["algo"], 1000 / rps if rps else 0, r.get("comm_ms_per_round", 0), r.get("rounds", 0))' "$1"
}
printf "%-6s %-10s %-10s %10s %10s %10s %8s\n" workers protocol straggler measured compute modelled ratio
for n in $NS; do
  runs=(0); [ "$STRAGGLE" = 0 ] || runs+=("$STRAGGLE")
  for straggle in "${runs[@]}"; do
    out="$dir/n$n-s$straggle"
    extra=(); [ "$straggle" = 0 ] || extra=(--gossipd "$dir/slow-w1")
    ./build/bin/gossipctl compare --netns --bandwidth "$RATE" --workers "$n" --algos "$ALGOS" --epochs 1 \
      --batch 32 --train-limit $((n * 32 * 40)) --test-limit 500 --out "$out" "${extra[@]}" > "$out.log" 2>&1 ||
      { echo "compare failed: $(tail -3 "$out.log")"; continue; }
    rows "$out/summary.json" | while read -r algo round comm rounds; do
      # The compute a round took on this machine (the mean over the workers:
      # less the straggler's delay, which it alone takes).
      step=$(echo "$round - $comm - $straggle / $n" | bc -l)
      strag=(); [ "$straggle" = 0 ] || strag=(--stragglers "w1=$(echo "($step + $straggle) / $step" | bc -l)")
      ./build/bin/gossipctl simulate --no-train --workers "$n" --bandwidth "$RATE" --algos "$algo" \
        --rounds "$rounds" --step-ms "$step" --burst-kb 256 --out "$out.sim-$algo" "${strag[@]}" > /dev/null
      read -r _ modelled _ _ < <(rows "$out.sim-$algo/summary.json")
      printf "%-6s %-10s %-10s %10.1f %10.1f %10.1f %8.3f\n" "$n" "$algo" "${straggle}ms" "$round" "$step" \
        "$modelled" "$(echo "$modelled / $round" | bc -l)"
    done
  done
done
