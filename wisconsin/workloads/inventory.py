"""What the tool built under a directory, and removing it: `wisconsin list` and `remove`.

Each thing is recognised by what it holds, never by name alone: a Wisconsin table by its
manifest (or, half-built, by a table name and nothing but partition files), a DebitCredit
database by its manifest's workload, a run file by its JSON, Dask's log directories by the
prefix the engine gives them. `remove` deletes only those, under their locks (a table in
use is refused), and refuses a directory holding anything else, naming it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from wisconsin import WisconsinError, workloads
from wisconsin.builds.cost import size
from wisconsin.oltp.hosted import CLUSTER_NOTE as NOTE  # where a cluster bench's partitions are
from wisconsin.runfiles import abfile
from wisconsin.store import MANIFEST, TABLE_NAME, lock

LOGS_PREFIX = ".wisconsin-logs-"  # cluster/logs.py: a run's Dask log directory
PROBE = "_probe"  # bench's calibration tables: a data directory of their own
# what a table directory may hold besides its partitions while a build is unfinished
PARTITION_FILE = re.compile(r"part-[0-9]+\.duckdb.*")
# everything a built table or database holds: partitions (and DuckDB's WAL and temporary
# names), per-partition expectations, the manifest, the update journal, the ack log
# (and a killed build's temporary names: builds/leftovers.py; generate clears them)
TABLE_ENTRY = re.compile(
    r"part-[0-9]+\..+|manifest\.json|_txlog|_acklog"
    r"|\.(part-[0-9]+|manifest|table-id)\.tmp-[0-9]+\.json|\.write-test-[0-9]+"
)


@dataclass(frozen=True)
class Item:
    path: Path
    kind: str  # "wisconsin table", "debitcredit database", "wisconsin run", ...
    size_bytes: int
    state: str  # "verified", "damaged: ...", "in use", "incomplete", "complete", ...


def disk_bytes(path: Path) -> int:
    """Bytes on disk under path (files once each; symlinks not followed)."""
    if path.is_symlink() or path.is_file():
        return path.lstat().st_blocks * 512
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):  # gone meanwhile
                total += (Path(root) / f).lstat().st_blocks * 512
    return total


def disk_used(paths) -> int:
    return sum(disk_bytes(Path(p)) for p in paths if os.path.lexists(p))


def disk_line(
    data: Path,
    tables: list[Path],
    run_path: Path | None = None,
    on_cluster: bool = False,
    remove_args: str = "",
) -> str:
    """The last line of generate and bench: where the tables (and a bench's run file,
    report and figures) are, their size on disk, and how to remove them (remove_args: what
    `wisconsin remove` needs too, e.g. an OLTP cluster database's --cluster and TLS files)."""
    data = Path(data).absolute()
    tables = [t.absolute() for t in tables if t.exists()]
    outs: list[Path] = []
    if run_path is not None:
        run_path = run_path.absolute()
        outs = [p for p in run_path.parent.iterdir() if p.name.startswith(run_path.stem)]
    # the whole data directory when it holds nothing else (lock files and the probe aside)
    # and `wisconsin remove` takes it (nothing in it the tool did not build)
    other = [p for p in data.iterdir() if p not in tables and p.name != PROBE and p.is_dir()]
    rm_tables = " ".join(map(str, tables)) if other or _foreign(data) else str(data)
    where = (
        f"on the cluster workers' disks (manifests in {data})"
        if on_cluster
        else f"{size(disk_used(tables))} in {data}"
    )
    remove = f"`wisconsin remove {rm_tables}{' ' + remove_args if remove_args else ''}`"
    if run_path is None:
        return f"disk: tables {where}; remove them with {remove}"
    # `remove` takes what it built, not run files (they are the results): rm them
    rm = "rm -r" if any(p.is_dir() for p in outs) else "rm"
    return (
        f"disk: tables {where}, run file, report and figures {size(disk_used(outs))} in "
        f"{run_path.parent}; remove the tables with {remove}, the run's files with "
        f"`{rm} {run_path.with_suffix('')}*`"
    )


def table_kind(d: Path) -> str | None:
    """'wisconsin table' / 'debitcredit database' / 'unfinished table' for a directory the
    tool built as one, else None."""
    if not d.is_dir() or d.is_symlink():
        return None
    if (d / MANIFEST).is_file():
        name = workloads.of_table(d)  # an OLTP workload's database, or a Wisconsin table
        return "wisconsin table" if name == workloads.NAMES[0] else f"{name} database"
    if TABLE_NAME.fullmatch(d.name):
        names = [p.name for p in d.iterdir()]
        if all(PARTITION_FILE.fullmatch(n) or n == lock.LOCK_FILE for n in names):
            return "unfinished table"  # a build killed before its manifest
    return None


def file_kind(p: Path) -> str | None:
    """What kind of run file p is, or None (not one of the tool's)."""
    if p.name.endswith(".json.journal"):
        return "run journal"
    if p.suffix not in (".json", ".partial") or not p.is_file():
        return None
    try:
        with open(p, "rb") as fh:
            data = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    if data.get("kind") == abfile.KIND:
        return "a/b file"
    if data.get("workload") == "debitcredit" and "results" in data:
        return "debitcredit run" + (" (progress)" if p.suffix == ".partial" else "")
    if data.get("workload") == "tpcc" and "result" in data:
        return "tpcc run"
    if "measurements" in data and "config" in data:
        return "wisconsin run"
    return None


def _table_state(d: Path, kind: str, verify: bool) -> str:
    if kind == "unfinished table":
        return "incomplete: no manifest (`wisconsin generate` finishes it)"
    try:
        with lock.hold_tables([d], shared=True):
            if not verify:
                return "not checked"
            if kind.endswith(" database"):
                # through the registry: this module serves every workload, imports none
                lines, problem = workloads.get(workloads.of_table(d)).info_table(d)
                bad = [] if problem is None else [_problem(lines)]
            else:
                from wisconsin.store.check import verify_table
                from wisconsin.store.updates import DecisionLog

                _, bad = verify_table(d)
                bad += [] if DecisionLog(d).is_empty() else ["an update is pending"]
    except lock.DataDirBusy:
        return "in use"
    except WisconsinError as exc:
        return f"damaged: {exc}"
    return (
        f"damaged: {bad[0]}" + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else "")
        if bad
        else ("verified")
    )


