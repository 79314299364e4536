#!/usr/bin/env bash
# Compute groups' staleness and momentum claims (issue 41), measured as the
# paper does: WORKERS workers over ipc:// in g = 1, 2, 4, 8 groups of equal
# speed, a constant learning rate; the owners of the parameter shards apply
# every group's gradient as it arrives.
#  1. The learning rate: g = 1 (synchronous SGD), momentum 0.9, each of LRS;
#     the lowest test loss after EPOCHS fixes it (or give LR).
#  2. For every g, explicit momentum each of MOMENTA at that rate: the test
#     loss and accuracy after EPOCHS (mean over the groups' first members),
#     the owners' mean staleness (pushes applied, weighted) against g − 1,
#     and the momentum the owners' shards' updates show, fitted with each
#     gradient lined up with the model it was computed on
#     (daemon/modes/groups/momentum_lineup.h), less the explicit: the implicit.
#  3. Per g, the momentum with the lowest test loss.
# Usage: [WORKERS=8] [COUNTS="1 2 4 8"] [MOMENTA="0 0.3 0.6 0.9"] [LRS="0.02 0.05 0.1"] [LR=]
#        [EPOCHS=3] tests/bench/groups_momentum.sh
set -euo pipefail
WORKERS=${WORKERS:-8}; GROUP_COUNTS=${COUNTS:-1 2 4 8}; MOMENTA=${MOMENTA:-0 0.3 0.6 0.9}
LRS=${LRS:-0.02 0.05 0.1}; LR=${LR:-}; EPOCHS=${EPOCHS:-3}
source "$(dirname "$0")/groups_lib.sh"

run() {  # TAG G MOMENTUM LR: one run to its end; its records in $dir/TAG.w*.control
  start_groups "$1" "$WORKERS" "$2" --epochs "$EPOCHS" --momentum "$3" --lr "$4" --lr-decay constant \
    --train-limit 32000 --test-limit 2000 --batch 32
  for p in "${pids[@]}"; do wait "$p"; done
}

summary() {  # TAG G MOMENTUM: one line: g momentum test_loss accuracy staleness fitted
  python3 - "$dir" "$1" "$WORKERS" "$2" "$3" <<'PY'
import json, math, sys
d, tag, n, g, m = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
done = []
for i in range(n):
    recs = [json.loads(l) for l in open(f"{d}/{tag}.w{i}.control") if l.strip()]
    end = [r for r in recs if r["event"] != "listening"][-1]
    if end["event"] != "done":
        sys.exit(f"{tag} w{i} ended {end['event']}: {end['status'].get('error', '')}")
    done.append(end["status"])
firsts = [done[k * (n // g)] for k in range(g)]
loss = sum(float(s["test_loss"]) for s in firsts) / g  # "NaN" (a string in JSON) when a run diverged
acc = sum(float(s["test_accuracy"]) for s in firsts) / g
if math.isnan(loss):
    loss = math.inf  # sorts last
gs = [s["groups"] for s in done]
applied = sum(int(x.get("pushes_applied", 0)) for x in gs)
stale = sum(float(x.get("staleness_mean", 0)) * int(x.get("pushes_applied", 0)) for x in gs) / max(applied, 1)
fits = [float(x["fitted_momentum"]) for x in gs if "fitted_momentum" in x]
fit = sum(fits) / len(fits) if fits else float("nan")
print(f"{g} {m:g} {loss:.4f} {acc:.4f} {stale:.3f} {fit:.3f}")
PY
}

if [[ -z $LR ]]; then
  echo "learning rate: g = 1, momentum 0.9, test loss after $EPOCHS epochs"
  best=""
  for lr in $LRS; do
    run "lr$lr" 1 0.9 "$lr"
    line=$(summary "lr$lr" 1 0.9)
    echo "  lr $lr: test loss $(echo "$line" | cut -d' ' -f3), accuracy $(echo "$line" | cut -d' ' -f4)"
    best+="$(echo "$line" | cut -d' ' -f3) $lr"$'\n'
  done
  LR=$(echo -n "$best" | sort -n | head -n 1 | cut -d' ' -f2)
fi
echo "learning rate $LR for every run below"
printf "%-3s %-9s %-10s %-9s %-10s %-6s %-9s %-9s %-8s\n" g momentum "test loss" accuracy staleness "g-1" fitted implicit "1-1/g"
: > "$dir/table"
for g in $GROUP_COUNTS; do
  for m in $MOMENTA; do
    run "g${g}m$m" "$g" "$m" "$LR"
    summary "g${g}m$m" "$g" "$m" | tee -a "$dir/table" | awk '{
      printf "%-3d %-9s %-10.4f %-9.4f %-10.3f %-6d %-9.3f %-9.3f %-8.3f\n", $1, $2, $3, $4, $5, $1 - 1, $6, $6 - $2, 1 - 1 / $1 }'
  done
done
echo "best momentum (lowest test loss) per g:"
sort -k1,1n -k3,3g "$dir/table" | awk '!seen[$1]++ { printf "  g %d: momentum %s (test loss %s, accuracy %s)\n", $1, $2, $3, $4 }'
echo "staleness per g (mean over the momenta) against g - 1:"
awk '{ s[$1] += $5; n[$1]++ } END { for (g in s) printf "  g %d: %.3f (g - 1 = %d, %+.1f%%)\n", g, s[g] / n[g], g - 1, (g > 1) ? 100 * (s[g] / n[g] - (g - 1)) / (g - 1) : 0 }' "$dir/table" | sort -k2n
