"""A real single-node Slurm for the grader's tests: munged, slurmctld and slurmd in a temporary folder.

Debian's slurm-wlm and munge, run as root without cgroups (process tracking by
/proc, no task plugin, no accounting), one node named after this host with its
cores and memory, and one fake GPU (a gres without a device file) so that the
grading script's `--gres=gpu:1` line is scheduled as on a real cluster. Ports
are picked free and every file lives in the temporary folder, so two test runs
on one machine do not meet. The client tools find this cluster through
SLURM_CONF (`Cluster.env`). sacct needs slurmdbd and a database: the tests
follow jobs with squeue and `scontrol show job`.
"""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
FAKE_GPUS = 4  # array tasks that can hold a GPU at once
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
# Slurm sends SIGTERM to a cancelled task, then SIGKILL after this many seconds (30 by default).
KILL_WAIT_S = 2


class ClusterUnavailable(Exception):
    """The daemons cannot run here; the message says why (the tests skip with it)."""


@dataclass
class Cluster:
    folder: Path
    conf: Path
    node: str
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """This process's environment with the client tools pointed at this cluster."""
        return dict(os.environ, SLURM_CONF=str(self.conf))

    def command(self, *args: str, check: bool = True) -> str:
        """A client tool's output (squeue, scontrol, scancel, sbatch) against this cluster."""
        done = subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=30)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    def log_tails(self) -> str:
        """The end of each daemon's log: what a failure or a skip shows."""
        parts = []
        for name in ("munged", "slurmctld", "slurmd"):
            log = self.folder / f"{name}.log"
            text = log.read_text(errors="replace") if log.is_file() else "(no log)"
            parts.append(f"--- {name} ---\n" + "\n".join(text.splitlines()[-15:]))
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancel what is left of the tests' jobs, stop the daemons by PID (slurmd first), remove the folder."""
        if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
            jobs = self.command("squeue", "-h", "-o", "%A", check=False).split()
            if jobs:
                self.command("scancel", *jobs, check=False)
        for name in ("slurmd", "slurmctld", "munged"):
            process = self.processes.get(name)
            if process is None or process.poll() is not None:
                continue
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _memory_mb() -> int:
    """RealMemory a little below MemTotal: slurmd drains a node that reports less than its config says."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 9 // 10 // 1024
    raise ClusterUnavailable("no MemTotal in /proc/meminfo")


def slurm_conf(folder: Path, node: str, munge_socket: Path) -> str:
    ports = dict(SlurmctldPort=_free_port(), SlurmdPort=_free_port())
    return "\n".join([
        "ClusterName=kit-test",
        f"SlurmctldHost={node}(127.0.0.1)",
        "SlurmUser=root",
        "SlurmdUser=root",
        *[f"{key}={value}" for key, value in ports.items()],
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        # No cgroups: a container's or a CI machine's root cannot rely on them.
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "MpiDefault=none",
        "ReturnToService=2",
        f"KillWait={KILL_WAIT_S}",
        "GresTypes=gpu",
        f"StateSaveLocation={folder / 'state'}",
        f"SlurmdSpoolDir={folder / 'spool'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
        f"SlurmdPidFile={folder / 'slurmd.pid'}",
        f"SlurmctldLogFile={folder / 'slurmctld.log'}",
        f"SlurmdLogFile={folder / 'slurmd.log'}",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory={_memory_mb()} "
        f"Gres=gpu:{FAKE_GPUS} State=UNKNOWN",
        f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def _why_not(node: str) -> str:
    """Why the daemons cannot start here ("" when they can be tried)."""
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        return f"{', '.join(missing)} not found (apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "slurmd runs jobs as their user, so a test cluster needs root"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "no munge user (Debian's munge package makes it)"
    if not node:
        return "this host has no short name"
    return ""


def _start_munged(folder: Path) -> tuple[subprocess.Popen, Path]:
    """munged as the munge user, with a key and socket of its own in `folder`/munge."""
    munge = pwd.getpwnam("munge")
    home = folder / "munge"
    home.mkdir()
    home.chmod(0o711)  # munged wants its socket folder searchable by all (clients connect to it)
    key = home / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    for path in (home, key):
        os.chown(path, munge.pw_uid, munge.pw_gid)
    sock = home / "munge.socket"
    with open(folder / "munged.log", "w") as log:
        process = subprocess.Popen(
            ["munged", "--foreground", f"--socket={sock}", f"--key-file={key}", f"--pid-file={home / 'munged.pid'}",
             f"--seed-file={home / 'munged.seed'}", f"--log-file={home / 'munged.log'}"],
            user=munge.pw_uid, group=munge.pw_gid, stdout=subprocess.DEVNULL, stderr=log)
    return process, sock


def _fake_gpus(folder: Path) -> str:
    """gres.conf of FAKE_GPUS GPUs whose device files are empty files: slurmd counts a GPU per file, as
    /dev/nvidia0..3 on a real node (without a File, slurmd reports none and the node is refused)."""
    for k in range(FAKE_GPUS):
        (folder / f"fake-gpu{k}").touch()
    return f"Name=gpu File={folder}/fake-gpu[0-{FAKE_GPUS - 1}]\n"


def _wait_for(what: str, ready, processes: dict[str, subprocess.Popen]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        dead = [name for name, p in processes.items() if p.poll() is not None]
        if dead:
            raise ClusterUnavailable(f"{', '.join(dead)} exited while waiting for {what}")
        if ready():
            return
        time.sleep(0.2)
    raise ClusterUnavailable(f"{what} not ready after {START_TIMEOUT_S:.0f} s")


def start() -> Cluster:
    """Start the cluster and wait until its node is idle; raises ClusterUnavailable (with the daemons' logs)
    where it cannot run, having stopped whatever it started."""
    node = socket.gethostname().split(".")[0]
    if why := _why_not(node):
        raise ClusterUnavailable(why)
    folder = Path(tempfile.mkdtemp(prefix="kit-slurm-"))
    folder.chmod(0o755)  # munged, as the munge user, reaches its own folder inside
    for sub in ("state", "spool"):
        (folder / sub).mkdir()
    cluster = Cluster(folder, folder / "slurm.conf", node)
    try:
        cluster.processes["munged"], sock = _start_munged(folder)
        _wait_for("munged's socket", sock.exists, cluster.processes)
        cluster.conf.write_text(slurm_conf(folder, node, sock))
        (folder / "gres.conf").write_text(_fake_gpus(folder))
        for daemon in ("slurmctld", "slurmd"):
            with open(folder / f"{daemon}.stderr", "w") as stderr:
                cluster.processes[daemon] = subprocess.Popen(
                    [daemon, "-D", "-f", str(cluster.conf)], env=cluster.env, stdout=subprocess.DEVNULL,
                    stderr=stderr, start_new_session=True)
        _wait_for(f"node {node} to be idle",
                  lambda: cluster.command("sinfo", "-h", "-n", node, "-o", "%T", check=False).strip() == "idle",
                  cluster.processes)
    except (ClusterUnavailable, OSError) as error:
        logs = cluster.log_tails()
        cluster.stop()
        raise ClusterUnavailable(f"{error}\n{logs}") from None
    return cluster
