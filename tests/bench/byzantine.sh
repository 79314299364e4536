#!/usr/bin/env bash
# Members that cannot be trusted (issue 78), with gossipctl simulate: every
# worker a real replica running gossipd run's own protocols (ALGOS:
# Crossover-SGD, SGP, AllReduce-SGD), their defences (ClippedGossip; BTARD's
# CenteredClip for AllReduce-SGD) and attacks (held bit for bit to compare's processes by
# tests/daemon/simulate_test.cc); compute groups (ALGOS=groups:G; their
# owners centre each push) with gossipctl compare, in real processes. N workers (8), those of BAD Byzantine (w3;
# a comma list for several, e.g. N=16 BAD=w3,w11), the quickstart's setup (MLP, batch 64, lr 0.05, EPOCHS epochs): for
# each defence (none, clip) a run without an attacker and one per attack.
# Prints the honest members' final mean test accuracy, its difference from
# the run without an attacker under the same defence (points), how many
# honest members named the attacker and by which round, and any honest
# member named. A run still going after TIMEOUT seconds is stopped and its
# last evaluation counts (the epoch is shown): without a defence the
# replicas of some attacks shrink to subnormal floats, and each step then
# takes seconds.
# `byzantine.sh cost`: what --robust clip costs where no one attacks, with
# gossipctl compare (4 gossipd processes on loopback, 2 epochs, COST_ALGO:
# crossover, sgp or allreduce; HIER_GROUPS: hierarchical in that many groups): REPS runs
# with and without it, alternated (each pair's order too), and the median
# and least ratio of their rounds per second.
# `byzantine.sh clean`: no attacker, --robust clip, each protocol of ALGOS
# at each seed of SEEDS (1 2 3) for CLEAN_EPOCHS (5: 585 rounds at N = 8):
# any member named (there should be none), the rounds run and the accuracy.
# HIER_GROUPS=K: Crossover-SGD hierarchical over K groups (compare's --groups).
# Usage: byzantine.sh [accuracy|cost|clean] (env: ALGOS, N, BAD, EPOCHS, ATTACKS, DEFENCES, SEED, SEEDS, HIER_GROUPS,
# CLEAN_EPOCHS, TIMEOUT, REPS, COST_ALGO, OUT)
set -euo pipefail
cd "$(dirname "$0")/../.."
WHAT=${1:-accuracy}
N=${N:-8}; BAD=${BAD:-w3}; EPOCHS=${EPOCHS:-10}; SEED=${SEED:-1}; TIMEOUT=${TIMEOUT:-180}
ATTACKS=${ATTACKS:-"scaled sign_flip noise non_finite stale ipm alie dissensus label_flip"}; DEFENCES=${DEFENCES:-"none clip"}
ALGOS=${ALGOS:-"crossover sgp allreduce"}
OUT=${OUT:-$(mktemp -d)}
cmake --build build -j2 --target gossipctl gossipd >/dev/null
mkdir -p "$OUT"
if [ "$WHAT" = cost ]; then
  for r in $(seq 1 "${REPS:-5}"); do
    # Each pair's order alternates (none first, then clip first): a run
    # that follows another is not always the same one.
    order="none clip"; [ $((r % 2)) = 0 ] && order="clip none"
    for d in $order; do
      ./build/bin/gossipctl compare --workers 4 --algos "${COST_ALGO:-crossover}" --epochs 2 --robust "$d" \
        ${HIER_GROUPS:+--groups "$HIER_GROUPS"} --out "$OUT/cost-$d-$r" > "$OUT/cost-$d-$r.log" 2>&1
    done
  done
  python3 - "$OUT" "${REPS:-5}" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
rate = lambda d, r: json.load(open(f"{out}/cost-{d}-{r}/summary.json"))["results"][0]["rounds_per_second"]
ratios = [rate("none", r) / rate("clip", r) for r in range(1, reps + 1)]
accs = [json.load(open(f"{out}/cost-{d}-{r}/summary.json"))["results"][0]["final_mean_accuracy"]
        for d in ("none", "clip") for r in range(1, reps + 1)]
print(f"round time with --robust clip over without, {reps} alternated pairs: median {statistics.median(ratios):.3f}, "
      f"least {min(ratios):.3f}, most {max(ratios):.3f}")
print(f"final mean accuracy: without {statistics.median(accs[:reps]):.4f}, with {statistics.median(accs[reps:]):.4f} (medians)")
PY
  exit 0
fi
if [ "$WHAT" = clean ]; then
  for algo in $ALGOS; do for seed in ${SEEDS:-1 2 3}; do
    dir="$OUT/clean-$algo-$seed"
    [ -e "$dir/summary.json" ] && continue
    runner=simulate; case "$algo" in groups:*) runner=compare ;; esac
    ./build/bin/gossipctl "$runner" --workers "$N" --algos "$algo" --epochs "${CLEAN_EPOCHS:-5}" --batch 64 \
      --lr 0.05 --seed "$seed" --robust clip ${HIER_GROUPS:+--groups "$HIER_GROUPS"} --out "$dir" > "$dir.log" 2>&1
  done; done
  python3 - "$OUT" "$ALGOS" "${SEEDS:-1 2 3}" <<'PY'
