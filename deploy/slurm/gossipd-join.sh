#!/bin/bash
# One more worker for a running gossipd.sbatch job, started as a new step of
# that job: it joins the cluster through any of the job's workers, downloads the
# state from the members and trains with the job's flags to its end.
#   deploy/slurm/gossipd-join.sh JOBID [NODE]
# Run from the directory the job was submitted from (or set GOSSIPD_OUT as
# the job had it). The step shares a node of the job (--overlap: the job's
# CPUs are its workers'), on port GOSSIPD_PORT + 1 + the step's id; its exit
# code is this script's.
set -euo pipefail
job=${1:?usage: gossipd-join.sh JOBID [NODE]}
node=${2:-}
export GOSSIPD_OUT=${GOSSIPD_OUT:-out/slurm-$job}
if [ ! -r "$GOSSIPD_OUT/job.env" ]; then
  echo "gossipd-join.sh: no $GOSSIPD_OUT/job.env: is job $job a running gossipd.sbatch job submitted from here?" >&2
  exit 2
fi
# GOSSIPD, GOSSIPD_FLAGS, GOSSIPD_PORT and GOSSIPD_JOIN (the job's workers) as the job has them.
# shellcheck disable=SC1091
. "$GOSSIPD_OUT/job.env"
export GOSSIPD GOSSIPD_FLAGS GOSSIPD_PORT GOSSIPD_JOIN
# shellcheck disable=SC2016,SC2086
exec srun --jobid "$job" --overlap --nodes 1 --ntasks 1 ${node:+--nodelist "$node"} bash -c 'id=$(hostname -s)-$SLURM_STEP_ID port=$((GOSSIPD_PORT + 1 + SLURM_STEP_ID))
exec "$GOSSIPD" run --id "$id" $GOSSIPD_FLAGS --threads "${SLURM_CPUS_PER_TASK:-1}" --listen "tcp://0.0.0.0:$port" --advertise "tcp://$(hostname -f):$port" --join "$GOSSIPD_JOIN" --http "0.0.0.0:$((8080 + 1 + SLURM_STEP_ID))" --metrics-out "$GOSSIPD_OUT/$id.jsonl" --checkpoint-dir "$GOSSIPD_OUT/checkpoints/$id"'
