"""Running on a real Dask cluster: connecting (plain or TLS), choosing which worker owns
which partition, generating partitions in place on their owners, and waiting for pinned
tasks without ever hanging on a dead worker.

Placement (partition i -> worker name), chosen once when a table is generated and then
recorded in its manifest (worker, host, absolute path on that host):

* if the cluster has workers named ``part0 .. part{P-1}``, partition i goes to ``part<i>``;
* otherwise the connected workers are sorted by name and partitions are dealt round-robin
  (i -> sorted_names[i % len(names)]), so a worker may own several partitions.

Where a worker writes: ``$WISCONSIN_DATA_DIR`` in the worker's own environment if set,
else the ``worker_data`` directory given to the coordinator (``--worker-data``), else the
coordinator's ``--data`` path (absolute) - the same path on every host. Under it, the
table's files go to a directory named by the table's identity, e.g.
``F4-n1000000-seed1989-gen1-<table id>``: the id is made when a build starts (kept in
``<data>/<table>/table-id.json`` so an interrupted build resumes into the same directory)
and recorded in the manifest, so two data directories never share a worker-side file. The
manifest and the update decision log stay on the coordinator, in ``<data>/<table>/``. No
table data crosses the network.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wisconsin import WisconsinError, lock, store
from wisconsin.build import BuildResult, Progress, split_reused
from wisconsin.store import Manifest, PartitionInfo, TableSpec

DATA_DIR_ENV = "WISCONSIN_DATA_DIR"
PROBE_S = 3.0  # a scheduler that refuses or does not answer TCP fails within this
# DuckDB's memory limit on a cluster unless --memory-limit is given: a share of each worker's
# own Dask memory limit (or its host's RAM), split among the partitions it holds
WORKER_MEMORY_LIMIT = "60%"
TABLE_ID_FILE = "table-id.json"
CONNECT_TIMEOUT_S = 30.0
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
    from distributed.security import Security

    return address, Security(
        tls_ca_file=str(tls_ca),
        tls_client_cert=str(tls_cert),
        tls_client_key=str(tls_key),
        require_encryption=True,
    )


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
            socket.create_connection((host, port), timeout=left).close()
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
        client.__init__(address, security=security, timeout=f"{timeout}s", set_as_default=False)
    except Exception as exc:  # e.g. something that is not a Dask scheduler answered
        with contextlib.suppress(Exception):
            client.close(timeout=1)
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ClusterError(
            f"cannot connect to the scheduler at {address}: {type(exc).__name__}: {msg[:200]}"
        ) from None
    link = dashboard_link(client)
    if link:
        notice(f"scheduler {address}: dashboard {link}")
    return client


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


# --------------------------------------------------------------------------- worker tasks


def worker_root(fallback: str) -> str:
    """The data root on this worker: $WISCONSIN_DATA_DIR, else the coordinator's choice."""
    return os.environ.get(DATA_DIR_ENV) or fallback


def worker_table_dir(spec: TableSpec, table_id: str) -> str:
    """The table's directory under a worker's data root: its whole identity, not its name."""
    gen = store.generator.GENERATOR_VERSION
    return f"{spec.name}-n{spec.n}-seed{spec.seed}-gen{gen}-{table_id}"


def build_table_id(table_dir: Path, spec: TableSpec) -> str:
    """The id of the table being built in table_dir: the one an interrupted build of the
    same table recorded, else a new one, recorded (before any worker writes under it)."""
    ident = {
        "kind": spec.kind,
        "n": spec.n,
        "partitions": spec.partitions,
        "seed": spec.seed,
        "generator_version": store.generator.GENERATOR_VERSION,
    }
    path = table_dir / TABLE_ID_FILE
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        data = json.loads(path.read_text())
        if {k: data.get(k) for k in ident} == ident and data.get("table_id"):
            return str(data["table_id"])
    table_id = store.new_table_id()
    store.write_json_atomic(path, ident | {"table_id": table_id})
    return table_id


def task_partition_status(
    fallback_root: str, spec: TableSpec, dirname: str, part: int
) -> dict | None:
    """On the owner: the partition's entry if an earlier build completed it, else None."""
    import socket

    from distributed import get_worker

    tdir = Path(worker_root(fallback_root)) / dirname
    info = store.finished_partition(tdir, spec, part)
    if info is None:
        return None
    return dict(
        info.__dict__,
        worker=str(get_worker().name),
        host=socket.gethostname(),
        path=str(tdir / info.file),
    )


def task_build(fallback_root: str, spec: TableSpec, dirname: str, part: int) -> dict:
    """On the owner: generate the partition into its own disk, in place."""
    import psutil
    from distributed import get_worker

    from wisconsin import worker

    limit = get_worker().memory_manager.memory_limit or (
        psutil.virtual_memory().total // max(1, os.cpu_count() or 1)
    )
    mem = f"{max(256, int(limit * 0.6) // 2**20)}MB"
    tdir = os.path.join(worker_root(fallback_root), dirname)
    return worker.task_build_partition(tdir, spec.n, spec.seed, part, spec.partitions, mem)