def _problem(lines: list[str]) -> str:
    """What `info` found wrong, from its lines: the first problem, or its last word."""
    said = [ln.removeprefix("problem: ") for ln in lines if ln.startswith("problem: ")]
    return said[0] if said else lines[-1]


def _run_state(p: Path, kind: str) -> str:
    if kind in ("run journal", "debitcredit run (progress)"):
        return "incomplete"
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError):
        return "unreadable"
    status = data.get("status", "complete")
    return status if isinstance(status, str) else "unreadable"


def _natural(name: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def walk(root: Path, verify: bool = True, depth: int = 4) -> Iterator[Item]:
    """Everything the tool built under root, tables before the files beside them."""
    root = Path(root)
    if (kind := table_kind(root)) is not None:
        yield Item(root, kind, disk_bytes(root), _table_state(root, kind, verify))
        return
    if not os.path.lexists(root):
        raise WisconsinError(f"{root}: no such file or directory")
    if not root.is_dir():
        kind = file_kind(root)
        if kind is None:
            raise WisconsinError(f"{root}: not a table, run file or directory of the tool's")
        yield Item(root, kind, disk_bytes(root), _run_state(root, kind))
        return
    try:  # F2 before F16: numbers in names sort as numbers
        entries = sorted(root.iterdir(), key=lambda e: _natural(e.name))
    except OSError as exc:
        raise WisconsinError(f"cannot read {root}: {exc.strerror or exc}") from None
    for e in entries:
        if e.is_symlink():
            continue
        if e.is_dir():
            if e.name.startswith(LOGS_PREFIX):
                yield Item(e, "dask logs", disk_bytes(e), "left by a run")
            elif (kind := table_kind(e)) is not None:
                yield Item(e, kind, disk_bytes(e), _table_state(e, kind, verify))
            elif depth > 1 and not e.name.startswith("."):
                yield from walk(e, verify, depth - 1)
        elif (kind := file_kind(e)) is not None:
            yield Item(e, kind, disk_bytes(e), _run_state(e, kind))


def _foreign(d: Path) -> str | None:
    """The first entry of directory d that the tool did not build, or None."""
    for e in sorted(d.iterdir()):
        if e.name == lock.LOCK_FILE or (e.is_dir() and e.name.startswith(LOGS_PREFIX)):
            continue
        if e.is_symlink():
            return str(e)
        if e.is_dir() and (table_kind(e) is not None):
            inside = [x for x in e.iterdir() if x.name != lock.LOCK_FILE]
            stray = sorted(x for x in inside if not TABLE_ENTRY.fullmatch(x.name))
            if stray:
                return str(stray[0])
            continue
        if e.is_dir() and e.name == PROBE and _foreign(e) is None:
            continue
        return str(e)
    return None


def remove_all(paths, cluster_address=None, tls=(None, None, None)) -> Iterator[str]:
    """remove() each path in turn, its lines as it goes, once every one of them is found
    removable: one refused path (not the tool's, or nothing there) removes nothing at all.
    cluster_address and tls (--cluster, --tls-*): for databases a cluster bench left."""
    from wisconsin.oltp import hosted

    cluster = hosted.optional_target(cluster_address, tuple(tls))
    kinds = [_removable(Path(p), cluster) for p in paths]
    if cluster is not None and CLUSTER_KIND not in kinds:
        raise WisconsinError(
            "--cluster: for a database a cluster bench left (a directory holding "
            "cluster.json); none of these is one"
        )
    for p in paths:
        yield from remove(p, cluster)


CLUSTER_KIND = "OLTP database on a cluster's hosts"


def _removable(p: Path, cluster=None) -> str | None:
    """The kind of table p is, None for a log or data directory; WisconsinError naming why
    p cannot be removed (whether its tables are in use is told when their locks are taken)."""
    if p.is_symlink() or not p.exists():
        raise WisconsinError(
            f"{p}: no such table or data directory"
            + (" (a symlink: remove it with rm)" if p.is_symlink() else "")
        )
    if not p.is_dir():
        raise WisconsinError(f"{p}: not a table or data directory (run files are removed with rm)")
    if p.name.startswith(LOGS_PREFIX):
        return None
    if _noted_elsewhere(p):
        bad = sorted(e.name for e in p.iterdir() if e.name not in (NOTE, lock.LOCK_FILE))
        if bad:
            raise WisconsinError(
                f"{p} holds {p / bad[0]}, which wisconsin did not build: nothing removed"
            )
        if cluster is None:
            raise WisconsinError(
                f"{p}: its partitions are on a cluster's hosts ({NOTE}): give --cluster ADDR "
                "(and --tls-ca/--tls-cert/--tls-key if it uses TLS) to remove them there too"
            )
        return CLUSTER_KIND
    if (kind := table_kind(p)) is not None:
        bad = [e.name for e in p.iterdir() if not TABLE_ENTRY.fullmatch(e.name)]
        bad = [n for n in bad if n != lock.LOCK_FILE]
        if bad:
            raise WisconsinError(
                f"{p} holds {p / sorted(bad)[0]}, which wisconsin did not build: nothing removed"
            )
        return kind
    if (bad := _foreign(p)) is not None:
        raise WisconsinError(
            f"{p} holds {bad}, which wisconsin did not build: nothing removed (remove "
            "the tables in it one by one with `wisconsin remove`)"
        )
    if not any(e.name != lock.LOCK_FILE for e in p.iterdir()):
        raise WisconsinError(f"{p} holds nothing wisconsin built: nothing removed")
    return None


def _noted_elsewhere(p: Path) -> bool:
    """p is the directory a cluster bench left: the note of its hosts, no database here."""
    return (p / NOTE).is_file() and not (p / MANIFEST).is_file()


def remove(path: str | os.PathLike, cluster=None) -> list[str]:
    """Remove a table, an OLTP database (here, or on a cluster's hosts with cluster: an
    oltp.hosted.Target), a run's log directory or a data directory holding only what the
    tool built; one line per thing removed. Refused in one line (WisconsinError), removing
    nothing: anything else, or a table in use."""
    p = Path(path)
    kind = _removable(p, cluster)
    if kind == CLUSTER_KIND:
        from wisconsin.oltp import hosted

        with lock.hold(p):
            return [hosted.remove_noted(p, cluster)]
    if p.name.startswith(LOGS_PREFIX):
        shutil.rmtree(p)
        return [f"removed {p} (dask logs)"]
    if kind is not None:
        held = disk_bytes(p)
        with lock.hold(p.absolute().parent), lock.hold_tables([p]):
            shutil.rmtree(p)
        return [f"removed {p} ({kind}, {size(held)})"]
    held = disk_bytes(p)
    probe = p / PROBE
    with lock.hold(p), lock.hold(probe) if probe.is_dir() else _nothing():
        tables = [
            e
            for d in (p, probe)
            if d.is_dir()
            for e in d.iterdir()
            if e.is_dir() and table_kind(e) is not None
        ]
        with lock.hold_tables(tables):  # refused if any is in use, before anything goes
            shutil.rmtree(p)
    n = len(tables)
    return [f"removed {p} (data directory: {n} table{'s' * (n != 1)}, {size(held)})"]


def _nothing():
    return contextlib.nullcontext()


# Which command reads each kind: named when a verb is given the wrong kind.
READ_BY = {
    "wisconsin table": "`wisconsin info {p}` checks it; `wisconsin run --data {parent}` times it",
    "debitcredit database": "`wisconsin info {p}` checks it",
    "tpcc database": "`wisconsin info {p}` checks it",
    "unfinished table": "`wisconsin generate` finishes it",
    "data directory": "`wisconsin list {p}` shows what it holds",
    "wisconsin run": "`wisconsin report {p}` and `wisconsin audit {p}` read it",
    "debitcredit run": "`wisconsin report {p}` and `wisconsin audit {p}` read it",
    "tpcc run": "`wisconsin report {p}` and `wisconsin audit {p}` read it",
    "debitcredit run (progress)": "`wisconsin bench --workload debitcredit --resume {p}` "
    "continues it",
    "a/b file": "`wisconsin compare {p}` reads it",
    "run journal": "`wisconsin run --resume` of its run file continues it",
    "dask logs": "`wisconsin remove {p}` removes it",
}
RUN_FILES = (
    "wisconsin run",
    "debitcredit run",
    "debitcredit run (progress)",
    "tpcc run",
)  # a partial: incomplete


def kind_of(path: str | os.PathLike) -> str | None:
    """The kind of thing at path, as `list` names it; None for a missing path or one that
    is none of the tool's."""
    p = Path(path)
    if p.is_dir():
        if p.name.startswith(LOGS_PREFIX):
            return "dask logs"
        kind = table_kind(p)
        if kind is None and any(table_kind(e) for e in p.iterdir() if e.is_dir()):
            return "data directory"
        return kind
    return file_kind(p) if p.is_file() else None


def _not_a_run_file(p: Path) -> str | None:
    """The kinds a reading verb must not take that a file's name or head tells, without
    parsing it (the verb's reader parses it next): a journal, a/b file; else None."""
    if p.name.endswith(".json.journal"):
        return "run journal"
    return "a/b file" if p.is_file() and abfile.is_ab_file(p) else None


def require_kind(
    path: str | os.PathLike,
    takes: tuple[str, ...],
    verb: str,
    what: str = "a run file",
    directories: bool = False,
) -> None:
    """WisconsinError in one line when path is one of the tool's kinds that `verb` does not
    take, naming what it is and which command reads it. Paths of no known kind pass: the
    verb's own reader says what is wrong with them. directories: so do directories of no
    kind and data directories (the verb looks for run files in them)."""
    p = Path(path)
    # a file is read once, by the verb's own reader: only its name and head are looked at
    kind = kind_of(p) if p.is_dir() else _not_a_run_file(p)
    if directories and p.is_dir() and kind in (None, "data directory"):
        return
    if kind is None and p.is_dir():
        raise WisconsinError(f"{p} is a directory, not {what} (`{verb}` takes files)")
    if kind is None or kind in takes:
        return
    how = READ_BY[kind].format(p=p, parent=p.parent)
    raise WisconsinError(f"{p} is {_a(kind)}, not {what}: {how}")


def _a(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind
