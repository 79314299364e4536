"""A launcher's environment (torchrun's, gossipd.launch's, or a Slurm job
step's: srun's SLURM_PROCID, SLURM_NTASKS and SLURM_STEP_NODELIST stand for
RANK, WORLD_SIZE and MASTER_ADDR, the step's first node) to a gossipd
cluster: every worker puts its endpoint in a torch.distributed.TCPStore at
MASTER_ADDR:MASTER_PORT (rank 0 serves it, as init_process_group's env://
does) and takes everyone's. Ids are rank0, rank1, ... (zero padded) so that
gossipd's rank (ids sorted) is RANK. A worker started later with
GOSSIPD_JOIN=1 (`gossipd.launch --join`) reads the same store for the
members to join through."""

import datetime
import socket
from dataclasses import dataclass

LAUNCH_KEYS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
JOIN_KEYS = ("MASTER_ADDR", "MASTER_PORT")
SLURM_KEYS = ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NODELIST")
# Under Slurm without MASTER_PORT: SLURM_PORT_BASE + SLURM_JOB_ID mod
# SLURM_PORT_SPAN, the same for every step of a job (a worker added as a
# later step with GOSSIPD_JOIN finds the store).
SLURM_PORT_BASE, SLURM_PORT_SPAN = 20000, 20000


@dataclass
class Launch:
    rank: int  # -1: a joiner's (no fixed rank)
    size: int  # 0: a joiner's (read from the store)
    host: str
    port: int

    @property
    def joining(self):
        return self.rank < 0


def _whole(env, key):
    try:
        return int(env[key])
    except ValueError:
        raise ValueError(f"gossipd: the launcher's {key} is not a whole number: {env[key]!r}") from None


def expand_hostlist(hosts):
    """Slurm's compressed host list ("node[01-03,7],login") as names, in order.
    ValueError naming a list it cannot read."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(hosts + ","):
        depth += (c == "[") - (c == "]")
        if depth < 0 or (c == "," and depth == 0):
            if depth < 0 or i == start:
                raise ValueError(f"gossipd: Slurm's host list {hosts!r} cannot be read")
            out += _expand_one(hosts[start:i], hosts)
            start = i + 1
    if depth:
        raise ValueError(f"gossipd: Slurm's host list {hosts!r} cannot be read")
    return out


def _expand_one(item, hosts):
    if "[" not in item:
        return [item]
    head, rest = item.split("[", 1)
    ranges, tail = rest.split("]", 1)
    names = []
    for r in ranges.split(","):
        lo, _, hi = r.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ValueError(f"gossipd: Slurm's host list {hosts!r} cannot be read")
        for n in range(int(lo), int(hi or lo) + 1):
            names += [head + str(n).zfill(len(lo)) + t for t in _expand_one(tail, hosts)]
    return names


def slurm_launch_keys(env):
    """torchrun's keys for a Slurm job step's environment (as `srun` sets
    it), or {} where it is not one; MASTER_PORT where given stays."""
    if not all(k in env for k in SLURM_KEYS):
        return {}
    port = env.get("MASTER_PORT")
    if not port:
        if "SLURM_JOB_ID" not in env:
            raise ValueError("gossipd: a Slurm job step without SLURM_JOB_ID or MASTER_PORT: set MASTER_PORT")
        port = str(SLURM_PORT_BASE + _whole(env, "SLURM_JOB_ID") % SLURM_PORT_SPAN)
    return {"RANK": env["SLURM_PROCID"], "WORLD_SIZE": env["SLURM_NTASKS"],
            "MASTER_ADDR": expand_hostlist(env["SLURM_STEP_NODELIST"])[0], "MASTER_PORT": port}


def launched(env):
    """The Launch the environment describes, or None where it names no
    launcher. ValueError naming what is missing or wrong."""
    joining = env.get("GOSSIPD_JOIN", "") not in ("", "0")
    if not joining and not any(k in env for k in ("RANK", "WORLD_SIZE")):
        env = {**env, **slurm_launch_keys(env)}  # torchrun's keys win where srun starts torchrun
    joining = env.get("GOSSIPD_JOIN", "") not in ("", "0")
    present = [k for k in LAUNCH_KEYS if k in env]
    if not present and not joining:
        return None
    missing = [k for k in (JOIN_KEYS if joining else LAUNCH_KEYS) if k not in env]
    if missing:
        raise ValueError(f"gossipd: the launcher's environment sets {', '.join(present) or 'GOSSIPD_JOIN'} but not "
                         f"{', '.join(missing)}: start the script with torchrun or python3 -m gossipd.launch, or "
                         "give gd.Worker peers= or join=")
    port = _whole(env, "MASTER_PORT")
    if not 0 < port < 65536:
        raise ValueError(f"gossipd: the launcher's MASTER_PORT {port} is not a port (1 .. 65535)")
    if joining:
        return Launch(-1, 0, env["MASTER_ADDR"], port)
    rank, size = _whole(env, "RANK"), _whole(env, "WORLD_SIZE")
    if not 0 <= rank < size:
        raise ValueError(f"gossipd: the launcher's RANK {rank} is not in 0 .. WORLD_SIZE - 1 ({size - 1})")
    return Launch(rank, size, env["MASTER_ADDR"], port)


def rank_id(rank, size):
    return f"rank{rank:0{len(str(size - 1))}d}"


def check_arguments(launch, id, peers, join):
    """ValueError where the keyword arguments contradict the launcher."""
    if peers is not None or join is not None:
        raise ValueError(f"gossipd: gd.Worker got {'peers=' if peers is not None else 'join='} and the launcher's "
                         f"environment ({'GOSSIPD_JOIN, ' if launch.joining else 'RANK, WORLD_SIZE, '}MASTER_ADDR, "
                         "MASTER_PORT) also gives the cluster: leave it out under a launcher")
    if id is not None and not launch.joining and id != rank_id(launch.rank, launch.size):
        raise ValueError(f"gossipd: id={id!r} contradicts the launcher's RANK {launch.rank}: under a launcher the "
                         f"ids are the ranks' ({rank_id(launch.rank, launch.size)!r}); leave id out")


def address_toward(host, port):
    """This host's address on the route to `host` (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((socket.gethostbyname(host), port))
        return s.getsockname()[0]


def _store(launch, timeout_ms):
    import torch.distributed as dist

    timeout = datetime.timedelta(milliseconds=timeout_ms)
    try:
        if launch.joining:
            return dist.TCPStore(launch.host, launch.port, None, False, timeout)
        return dist.TCPStore(launch.host, launch.port, launch.size, launch.rank == 0, timeout)
    except RuntimeError as e:
        raise RuntimeError(f"gossipd: no rendezvous at MASTER_ADDR:MASTER_PORT {launch.host}:{launch.port} within "
                           f"{timeout_ms} ms ({str(e).splitlines()[0]}): is rank 0 running?") from None


def meet(launch, listen, timeout_ms):
    """(store, {id: endpoint}) of the launched members; the store is kept
    while the worker lives (rank 0 serves it, joiners read it)."""
    store = _store(launch, timeout_ms)
    store.set("gossipd/size", str(launch.size))
    store.set(f"gossipd/{rank_id(launch.rank, launch.size)}", listen)
    names = [rank_id(r, launch.size) for r in range(launch.size)]
    return store, {n: store.get(f"gossipd/{n}").decode() for n in names}


def contacts(launch, timeout_ms):
    """(store, [endpoint]) of the launched members, for a joiner."""
    store = _store(launch, timeout_ms)
    size = int(store.get("gossipd/size"))
    return store, [store.get(f"gossipd/{rank_id(r, size)}").decode() for r in range(size)]
