"""Partition servers on a Dask cluster's workers: one per worker, pinned by worker name.

Dask starts each server (wisconsin.cluster.processes: a worker plugin's child process) and
kills what is left when the run ends; everything after the start goes over sockets: the
coordinator's control link and the peers' links (wisconsin.oltp.links), listening on the
worker's own address, authenticated with the run's key, in TLS when the cluster is. A
partition's files live under its worker's data directory ($WISCONSIN_DATA_DIR, else the
coordinator's --data), built there. `python -m wisconsin.oltp.hosted` is the process's
entry: it reads its spec on stdin, says where its control port listens, takes the
coordinator's one connection, then serves as a local partition server does.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

from wisconsin.oltp import links
from wisconsin.oltp.failures import PartitionLost, RunFailed, how_it_ended

CTRL = "\0ctrl"  # in a spec's args: where the control link goes
TASK_TIMEOUT_S = 3600.0  # a build, recovery or check task on a host
ACCEPT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Place:
    """Where partition p runs: its worker, that worker's host, address and data root."""

    worker: str
    host: str  # the host's name
    ip: str  # the worker's own address (the servers listen there)
    root: str  # the worker's data directory
    tls: links.Tls | None  # the worker's own TLS files (None: the cluster is plain TCP)
    cores: int = 1  # the cores the worker's process may run on
    machine: str = ""  # the kernel's boot id: simulated hosts on one machine share it

    def __str__(self) -> str:
        return f"{self.host} ({self.ip}, worker {self.worker})"


def task_where(fallback_root: str) -> dict:
    """On a worker: its name, host, address, data root and TLS files."""
    import socket

    from distributed import get_worker
    from distributed.comm import get_address_host

    w = get_worker()
    sec = w.security
    tls = None
    if sec.tls_ca_file and sec.tls_worker_cert:
        tls = (sec.tls_ca_file, sec.tls_worker_cert, sec.tls_worker_key or sec.tls_worker_cert)
    return {
        "worker": str(w.name),
        "host": socket.gethostname(),
        "ip": get_address_host(w.address),
        "root": os.environ.get("WISCONSIN_DATA_DIR") or fallback_root,
        "tls": tls,
        "cores": len(os.sched_getaffinity(0)),
        "machine": _boot_id(),
    }


def database_key(local_dir) -> str:
    """Which client's database a host's files belong to: a hash of the client's host name
    and the absolute directory its note goes in. Two --data directories on the same workers
    never share a file; a bench on the same one rebuilds its own."""
    import hashlib
    import socket

    text = f"{socket.gethostname()}\0{Path(local_dir).absolute()}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def machine_cores(places: list[Place]) -> int:
    """The cores the partitions' machines have in all (hosts on one machine counted once)."""
    by_machine = {pl.machine or pl.host: pl.cores for pl in places}
    return sum(by_machine.values())


def place(client, partitions: int, fallback_root: str, timeout: float = 60.0) -> list[Place]:
    """Partition p -> its worker (part<p> if the cluster names them so, else by sorted name,
    as the batch workload places partitions): one worker per partition, or ClusterError."""
    from wisconsin.cluster import ClusterError, choose_placement, list_workers
    from wisconsin.cluster.processes import run_pinned

    names = [w.name for w in list_workers(client)]
    owners = choose_placement(names, partitions)
    if len(set(owners.values())) < partitions:
        raise ClusterError(
            f"P={partitions} needs {partitions} workers (one partition server each); the "
            f"cluster has {len(names)}: {', '.join(names)}"
        )
    calls = {p: (w, task_where, (fallback_root,)) for p, w in owners.items()}
    found = run_pinned(client, calls, timeout)
    out = []
    for p in range(partitions):
        f = found[p]
        tls = links.Tls(*f["tls"]) if f["tls"] else None
        out.append(Place(f["worker"], f["host"], f["ip"], f["root"], tls, f["cores"], f["machine"]))
    return out