import json, os, re, sys
out, algos, seeds = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
naming = re.compile(r"node '(w\d+)': member '(w\d+)' is named Byzantine in round (\d+)")
print("| protocol | seed | rounds | final mean acc | members named |")
print("| --- | --- | --- | --- | --- |")
for algo in algos:
  for seed in seeds:
    r = json.load(open(f"{out}/clean-{algo}-{seed}/summary.json"))["results"][0]
    run = f"{out}/clean-{algo}-{seed}"
    sub = f"{run}/{algo.replace(':', '-')}"  # compare's runs: each member's own log
    logs = [f"{run}/members.log"] if os.path.exists(f"{run}/members.log") else \
        [f"{sub}/{f}" for f in sorted(os.listdir(sub)) if f.endswith(".log")]
    named = [f"{m.group(2)} by {m.group(1)}" for log in logs for l in open(log) for m in [naming.search(l)] if m]
    print(f"| {algo} | {seed} | {r['rounds']} | {r['final_mean_accuracy']:.4f} | {', '.join(named) or 'none'} |")
PY
  exit 0
fi
for algo in $ALGOS; do for d in $DEFENCES; do
  for a in honest $ATTACKS; do
    dir="$OUT/$algo-$d-$a"
    [ -e "$dir/summary.json" ] || [ -e "$dir.cut" ] && continue
    # AllReduce-SGD's members receive nobody's copy to aim these with (refused in one line).
    case "$algo:$a" in allreduce:alie | allreduce:dissensus | groups:*:alie | groups:*:dissensus) continue ;; esac
    byz=(); [ "$a" != honest ] && byz=(--inject-byzantine "$(echo "$BAD" | sed "s/\([^,]*\)/\1=$a/g")")
    rc=0
    # Compute groups have no time model in simulate: real processes (compare).
    runner=simulate; case "$algo" in groups:*) runner=compare ;; esac
    timeout "$TIMEOUT" ./build/bin/gossipctl "$runner" --workers "$N" --algos "$algo" --epochs "$EPOCHS" \
      --batch 64 --lr 0.05 --seed "$SEED" --robust "$d" "${byz[@]}" ${HIER_GROUPS:+--groups "$HIER_GROUPS"} --out "$dir" \
      > "$dir.log" 2>&1 || rc=$?
    if [ "$rc" = 124 ]; then touch "$dir.cut"; elif [ "$rc" != 0 ]; then
      echo "failed: $dir: $(tail -1 "$dir.log")" >&2; exit 1
    fi
  done
done; done
python3 - "$OUT" "$N" "$BAD" "$DEFENCES" "honest $ATTACKS" "$ALGOS" <<'PY'
import json, os, re, sys
out, n, bad, defences, attacks = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4].split(), sys.argv[5].split()
algos = sys.argv[6].split()
def honest_acc(algo, d, a):
    """The honest members' mean test accuracy at the last epoch all of them evaluated, and that epoch."""
    evals = []
    for k in range(n):
        w = f"w{k}"
        if a != "honest" and w in bad: continue
        rows = [json.loads(l) for l in open(f"{out}/{algo}-{d}-{a}/{algo.replace(':', '-')}/{w}.jsonl") if l.strip()]
        evals.append({r["epoch"]: r["test_accuracy"] for r in rows if "test_accuracy" in r})
    epoch = min(max(e) for e in evals)
    return sum(e[epoch] for e in evals) / len(evals), epoch
def member_lines(algo, d, a):
    """Every member's log lines: simulate's members.log, or compare's w*.log."""
    run = f"{out}/{algo}-{d}-{a}"
    if os.path.exists(f"{run}/members.log"): return list(open(f"{run}/members.log"))
    sub = f"{run}/{algo.replace(':', '-')}"
    return [l for f in sorted(os.listdir(sub)) if f.endswith(".log") for l in open(f"{sub}/{f}")]
naming = re.compile(r"node '(w\d+)': member '(w\d+)' is named Byzantine in round (\d+)")
print(f"| protocol | attack ({', '.join(bad)} of {n}) | --robust | honest final mean acc | vs no attacker (points) | "
      f"{'attacker' if len(bad) == 1 else 'every attacker'} named by | by round | honest named |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for algo in algos:
  for a in attacks:
    for d in defences:
        if not os.path.exists(f"{out}/{algo}-{d}-{a}.log"): continue
        (acc, epoch), (base, _) = honest_acc(algo, d, a), honest_acc(algo, d, "honest")
        when = "" if not os.path.exists(f"{out}/{algo}-{d}-{a}.cut") else f" (epoch {epoch}, stopped)"
        namers, rounds, wrong = {b: set() for b in bad}, [], set()
        for line in member_lines(algo, d, a):
            m = naming.search(line)
            if not m: continue
            if a != "honest" and m.group(1) in bad: continue  # what an attacker says does not count
            if m.group(2) in bad and a != "honest": namers[m.group(2)].add(m.group(1)); rounds.append(int(m.group(3)))
            else: wrong.add(f"{m.group(2)} by {m.group(1)}")
        every = set.intersection(*namers.values())  # honest members that named every attacker
        print(f"| {algo} | {a} | {d} | {acc:.4f}{when} | {100 * (acc - base):+.2f} | {len(every)} of {n - len(bad)} | "
              f"{max(rounds) if rounds else '-'} | {', '.join(sorted(wrong)) or 'none'} |")
PY
echo "runs in $OUT"
