#!/usr/bin/env bash
# Rounds per second of Crossover-SGD (flat and hierarchical, groups of 8),
# SGP and AllReduce-SGD from 16 to 10,000 workers on gossipctl simulate's
# time model alone (--no-train: the MLP's segments, the step priced by its
# layer profile), at each of RATES: a markdown table, and a plot of rounds
# per second against workers (log-log), one line per protocol and rate, in
# PLOT (issue 54).
# Usage: simulate_rounds.sh [PLOT=tests/bench/plots/simulate-rounds.svg]
#   (env: NS, RATES, ROUNDS, BATCH)
set -euo pipefail
cd "$(dirname "$0")/../.."
PLOT=${1:-tests/bench/plots/simulate-rounds.svg}
NS=${NS:-"16 32 64 128 256 512 1024 2048 4096 10000"}; RATES=${RATES:-"100mbit 10gbit"}
ROUNDS=${ROUNDS:-50}; BATCH=${BATCH:-32}
cmake --build build -j2 --target gossipctl >/dev/null
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "| workers | rate | protocol | rounds/s | round ms | bytes/worker/round |"
echo "| --- | --- | --- | --- | --- | --- |"
for rate in $RATES; do
  for n in $NS; do
    for variant in flat hierarchical; do
      flags=(--algos crossover,sgp,allreduce); suffix=""
      [ "$variant" = flat ] || { flags=(--algos crossover --groups $((n / 8))); suffix=" hierarchical"; }
      out="$dir/$rate-$n-$variant"
      ./build/bin/gossipctl simulate --no-train --workers "$n" --bandwidth "$rate" --rounds "$ROUNDS" \
        --batch "$BATCH" --out "$out" "${flags[@]}" > /dev/null
      python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["results"]:
    algo = r["algo"] + sys.argv[4]
    print("| %s | %s | %s | %.2f | %.1f | %.0f |" % (sys.argv[2], sys.argv[3], algo, r["rounds_per_second"],
          1000 / r["rounds_per_second"], r["bytes_per_worker_per_round"]))
    with open(sys.argv[5], "a") as f:
        f.write("%s %s %s\n" % (algo.replace(" ", "-") + "@" + sys.argv[3], sys.argv[2], r["rounds_per_second"]))' \
        "$out/summary.json" "$n" "$rate" "$suffix" "$dir/points"
    done
  done
done
mkdir -p "$(dirname "$PLOT")"
series=$(cut -d' ' -f1 "$dir/points" | sort -u)
plot=""
for s in $series; do
  grep "^$s " "$dir/points" | cut -d' ' -f2,3 > "$dir/$s.dat"
  plot+="${plot:+, }'$dir/$s.dat' using 1:2 with linespoints title '${s//@/ at }'"
done
gnuplot <<GP
set terminal svg size 800,500
set output '$PLOT'
set logscale xy
set xlabel 'workers'
set ylabel 'rounds per second (modelled)'
set title 'gossipctl simulate --no-train: MLP, batch $BATCH, step priced by the layer profile'
set key outside right
plot $plot
GP
echo "(plot in $PLOT)"