class Hosts:
    """How PartitionServers starts, watches and stops its partitions on a cluster.

    client: a connected distributed.Client; places: each partition's Place; tls: the
    coordinator's own TLS files (its control links), None on a plain cluster; log_dirs:
    each partition's log directory on its host; repair: the command a lost partition's
    line names."""

    def __init__(self, client, places: list[Place], tls: links.Tls | None, log_dirs, repair=""):
        self.client, self.places, self.tls = client, places, tls
        self.repair = repair  # the command that finishes what a lost partition left decided
        self.log_dirs = [Path(d) for d in log_dirs]
        self.started: list[dict] = []
        self.peer_addresses: list[str] = []  # where each partition's peer port listens
        self.addresses: dict[int, tuple] = {}
        self.link_figures: dict[int, dict] = {}  # p -> {q: probe.measure's figures}
        self.procs = None

    def enter(self, servers) -> None:
        """Start every partition's server on its worker, connect, wire the peers."""
        from wisconsin.cluster.processes import WorkerProcesses, python_argv

        authkey = secrets.token_bytes(16)
        self.procs = WorkerProcesses(self.client).__enter__()
        specs = {}
        for p, pl in enumerate(self.places):
            spec = {
                "target": servers.target,
                "args": servers.args(p, authkey, CTRL, None),
                "authkey": authkey,
                "host": pl.ip,
                "tls": pl.tls,
            }
            err = str(self.log_dirs[p] / f"server-p{p:03d}.err")
            specs[f"p{p}"] = (pl.worker, python_argv(__name__), pickle.dumps(spec), err)
        started = self.procs.start(specs)
        self.started = [started[f"p{p}"] for p in range(len(self.places))]
        for p, s in enumerate(self.started):
            word = s["line"].split()
            if len(word) != 3 or word[0] != "ready":
                raise RunFailed(
                    f"{servers.label} partition {p} on {self.places[p]} did not start "
                    f"({how_it_ended(s['exit'])}); its errors: {s['stderr']} on {s['host']}"
                )
            try:
                servers.ctrls.append(
                    links.dial((word[1], int(word[2])), authkey, self.tls, links.CONNECT_TIMEOUT_S)
                )
            except OSError as exc:
                raise RunFailed(
                    f"{servers.label}: this host cannot connect to partition {p} on "
                    f"{self.places[p]} at {word[1]}:{word[2]}: {exc}"
                ) from None
        ready = servers._gather(START_TIMEOUT, "its start")
        addresses = {p: tuple(address) for p, (_, address, _pid) in enumerate(ready)}
        self.peer_addresses = [f"{a[0]}:{a[1]}" for _, a in sorted(addresses.items())]
        self.addresses = addresses
        servers.pids = [pid for _, _, pid in ready]
        names = {p: str(pl) for p, pl in enumerate(self.places)}
        servers._send_all(("peers", addresses, names), "its start")
        answers = servers._gather(START_TIMEOUT, "its start")
        self.link_figures = {p: a[1] for p, a in enumerate(answers) if len(a) > 1}

    def rewire(self, servers, route) -> dict[int, dict]:
        """Between steps: send partition p its peers' addresses as route(p, q, address)
        gives them (a relay's, say); each server tries and times its links again and the
        next step's terminals use them. Returns {p: {q: probe.measure's figures}}."""
        names = {p: str(pl) for p, pl in enumerate(self.places)}
        for p, ctrl in enumerate(servers.ctrls):
            peers = {q: tuple(route(p, q, a)) for q, a in self.addresses.items()}
            try:
                ctrl.send(("peers", peers, names))
            except (OSError, EOFError):
                raise servers._lost(p, "rewiring its links") from None
        answers = servers._gather(START_TIMEOUT, "rewiring its links")
        return {p: a[1] for p, a in enumerate(answers) if len(a) > 1}

    def link_lines(self) -> list[str]:
        """Each measured link in one line: its hosts, round trip and bandwidth."""
        out = []
        for p, row in sorted(self.link_figures.items()):
            for q, f in sorted(row.items()):
                out.append(
                    f"link {self.places[p].host} -> {self.places[q].host}: round trip "
                    f"{f['rtt_s'] * 1e3:.3f} ms (min {f['rtt_min_s'] * 1e3:.3f}), "
                    f"{f['bandwidth_bps'] / 1e6:.0f} MB/s"
                )
        return out

    def lost(self, servers, p: int, during: str, how: str | None) -> PartitionLost:
        """Partition p's end in one line: its host, pid and exit status (asked of Dask)."""
        code = None
        with contextlib.suppress(Exception):
            code = self.procs.wait([f"p{p}"], EXIT_WAIT)[f"p{p}"]
        if code is None:
            with contextlib.suppress(Exception):
                self.procs.wait([f"p{p}"], 0)
            what = f"{how or 'stopped answering'} during {during}"
        else:
            what = f"{how_it_ended(code)} during {during}" + (f" ({how})" if how else "")
        pid = self.started[p]["pid"] if p < len(self.started) else "?"
        return PartitionLost(
            f"{servers.label} partition {p} on {self.places[p]}, pid {pid}, {what}; the run "
            f"stops; `{self.repair or 'wisconsin repair'}` finishes what it left decided"
        )

    def exit(self, servers, failed: bool) -> None:
        for ctrl in servers.ctrls:
            with contextlib.suppress(OSError, EOFError):
                ctrl.send(("stop",))
        if self.procs is not None:
            keys = [f"p{p}" for p in range(len(self.started))]
            with contextlib.suppress(Exception):
                if keys and not failed:
                    self.procs.wait(keys, 30.0)
            self.procs.__exit__()  # the plugin's teardown kills what is left
        for ctrl in servers.ctrls:
            ctrl.close()


