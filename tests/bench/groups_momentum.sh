#!/usr/bin/env bash
# The momentum asynchrony adds between compute groups (issue 22): WORKERS
# workers in g = 1, 2, 4, 8 groups, explicit momentum MOMENTUM, a constant
# learning rate; each group fits its own update sequence to
# Δw_{t+1} = μ·Δw_t − η·∇f_t (daemon/worker/momentum_fit.h). Prints, per g,
# μ fitted by each group (its first member's closing line), their mean, the
# implicit momentum μ − MOMENTUM, Omnivore's 1 − 1/g, and the mean test
# accuracy and staleness.
# Usage: [WORKERS=8] [COUNTS="1 2 4 8"] [MOMENTUM=0] [EPOCHS=3] [LR=0.05] tests/bench/groups_momentum.sh
set -euo pipefail
WORKERS=${WORKERS:-8}; GROUP_COUNTS=${COUNTS:-1 2 4 8}; MOMENTUM=${MOMENTUM:-0}; EPOCHS=${EPOCHS:-3}; LR=${LR:-0.05}
source "$(dirname "$0")/groups_lib.sh"

printf "%-3s %-40s %-8s %-9s %-8s %-9s %-9s\n" g "fitted μ by group" mean implicit "1-1/g" accuracy staleness
for g in $GROUP_COUNTS; do
  start_groups "g$g" "$WORKERS" "$g" --epochs "$EPOCHS" --momentum "$MOMENTUM" --lr "$LR" --lr-decay constant \
    --train-limit 32000 --test-limit 2000 --batch 32
  for p in "${pids[@]}"; do wait "$p"; done
  per=$((WORKERS / g)); fits=""; acc=""; stale=""
  for ((k = 0; k < g; k++)); do
    fits+="$(closing "g$g" $((k * per)) 'fitted to its updates \([-0-9.]*\)') "
    acc+="$(closing "g$g" $((k * per)) 'test_accuracy \([0-9.]*\)') "
    stale+="$(closing "g$g" $((k * per)) 'staleness mean \([-0-9.]*\)') "
  done
  echo "$g|$fits|$acc|$stale|$MOMENTUM" | awk -F'|' '{
    n = split($2, f, " "); split($3, a, " "); split($4, s, " "); fm = 0; am = 0; sm = 0
    for (i = 1; i <= n; i++) { fm += f[i]; am += a[i]; sm += s[i] }
    printf "%-3d %-40s %-8.3f %-9.3f %-8.3f %-9.4f %-9.2f\n", $1, $2, fm / n, fm / n - $5, 1 - 1 / $1, am / n, sm / n }'
done
