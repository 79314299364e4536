#!/usr/bin/env bash
# Every `gossipd run` command line in deploy/ passes `gossipd run
# --check-config`, so the manifests and scripts cannot drift from the binary.
# A command line is found by its "run --id"; the variables the engines fill
# in (pod and node names, Slurm's, the systemd instance and environment file)
# get sample values, and the Slurm job's settings (gossipd.sbatch's `export
# GOSSIPD_X=${GOSSIPD_X:-default}` lines) their defaults. Fails if a file has no command line at all, but for the
# PyTorch job scripts (*-torch.*: they run python3, not gossipd run), which
# must parse as bash.
#   tests/deploy/check_config.sh GOSSIPD_BINARY
set -euo pipefail
gossipd=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
mkdir -p out/slurm-1/checkpoints var-lib-gossipd
# Sample values of what Kubernetes, Slurm and systemd provide.
export POD_NAME=gossipd-1 NODE_NAME=node-a SLURM_CPUS_PER_TASK=2 SLURM_JOB_ID=1 SLURM_STEP_ID=1
export id=node1 port=7102 GOSSIPD_PEERS=node1=tcp://node1:7100,node2=tcp://node2:7100
export GOSSIPD_JOIN=tcp://node1:7100,tcp://node2:7100
# The job's settings as gossipd.sbatch defaults them (gossipd-join.sh reads the job's).
# shellcheck disable=SC2016
eval "$(grep -h '^export GOSSIPD[A-Z_]*=\${' "$root"/deploy/slurm/*.sbatch)"
set -a
# shellcheck disable=SC1091
. "$root/deploy/systemd/gossipd.env"
set +a
hostname() { echo node1.example; }

checked=0
status=0
while IFS= read -r file; do
  found=0
  while IFS= read -r line; do
    found=1
    args=${line#* run --id }
    args=${args%\'}                                   # the end of a quoted `bash -c '...'`
    args=${args//\'\"\$first\"\'/node1}               # Slurm: the first node's name
    args=${args//%i/w0}                               # systemd: the instance
    args=${args//\/var\/lib\/gossipd/$tmp\/var-lib-gossipd}
    eval "set -- --id $args"
    if out=$("$gossipd" run "$@" --check-config 2>&1); then
      echo "ok   ${file#"$root"/}: $out"
    else
      echo "FAIL ${file#"$root"/}: gossipd run $* --check-config"
      echo "     $out"
      status=1
    fi
    checked=$((checked + 1))
  done < <(grep -h ' run --id ' "$file" || true)
  if [ "$found" = 0 ]; then
    echo "FAIL ${file#"$root"/}: no gossipd run command line found"
    status=1
  fi
done < <(find "$root/deploy/kubernetes" "$root/deploy/slurm" "$root/deploy/systemd" -type f ! -name '*.env' \
  ! -name '*-torch.*' | sort)
for file in "$root"/deploy/slurm/*-torch.sbatch; do
  if bash -n "$file"; then echo "ok   ${file#"$root"/}: bash -n"; else echo "FAIL ${file#"$root"/}: bash -n"; status=1; fi
done
echo "$checked command lines checked"
[ "$checked" -gt 0 ] || status=1
exit $status
