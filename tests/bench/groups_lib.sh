# Sourced by the compute-groups benchmarks (groups_*.sh): one local cluster
# of `gossipd run --algo groups` over ipc:// in a private directory, its
# processes killed by pid on exit.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
cmake --build build -j2 --target gossipd >/dev/null
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT

# start_groups TAG WORKERS GROUPS [flags for every worker...]: starts the
# workers in the background (pids in $pids), logs in $dir/TAG.wI.log and
# --control-out records in $dir/TAG.wI.control (tests/bench/control.sh). A
# worker i gets the flags in the array SLOW_FLAGS too when i is in SLOW
# (a list of indices).
start_groups() {
  local tag=$1 n=$2 g=$3 peers="" i extra
  shift 3
  for ((i = 0; i < n; i++)); do peers+="${peers:+,}w$i=ipc://$dir/$tag.w$i.sock"; done
  pids=()
  for ((i = 0; i < n; i++)); do
    extra=()
    if [[ " ${SLOW:-} " == *" $i "* ]]; then extra=("${SLOW_FLAGS[@]}"); fi
    ./build/bin/gossipd run --id "w$i" --listen "ipc://$dir/$tag.w$i.sock" --peers "$peers" --algo groups \
      --compute-groups "$g" --threads 1 --quiet --control-out "$dir/$tag.w$i.control" "$@" "${extra[@]}" \
      > "$dir/$tag.w$i.log" 2>&1 &
    pids+=($!)
  done
}

# The value of FIELD in worker I's closing lines ("momentum", "fitted to its updates", "staleness mean", ...).
closing() {  # TAG I PATTERN (a sed expression capturing \1)
  sed -n "s/.*$3.*/\1/p" "$dir/$1.w$2.log" | tail -n 1
}

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
