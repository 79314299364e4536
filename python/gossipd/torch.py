"""PyTorch glue: a gossipd member that averages a torch model's parameters.

    import gossipd.torch as gd
    with gd.Worker(id="w0", listen="tcp://127.0.0.1:7000",
                   peers={"w1": "tcp://127.0.0.1:7001"}, algo="crossover") as w:
        opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05), model, w)
        w.sync_state(model, opt)
        for x, y in loader:
            opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()

The parameters (and their gradients and SGD's momentum buffers) are views of
one flat float32 arena the C++ member owns, so a round reads and writes them
in place; step() waits for the member with the GIL released.
"""

import atexit
import datetime
import os
import socket
import weakref

import torch

from gossipd._gossipd import Member, default_mode
from gossipd.buffers import bind_buffers, buffer_segments, check_buffers, float_buffers
from gossipd.local import free_ports
from gossipd.optim_state import initial_state, set_steps, state_keys

__all__ = ["Worker", "DistributedOptimizer"]

_open_workers = weakref.WeakSet()


@atexit.register
def _close_open_workers():
    # A script that never calls close() still leaves the cluster and exits.
    for w in list(_open_workers):
        w.close()


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


def _torchrun_env(env):
    """(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) from a launcher's
    environment (torchrun, gossipd.launch), or None where it sets none."""
    keys = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    if not all(k in env for k in keys):
        return None
    try:
        rank, size, port = int(env["RANK"]), int(env["WORLD_SIZE"]), int(env["MASTER_PORT"])
    except ValueError:
        raise ValueError(f"gossipd: the launcher's RANK, WORLD_SIZE, MASTER_PORT are not whole numbers: "
                         f"{env['RANK']!r}, {env['WORLD_SIZE']!r}, {env['MASTER_PORT']!r}") from None
    if not 0 <= rank < size or not 0 < port < 65536:
        raise ValueError(f"gossipd: the launcher's RANK {rank} is not in 0 .. WORLD_SIZE - 1 ({size - 1}), "
                         f"or MASTER_PORT {port} is not a port")
    return rank, size, env["MASTER_ADDR"], port


def _address_toward(host, port):
    """This host's address on the route to `host` (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((socket.gethostbyname(host), port))
        return s.getsockname()[0]


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
    and MASTER_PORT (see _rendezvous).
    """

    def __init__(self, id=None, peers=None, join=None, algo=None, steps_per_epoch=1000, **flags):
        self._store = None  # torchrun's rendezvous, kept while the worker lives (rank 0 serves it)
        launched = _torchrun_env(os.environ) if peers is None and join is None else None
        if launched:
            id, peers = self._rendezvous(id, flags, *launched)
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

    def _rendezvous(self, id, flags, rank, size, host, port):
        """torchrun's environment: every worker puts its endpoint in a
        TCPStore at MASTER_ADDR:MASTER_PORT (rank 0 serves it, as
        init_process_group's env:// does) and takes everyone's. Ids are
        rank00, rank01, ... so that gossipd's rank (ids sorted) is RANK."""
        import torch.distributed as dist

        if "listen" not in flags:
            address = _address_toward(host, port)
            flags["listen"] = f"tcp://{address}:{free_ports(1, address)[0]}"
        timeout = datetime.timedelta(milliseconds=int(flags.get("startup_timeout_ms", 60000)))
        name = lambda r: f"rank{r:0{len(str(size - 1))}d}"  # noqa: E731
        self._store = dist.TCPStore(host, port, size, rank == 0, timeout)
        self._store.set(f"gossipd/{name(rank)}", flags["listen"])
        peers = {name(r): self._store.get(f"gossipd/{name(r)}").decode() for r in range(size)}
        return id or name(rank), peers

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _start(self, segments, initial, state_per_param=1, initial_state=None):
        if self._member is not None:
            raise RuntimeError(f"gossipd worker '{self.id}' already trains a model: one optimizer per worker")
        state = initial_state if initial_state is not None else torch.zeros(0).numpy()
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

    def close(self):
        """Leaves the cluster (gracefully) and stops the member's threads."""
        if self._member is not None:
            self._member.close()
        _open_workers.discard(self)


