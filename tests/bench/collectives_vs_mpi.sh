#!/usr/bin/env bash
# Our collectives (gossipctl bench allreduce|allgather|reduce-scatter|pingpong)
# against OpenMPI's (tests/bench/mpi_collectives.c), both over TCP loopback,
# same sizes (bytes per rank, nccl-tests' convention), same timing: a
# barrier before each repetition, the slowest rank per repetition (pingpong:
# half the round trip). Each case runs ours and MPI alternately, RUNS times
# each (ours, mpi, ours, mpi, ...), every run REPS repetitions; the table
# shows the median of the runs' medians and the min of their mins.
# ratio = MPI median / ours (>= 1.0: we are at least as fast); min ratio
# likewise for the fastest repetitions. Exits 1 when a result is not exact
# (bit-identical to the serial result) or a run failed.
#
#   tests/bench/collectives_vs_mpi.sh [BUILD_DIR]      (default: ./build)
# Env: OPS="allreduce allgather reduce-scatter pingpong"  PROCS="2 4" (pingpong: 2 only)
#      SIZES="8K 32K 128K 512K 2M 8M 32M 64M" (bytes; K/M suffixes)  REPS=30  RUNS=2
#      PATHS="shm tcp" (shm: ours through shared memory, the default between members on one
#      host, against MPI's shared-memory transport, --mca btl self,vader; tcp: both over TCP
#      loopback; zmq: NodeOptions::data_path; curve: CURVE on, which turns the direct path
#      off: encrypted ZeroMQ against MPI's plain TCP)
#      CHUNK_BYTES, SPIN_US, CONGESTION (ours; unset: defaults; CONGESTION=system: the
#      kernel's default congestion control, which MPI's connections always have)
#      MPI_ARGS: more mpirun arguments, e.g. "--mca coll_tuned_use_dynamic_rules 1
#      --mca coll_tuned_reduce_scatter_block_algorithm 2" (OpenMPI 4.1's default
#      reduce_scatter_block is a linear reduce then scatter, slow over TCP)
set -euo pipefail
build="${1:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
gossipctl="$build/bin/gossipctl"
mpi="$build/bin/mpi_collectives"
ops="${OPS:-allreduce allgather reduce-scatter pingpong}"
procs_list="${PROCS:-2 4}"
sizes="${SIZES:-8K 32K 128K 512K 2M 8M 32M 64M}"
reps="${REPS:-30}"
runs="${RUNS:-2}"
paths="${PATHS:-shm tcp}"
[[ -x "$gossipctl" ]] || { echo "missing $gossipctl (build first)" >&2; exit 2; }
[[ -x "$mpi" ]] || { echo "missing $mpi (apt-get install openmpi-bin libopenmpi-dev, reconfigure)" >&2; exit 2; }
((runs >= 1)) || { echo "RUNS must be >= 1" >&2; exit 2; }

# OpenMPI refuses root unless told; its transport follows the path (run_case).
mpirun_args=(--oversubscribe)
[[ $(id -u) -eq 0 ]] && mpirun_args+=(--allow-run-as-root)
read -r -a extra <<<"${MPI_ARGS:-}"
mpirun_args+=("${extra[@]}")
ours_extra=()
[[ -n "${CHUNK_BYTES:-}" ]] && ours_extra+=(--chunk-bytes "$CHUNK_BYTES")
[[ -n "${SPIN_US:-}" ]] && ours_extra+=(--spin-us "$SPIN_US")
[[ -n "${CONGESTION:-}" ]] && ours_extra+=(--congestion "$CONGESTION")

to_bytes() {
  case "$1" in
    *K | *k) echo $((${1%?} * 1024)) ;;
    *M | *m) echo $((${1%?} * 1048576)) ;;
    *) echo "$1" ;;
  esac
}
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,}\"]*\).*/\1/p"; }
# median (mean of the middle two for an even count) and min of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
minimum() { printf '%s\n' "$@" | sort -g | head -n1; }
us() { awk -v s="$1" 'BEGIN { printf "%.1f", s * 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf (b > 0 ? "%.2f" : "-"), a / b }'; }

status=0
# One case: RUNS alternating runs of each; prints one table row.
run_case() {
  local op=$1 path=$2 p=$3 bytes=$4 i out
  local -a om=() on=() mm=() mn=()
  local exact=yes
  local -a path_args=(--path "$path")
  [[ $path == curve ]] && path_args=(--path zmq --curve)
  # MPI over the same medium: shared memory (vader) against ours, else TCP on loopback.
  local -a mpi_path_args=(--mca btl tcp,self --mca btl_tcp_if_include lo)
  [[ $path == shm ]] && mpi_path_args=(--mca btl self,vader)
  for ((i = 0; i < runs; i++)); do
    if ! out=$("$gossipctl" bench "$op" --procs "$p" --bytes "$bytes" --reps "$reps" "${path_args[@]}" \
      "${ours_extra[@]}"); then
      exact="NO (ours failed)"; status=1; break
    fi
    om+=("$(field seconds <<<"$out")"); on+=("$(field min_seconds <<<"$out")")
    [[ $(field exact <<<"$out") == true ]] || { exact="NO (ours)"; status=1; }
    if ! out=$(mpirun "${mpirun_args[@]}" "${mpi_path_args[@]}" -np "$p" "$mpi" --op "$op" --bytes "$bytes" --reps "$reps" |
      grep '"impl":"mpi"'); then
      exact="NO (MPI failed)"; status=1; break
    fi
    mm+=("$(field seconds <<<"$out")"); mn+=("$(field min_seconds <<<"$out")")
    [[ $(field exact <<<"$out") == true ]] || { exact="NO (MPI)"; status=1; }
  done
  if ((${#om[@]} == 0 || ${#mm[@]} == 0)); then
    printf '| %s | %s | %s | %s | - | - | - | - | - | - | %s |\n' "$op" "$path" "$p" "$bytes" "$exact"
    return
  fi
  local ours_med ours_min mpi_med mpi_min
  ours_med=$(median "${om[@]}"); ours_min=$(minimum "${on[@]}")
  mpi_med=$(median "${mm[@]}"); mpi_min=$(minimum "${mn[@]}")
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$op" "$path" "$p" "$bytes" \
    "$(us "$ours_med")" "$(us "$ours_min")" "$(us "$mpi_med")" "$(us "$mpi_min")" \
    "$(ratio "$mpi_med" "$ours_med")" "$(ratio "$mpi_min" "$ours_min")" "$exact"
}

echo "| op | path | procs | bytes | ours median µs | ours min µs | MPI median µs | MPI min µs | ratio | min ratio | exact |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for op in $ops; do
  for path in $paths; do
    for p in $procs_list; do
      [[ $op == pingpong && $p != 2 ]] && continue
      for size in $sizes; do
        run_case "$op" "$path" "$p" "$(to_bytes "$size")"
      done
    done
  done
done
exit $status