def task_verify(path: str, part: dict, table: str) -> list[str]:
    """On the owner: re-read its partition file and compare it with the manifest entry."""
    return store.verify_partition(path, part, table)


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
    m, problems = store.verify_table(table_dir)
    moved = moved_partitions(client, m)
    remote = {p.index: p for p in m.parts if p.worker and p.index not in moved}
    owners = {i: p.worker for i, p in remote.items()}
    futures = {
        i: client.submit(
            task_verify,
            p.path,
            dataclasses.asdict(p),
            m.table,
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


# --------------------------------------------------------------------------- generating


def _submit(client, fn, owner: str, *args):
    return client.submit(
        fn,
        *args,
        workers=[owner],
        allow_other_workers=False,
        pure=False,
        key=f"{fn.__name__}-{args[-1]}-{time.time_ns()}",
    )


def _failure_lines(failed: Mapping, owners: Mapping) -> str:
    return "; ".join(
        f"{name} partition {p} on {owners[(name, p)]}: {type(e).__name__}: {e}"
        for (name, p), e in sorted(failed.items())
    )


@lock.locked("data_dir", create=True)
def build_tables_on_cluster(
    data_dir: str | os.PathLike,
    specs: Sequence[TableSpec],
    client,
    worker_data: str | None = None,
    timeout: float = 3600.0,
    progress: Progress | None = None,
) -> BuildResult:
    """Generate every table in specs on the cluster, each partition on its owner's disk.

    Mirrors build.build_tables: a complete table is reused, a different table in the same
    directory is refused, partitions an interrupted build finished are kept (asked of their
    owner), and the manifest (with the placement) is written last, atomically, under
    data_dir/<table>/ on this machine.
    """
    t0 = time.perf_counter()
    for spec in specs:
        store.validate_spec(spec)
    data = Path(data_dir).absolute()
    fallback = str(Path(worker_data).absolute()) if worker_data else str(data)
    names = [w.name for w in list_workers(client)]
    manifests, reused_tables, to_build = split_reused(data, specs)
    owners: dict[tuple[str, int], str] = {}
    ids: dict[str, str] = {}
    by_name = {s.name: s for s in specs}
    for spec in to_build:
        tdir = data / spec.name
        ids[spec.name] = build_table_id(tdir, spec)
        for p, w in choose_placement(names, spec.partitions).items():
            owners[(spec.name, p)] = w

    def dirname(k) -> str:
        return worker_table_dir(by_name[k[0]], ids[k[0]])

    # Which partitions did an earlier build already finish? Ask each owner.
    status, failed = wait_pinned(
        client,
        {
            k: _submit(client, task_partition_status, w, fallback, by_name[k[0]], dirname(k), k[1])
            for k, w in owners.items()
        },
        owners,
        min(timeout, 120.0),
    )
    if failed:
        raise ClusterError(f"cannot reach partition owners: {_failure_lines(failed, owners)}")
    done = {k: PartitionInfo(**v) for k, v in status.items() if v is not None}
    todo = [k for k in owners if k not in done]

    def rows_of(k) -> int:
        lo, hi = store.generator.partition_range(by_name[k[0]].n, k[1], by_name[k[0]].partitions)
        return hi - lo

    rows_total = sum(rows_of(k) for k in todo)
    label = ", ".join(s.name for s in specs if s.name not in manifests) or "nothing to build"
    if progress:
        progress(label, 0, rows_total)
    futures = {
        k: _submit(client, task_build, owners[k], fallback, by_name[k[0]], dirname(k), k[1])
        for k in todo
    }
    built, failed = {}, {}
    if futures:
        # Progress per finished partition; the overall wait is bounded by timeout.
        deadline = time.monotonic() + timeout
        rows_done = 0
        remaining = dict(futures)
        while remaining:
            got, bad = wait_pinned(
                client,
                {k: remaining[k] for k in list(remaining)[:1]},
                owners,
                max(0.0, deadline - time.monotonic()),
            )
            for k in list(got) + list(bad):
                del remaining[k]
            built |= got
            failed |= bad
            rows_done += sum(rows_of(k) for k in got)
            if progress:
                progress(label, rows_done, rows_total)
    done |= {k: PartitionInfo(**v) for k, v in built.items()}

    for spec in specs:
        if spec.name in manifests:
            continue
        parts = [done[(spec.name, p)] for p in range(spec.partitions) if (spec.name, p) in done]
        if len(parts) == spec.partitions:
            m = store.make_manifest(spec, parts, ids[spec.name])
            store.write_manifest(data / spec.name, m)
            manifests[spec.name] = m
    if failed:
        raise ClusterError(
            f"generate failed: {_failure_lines(failed, owners)}; finished partitions are kept "
            "and the next generate resumes"
        )
    return BuildResult(
        manifests=tuple(manifests[s.name] for s in specs),
        built_partitions=len(todo),
        reused_partitions=len(owners) - len(todo),
        reused_tables=tuple(reused_tables),
        rows_built=rows_total,
        seconds=time.perf_counter() - t0,
    )


def generate_on_cluster(
    address: str,
    data_dir: str | os.PathLike,
    specs: Sequence[TableSpec],
    *,
    tls_ca: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    worker_data: str | None = None,
    timeout: float = 3600.0,
    progress: Progress | None = None,
) -> BuildResult:
    """What `wisconsin generate --cluster` does: connect, build in place, disconnect."""
    address, security = resolve_target(address, tls_ca, tls_cert, tls_key)
    client = connect(address, security, min(timeout, CONNECT_TIMEOUT_S))
    try:
        return build_tables_on_cluster(data_dir, specs, client, worker_data, timeout, progress)
    finally:
        client.close()