def _segments(model):
    """One segment per module: the parameters of a module are contiguous."""
    segments, names = [], []
    for name, p in model.named_parameters():
        module = name.rsplit(".", 1)[0] if "." in name else name
        if segments and segments[-1][0] == module:
            segments[-1] = (module, segments[-1][1] + p.numel())
        else:
            segments.append((module, p.numel()))
        names.append(name)
    return segments, names


def _check_tensor(name, p):
    if p.dtype != torch.float32 or p.device.type != "cpu" or not p.is_contiguous():
        raise TypeError(
            f"gossipd: parameter '{name}' is {p.dtype} on {p.device}"
            f"{'' if p.is_contiguous() else ', not contiguous'}: gossipd averages contiguous "
            "float32 CPU tensors (convert the model before making the optimizer)")


class DistributedOptimizer(torch.optim.Optimizer):
    """Wraps a torch optimizer (SGD, Adam, AdamW, RMSprop, Adagrad): step()
    takes the local step, then one round of the worker's protocol
    (AllReduce-SGD averages the gradients before the local step instead).
    The model's parameters, gradients and the optimizer's state tensors
    (momentum buffers, Adam's moments, ...) become views of the worker's
    arena, so a joiner downloads the state and a checkpoint holds it.

    It is a torch.optim.Optimizer whose param_groups and state are the
    wrapped optimizer's own (not copies), so torch's learning-rate
    schedulers drive it as they drive the optimizer it wraps."""

    def __init__(self, optimizer, model, worker):  # pylint: disable=super-init-not-called
        # torch's Optimizer.__init__ would copy the groups: they are shared instead.
        self._keys = state_keys(optimizer)  # a TypeError for one whose state is not known
        self.optimizer = optimizer
        self.model = model
        self.worker = worker
        self._params = list(model.named_parameters())
        if not self._params:
            raise ValueError("gossipd: the model has no parameters")
        for name, p in self._params:
            _check_tensor(name, p)
        in_optimizer = {id(p) for g in optimizer.param_groups for p in g["params"]}
        missing = [n for n, p in self._params if id(p) not in in_optimizer]
        if missing:
            raise ValueError(f"gossipd: parameter '{missing[0]}' is not in the optimizer: give it all of "
                             "model.parameters()")
        self._buffers = float_buffers(model)
        segments = _segments(model)[0] + buffer_segments(self._buffers)
        with torch.no_grad():
            initial = torch.cat([p.detach().reshape(-1) for _, p in self._params] +
                                [t.detach().reshape(-1) for *_, t in self._buffers]).numpy()
        params = [p for _, p in self._params]
        self._param_floats = sum(p.numel() for p in params)
        start = initial_state(optimizer, params, self._keys, initial.size - self._param_floats).numpy()
        member = worker._start(segments, initial, max(1, len(self._keys)), start)
        self._arena = torch.from_numpy(member.params())
        self._grads = torch.from_numpy(member.grads())
        self._state = torch.from_numpy(member.optimizer_state())
        self._bind()

    # torch.optim.Optimizer's fields, the wrapped optimizer's.
    @property
    def defaults(self):
        return self.optimizer.defaults

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def state(self):
        return self.optimizer.state

    def __repr__(self):
        return f"gossipd.torch.DistributedOptimizer({self.optimizer!r})"

    def add_param_group(self, param_group):
        raise ValueError("gossipd: the arena is laid out when the optimizer is made; give every parameter "
                         "to the optimizer before wrapping it")

    def _slices(self):
        offset = 0
        for name, p in self._params:
            n = p.numel()
            yield name, p, slice(offset, offset + n)
            offset += n

    def _state_view(self, k, s):
        """The arena's run of state key k for the parameter at slice s."""
        n = self._arena.numel()
        return self._state[k * n + s.start:k * n + s.stop]

    def _bind(self):
        with torch.no_grad():
            for _, p, s in self._slices():
                p.data = self._arena[s].view_as(p)
                p.grad = self._grads[s].view_as(p)
                for k, key in enumerate(self._keys):
                    self.optimizer.state[p][key] = self._state_view(k, s).view_as(p)
            bind_buffers(self._buffers, self._arena, self._param_floats)
        set_steps(self.optimizer, [p for _, p in self._params], 0, only_missing=True)

    def _resumed_at(self, round):
        """The state came with a join's download or from a checkpoint:
        torch's step counts (Adam's bias correction) are the round's."""
        set_steps(self.optimizer, [p for _, p in self._params], round)

    def _check_bindings(self):
        check_buffers(self._buffers, self._arena, self._param_floats)
        for name, p, s in self._slices():
            if p.data_ptr() != self._arena[s].data_ptr():
                raise RuntimeError(
                    f"gossipd: parameter '{name}' was rebound after the optimizer was made (model.to(), "
                    "load_state_dict(assign) or p.data = ...): its updates would never be averaged; "
                    "copy values in place (p.data.copy_(...)) instead")
            for k, key in enumerate(self._keys):
                buf = self.optimizer.state.get(p, {}).get(key)
                if buf is None or buf.data_ptr() != self._state_view(k, s).data_ptr():
                    raise RuntimeError(
                        f"gossipd: the optimizer's {key} of '{name}' was replaced after the optimizer was made "
                        "(the wrapped optimizer's load_state_dict, or state[p] = ...): joiners and checkpoints "
                        "would see the old one; load state through the DistributedOptimizer's "
                        "load_state_dict, which copies it in place")

    def _bind_grads(self):
        # zero_grad(set_to_none=True) or a user's own tensor: back into the arena (one copy).
        for name, p, s in self._slices():
            target = self._grads[s]
            if p.grad is None:
                target.zero_()
                p.grad = target.view_as(p)
            elif p.grad.data_ptr() != target.data_ptr():
                target.copy_(p.grad.reshape(-1))
                p.grad = target.view_as(p)

    def zero_grad(self, set_to_none=False):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, closure=None, *, loss=None, correct=0, batch=0):
        """The local SGD step and one round of the protocol, as torch's
        step(closure): a closure's loss is returned. `loss` (a tensor or a
        float; else the closure's), `correct` and `batch`, where given, go
        into the member's per-epoch figures (/status, --metrics-out)."""
        closure_loss = None
        if closure is not None:
            with torch.enable_grad():
                closure_loss = closure()
        if loss is None:
            loss = closure_loss
        self._check_bindings()
        self._bind_grads()
        member = self.worker.member
        loss = float(loss) if loss is not None else 0.0
        member.begin_step(loss, int(correct), int(batch) if batch else (1 if loss else 0))
        self.optimizer.step()
        member.end_step()
        return closure_loss

    def state_dict(self):
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict):
        """torch's load_state_dict, in place: the hyperparameters into the
        same group dicts (a scheduler holds them), the state tensors copied
        into the arena, where joiners and checkpoints read them."""
        groups = self.optimizer.param_groups
        self.optimizer.load_state_dict(state_dict)
        for old, new in zip(groups, self.optimizer.param_groups):
            old.update({k: v for k, v in new.items() if k != "params"})
        self.optimizer.param_groups = groups
        loaded = self.optimizer.state
        with torch.no_grad():
            for name, p, s in self._slices():
                for k, key in enumerate(self._keys):
                    buf = loaded.get(p, {}).get(key)
                    if buf is None:  # none saved (no step yet): the first step starts it from zero
                        self._state_view(k, s).zero_()
                        continue
                    if buf.numel() != p.numel():
                        raise ValueError(f"gossipd: the optimizer's {key} of '{name}' in the state holds "
                                         f"{buf.numel()} values, the parameter {p.numel()}")
                    self._state_view(k, s).copy_(buf.reshape(-1))
        self._bind()
