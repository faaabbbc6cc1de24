"""Simulate a multi-host Dask cluster on one Linux machine with network namespaces.

Topology of one :class:`NetnsCluster` (``<id>`` is a random 6-hex suffix)::

    root ns (the test process = Dask client)      wisc-<id>-br (bridge ns)
      wisc<id>  10.77.X.1  <---- veth ---->  client --+
                                                       br0 -- p0 <-veth-> eth0 of wisc-<id>-sched  10.77.X.2
                                                          -- p1 <-veth-> eth0 of wisc-<id>-host0   10.77.X.10
                                                          -- p2 <-veth-> eth0 of wisc-<id>-host1   10.77.X.11 ...

Every host namespace runs its own process(es) — ``dask scheduler`` in ``sched``,
one ``dask worker`` (nanny + worker) per ``host<i>`` — with its own hostname (UTS
namespace), own IP and own data directory ``<base_dir>/<host>/data``.

Why the root namespace gets an address on the bridge: the Dask client lives in the
test (or benchmark) process, and Python 3.11 has no ``os.setns``; moving the
client into a namespace would mean a subprocess or per-thread ``setns`` tricks
that break as soon as distributed reuses its IO-loop thread. One veth into the
bridge namespace keeps ``Client(cluster.scheduler_address)`` an ordinary call.
Its price is that the root namespace sees the /24, so each live instance gets its
own ``10.77.X.0/24`` (allocated under a file lock); traffic never leaves the
namespaces and the veth created here.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = [
    "DATA_DIR_ENV",
    "NAME_PREFIX",
    "QUIET_DASK_ENV",
    "Host",
    "NetnsCluster",
    "NetnsUnavailable",
    "TlsFiles",
    "TlsUnavailable",
    "check_available",
    "cleanup_stale",
    "leftovers",
    "make_tls_files",
]

NAME_PREFIX = "wisc"
# One /24 per live instance out of this pool; the third octet is allocated.
SUBNET_POOL = ipaddress.ip_network("10.77.0.0/16")
STATE_DIR = Path(os.environ.get("WISCONSIN_NETNS_STATE", "/run/wisconsin-netns"))
SCHEDULER_PORT = 8786
# Set in each worker's environment: that host's own data directory.
DATA_DIR_ENV = "WISCONSIN_DATA_DIR"
_CMD_TIMEOUT = 30.0
_NS_RE = re.compile(rf"^{NAME_PREFIX}-([0-9a-f]{{6}})-")

# An idle 16-worker cluster burnt ~46% of both cores with defaults; this gave ~3%.
# The 20 ms event-loop tick, 10 ms profiler and 100 ms memory monitor are the cost.
QUIET_DASK_ENV: dict[str, str] = {
    "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
    "DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s",
    "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "2s",
    "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__GIL__ENABLED": "False",
    "DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL": "1s",
}


class NetnsUnavailable(RuntimeError):
    """This machine/user cannot create network namespaces; the message says why."""


class TlsUnavailable(NetnsUnavailable):
    """No way to make throwaway TLS certificates (no ``openssl`` CLI)."""


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: CA bundle, certificate and its private key (one cert for every node)."""

    ca: Path
    cert: Path
    key: Path

    def cli_args(self) -> list[str]:
        """``dask scheduler`` / ``dask worker`` arguments to serve TLS only."""
        return [
            "--protocol",
            "tls",
            "--tls-ca-file",
            str(self.ca),
            "--tls-cert",
            str(self.cert),
            "--tls-key",
            str(self.key),
        ]

    def security(self):
        """A client-side ``distributed.security.Security`` that refuses plain TCP."""
        from distributed.security import Security

        return Security(
            tls_ca_file=str(self.ca),
            tls_client_cert=str(self.cert),
            tls_client_key=str(self.key),
            require_encryption=True,
        )


@dataclass(frozen=True)
class Host:
    """One simulated machine: its namespace, IP, and directories."""

    host: str  # "sched", "host0", ... (also its hostname inside the namespace)
    netns: str
    ip: str
    dir: Path  # <base_dir>/<host>

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    @property
    def dask_dir(self) -> Path:
        return self.dir / "dask"


