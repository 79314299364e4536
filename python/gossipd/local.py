"""Loopback ports for a cluster on one machine (examples, tests, benchmarks)."""

import socket


def free_ports(n, host="127.0.0.1"):
    """n TCP ports free on `host` now (bound to port 0, then released)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind((host, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
