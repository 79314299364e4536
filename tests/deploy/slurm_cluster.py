"""A Slurm cluster on this machine for the deploy/slurm/ tests: Debian's
munge, slurmctld and N slurmd, each daemon in a network namespace of its own
(its own address on one bridge, its own hostname through a UTS namespace and
an /etc/hosts naming the cluster through a mount namespace), so that a job
sees N hosts as on a real cluster. Every file is under one work directory;
nothing in the root network namespace or under /etc is touched.

    with SlurmCluster(work, nodes=4) as cluster:
        job = cluster.sbatch(["deploy/slurm/gossipd.sbatch"], env)
        state, code = cluster.wait_ended(job, timeout=120)

Needs root, iproute2, util-linux's unshare and the slurmctld, slurmd,
slurm-client and munge packages (deploy/install-deps.sh --deploy).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

SUBNET = "10.77.0"  # inside the cluster's namespaces only
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "scancel", "ip", "unshare", "nsenter")


def missing_programs():
    return [p for p in PROGRAMS if not shutil.which(p) and not os.path.exists("/usr/sbin/" + p)]


def sh(cmd):
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"slurm_cluster: '{cmd}' failed: {r.stderr.strip()}")
    return r.stdout


class SlurmCluster:
    def __init__(self, work, nodes=4, cpus=2):
        self.work, self.cpus = work, cpus
        self.tag = str(os.getpid() % 100000)
        self.nodes = [f"node{i + 1}" for i in range(nodes)]
        self.ctl_ns = f"gsctl{self.tag}"
        self.node_ns = {n: f"gsn{self.tag}x{i + 1}" for i, n in enumerate(self.nodes)}
        self.addr = {n: f"{SUBNET}.{11 + i}" for i, n in enumerate(self.nodes)}
        self.addr["gsctl"] = f"{SUBNET}.10"
        self.slurmd = {}  # node: Popen
        self.daemons = []  # munged, slurmctld
        self.conf = os.path.join(work, "slurm.conf")

    # -- set-up and tear-down ------------------------------------------------
    def __enter__(self):
        try:
            self._network()
            self._files()
            self._munge()
            self.daemons.append(self._spawn(self.ctl_ns, "gsctl", ["slurmctld", "-D", "-i", "-f", self.conf],
                                            "slurmctld.out"))
            for n in self.nodes:
                self.start_node(n)
            self.wait_for("every node idle", lambda: self.idle_nodes() == set(self.nodes), 60)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for ns in [self.ctl_ns, *self.node_ns.values()]:  # job steps outlive their slurmd
            self._kill_namespace(ns)
        for p in [*self.slurmd.values(), *self.daemons]:
            p.kill()
            p.wait()
        for ns in [self.ctl_ns, *self.node_ns.values()]:
            subprocess.run(f"ip netns del {ns}", shell=True, capture_output=True)

    def _kill_namespace(self, ns):
        r = subprocess.run(f"ip netns pids {ns}", shell=True, capture_output=True, text=True)
        for pid in r.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _network(self):
        """A bridge in the controller's namespace, a veth from it to each node's."""
        sh(f"ip netns add {self.ctl_ns}")
        ctl = f"ip -n {self.ctl_ns}"
        sh(f"{ctl} link set lo up && {ctl} link add br0 type bridge && {ctl} link set br0 up && "
           f"{ctl} addr add {self.addr['gsctl']}/24 dev br0")
        for i, n in enumerate(self.nodes):
            ns, veth = self.node_ns[n], f"gs{self.tag}v{i}"
            sh(f"ip netns add {ns} && ip link add {veth} type veth peer name {veth}p && "
               f"ip link set {veth} netns {self.ctl_ns} && ip link set {veth}p netns {ns}")
            sh(f"{ctl} link set {veth} master br0 && {ctl} link set {veth} up")
            node = f"ip -n {ns}"
            sh(f"{node} link set lo up && {node} link set {veth}p name eth0 && "
               f"{node} addr add {self.addr[n]}/24 dev eth0 && {node} link set eth0 up")

    def _files(self):
        for d in ("state", "log", "munge", *(f"spool/{n}" for n in self.nodes)):
            os.makedirs(os.path.join(self.work, d), exist_ok=True)
        with open(os.path.join(self.work, "hosts"), "w") as f:
            f.write("127.0.0.1 localhost\n" + "".join(f"{a} {h}\n" for h, a in self.addr.items()))
        w = self.work
        nodes = "".join(f"NodeName={n} NodeAddr={self.addr[n]} CPUs={self.cpus} State=UNKNOWN\n"
                        for n in self.nodes)
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=gossipd
SlurmctldHost=gsctl({self.addr['gsctl']})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={w}/munge/socket
CredType=cred/munge
StateSaveLocation={w}/state
SlurmdSpoolDir={w}/spool/%n
SlurmctldPidFile={w}/slurmctld.pid
SlurmdPidFile={w}/slurmd-%n.pid
SlurmctldLogFile={w}/log/slurmctld.log
SlurmdLogFile={w}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=10
MessageTimeout=5
KillWait=20
InactiveLimit=0
{nodes}PartitionName=all Nodes={','.join(self.nodes)} Default=YES MaxTime=INFINITE State=UP
""")

    def _munge(self):
        d = os.path.join(self.work, "munge")
        os.chmod(d, 0o711)
        key = os.path.join(d, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self.daemons.append(subprocess.Popen(
            ["munged", "-F", "-f", f"--key-file={key}", f"--socket={d}/socket", f"--pid-file={d}/pid",
             f"--log-file={d}/log", f"--seed-file={d}/seed"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        self.wait_for("munged's socket", lambda: os.path.exists(f"{d}/socket"), 20)

    def _spawn(self, ns, host, argv, log):
        """argv in namespace ns, with its own hostname and /etc/hosts; the Popen is argv's process.
        nsenter, not ip netns exec: that mounts a sysfs of its own, without
        /sys/fs/cgroup, and slurmd will not start without it."""
        inner = (f"mount --bind {self.work}/hosts /etc/hosts && hostname {host} && exec "
                 + " ".join(argv))
        return subprocess.Popen(["nsenter", f"--net=/run/netns/{ns}", "unshare", "--uts", "--mount", "sh", "-c", inner],
                                stdout=open(os.path.join(self.work, "log", log), "w"), stderr=subprocess.STDOUT,
                                env=self.env())

    # -- nodes ---------------------------------------------------------------
    def start_node(self, node):
        self.slurmd[node] = self._spawn(self.node_ns[node], node, ["slurmd", "-D", "-f", self.conf],
                                        f"slurmd-{node}.out")

    def lose_node(self, node):
        """The node as a machine lost: its slurmd and every process on it SIGKILLed."""
        self._kill_namespace(self.node_ns[node])
        self.slurmd[node].wait()

    # -- clients -------------------------------------------------------------
    def env(self, extra=None):
        env = dict(os.environ, SLURM_CONF=self.conf)
        env.update(extra or {})
        return env

    def client(self, argv, extra_env=None, check=True):
        """A Slurm command run from the controller's namespace (the cluster's login host)."""
        r = subprocess.run(["ip", "netns", "exec", self.ctl_ns, *argv], capture_output=True, text=True,
                           env=self.env(extra_env), cwd=self.work)
        if check and r.returncode != 0:
            raise RuntimeError(f"slurm_cluster: {' '.join(argv)} exited {r.returncode}: {r.stderr.strip()}")
        return r.stdout

    def sbatch(self, argv, extra_env=None):
        out = self.client(["sbatch", "--parsable", *argv], extra_env)
        return out.strip().split(";")[0]

    def job(self, job):
        """{Key: value} of scontrol show job."""
        out = self.client(["scontrol", "show", "job", "-o", job])
        return dict(re.findall(r"(\w+)=(\S*)", out))

    def idle_nodes(self):
        out = self.client(["scontrol", "show", "node", "-o"], check=False)
        return {m.group(1) for m in re.finditer(r"NodeName=(\S+).*?State=IDLE\S*", out)}

    def wait_ended(self, job, timeout):
        """(JobState, ExitCode) once the job has ended."""
        ended = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED")
        info = self.wait_for(f"job {job} to end", lambda: (lambda j: j if j["JobState"] in ended else None)(
            self.job(job)), timeout)
        return info["JobState"], info["ExitCode"]

    def wait_for(self, what, fn, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            value = fn()
            if value:
                return value
            time.sleep(0.25)
        logs = os.path.join(self.work, "log")
        tails = {f: open(os.path.join(logs, f)).read()[-600:] for f in sorted(os.listdir(logs))}
        sys.exit(f"slurm_cluster: timed out after {timeout} s waiting for {what}; logs: {tails}")
