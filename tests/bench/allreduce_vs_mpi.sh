#!/usr/bin/env bash
# Our ring allreduce (gossipctl bench allreduce) vs OpenMPI's MPI_Allreduce,
# both over TCP loopback, same sizes, same run. ratio = MPI seconds / our
# seconds (= our algbw / MPI algbw): >= 1.0 means we are at least as fast.
#
#   tests/bench/allreduce_vs_mpi.sh [BUILD_DIR]      (default: ./build)
# Env: PROCS="2 4"  FLOATS="1048576 4194304 16777216"  REPS=10  CHUNK_BYTES=1048576
set -euo pipefail
build="${1:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
gossipctl="$build/bin/gossipctl"
mpi="$build/bin/mpi_allreduce"
procs="${PROCS:-2 4}"
floats="${FLOATS:-1048576 4194304 16777216}"
reps="${REPS:-10}"
chunk="${CHUNK_BYTES:-1048576}"
[[ -x "$gossipctl" ]] || { echo "missing $gossipctl (build first)" >&2; exit 2; }
[[ -x "$mpi" ]] || { echo "missing $mpi (apt-get install openmpi-bin libopenmpi-dev, reconfigure)" >&2; exit 2; }

# OpenMPI refuses root unless told; TCP only (no shared memory), loopback only.
mpirun_args=(--oversubscribe --mca btl tcp,self --mca btl_tcp_if_include lo)
[[ $(id -u) -eq 0 ]] && mpirun_args+=(--allow-run-as-root)

field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }

printf '%-5s %-9s %12s %12s %10s %10s %7s %s\n' procs floats ours_s mpi_s ours_GBps mpi_GBps ratio exact
status=0
for p in $procs; do
  for n in $floats; do
    ours=$("$gossipctl" bench allreduce --procs "$p" --floats "$n" --reps "$reps" --chunk-bytes "$chunk")
    ref=$(mpirun "${mpirun_args[@]}" -np "$p" "$mpi" --floats "$n" --reps "$reps" | grep '"impl":"mpi"')
    os=$(field seconds <<<"$ours"); ms=$(field seconds <<<"$ref")
    og=$(field algbw_gbps <<<"$ours"); mg=$(field algbw_gbps <<<"$ref")
    ex=$(field exact <<<"$ours")
    ratio=$(awk -v a="$ms" -v b="$os" 'BEGIN { printf "%.2f", a / b }')
    printf '%-5s %-9s %12s %12s %10s %10s %7s %s\n' "$p" "$n" "$os" "$ms" "$og" "$mg" "$ratio" "$ex"
    [[ "$ex" == true ]] || status=1
  done
done
exit $status
