"""A gossipd cluster member in a Python process: gossipd run's flags as
keyword arguments, or the cluster from a launcher's environment
(rendezvous.py). gossipd.torch's DistributedOptimizer gives it the model."""

import atexit
import os
import socket
import weakref

import numpy

from gossipd._gossipd import Member, default_mode
from gossipd.local import free_ports
from gossipd.rendezvous import LAUNCH_KEYS, address_toward, check_arguments, contacts, launched, meet, rank_id

_open_workers = weakref.WeakSet()


@atexit.register
def _close_open_workers():
    # A script that never calls close() still leaves the cluster and exits.
    for w in list(_open_workers):
        w.close(average=False)  # the others may not be at this step: no collective at exit


def _flag_args(flags):
    """gossipd run's flags from keyword arguments: cluster_id="x" is
    --cluster-id x, True a bare flag, a list comma-separated."""
    args = []
    for key, value in flags.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, str(value)]
    return args


def _launch(id, peers, join):
    """The launcher's Launch where the worker takes its cluster from it;
    ValueError where the environment is incomplete, or where the keyword
    arguments give the cluster too or contradict it."""
    explicit = peers is not None or join is not None
    if explicit and not any(k in os.environ for k in LAUNCH_KEYS + ("GOSSIPD_JOIN",)):
        return None  # srun's environment alone: it started the process, the script gives the cluster
    try:
        launch = launched(os.environ)
    except ValueError:
        if explicit:  # a partial environment beside an explicit cluster: not a launcher's
            return None
        raise
    if launch:
        check_arguments(launch, id, peers, join)
    return launch


def _peer_list(peers):
    if isinstance(peers, dict):
        return [f"{k}={v}" for k, v in peers.items()]
    return list(peers)


class Worker:
    """One member of a gossipd cluster, as `gossipd run` is one.

    `algo`: allreduce (the default, as for gossipd run: `default_mode()`),
    crossover, sgp or osgp. The other
    keyword arguments are gossipd run's flags (daemon/README.md): listen,
    peers (a dict id -> endpoint, or "ID=ENDPOINT" strings), join,
    cluster_id, http, heartbeat_ms,
    curve_secret_key, inject_drop ... A bad one raises ValueError with
    gossipd's one-line message. The member starts when a
    DistributedOptimizer gives it the model.

    With no peers and no join, under a launcher (torchrun, or
    `python3 -m gossipd.launch --nproc_per_node N`), the worker takes its
    cluster from the launcher's environment: RANK, WORLD_SIZE, MASTER_ADDR
    and MASTER_PORT, or GOSSIPD_JOIN=1 to join the running one
    (rendezvous.py).
    """

    def __init__(self, id=None, peers=None, join=None, algo=None, steps_per_epoch=1000, **flags):
        self._store = None  # the launcher's rendezvous, kept while the worker lives (rank 0 serves it)
        launch = _launch(id, peers, join)
        if launch:
            id, peers, join = self._rendezvous(launch, id, flags)
        self.id = id or f"{socket.gethostname()}-{os.getpid()}"
        self.algo = algo or default_mode()
        self._args = ["--id", self.id, "--algo", self.algo] + _flag_args(flags)
        if peers:
            self._args += ["--peers", ",".join(_peer_list(peers))]
        if join:
            self._args += ["--join", join if isinstance(join, str) else ",".join(join)]
        # The static cluster it starts in, ids sorted as gossipd run ranks them (None: a joiner's).
        self._members = None if join else sorted({self.id} | {p.split("=", 1)[0] for p in _peer_list(peers or {})})
        self._steps_per_epoch = int(steps_per_epoch)
        self._member = None
        self._ready = None
        # close()'s final average: the members it averaged (None: not taken yet),
        # and what reads the arena back into the model's own tensors after it.
        self.averaged_members = None
        self._after_average = None

    def _rendezvous(self, launch, id, flags):
        """(id, peers, join) from the launcher's store (rendezvous.py)."""
        if "listen" not in flags:
            address = address_toward(launch.host, launch.port)
            flags["listen"] = f"tcp://{address}:{free_ports(1, address)[0]}"
        timeout_ms = int(flags.get("startup_timeout_ms", 60000))
        if launch.joining:
            self._store, join = contacts(launch, timeout_ms)
            return id, None, join
        self._store, peers = meet(launch, flags["listen"], timeout_ms)
        return id or rank_id(launch.rank, launch.size), peers, None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(average=exc_type is None)  # after an error the others may never come
        return False

    def _start(self, segments, initial, state_per_param=1, initial_state=None):
        if self._member is not None:
            raise RuntimeError(f"gossipd worker '{self.id}' already trains a model: one optimizer per worker")
        state = initial_state if initial_state is not None else numpy.zeros(0, numpy.float32)
        self._member = Member(self._args, segments, initial, self._steps_per_epoch, state_per_param, state)
        _open_workers.add(self)
        return self._member

    @property
    def member(self):
        if self._member is None:
            raise RuntimeError(f"gossipd worker '{self.id}' has no model yet: make a DistributedOptimizer first")
        return self._member

    def sync_state(self, model=None, optimizer=None):
        """Waits until training may start: the initial members have met, or
        a joiner has downloaded parameters, optimizer state and step (they
        are in the model's tensors already). Returns the steps done."""
        if self._ready is None:
            self._ready = self.member.wait_ready()
        if optimizer is not None:
            optimizer._check_bindings()
            optimizer._from_arena()  # a download or a checkpoint, into the tensors that are not views
            if self._ready["joined"] or self._ready["start_round"] > 0:
                optimizer._resumed_at(self.member.round())
        return self.member.round()

    @property
    def rank(self):
        """This worker's index among the cluster's initial members, ids
        sorted (gossipd run's rank): a DistributedSampler's `rank`."""
        return self._static_members().index(self.id)

    @property
    def size(self):
        """The cluster's initial members (its peers and itself): a
        DistributedSampler's `num_replicas`."""
        return len(self._static_members())

    def _static_members(self):
        if self._members is None:
            raise RuntimeError(f"gossipd worker '{self.id}' joins a running cluster: it has no fixed rank or "
                               "size (the cluster's members change); sample from the whole data set")
        return self._members

    @property
    def endpoint(self):
        return self.member.info()["endpoint"]

    @property
    def http_port(self):
        return self.member.info()["http_port"]

    def round(self):
        return self.member.round()

    def report(self, test_accuracy, test_loss=0.0, samples=0):
        """Your latest evaluation: the member's evaluation records (each
        epoch's end, as `gossipd run`'s) and /status show these figures."""
        self.member.set_evaluation(float(test_accuracy), float(test_loss), int(samples))

    def close(self, average=True):
        """Ends training: leaves the cluster (gracefully) and stops the
        member's threads. With `average` (the default), the gossip
        protocols' members first average their parameters, buffers and
        optimizer state exactly (one allreduce over the members still
        training), so that every member holds and saves the same model:
        call it after the same step on every member. `averaged_members`
        then says how many were averaged (0: none, the others never came
        within --timeout-ms; the log says why). AllReduce-SGD's replicas
        are one model already."""
        if self._member is not None:
            if average and self.averaged_members is None and not self._member.one_replica():
                self.averaged_members = self._member.finish()
                if self._after_average is not None:
                    self._after_average()
            self._member.close()
        _open_workers.discard(self)