def _run(cmd: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        res = subprocess.run(
            list(cmd), capture_output=True, text=True, timeout=_CMD_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"timed out after {_CMD_TIMEOUT}s: {' '.join(cmd)}") from exc
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()}")
    return res


def _ip(args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``ip <args>``; all our names are free of whitespace, so split() is safe."""
    return _run(["ip", *args.split()], check=check)


def check_available() -> None:
    """Raise :class:`NetnsUnavailable` unless namespaces, veths and bridges can be made."""
    if not sys.platform.startswith("linux"):
        raise NetnsUnavailable(f"network namespaces need Linux, not {sys.platform}")
    if os.geteuid() != 0:
        raise NetnsUnavailable("network namespaces need root (euid 0)")
    for tool in ("ip", "unshare", "setpriv", "hostname"):
        if shutil.which(tool) is None:
            raise NetnsUnavailable(f"`{tool}` not found on PATH (iproute2 / util-linux)")
    probe = f"{NAME_PREFIX}-probe-{os.getpid()}-{secrets.token_hex(2)}"
    try:
        res = _run(["ip", "netns", "add", probe], check=False)
        if res.returncode != 0:
            raise NetnsUnavailable(f"`ip netns add` failed: {res.stderr.strip()}")
        for cmd in (
            ["ip", "-n", probe, "link", "add", "br0", "type", "bridge"],
            ["ip", "-n", probe, "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
        ):
            res = _run(cmd, check=False)
            if res.returncode != 0:
                raise NetnsUnavailable(f"`{' '.join(cmd[3:])}` failed: {res.stderr.strip()}")
    finally:
        _run(["ip", "netns", "del", probe], check=False)


# ---------------------------------------------------------------------------
# Leftover cleanup (a SIGKILLed test run cannot clean up after itself)


def _list_netns() -> list[str]:
    res = _run(["ip", "netns", "list"], check=False)
    # Lines look like "name (id: 3)" or just "name".
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]


def _owner_alive(instance_id: str) -> bool:
    try:
        state = json.loads((STATE_DIR / f"{instance_id}.json").read_text())
        proc = psutil.Process(state["pid"])
        # Guard against pid reuse: the creating process must be the same one.
        return abs(proc.create_time() - state["create_time"]) < 1.0
    except (OSError, ValueError, KeyError, psutil.Error):
        return False


def _kill_netns_pids(ns: str, sig: int) -> list[int]:
    res = _run(["ip", "netns", "pids", ns], check=False)
    pids = [int(p) for p in res.stdout.split() if p.isdigit()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    return pids


def _destroy_netns(namespaces: Sequence[str], grace: float) -> None:
    """SIGTERM everything in ``namespaces``, SIGKILL after ``grace`` s, then delete them."""
    present = set(_list_netns())
    namespaces = [ns for ns in namespaces if ns in present]
    pids: list[int] = []
    for ns in namespaces:
        pids += _kill_netns_pids(ns, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if psutil.pid_exists(p) and _not_zombie(p)]
        time.sleep(0.05)
    for ns in namespaces:
        _kill_netns_pids(ns, signal.SIGKILL)
    for ns in namespaces:
        _run(["ip", "netns", "del", ns], check=False)


def _not_zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def leftovers(instance_id: str | None = None) -> dict[str, list[str]]:
    """Namespaces and root-namespace links with our prefix (optionally of one instance)."""
    tag = instance_id or ""
    ns = [n for n in _list_netns() if n.startswith(f"{NAME_PREFIX}-{tag}")]
    ns = [n for n in ns if instance_id or _NS_RE.match(n) or n.startswith(f"{NAME_PREFIX}-probe")]
    res = _run(["ip", "-o", "link", "show"], check=False)
    links = []
    for line in res.stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if (
            re.fullmatch(rf"{NAME_PREFIX}{tag}[0-9a-f]*", name)
            and len(name) == len(NAME_PREFIX) + 6
        ):
            links.append(name)
    return {"netns": ns, "links": links}


def cleanup_stale(grace: float = 1.0) -> list[str]:
    """Remove namespaces/links/state of instances whose creating process is gone.

    Returns the removed instance ids. Live instances (owner still running) are kept,
    so this is safe to call at the start of every test session.
    """
    ids: set[str] = set()
    for ns in _list_netns():
        m = _NS_RE.match(ns)
        if m:
            ids.add(m.group(1))
    for link in leftovers()["links"]:
        ids.add(link[len(NAME_PREFIX) :])
    if STATE_DIR.is_dir():
        ids.update(p.stem for p in STATE_DIR.glob("*.json"))
    removed = []
    for iid in sorted(ids):
        if _owner_alive(iid):
            continue
        _destroy_netns([n for n in _list_netns() if n.startswith(f"{NAME_PREFIX}-{iid}-")], grace)
        _run(["ip", "link", "del", f"{NAME_PREFIX}{iid}"], check=False)
        (STATE_DIR / f"{iid}.json").unlink(missing_ok=True)
        removed.append(iid)
    # Probes are created and deleted within one call; one left behind is from a killed run.
    for ns in _list_netns():
        if ns.startswith(f"{NAME_PREFIX}-probe-"):
            pid = int(ns.split("-")[2]) if ns.split("-")[2].isdigit() else -1
            if not psutil.pid_exists(pid):
                _run(["ip", "netns", "del", ns], check=False)
    return removed


@contextlib.contextmanager
def _state_lock() -> Iterator[None]:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / "lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _root_networks() -> list[ipaddress.IPv4Network]:
    """Networks already used by the root namespace (addresses and routes)."""
    nets = []
    out = _run(["ip", "-4", "-o", "addr", "show"]).stdout
    for m in re.finditer(r"inet (\S+)", out):
        nets.append(ipaddress.ip_interface(m.group(1)).network)
    for line in _run(["ip", "-4", "route", "show"]).stdout.splitlines():
        dst = line.split()[0]
        if dst != "default":
            with contextlib.suppress(ValueError):
                nets.append(ipaddress.ip_network(dst, strict=False))
    return nets


def _pick_subnet() -> ipaddress.IPv4Network:
    used = _root_networks()
    for cand in SUBNET_POOL.subnets(new_prefix=24):
        if not any(cand.overlaps(u) for u in used):
            return cand
    raise RuntimeError(f"no free /24 left in {SUBNET_POOL}")


# ---------------------------------------------------------------------------
# TLS material


def make_tls_files(directory: str | os.PathLike[str], days: int = 2) -> TlsFiles:
    """Create a throwaway CA and one node/client certificate signed by it.

    Uses the ``openssl`` CLI: distributed does not depend on ``cryptography``, and it
    is not installed here. Hostname checks are off in distributed's TLS (it pins the
    CA instead), so one certificate serves the scheduler, every worker and the client.
    The extensions are the ones Python's VERIFY_X509_STRICT (3.13+) insists on.
    """
    if shutil.which("openssl") is None:
        raise TlsUnavailable("`openssl` CLI not found; cannot create test certificates")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ca_key, ca, key, csr, cert = (
        d / n for n in ("ca.key", "ca.pem", "node.key", "node.csr", "node.pem")
    )
    ext = d / "node.ext"
    ext.write_text(
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth,clientAuth\n"
        "subjectKeyIdentifier=hash\n"
        "authorityKeyIdentifier=keyid\n"
        "subjectAltName=DNS:localhost,DNS:wisconsin-node,IP:127.0.0.1\n"
    )
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _run(
        ["openssl", "req", "-x509", *ec, "-keyout", str(ca_key), "-out", str(ca)]
        + ["-days", str(days), "-subj", "/CN=wisconsin throwaway CA"]
        + ["-addext", "basicConstraints=critical,CA:TRUE"]
        + ["-addext", "keyUsage=critical,keyCertSign,cRLSign"]
        + ["-addext", "subjectKeyIdentifier=hash"]
    )
    _run(
        [
            "openssl",
            "req",
            *ec,
            "-keyout",
            str(key),
            "-out",
            str(csr),
            "-subj",
            "/CN=wisconsin-node",
        ]
    )
    _run(
        ["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key)]
        + ["-CAcreateserial", "-out", str(cert), "-days", str(days), "-extfile", str(ext)]
    )
    for p in (ca_key, key):
        p.chmod(0o600)
    return TlsFiles(ca=ca, cert=cert, key=key)


# ---------------------------------------------------------------------------
# The cluster


class NetnsCluster:
    """A Dask scheduler and ``n_workers`` workers, each on its own simulated host.

    Use as a context manager; everything (processes, namespaces, veths, state file)
    is removed on exit, also after exceptions and KeyboardInterrupt.

    Attributes after start: ``scheduler_address``, ``worker_names``, ``scheduler_host``,
    ``hosts`` (worker name -> :class:`Host`), ``data_dirs`` (worker name -> Path),
    ``client_ip`` (root-namespace address), ``subnet``, ``instance_id``.
    Methods: ``client()``, ``security()``, ``kill_worker()``, ``crash_worker_process()``,
    ``worker_pids()``, ``log_path()``, ``start()``, ``stop()``.

    The dask processes carry a parent-death signal bound to the *thread* that called
    ``start()``: start clusters from a thread that outlives them (e.g. the main one).
    Worker processes see their host's data directory in ``$WISCONSIN_DATA_DIR``.
    """

    def __init__(
        self,
        n_workers: int,
        base_dir: str | os.PathLike[str],
        worker_names: Sequence[str] | None = None,
        tls: TlsFiles | None = None,
        *,
        resources: bool = True,
        memory_limit: str = "2GiB",
        timeout: float = 60.0,
        quiet: bool = True,
        env: Mapping[str, str] | None = None,
        extra_worker_args: Sequence[str] = (),
    ) -> None:
        if n_workers < 1:
            raise ValueError("n_workers must be >= 1")
        if n_workers > 240:
            raise ValueError("at most 240 workers fit the /24 address plan")
        names = (
            list(worker_names)
            if worker_names is not None
            else [f"part{i}" for i in range(n_workers)]
        )
        if len(names) != n_workers or len(set(names)) != n_workers:
            raise ValueError(f"need {n_workers} distinct worker names, got {names!r}")
        self.n_workers = n_workers
        self.base_dir = Path(base_dir).resolve()
        self.worker_names: list[str] = names
        self.tls = tls
        self.resources = resources
        self.memory_limit = memory_limit
        self.timeout = timeout
        self.extra_worker_args = list(extra_worker_args)
        self._env = {**os.environ, **(QUIET_DASK_ENV if quiet else {}), **(env or {})}
        self.instance_id = secrets.token_hex(3)
        self.bridge_netns = f"{NAME_PREFIX}-{self.instance_id}-br"
        self.root_link = f"{NAME_PREFIX}{self.instance_id}"
        self.subnet: ipaddress.IPv4Network | None = None
        self.client_ip: str | None = None
        self.scheduler_host: Host | None = None
        self.hosts: dict[str, Host] = {}
        self.scheduler_address: str | None = None
        self._procs: dict[str, subprocess.Popen[bytes]] = {}  # host -> process
        self._namespaces: list[str] = []
        self._started = False
        self._stopped = False

    # -- public API ----------------------------------------------------------

    @property
    def data_dirs(self) -> dict[str, Path]:
        """Worker name -> that host's own data directory."""
        return {name: h.data_dir for name, h in self.hosts.items()}

    def security(self):
        """Client ``Security`` for this cluster (None without TLS)."""
        return self.tls.security() if self.tls else None

    def client(self, **kwargs):
        """A ``distributed.Client`` connected to this cluster (caller closes it)."""
        from distributed import Client

        kwargs.setdefault("timeout", self.timeout)
        kwargs.setdefault("set_as_default", False)
        if self.tls:
            kwargs.setdefault("security", self.security())
        return Client(self.scheduler_address, **kwargs)

    def worker_pids(self, name: str) -> list[int]:
        """Pids of all processes on ``name``'s host (nanny and worker)."""
        res = _run(["ip", "netns", "pids", self.hosts[name].netns], check=False)
        return [int(p) for p in res.stdout.split() if p.isdigit()]

    def kill_worker(self, name: str, timeout: float = 10.0) -> None:
        """SIGKILL every process on ``name``'s host, simulating a dead machine.

        The nanny goes too: killing only the worker would let the nanny restart it
        under a new address, which is a different failure mode.
        """
        host = self.hosts[name]
        _kill_netns_pids(host.netns, signal.SIGKILL)
        proc = self._procs.get(host.host)
        if proc is not None:
            proc.kill()
            proc.wait(timeout=timeout)
        deadline = time.monotonic() + timeout
        while any(_not_zombie(p) for p in self.worker_pids(name)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"processes of {name} survived SIGKILL for {timeout}s")
            time.sleep(0.05)

    def crash_worker_process(self, name: str) -> int:
        """SIGKILL only the worker process of ``name`` and return its pid.

        Its nanny survives and starts a new worker process: same name, new address
        (tasks pinned by address then wait forever; by name they follow).
        """
        nanny = psutil.Process(self._procs[self.hosts[name].host].pid)
        # distributed starts the worker with multiprocessing's "spawn" method.
        workers = [c for c in nanny.children() if "spawn_main" in " ".join(c.cmdline())]
        if len(workers) != 1:
            raise RuntimeError(
                f"expected one worker process under the nanny of {name}, got {workers}"
            )
        workers[0].kill()
        return workers[0].pid

    def log_path(self, host: str) -> Path:
        """Combined stdout/stderr of the dask process on ``host`` ("sched", "host0", ...)."""
        return self.base_dir / host / f"{host}.log"

    def start(self) -> NetnsCluster:
        """Build the network, start scheduler and workers, wait until all registered."""
        if self._started:
            raise RuntimeError("NetnsCluster already started")
        self._started = True
        # For callers that forget stop(); SIGKILL/SIGTERM of the owner skip this, and
        # are covered by the parent-death signal plus cleanup_stale().
        atexit.register(self.stop)
        try:
            check_available()
            self._build_network()
            self._start_scheduler()
            self._start_workers()
            self._wait_for_workers()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, grace: float = 3.0) -> None:
        """Stop all processes and delete namespaces, links and the state file. Idempotent."""
        if self._stopped or not self._started:
            return
        self._stopped = True
        atexit.unregister(self.stop)
        try:
            _destroy_netns(list(reversed(self._namespaces)), grace)
            for proc in self._procs.values():
                if proc.poll() is None:
                    proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
            # The root veth dies with its peer in the bridge namespace; this is belt and braces.
            _run(["ip", "link", "del", self.root_link], check=False)
        finally:
            (STATE_DIR / f"{self.instance_id}.json").unlink(missing_ok=True)

    def __enter__(self) -> NetnsCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"NetnsCluster(id={self.instance_id}, scheduler={self.scheduler_address}, "
            f"workers={self.worker_names})"
        )

    # -- internals -----------------------------------------------------------

    def _write_state(self) -> None:
        state = {
            "pid": os.getpid(),
            "create_time": psutil.Process().create_time(),
            "subnet": str(self.subnet) if self.subnet else None,
            "base_dir": str(self.base_dir),
        }
        (STATE_DIR / f"{self.instance_id}.json").write_text(json.dumps(state))

    def _add_netns(self, ns: str) -> None:
        # Record before creating, so stop() removes it even if the add half-fails.
        self._namespaces.append(ns)
        _ip(f"netns add {ns}")
        _ip(f"-n {ns} link set lo up")

    def _build_network(self) -> None:
        # The lock spans subnet choice and address assignment, so two instances
        # starting at once cannot pick the same /24.
        with _state_lock():
            self.subnet = _pick_subnet()
            self._write_state()
            addrs = list(self.subnet.hosts())
            self.client_ip = str(addrs[0])
            br = self.bridge_netns
            self._add_netns(br)
            _ip(f"-n {br} link add br0 type bridge")
            _ip(f"-n {br} link set br0 up")
            _ip(f"link add {self.root_link} type veth peer name client netns {br}")
            _ip(f"-n {br} link set client master br0 up")
            _ip(f"addr add {self.client_ip}/24 dev {self.root_link}")
            _ip(f"link set {self.root_link} up")

        plan = [("sched", addrs[1])] + [(f"host{i}", addrs[9 + i]) for i in range(self.n_workers)]
        for port, (host, ip) in enumerate(plan):
            ns = f"{NAME_PREFIX}-{self.instance_id}-{host}"
            self._add_netns(ns)
            _ip(f"-n {br} link add p{port} type veth peer name eth0 netns {ns}")
            _ip(f"-n {br} link set p{port} master br0 up")
            _ip(f"-n {ns} addr add {ip}/24 dev eth0")
            _ip(f"-n {ns} link set eth0 up")
            h = Host(host=host, netns=ns, ip=str(ip), dir=self.base_dir / host)
            for d in (h.dir, h.data_dir, h.dask_dir):
                d.mkdir(parents=True, exist_ok=True)
            if host == "sched":
                self.scheduler_host = h
            else:
                self.hosts[self.worker_names[len(self.hosts)]] = h

    def _spawn(
        self, h: Host, args: Sequence[str], env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        # setpriv: die if we die (also on SIGKILL of the test run; the pdeathsig
        # survives the execs below). unshare --uts: own hostname per simulated host.
        # `ip netns exec` execs in place, so the pid is the Python process itself.
        cmd = [
            "setpriv", "--pdeathsig", "KILL", "--",
            "unshare", "--uts", "--",
            "sh", "-c", 'hostname "$1" && shift && exec "$@"', "sh", h.host,
            "ip", "netns", "exec", h.netns, sys.executable, *args,
        ]  # fmt: skip
        log = open(self.log_path(h.host), "ab")  # noqa: SIM115 - handed to the child
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**self._env, **(env or {})},
                cwd=h.dir,
                # Own session: a terminal Ctrl-C reaches only us; stop() cleans up.
                start_new_session=True,
            )
        finally:
            log.close()
        self._procs[h.host] = proc
        return proc

    def _check_alive(self, host: str) -> None:
        proc = self._procs[host]
        if proc.poll() is not None:
            tail = self.log_path(host).read_text(errors="replace")[-3000:]
            raise RuntimeError(f"dask process on {host} exited with {proc.returncode}:\n{tail}")

    def _start_scheduler(self) -> None:
        h = self.scheduler_host
        assert h is not None
        proto = "tls" if self.tls else "tcp"
        args = [
            "-m",
            "distributed.cli.dask_scheduler",
            "--host",
            h.ip,
            "--port",
            str(SCHEDULER_PORT),
        ]
        # --no-dashboard drops the Bokeh pages, but the HTTP server (health, metrics)
        # still listens on 0.0.0.0:8787 unless given an address; keep it on this host's IP.
        args += ["--no-dashboard", "--dashboard-address", f"{h.ip}:8787"]
        args += self.tls.cli_args() if self.tls else []
        self._spawn(h, args)
        self.scheduler_address = f"{proto}://{h.ip}:{SCHEDULER_PORT}"
        # Wait for the port from the client's side: this also proves the root veth works.
        deadline = time.monotonic() + self.timeout
        while True:
            self._check_alive("sched")
            with socket.socket() as s:
                s.settimeout(0.5)
                if s.connect_ex((h.ip, SCHEDULER_PORT)) == 0:
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"scheduler not listening on {h.ip}:{SCHEDULER_PORT} after {self.timeout}s"
                )
            time.sleep(0.1)

    def _start_workers(self) -> None:
        for i, (name, h) in enumerate(self.hosts.items()):
            args = ["-m", "distributed.cli.dask_worker", self.scheduler_address]
            args += ["--name", name, "--nthreads", "1", "--nworkers", "1"]
            args += ["--host", h.ip, "--local-directory", str(h.dask_dir)]
            args += ["--memory-limit", self.memory_limit]
            args += ["--no-dashboard", "--dashboard-address", f"{h.ip}:0"]
            # A dead scheduler should take the workers down instead of leaving them retrying.
            args += ["--death-timeout", str(int(self.timeout))]
            if self.resources:
                args += ["--resources", f"part{i}=1"]
            args += self.tls.cli_args() if self.tls else []
            args += self.extra_worker_args
            self._spawn(h, args, env={DATA_DIR_ENV: str(h.data_dir)})

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + self.timeout
        with self.client(timeout=self.timeout) as c:
            while True:
                for host in self._procs:
                    self._check_alive(host)
                from wisconsin.cluster import scheduler_identity

                info = scheduler_identity(c)
                got = {w["name"] for w in info["workers"].values()}
                if got >= set(self.worker_names):
                    return
                if time.monotonic() > deadline:
                    missing = sorted(set(self.worker_names) - got)
                    raise TimeoutError(f"workers {missing} not registered after {self.timeout}s")
                time.sleep(0.1)