START_TIMEOUT = 120.0
EXIT_WAIT = 5.0


@dataclass(frozen=True)
class Target:
    """The cluster a bench runs its partitions on: its scheduler's address, the client's
    distributed Security (None: plain TCP) and the same TLS files for the control links."""

    address: str
    security: object
    tls: links.Tls | None

    def connect(self):
        from wisconsin.cluster import connect

        return connect(self.address, self.security)


def target(address: str, tls_files: tuple) -> Target:
    """--cluster ADDR with its --tls-ca/--tls-cert/--tls-key, checked (ClusterError): a
    scheduler that is not there fails here, in seconds, before the bench says anything."""
    from wisconsin.cluster import probe, resolve_target

    address, security = resolve_target(address, *tls_files)
    probe(address)
    return Target(address, security, links.Tls(*tls_files) if security is not None else None)


def optional_target(address: str | None, tls_files: tuple) -> Target | None:
    """target() of --cluster, None without it; its TLS files without it are refused."""
    from wisconsin import WisconsinError

    if address is not None:
        return target(address, tls_files)
    if any(tls_files):
        raise WisconsinError("--tls-ca/--tls-cert/--tls-key need --cluster")
    return None


def cluster_args(address: str | None, tls_files=None) -> str:
    """--cluster ADDR and its TLS files (ca, cert, key), as a command line gives them; ""
    without an address."""
    if address is None:
        return ""
    ca, cert, key = tls_files or (None, None, None)
    tls = f" --tls-ca {ca} --tls-cert {cert} --tls-key {key}" if ca else ""
    return f"--cluster {address}{tls}"


def repair_command(local: Path, t: Target) -> str:
    """The command that recovers and checks, on its hosts, the database a cluster bench
    left noted in local (a lost partition's line names it)."""
    tls = (t.tls.ca, t.tls.cert, t.tls.key) if t.tls else None
    return f"wisconsin repair {local} {cluster_args(t.address, tls)}"


# what remove_noted may delete on a host: a partition file's directory, named as the OLTP
# workloads name their databases (a note edited to name another path removes nothing)
PARTITION_FILE = re.compile(r"part-\d{3}\.duckdb")
DATABASE_DIR = re.compile(r"dc\d+|w\d+-p\d+")


