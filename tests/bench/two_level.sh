#!/usr/bin/env bash
# AllReduce-SGD's collective where hosts hold several members (issue 57):
# the two levels (protocol::TwoLevelCollectives: a reduce-scatter in each
# host over shared memory, an allreduce of each block across the hosts, an
# allgather in each host) against one flat ring over every member (the
# schedule protocol::Allreduce picks), alternately in the same processes
# (gossipctl bench two-level, root: HOSTS network namespaces of PER_HOST
# processes, every host's link capped at RATE). Prints one row per size and
# placement: both medians (the slowest rank per repetition) and the flat
# ring's time over the two levels' (> 1: two levels faster). Exits 1 when a
# sum was not exact or a run failed.
#
#   tests/bench/two_level.sh [GOSSIPCTL]
#   env: HOSTS (4), PER_HOST (2), RATE (100mbit; "" for none), SIZES (bytes per rank, K/M
#        suffixes: "32K 128K 256K 1M 4M 8M 32M"), PLACEMENTS ("block round-robin"),
#        REPS (6; 3 from 32M up), BIND (core: process r on CPU r mod #CPUs; none),
#        OP (allreduce, or sharded: a reduce-scatter then an allgather, as
#        the pipeline's replicas and the compute groups run them)
set -euo pipefail
cd "$(dirname "$0")/../.."
ctl=${1:-build/bin/gossipctl}
HOSTS=${HOSTS:-4}; PER_HOST=${PER_HOST:-2}; RATE=${RATE-100mbit}
SIZES=${SIZES:-"32K 128K 256K 1M 4M 8M 32M"}; PLACEMENTS=${PLACEMENTS:-"block round-robin"}
[[ $(id -u) -eq 0 ]] || { echo "two_level.sh: network namespaces need root" >&2; exit 2; }
to_bytes() {
  case "$1" in
    *K | *k) echo $((${1%?} * 1024)) ;;
    *M | *m) echo $((${1%?} * 1048576)) ;;
    *) echo "$1" ;;
  esac
}
echo "| bytes per rank | placement | flat ring ms | two levels ms | flat / two levels | exact |"
echo "| --- | --- | --- | --- | --- | --- |"
status=0
for size in $SIZES; do
  bytes=$(to_bytes "$size")
  reps=${REPS:-$((bytes >= 33554432 ? 3 : 6))}
  for placement in $PLACEMENTS; do
    line=$("$ctl" bench two-level --hosts "$HOSTS" --per-host "$PER_HOST" --bandwidth "$RATE" \
      --placement "$placement" --op "${OP:-allreduce}" --bytes "$bytes" --reps "$reps" --bind-to "${BIND:-core}" 2>&1 | tail -1)
    python3 - "$size" "$line" <<'PY' || status=1
import json, sys
size, line = sys.argv[1], sys.argv[2]
try:
    d = json.loads(line)
except ValueError:
    print(f"| {size} | failed: {line} | | | | |"); sys.exit(1)
print("| %s | %s | %.1f | %.1f | %.2f | %s |" % (size, d["placement"], d["flat_seconds"] * 1e3,
      d["two_level_seconds"] * 1e3, d["flat_over_two_level"], "yes" if d["exact"] else "NO"))
sys.exit(0 if d["exact"] else 1)
PY
  done
done
links="not capped"
[[ -n $RATE ]] && links="capped at $RATE"
echo "(${OP:-allreduce}; $HOSTS hosts of $PER_HOST processes, links $links)"
exit $status
