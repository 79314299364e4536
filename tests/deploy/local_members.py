"""What the deploy/ tests that start gossipd members share: loopback ports,
an HTTP GET, waiting on a condition, and N members of one cluster."""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def wait_for(what, fn, timeout, name):
    """fn() until it returns something true (returned), for `timeout` s; else exits naming `what`."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            value = fn()
            if value:
                return value
        except OSError as e:  # not answering yet
            last = e
        time.sleep(0.25)
    sys.exit(f"{name}: timed out after {timeout} s waiting for {what} (last error: {last})")


def start_members(gossipd, work, n, cluster, flags):
    """n crossover members w0..w{n-1} on loopback, each with --http; (processes, http ports).
    Their output goes to WORK/w<i>.log."""
    ports = [free_port() for _ in range(n)]
    http = [free_port() for _ in range(n)]
    peers = ",".join(f"w{i}=tcp://127.0.0.1:{p}" for i, p in enumerate(ports))
    procs = []
    for i in range(n):
        cmd = [gossipd, "run", "--id", f"w{i}", "--listen", f"tcp://127.0.0.1:{ports[i]}", "--peers", peers,
               "--http", f"127.0.0.1:{http[i]}", "--cluster-id", cluster, "--algo", "crossover", "--hidden", "16",
               "--epochs", "100000", "--train-limit", "2048", "--test-limit", "100", "--threads", "1", "--quiet",
               *flags]
        procs.append(subprocess.Popen(cmd, stdout=open(os.path.join(work, f"w{i}.log"), "w"),
                                      stderr=subprocess.STDOUT))
    return procs, http


def stop(procs, work):
    """Kills and reaps every process the test started, by pid, and removes its directory."""
    for p in procs:
        p.kill()
        p.wait()
    shutil.rmtree(work, ignore_errors=True)
