#!/usr/bin/env python3
"""Segment deadlines and groups on the WAN preset, alternated.

Runs `gossipctl compare --netns --preset wan --algos crossover` once per
deadline setting per repetition (settings alternate within a repetition),
then prints each run's row and the medians: time to the target (wall, and
training only), final mean accuracy, rounds/s, exchange ms per round and
segments skipped. Root (the netns hosts); about a minute a run with 16
workers on 2 cores.

Usage: tests/bench/wan_deadlines.py [--reps 3] [--target 0.85]
           [--settings fixed:2000,adaptive:2000,fixed:1000,fixed:500]
           [--compress CODEC] [--out DIR]
A setting is DEADLINE:MS[:Q][/auto], gossipd run --deadline DEADLINE
--segment-deadline-ms MS [--deadline-quantile Q] (with adaptive, MS is the
most a round waits); /auto runs hierarchical crossover over the groups the
workers form from their round trips (compare --groups auto), else flat
crossover (paced: the links are capped). --compress: every run's codec
(compare --compress; float32 when not given).
"""
import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# "training s": the time to the target less the evaluations and the
# consensus measures (compare's "training only"): a measure's allreduces
# wait up to --segment-deadline-ms, so with the deadlines compared they
# would cost each setting differently.
COLUMNS = ("to target s", "training s", "final acc", "rounds/s", "comm ms/round", "skipped")


def row(report):
    """The crossover row of a compare report, as COLUMNS (None: not reached)."""
    for line in open(report):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "crossover":
            to_target = cells[5].split(" ")[0]
            if to_target == "not":
                wall = training = None
            else:
                wall, training = float(to_target), float(cells[5].split("(")[1].split(" ")[0])
            return (wall, training, float(cells[2]), float(cells[7]), float(cells[8]), int(cells[10]))
    sys.exit(f"no crossover row in {report}")


def run(setting, rep, args):
    timing, _, groups = setting.partition("/")
    deadline, ms, *quantile = timing.split(":")
    out = os.path.join(args.out, f"{setting.replace(':', '-').replace('/', '-')}-{rep}")
    cmd = [os.path.join(ROOT, "build/bin/gossipctl"), "compare", "--netns", "--preset", "wan", "--algos",
           "crossover", "--deadline", deadline, "--segment-deadline-ms", ms, "--epochs", "2",
           "--evals-per-epoch", "4", "--target", str(args.target), "--test-limit", "2000", "--out", out]
    cmd += ["--deadline-quantile", quantile[0]] if quantile else []
    cmd += ["--groups", groups] if groups else []
    cmd += ["--compress", args.compress] if args.compress else []
    with open(out + ".log", "w") as log:
        if subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed: see {out}.log")
    return row(os.path.join(out, "wan", "report.md"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--target", type=float, default=0.85)
    p.add_argument("--settings", default="fixed:2000,adaptive:2000,fixed:1000,fixed:500")
    p.add_argument("--compress", default="")
    p.add_argument("--out", default="/tmp/gossipd_wan_deadlines")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    settings = args.settings.split(",")
    rows = {s: [] for s in settings}
    for rep in range(1, args.reps + 1):
        for s in settings:
            rows[s].append(run(s, rep, args))
            print(f"run {rep} {s}: " + ", ".join(f"{c} {v}" for c, v in zip(COLUMNS, rows[s][-1])), flush=True)
    print(f"medians of {args.reps} (target {args.target}; a run that never reached it counts as slowest):")
    for s in settings:
        cells = []
        for k, c in enumerate(COLUMNS):
            values = [r[k] if r[k] is not None else float("inf") for r in rows[s]]
            cells.append(f"{c} {statistics.median(values):g}")
        print(f"  {s}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
