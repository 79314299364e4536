#!/usr/bin/env bash
# Our ring allreduce (gossipctl bench allreduce) vs OpenMPI's MPI_Allreduce
# (tests/bench/mpi_collectives.c),
# both over TCP loopback, same sizes, same run. ratio = MPI seconds / our
# seconds (= our algbw / MPI algbw): >= 1.0 means we are at least as fast.
# seconds are medians over the repetitions; min_ratio compares the fastest
# repetition of each (how close the data paths are without scheduling noise).
#
#   tests/bench/allreduce_vs_mpi.sh [BUILD_DIR]      (default: ./build)
# Env: PROCS="2 4"  FLOATS="1048576 4194304 16777216"  REPS=10  CHUNK_BYTES=1048576
set -euo pipefail
build="${1:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
gossipctl="$build/bin/gossipctl"
mpi="$build/bin/mpi_collectives"
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

# MPI_Allreduce picks its algorithm by size (Rabenseifner's halving-doubling
# at 4 ranks here); mpi_ring_s forces OpenMPI's ring, the schedule ours runs.
ring_args=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4)

printf '%-5s %-9s %10s %10s %6s %10s %10s %9s %11s %10s %s\n' procs floats ours_s mpi_s ratio \
  ours_min_s mpi_min_s min_ratio mpi_ring_s ring_ratio exact
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
status=0
for p in $procs; do
  for n in $floats; do
    ours=$("$gossipctl" bench allreduce --procs "$p" --floats "$n" --reps "$reps" --chunk-bytes "$chunk")
    ref=$(mpirun "${mpirun_args[@]}" -np "$p" "$mpi" --op allreduce --floats "$n" --reps "$reps" | grep '"impl":"mpi"')
    ring=$(mpirun "${mpirun_args[@]}" "${ring_args[@]}" -np "$p" "$mpi" --op allreduce --floats "$n" --reps "$reps" |
      grep '"impl":"mpi"')
    os=$(field seconds <<<"$ours"); ms=$(field seconds <<<"$ref"); rs=$(field seconds <<<"$ring")
    omin=$(field min_seconds <<<"$ours"); mmin=$(field min_seconds <<<"$ref")
    ex=$(field exact <<<"$ours")
    printf '%-5s %-9s %10s %10s %6s %10s %10s %9s %11s %10s %s\n' "$p" "$n" "$os" "$ms" "$(ratio "$ms" "$os")" \
      "$omin" "$mmin" "$(ratio "$mmin" "$omin")" "$rs" "$(ratio "$rs" "$os")" "$ex"
    [[ "$ex" == true && $(field exact <<<"$ref") == true && $(field exact <<<"$ring") == true ]] || status=1
  done
done
exit $status
