#!/usr/bin/env python3
"""Debian's prometheus, on loopback, scraping four gossipd members with
deploy/prometheus/'s configuration and rules (intervals cut to 1 s).

Asserts, through Prometheus' HTTP API: every family a member's /metrics
declares is known to Prometheus with the same type; the members' round
counters and round rates as Prometheus holds them match their /status
(counters bracketed by /status read before and after, rates within 30% of
the rate /status shows over the same window); and GossipdMemberEvicted
fires on the survivors after one member is SIGKILLed.

Usage: prometheus_live.py GOSSIPD DEPLOY_PROMETHEUS_DIR
Skipped (one line, exit 0) where `prometheus` is not installed: as root,
deploy/install-deps.sh --deploy installs it (tests/run.sh does).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

from local_members import free_port, get, start_members, stop
from local_members import wait_for as wait_until

MEMBERS = 4
TIMEOUT = 90  # seconds any one condition is waited for


class Prometheus:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}/api/v1/"

    def api(self, path, **params):
        body = json.loads(get(self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")))
        if body.get("status") != "success":
            sys.exit(f"prometheus_live: {path} {params} answered {body}")
        return body["data"]

    def query(self, expr):
        """{member: value} of an instant query."""
        return {r["metric"].get("member"): float(r["value"][1]) for r in self.api("query", query=expr)["result"]}


def write_config(deploy, work, http):
    """deploy/prometheus/ with 1 s intervals, and a targets file naming the members."""
    shutil.copy(os.path.join(deploy, "gossipd.rules.yml"), work)
    config = open(os.path.join(deploy, "prometheus.yml")).read()
    for slow in ("scrape_interval: 15s", "evaluation_interval: 15s", "refresh_interval: 30s"):
        if slow not in config:
            sys.exit(f"prometheus_live: deploy/prometheus/prometheus.yml no longer says '{slow}'")
        config = config.replace(slow, slow.split(":")[0] + ": 1s")
    open(os.path.join(work, "prometheus.yml"), "w").write(config)
    os.makedirs(os.path.join(work, "targets"))
    groups = [{"targets": [f"127.0.0.1:{p}"], "labels": {"cluster": "prom", "member": f"w{i}"}}
              for i, p in enumerate(http)]
    json.dump(groups, open(os.path.join(work, "targets", "gossipd.json"), "w"))


def declared_types(http_port):
    """{family: type} from a member's /metrics."""
    types = {}
    for line in get(f"http://127.0.0.1:{http_port}/metrics").splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            types[name] = kind
    return types


def status(http_port):
    return json.loads(get(f"http://127.0.0.1:{http_port}/status"))


def check_families(prom, http_port):
    want = declared_types(http_port)
    have = prom.api("metadata")
    wrong = {f: (t, [m["type"] for m in have.get(f, [])]) for f, t in want.items()
             if t not in [m["type"] for m in have.get(f, [])]}
    if wrong:
        sys.exit(f"prometheus_live: families missing or typed otherwise in Prometheus (family: (type, seen)): {wrong}")
    print(f"prometheus_live: {len(want)} gossipd families in Prometheus with their types")


def check_rounds(prom, http):
    """Counters bracketed by /status; the 6 s rate within 30% of /status's."""
    before = [int(status(p)["round"]) for p in http]
    t0 = time.monotonic()
    wait_for("a scrape after the first /status", lambda: time.monotonic() - t0 > 6.5)
    held = prom.query("gossipd_rounds_total")
    rates = prom.query("rate(gossipd_rounds_total[6s])")
    after = [int(status(p)["round"]) for p in http]
    seconds = time.monotonic() - t0
    for i in range(MEMBERS):
        w = f"w{i}"
        if not before[i] - 1 <= held[w] <= after[i]:
            sys.exit(f"prometheus_live: {w}'s rounds in Prometheus {held[w]} outside /status's {before[i]}..{after[i]}")
        seen = (after[i] - before[i]) / seconds
        if not 0.7 * seen <= rates[w] <= 1.3 * seen:
            sys.exit(f"prometheus_live: {w}'s round rate in Prometheus {rates[w]:.2f}/s against /status's {seen:.2f}/s")
    print("prometheus_live: rounds and round rates match /status: "
          + ", ".join(f"w{i} {rates[f'w{i}']:.1f}/s" for i in range(MEMBERS)))


def firing(prom, name):
    return sorted(a["labels"].get("member") for a in prom.api("alerts")["alerts"]
                  if a["labels"].get("alertname") == name and a["state"] == "firing")


def wait_for(what, fn):
    return wait_until(what, fn, TIMEOUT, "prometheus_live")


def main():
    gossipd, deploy = sys.argv[1], sys.argv[2]
    prometheus = shutil.which("prometheus")
    if not prometheus:
        print("prometheus_live: SKIPPED: no prometheus (as root: deploy/install-deps.sh --deploy)")
        return
    work = tempfile.mkdtemp(prefix="gossipd_prom_")
    procs = []
    try:
        procs, http = start_members(gossipd, work, MEMBERS, "prom", ["--inject-step-delay-ms", "40"])
        write_config(deploy, work, http)
        port = free_port()
        procs.append(subprocess.Popen(
            [prometheus, f"--config.file={work}/prometheus.yml", f"--storage.tsdb.path={work}/data",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=open(os.path.join(work, "prometheus.log"), "w"), stderr=subprocess.STDOUT))
        prom = Prometheus(port)
        wait_for("4 targets up", lambda: sum(t["health"] == "up" for t in prom.api("targets")["activeTargets"])
                 == MEMBERS and all(status(p)["state"] == "training" for p in http))
        check_families(prom, http[0])
        check_rounds(prom, http)
        if firing(prom, "GossipdMemberEvicted"):
            sys.exit("prometheus_live: GossipdMemberEvicted fires before any member was killed")
        procs[MEMBERS - 1].send_signal(signal.SIGKILL)
        killed = time.monotonic()
        wait_for("GossipdMemberEvicted firing on the 3 survivors",
                 lambda: firing(prom, "GossipdMemberEvicted") == ["w0", "w1", "w2"])
        print(f"prometheus_live: GossipdMemberEvicted fires on w0, w1, w2 {time.monotonic() - killed:.1f} s after "
              f"w{MEMBERS - 1}'s SIGKILL")
    finally:
        stop(procs, work)


if __name__ == "__main__":
    main()