def task_remove(partition_path: str) -> int:
    """On a worker: remove its partition's database directory (the file, its WAL, the
    drivers' log); the bytes it held. Workers sharing a directory may race: what another
    removed first is no error, what is left is."""
    import shutil

    f = Path(partition_path)
    p = f.parent
    if not (PARTITION_FILE.fullmatch(f.name) and DATABASE_DIR.fullmatch(p.name)):
        raise OSError(f"{f}: not a partition file of an OLTP database: nothing removed")
    held = sum(f.lstat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else 0
    shutil.rmtree(p, ignore_errors=True)
    if p.exists():
        raise OSError(f"{p}: could not be removed")
    return held


def remove_noted(local_dir: Path, target: Target) -> str:
    """`wisconsin remove DIR --cluster ADDR` of a database a cluster bench left: each host's
    partition directory, removed on its host, then the note here; one line saying so."""
    import shutil

    places, paths = noted_places(read_note(local_dir))
    dirs = [str(Path(path).parent) for path in paths]
    with Session(target) as on:
        on.check_hosts(places)  # the right hosts, or nothing removed
        freed = on.on_each(places, task_remove, lambda p: (paths[p],), timeout=600.0)
    shutil.rmtree(local_dir)
    where = ", ".join(f"{pl.host}:{d}" for pl, d in zip(places, dirs, strict=True))
    return f"removed {local_dir} and its partitions on the hosts ({where}, {sum(freed.values()):,} bytes)"


class Session:
    """A bench's connection to its cluster, for every P it measures (a context manager)."""

    def __init__(self, target: Target):
        self.target = target
        self.client = None

    def __enter__(self) -> Session:
        self.client = self.target.connect()
        return self

    def __exit__(self, *exc) -> None:
        self.client.close()

    def on_each(self, places: list[Place], fn, args_of, timeout: float = TASK_TIMEOUT_S) -> dict:
        """{p: fn(*args_of(p))} run on partition p's worker, all at once."""
        from wisconsin.cluster.processes import run_pinned

        calls = {p: (pl.worker, fn, args_of(p)) for p, pl in enumerate(places)}
        return run_pinned(self.client, calls, timeout)

    def check_hosts(self, places: list[Place]) -> None:
        """ClusterError in one line if a partition's worker is gone or now runs on another
        host than the one that holds its file."""
        from wisconsin.cluster import ClusterError, worker_addresses

        names = worker_addresses(self.client)
        for p, pl in enumerate(places):
            if pl.worker not in names:
                raise ClusterError(
                    f"partition {p}: its worker {pl.worker} is not connected to the scheduler; "
                    f"start it again on {pl.host}"
                )
        now = self.on_each(places, task_where, lambda p: ("",), timeout=60.0)
        for p, pl in enumerate(places):
            if now[p]["host"] != pl.host:
                raise ClusterError(
                    f"partition {p}: its worker {pl.worker} now runs on {now[p]['host']}, but "
                    f"its file is on {pl.host}; start the worker on {pl.host} again"
                )

    def redo_decided(self, places: list[Place], decided, redo, args_of) -> int:
        """Recovery across hosts: decided(*args_of(p)) lists partition p's decided remote
        halves as (remote partition, half); each remote's host gets its own, redo(*args_of(
        p), halves) applies those it lacks and counts them."""
        found = self.on_each(places, decided, args_of)
        want: dict[int, list] = {p: [] for p in range(len(places))}
        for rows in found.values():
            for remote, half in rows:
                want[remote].append(half)
        redone = self.on_each(places, redo, lambda p: (*args_of(p), want[p]))
        return sum(redone.values())


CLUSTER_NOTE = "cluster.json"


def note_where(local_dir: Path, workload: str, record, **more) -> None:
    """Here, in the database's directory: on which hosts its partition files are (its
    workload's repair --cluster reads it back: read_note), and what else the workload needs
    then (more: JSON values)."""
    import dataclasses
    import json

    from wisconsin import atomic

    local_dir.mkdir(parents=True, exist_ok=True)
    body = {"workload": workload, "cluster": dataclasses.asdict(record), **more}
    atomic.write_text(local_dir / CLUSTER_NOTE, json.dumps(body, indent=1) + "\n", overwrite=True)


def read_note(local_dir) -> dict | None:
    """The note's JSON object ({workload, cluster}); None if there is none or it is not one."""
    from wisconsin import WisconsinError, atomic

    try:
        data = atomic.read_json(Path(local_dir) / CLUSTER_NOTE, "cluster note")
    except (WisconsinError, OSError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("cluster"), dict) else None


def noted_places(note: dict) -> tuple[list[Place], list[str]]:
    """Each partition's Place (worker, host, address) and path, as the note recorded them;
    WisconsinError in one line if an edit left it without them."""
    from wisconsin import WisconsinError

    try:
        hosts = sorted(note["cluster"]["hosts"], key=lambda h: h["part"])
        places = [
            Place(str(h["worker"]), str(h["host"]), str(h["address"]).rsplit(":", 1)[0], "", None)
            for h in hosts
        ]
        return places, [str(h["path"]) for h in hosts]
    except (KeyError, TypeError, AttributeError) as exc:
        raise WisconsinError(
            f"the cluster note ({CLUSTER_NOTE}) does not name each partition's worker, host, "
            f"address and path: {type(exc).__name__} {exc}"
        ) from None


def main() -> None:
    """The process's entry on a worker (see the module's docstring)."""
    spec = pickle.loads(sys.stdin.buffer.read())
    listener = links.SocketListener(spec["host"], spec["authkey"], spec["tls"], backlog=1)
    print(f"ready {listener.address[0]} {listener.address[1]}", flush=True)
    os.dup2(2, 1)  # nobody reads the pipe after the first line: what is printed goes to stderr
    try:
        ctrl = listener.accept(ACCEPT_TIMEOUT_S)
    except OSError as exc:
        print(f"no coordinator connected within {ACCEPT_TIMEOUT_S:g} s: {exc}", file=sys.stderr)
        os._exit(3)
    listener.close()
    links.configure(spec["host"], spec["tls"])
    spec["target"](*[ctrl if a == CTRL else a for a in spec["args"]])


if __name__ == "__main__":
    main()
