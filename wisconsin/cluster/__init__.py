"""The Dask transport: connecting (plain or TLS), choosing which worker owns which
partition, checking that owners have not moved, and waiting for pinned tasks without ever
hanging on a dead worker. Building tables on a cluster is wisconsin.builds.dask_cluster's.

Placement (partition i -> worker name), chosen once when a table is generated and then
recorded in its manifest (worker, host, absolute path on that host):

* if the cluster has workers named ``part0 .. part{P-1}``, partition i goes to ``part<i>``;
* otherwise the connected workers are sorted by name and partitions are dealt round-robin
  (i -> sorted_names[i % len(names)]), so a worker may own several partitions.

Where workers write a table's files: wisconsin.builds.dask_cluster.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wisconsin import WisconsinError, store
from wisconsin.store import Manifest
from wisconsin.store import check as store_check

PROBE_S = 3.0  # a scheduler that refuses or does not answer TCP fails within this
# DuckDB's memory limit on a cluster unless --memory-limit is given: a share of each worker's
# own Dask memory limit (or its host's RAM), split among the partitions it holds
WORKER_MEMORY_LIMIT = "60%"
CONNECT_TIMEOUT_S = 30.0
START_GRACE_S = 5.0  # beyond distributed's own connect timeout, for the rest of its start
POLL_S = 1.0  # how often a waiting coordinator checks that the owners are still there


class ClusterError(WisconsinError):
    """The scheduler or a worker cannot be reached, or a cluster task failed."""


class WorkerLost(ClusterError):
    """The worker that owns a partition left the scheduler (or came back as a new process)."""


# --------------------------------------------------------------------------- connecting


def resolve_target(
    address: str,
    tls_ca: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
):
    """(address, Security or None) for a scheduler address and optional TLS files.

    Given TLS files, only ``tls://`` is accepted (an address without a scheme gets it);
    plain ``tcp://`` is refused rather than silently sending data unencrypted.
    """
    from distributed.comm import parse_address, parse_host_port

    try:  # before any Client exists: a half-built one hangs in __del__
        parse_host_port(parse_address(address)[1])
    except ValueError as exc:
        raise ClusterError(
            f"{address!r} is not a scheduler address (like tcp://host:8786): {exc}"
        ) from None
    files = {"--tls-ca": tls_ca, "--tls-cert": tls_cert, "--tls-key": tls_key}
    given = {k: v for k, v in files.items() if v}
    scheme = address.split("://", 1)[0] if "://" in address else ""
    if not given:
        if scheme == "tls":
            raise ClusterError(
                f"{address} is a TLS scheduler: give --tls-ca, --tls-cert and --tls-key"
            )
        return address, None
    missing = [k for k in files if k not in given]
    if missing:
        raise ClusterError(
            f"TLS needs --tls-ca, --tls-cert and --tls-key; missing {', '.join(missing)}"
        )
    for opt, path in given.items():
        if not Path(path).is_file():
            raise ClusterError(f"{opt} {path}: no such file")
    if scheme and scheme != "tls":
        raise ClusterError(
            f"refusing plaintext {scheme}:// with TLS certificates given: use tls://{address.split('://', 1)[1]}"
        )
    if not scheme:
        address = f"tls://{address}"
    _check_tls_files(str(tls_ca), str(tls_cert), str(tls_key))
    from distributed.security import Security

    return address, Security(
        tls_ca_file=str(tls_ca),
        tls_client_cert=str(tls_cert),
        tls_client_key=str(tls_key),
        require_encryption=True,
    )


def _check_tls_files(ca: str, cert: str, key: str) -> None:
    """One line naming the file OpenSSL refuses (e.g. --tls-cert and --tls-key swapped),
    not its "[SSL] PEM lib (_ssl.c:3905)" when the connection is made."""
    import ssl

    ctx = ssl.create_default_context()
    try:
        ctx.load_verify_locations(ca)
    except (ssl.SSLError, ValueError) as exc:
        raise ClusterError(f"--tls-ca {ca}: not a CA certificate in PEM ({exc})") from None
    try:
        ctx.load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        raise ClusterError(
            f"--tls-cert {cert} and --tls-key {key} do not load as a certificate and its "
            f"private key in PEM (swapped, or not a pair?): {exc}"
        ) from None


_report: Callable[[str], None] | None = None  # where notices go (the CLI: stderr)
_announced: set[str] = set()


def set_reporter(fn: Callable[[str], None] | None) -> None:
    """Where connect's dashboard link and the placement warnings are written."""
    global _report
    _report = fn


