#!/usr/bin/env bash
# gossipctl simulate's WAN model held to the emulated WAN: for each entry, a
# `gossipctl compare --netns --preset wan` run (16 network-namespace hosts
# in 4 regions, rates in the kernel, delay and loss in the transport; root),
# then `gossipctl simulate --no-train --preset wan` of the same entry at the
# same rounds, its step the compute the run measured (the round less the
# time waited on the exchange, the workers' mean: the model prices the
# network, the step is its input). Prints the measured round ms (the
# workers' mean rate, as compare's report, and the slowest worker's), the
# modelled (the slowest member's, as simulate --no-train reports) and the
# ratio of the two slowest.
# Entries: crossover (flat, paced), crossover/auto (hierarchical over
# --groups auto), allreduce, allreduce/int8 (--compress int8); every one
# with --segment-deadline-ms DEADLINE.
# Usage: simulate_vs_wan.sh [entries="crossover crossover/auto allreduce allreduce/int8"]
#                           [rounds=40] [deadline_ms=500]
set -euo pipefail
cd "$(dirname "$0")/../.."
ENTRIES=${1:-"crossover crossover/auto allreduce allreduce/int8"}; ROUNDS=${2:-40}; DEADLINE=${3:-500}
cmake --build build -j2 --target gossipd gossipctl >/dev/null
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# "slowest_round_ms compute_ms" of the workers of a compare entry
# (OUT/wan/ENTRY/w*.jsonl): the slowest worker's round, and the mean of each
# worker's round less its exchange
workers() {
  python3 -c 'import glob,json,sys
ends = [json.loads(open(f).read().splitlines()[-1])
        for f in glob.glob(sys.argv[1] + "/wan/*/w*.jsonl") if not f.endswith(".wall.jsonl")]
rounds = [1000 / e["rounds_per_second"] for e in ends]
print(max(rounds), sum(r - e["comm_ms_per_round"] for r, e in zip(rounds, ends)) / len(ends))' "$1"
}
# "round_ms comm_ms rounds" of the one result of a summary.json
row() {
  python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))["results"][0]
rps = r.get("rounds_per_second", 0)
print(1000 / rps if rps else 0, r.get("comm_ms_per_round", 0), r.get("rounds", 0))' "$1"
}
printf "%-16s %10s %10s %10s %10s %8s\n" entry measured slowest compute modelled ratio
for entry in $ENTRIES; do
  algo=${entry%%/*}; variant=${entry#"$algo"}; variant=${variant#/}
  flags=(--algos "$algo" --segment-deadline-ms "$DEADLINE")
  case $variant in
    auto) flags+=(--groups auto) ;;
    "") ;;
    *) flags+=(--compress "$variant") ;;
  esac
  out="$dir/${entry//\//-}"
  ./build/bin/gossipctl compare --netns --preset wan "${flags[@]}" --epochs 1 --evals-per-epoch 1 \
    --train-limit $((16 * 64 * ROUNDS)) --test-limit 500 --out "$out" > "$out.log" 2>&1 ||
    { echo "$entry: compare failed: $(tail -3 "$out.log")"; continue; }
  read -r round _ rounds < <(row "$out/wan/summary.json")
  read -r slow step < <(workers "$out")
  ./build/bin/gossipctl simulate --no-train --preset wan "${flags[@]}" --rounds "$rounds" --step-ms "$step" \
    --out "$out.sim" > "$out.sim.log" 2>&1 || { echo "$entry: simulate failed: $(tail -3 "$out.sim.log")"; continue; }
  read -r modelled _ _ < <(row "$out.sim/summary.json")
  printf "%-16s %10.1f %10.1f %10.1f %10.1f %8.3f\n" "$entry" "$round" "$slow" "$step" "$modelled" \
    "$(echo "$modelled / $slow" | bc -l)"
done
