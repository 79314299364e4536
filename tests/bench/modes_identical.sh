#!/usr/bin/env bash
# Every mode trained by two gossipd builds on the same small fixed run, the
# workers' final round, test accuracy and parameter hash side by side: a
# change that must not change behaviour (a refactor) prints SAME on every
# line. Reads the done line of each worker's log (both builds print it).
#
#   tests/bench/modes_identical.sh OLD_GOSSIPD [NEW_GOSSIPD]
#
# The modes run here are the deterministic ones (compute groups with g = 1:
# between groups the exchange depends on timing).
set -u
old=${1:?usage: modes_identical.sh OLD_GOSSIPD [NEW_GOSSIPD]}
new=${2:-$(cd "$(dirname "$0")/../.." && pwd)/build/bin/gossipd}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--batch 32 --epochs 1 --threads 1 --quiet --test-limit 200)

# One run: BIN TAG N ARGS... -> "round accuracy hash" of each worker.
run() {
  local bin=$1 tag=$2 n=$3 peers="" i
  shift 3
  local d=$work/$tag
  mkdir -p "$d"
  for ((i = 0; i < n; i++)); do peers+="${peers:+,}w$i=ipc://$d/w$i.sock"; done
  for ((i = 0; i < n; i++)); do
    OPENBLAS_NUM_THREADS=1 timeout 300 "$bin" run --id "w$i" --listen "ipc://$d/w$i.sock" --peers "$peers" \
      "${common[@]}" "$@" >"$d/w$i.log" 2>&1 &
  done
  wait
  for ((i = 0; i < n; i++)); do
    sed -n 's/.*done: round \([0-9]*\) test_accuracy \([0-9.]*\) param_hash \([0-9a-f]*\).*/\1 \2 \3/p' "$d/w$i.log" |
      tr '\n' ' '
  done
}

status=0
while read -r name n args; do
  # shellcheck disable=SC2086  # the list's words are flags
  a=$(run "$old" "old-$name" "$n" $args)
  # shellcheck disable=SC2086
  b=$(run "$new" "new-$name" "$n" $args)
  if [[ -n $a && $a == "$b" ]]; then s=SAME; else s=DIFF status=1; fi
  echo "$s $name: old [$a] new [$b]"
done <<'LIST'
allreduce 2 --algo allreduce --train-limit 1200
allreduce-local 2 --algo allreduce --local-steps 4 --train-limit 1200
crossover 2 --algo crossover --train-limit 1200
crossover-hierarchical 4 --algo crossover --hierarchical --group g --train-limit 1200
sgp 2 --algo sgp --train-limit 1200
osgp 2 --algo osgp --train-limit 1200
groups-1 2 --algo groups --compute-groups 1 --train-limit 1200
grid 2 --algo grid --grid 2x1 --train-limit 1200
grid-cnn 2 --algo grid --grid 1x2 --model cnn --train-limit 256
pipeline 2 --algo pipeline --stages 2 --partition 3,2 --micro-batches 4 --schedule 1f1b --train-limit 1200
pipeline-async 2 --algo pipeline --stages 2 --partition 3,2 --micro-batches 4 --schedule 1f1b-async --train-limit 1200
pipeline-cnn 2 --algo pipeline --stages 2 --partition 4,6 --micro-batches 4 --schedule 1f1b --model cnn --train-limit 256
sparse 2 --algo sparse --neurons 256 --layers 4 --train-limit 1200
LIST
exit $status