def notice(line: str) -> None:
    if _report is not None and line not in _announced:
        _announced.add(line)
        _report(line)


def probe(address: str, timeout: float = PROBE_S) -> None:
    """ClusterError within timeout if nothing accepts TCP connections at address: a refused
    or unanswered port fails in seconds, not after distributed's own connect timeout."""
    import socket

    from distributed.comm import parse_address, parse_host_port

    scheme, loc = parse_address(address)
    if scheme not in ("tcp", "tls"):
        return
    host, port = parse_host_port(loc)
    deadline = time.monotonic() + timeout
    while True:
        try:
            left = max(0.1, deadline - time.monotonic())
            with socket.create_connection((host, port), timeout=left) as sock:
                if scheme == "tcp":
                    _says_first(sock, address, timeout)
            return
        except ConnectionRefusedError as exc:
            last, again = exc, True  # the scheduler may be starting: try until the deadline
        except OSError as exc:
            last, again = exc, False  # unreachable or silent: waiting longer will not help
        if not again or time.monotonic() + 0.25 >= deadline:
            why = (last.strerror or str(last) or type(last).__name__).lower()
            raise ClusterError(
                f"cannot connect to the scheduler at {address}: {why} (tried for {timeout:.0f} s)"
            )
        time.sleep(0.25)


def _says_first(sock, address: str, timeout: float) -> None:
    """A Dask scheduler writes its handshake as soon as a TCP connection opens; an HTTP
    server (the dashboard's port) waits for a request, and Client would wait for ever."""
    try:
        sock.settimeout(timeout)
        if sock.recv(1):
            return
        why = "it closed the connection"
    except TimeoutError:
        why = f"it said nothing within {timeout:.0f} s"
    except OSError as exc:
        why = (exc.strerror or str(exc) or type(exc).__name__).lower()
    raise ClusterError(
        f"cannot connect to the scheduler at {address}: something listens there, but no Dask "
        f"scheduler: {why} (the dashboard's port?)"
    )


def connect(address: str, security=None, timeout: float = CONNECT_TIMEOUT_S):
    """A distributed.Client for address, or ClusterError in one line: within PROBE_S if
    nothing listens there, within timeout otherwise. Prints the dashboard link if the
    scheduler serves one."""
    from distributed import Client

    probe(address, min(timeout, PROBE_S))
    # Built in two steps so that a failed start can be closed here, quickly: left to its
    # __del__, a half-started Client blocks the exit for twice the timeout.
    client = Client.__new__(Client)
    try:
        _start_within(client, timeout + START_GRACE_S, address, security=security,
                      timeout=f"{timeout}s", set_as_default=False)  # fmt: skip
    except Exception as exc:  # e.g. something that is not a Dask scheduler answered
        with contextlib.suppress(Exception):
            client.close(timeout=1)
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        # it spoke Dask (the probe saw its handshake) but failed a scheduler's calls
        what = (
            ""
            if isinstance(exc, OSError)
            else "it answered, but not as a scheduler (a worker's port?): "
        )
        raise ClusterError(
            f"cannot connect to the scheduler at {address}: {what}{type(exc).__name__}: {msg[:200]}"
        ) from None
    link = dashboard_link(client)
    if link:
        notice(f"scheduler {address}: dashboard {link}")
    return client


def _start_within(client, limit_s: float, *args, **kwargs) -> None:
    """client.__init__(*args, **kwargs), or TimeoutError after limit_s: distributed bounds
    the connect with its timeout, but not every wait after it (a TLS peer that accepts and
    stays silent held a start past 120 s). The start is left to its daemon thread."""
    import threading

    failed: list[BaseException] = []

    def start() -> None:
        try:
            client.__init__(*args, **kwargs)
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=start, daemon=True, name="wisconsin-client-start")
    thread.start()
    thread.join(limit_s)
    if thread.is_alive():
        raise TimeoutError(f"no Dask scheduler answered within {limit_s:.0f} s")
    if failed:
        raise failed[0]


def dashboard_link(client) -> str | None:
    """The scheduler's dashboard URL, or None if it serves none. Its HTTP server runs even
    with --no-dashboard (health, metrics), so the page itself is asked for, briefly."""
    import urllib.request

    try:
        if "dashboard" not in scheduler_identity(client).get("services", {}):
            return None
        link = client.dashboard_link
        with urllib.request.urlopen(link, timeout=2) as page:
            return link if page.status == 200 else None
    except Exception:  # 404 without Bokeh pages, unreachable from here, ...
        return None


@dataclass(frozen=True)
class WorkerRef:
    name: str
    address: str
    host: str  # the address the worker registered from


def list_workers(client) -> list[WorkerRef]:
    info = scheduler_identity(client)["workers"]
    return sorted(
        (WorkerRef(str(w["name"]), addr, str(w.get("host", ""))) for addr, w in info.items()),
        key=lambda w: w.name,
    )


def scheduler_identity(client) -> dict:
    """The scheduler's identity with every worker, asked now. Not Client.scheduler_info():
    it returns a cached attribute that the client's periodic refresh overwrites with a
    worker-less summary (distributed 2026.8), so the call can return no workers at all:
    measured 85 of 10,616 calls with a 10 ms refresh. Under a slow statement that made
    every partition's worker look gone (a vlx bench failed twice with WorkerLost)."""
    return client.sync(client.scheduler.identity, n_workers=-1)


def worker_addresses(client) -> dict[str, str]:
    return {str(w["name"]): a for a, w in scheduler_identity(client)["workers"].items()}


def choose_placement(names: Sequence[str], partitions: int) -> dict[int, str]:
    """partition -> worker name: part<i> if all such names exist, else round-robin by name."""
    if not names:
        raise ClusterError("no workers are connected to the scheduler")
    have = set(names)
    if all(f"part{i}" in have for i in range(partitions)):
        return {i: f"part{i}" for i in range(partitions)}
    ordered = sorted(have)
    return {i: ordered[i % len(ordered)] for i in range(partitions)}


# --------------------------------------------------------------------------- waiting


def wait_pinned(
    client,
    futures: Mapping[Hashable, object],
    owners: Mapping[Hashable, str],
    timeout: float,
    poll: float = POLL_S,
    known: Mapping[str, str] | None = None,
) -> tuple[dict, dict]:
    """Results of futures pinned to named workers: ({key: result}, {key: exception}).

    Bounded by timeout; a task whose owner leaves the scheduler, or is replaced by a new
    process under the same name (a nanny restart: its sessions and open transaction are
    gone), fails within about ``poll`` seconds with WorkerLost instead of waiting for a
    remote scheduler to reschedule it. known (worker name -> address) is the state the
    work relies on, e.g. taken when the table was opened; without it the first check takes
    it. Nothing is asked of the scheduler until a task is slow, so a fast statement pays
    nothing for the watching.
    """
    from distributed.client import FutureCancelledError

    deadline = time.monotonic() + timeout
    pending = dict(futures)
    out: dict = {}
    failed: dict = {}
    while pending:
        first = next(iter(pending.values()))
        with contextlib.suppress(Exception, FutureCancelledError):
            first.result(timeout=max(0.0, min(poll, deadline - time.monotonic())))
        for k, f in list(pending.items()):
            if f.done():
                del pending[k]
                try:
                    out[k] = f.result()  # done: returns at once
                except (Exception, FutureCancelledError) as exc:
                    failed[k] = exc
        if not pending:
            break
        if first.done() and time.monotonic() < deadline:
            continue  # progress: wait for the next one (no scheduler round trip on the fast path)
        if time.monotonic() >= deadline:
            for k, f in pending.items():
                failed[k] = TimeoutError(f"no answer within {timeout:.0f} s")
                f.cancel()
            break
        now = worker_addresses(client)
        if known is None:
            known = now
        for k, f in list(pending.items()):
            name = owners[k]
            was, is_ = known.get(name), now.get(name)
            if was is not None and is_ == was:
                continue
            if was is None:
                why = f"worker {name} is not connected to the scheduler"
            elif is_ is None:
                why = f"worker {name} ({was}) left the scheduler"
            else:
                why = f"worker {name} was restarted ({was} -> {is_}); its work was lost"
            failed[k] = WorkerLost(why)
            f.cancel()
            del pending[k]
    return out, failed


# --------------------------------------------------------------------------- verifying


def task_verify(path: str, part: dict, table: str, checksum: str) -> list[str]:
    """On the owner: re-read its partition file and compare it with the manifest entry."""
    return store_check.verify_partition(path, part, table, checksum)


# --------------------------------------------------------------------------- placement


def moved_partitions(client, manifest: Manifest) -> dict[int, str]:
    """Partitions whose worker (by name) is connected but now runs on another host than
    the one that wrote the file: that worker would open a different (or no) file."""
    import socket

    remote = [p for p in manifest.parts if p.worker and p.host]
    addresses = worker_addresses(client)
    owners = sorted({p.worker for p in remote if p.worker in addresses})
    if not owners:
        return {}
    hosts = client.run(socket.gethostname, workers=[addresses[w] for w in owners])
    now = {w: hosts.get(addresses[w]) for w in owners}
    return {
        p.index: f"partition {p.index}: its worker {p.worker} now runs on {now[p.worker]}, "
        f"but the partition was written on {p.host} ({p.path})"
        for p in remote
        if p.worker in now and now[p.worker] != p.host
    }


def placement_warnings(client, manifest: Manifest) -> list[str]:
    """Why a P-partition point of this table does not run on P parallel processes."""
    owners = [p.worker for p in manifest.parts if p.worker]
    if not owners:
        return []
    held = {w: owners.count(w) for w in sorted(set(owners))}
    threads = {
        str(w["name"]): int(w.get("nthreads", 1))
        for w in scheduler_identity(client)["workers"].values()
    }
    out = []
    if len(held) < manifest.partitions:
        most = max(held, key=held.get)
        out.append(
            f"warning: {manifest.name} has {manifest.partitions} partitions on "
            f"{len(held)} workers ({most} holds {held[most]}): fewer than P processes, so "
            "its speedup and scaleup are not comparable with P workers"
        )
    short = {w: n for w, n in held.items() if w in threads and threads[w] < n}
    if short:
        w = next(iter(short))
        out.append(
            f"warning: {manifest.name}: worker {w} has {threads[w]} thread(s) for its "
            f"{short[w]} partitions, so they queue instead of running in parallel"
        )
    return out


def check_placement(client, manifest: Manifest) -> list[str]:
    """ClusterError in one line if any partition's worker moved to another host; else the
    warnings (also said as notices) if its P partitions cannot run as P parallel tasks."""
    warnings = placement_warnings(client, manifest)
    for line in warnings:
        notice(line)
    moved = moved_partitions(client, manifest)
    if moved:
        more = f" (and {len(moved) - 1} more)" if len(moved) > 1 else ""
        raise ClusterError(
            f"{manifest.name}: {next(iter(moved.values()))}{more}; start the worker on that host again, or "
            "generate the table anew into another --data directory"
        )
    return warnings


def verify_on_cluster(
    table_dir: str | os.PathLike, client, timeout: float = 600.0
) -> tuple[Manifest, list[str]]:
    """What `info --cluster` checks: local partitions here, every remote one on its owner
    (row count, key range, checksum), and that no owner moved to another host."""
    m, problems = store_check.verify_table(table_dir)
    moved = moved_partitions(client, m)
    remote = {p.index: p for p in m.parts if p.worker and p.index not in moved}
    owners = {i: p.worker for i, p in remote.items()}
    futures = {
        i: client.submit(
            task_verify,
            p.path,
            dataclasses.asdict(p),
            m.table,
            store.checksum_of(m),
            workers=[p.worker],
            allow_other_workers=False,
            pure=False,
            key=f"task_verify-{i}-{time.time_ns()}",
        )
        for i, p in remote.items()
    }
    found, failed = wait_pinned(client, futures, owners, timeout)
    for i in sorted(set(remote) | set(moved)):
        if i in moved:
            problems.append(moved[i])
        elif i in found:
            problems += found[i]
        else:
            e = failed[i]
            problems.append(f"partition {i}: not verified on {owners[i]}: {type(e).__name__}: {e}")
    return m, problems


def info_on_cluster(
    table_dir: str | os.PathLike,
    address: str,
    *,
    tls_ca: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    timeout: float = 600.0,
) -> tuple[Manifest, list[str]]:
    """What `wisconsin info --cluster` does: connect, verify, disconnect."""
    store.read_manifest(table_dir)  # a bad table is reported before connecting
    address, security = resolve_target(address, tls_ca, tls_cert, tls_key)
    client = connect(address, security, min(timeout, CONNECT_TIMEOUT_S))
    try:
        return verify_on_cluster(table_dir, client, timeout)
    finally:
        client.close()


def release_sessions(path: str) -> None:
    """On a worker: ask every plugin that holds engine sessions to release the file at path
    (repair is about to replace it). An engine's worker plugin takes part by having a
    `release_path(path)` method; builds call this without knowing any engine."""
    from distributed import get_worker

    for plugin in list(get_worker().plugins.values()):
        release = getattr(plugin, "release_path", None)
        if release is not None:
            release(path)
