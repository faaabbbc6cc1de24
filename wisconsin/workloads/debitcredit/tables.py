"""A DebitCredit database as a table: its manifest, what `info` sees, what `repair` does.

A P-partition database is a directory ``dcP/`` of ``part-NNN.duckdb`` files, a
``manifest.json`` (written last, atomically, when the build is complete) and ``_acklog/``,
the drivers' logs of acknowledged transactions: evidence the audit and `repair` read,
never a diagnostic log to delete. The manifest is input, not instructions: it is parsed
into `DcManifest`, every field checked, and each partition file must say (in its own
``dc_meta`` row) that it is that partition of that database.

Unlike a Wisconsin table, a DebitCredit database is not the generator's output after a run:
it holds the run's transactions. So `repair` cannot rebuild a damaged file; it finishes
what a crash left decided but undone (remote halves whose decision, the home partition's
history row, committed) and then checks the invariants the audit checks.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import duckdb

from wisconsin import DAMAGED, WisconsinError, atomic
from wisconsin.sqltext import db_path
from wisconsin.store import StoreError, TableDamaged, lock, read_typed_manifest
from wisconsin.workloads.debitcredit import audit, schema
from wisconsin.workloads.debitcredit.schema import (
    MANIFEST,
    MANIFEST_VERSION,
    WORKLOAD,
    DcManifest,
    ack_log_dir,
)

MAX_PARTITIONS = 1024
_RANGES = {
    DcManifest: {
        "partitions": (lambda v: 1 <= v <= MAX_PARTITIONS, f"1 to {MAX_PARTITIONS}"),
        "branches_per_partition": (lambda v: 1 <= v <= 10**6, "1 to 1,000,000"),
        "tellers_per_branch": (lambda v: 1 <= v <= 10**4, "1 to 10,000"),
        "accounts_per_branch": (lambda v: 1 <= v <= 10**7, "1 to 10,000,000"),
    }
}


def is_database(table_dir: str | os.PathLike) -> bool:
    """Does this directory's manifest say it is a DebitCredit database (a cheap look: the
    full check is read_manifest's)."""
    try:
        data = atomic.read_json(Path(table_dir) / MANIFEST, "manifest")
    except (WisconsinError, OSError):
        return False
    return isinstance(data, dict) and data.get("workload") == WORKLOAD


def read_manifest(db_dir: str | os.PathLike) -> DcManifest:
    """The validated manifest, or StoreError naming the field (never a traceback)."""
    path = Path(db_dir) / MANIFEST
    m = read_typed_manifest(path, DcManifest, MANIFEST_VERSION, _RANGES)
    if m.workload != WORKLOAD:
        raise StoreError(f"{path}: not a valid manifest: workload is {m.workload!r}")
    want = tuple(f"part-{p:03d}.duckdb" for p in range(m.partitions))
    if m.files != want:
        # A file name reaches a path: only the names this version writes, in order.
        raise StoreError(
            f"{path}: not a valid manifest: files must be {want[0]} .. {want[-1]} "
            f"({m.partitions} partitions)"
        )
    return m


@dataclass(frozen=True)
class DatabaseState:
    manifest: DcManifest
    damaged: dict[int, str]  # partition -> why its file cannot be used
    pending: int  # decided remote halves not yet applied
    audit: audit.Audit | None  # None while damaged or pending

    @property
    def problems(self) -> list[str]:
        out = [f"partition {p}: {why}" for p, why in sorted(self.damaged.items())]
        return out + list(self.audit.problems if self.audit else ())


def _file_problem(path: Path, part: int, m: DcManifest) -> str | None:
    """Why partition `part`'s file is not that partition of this database, or None."""
    if not path.is_file():
        return f"{path.name} is missing"
    try:
        con = schema.connect(path, read_only=True)
        try:
            meta = con.execute("SELECT * FROM dc_meta").fetchall()
            counts = [
                con.execute(f"SELECT count(*), min({k}), max({k}) FROM {t}").fetchone()
                for t, k in (("branch", "bid"), ("teller", "tid"), ("account", "aid"))
            ]
        finally:
            con.close()
    except duckdb.Error as exc:
        return f"{path.name} cannot be read: {str(exc).splitlines()[0]}"
    s = m.sizing
    want_meta = [(part, m.partitions, *dataclasses.astuple(s))]
    if meta != want_meta:
        return f"{path.name} says it is {meta}, the manifest wants {want_meta}"
    b0 = part * s.branches_per_partition
    for (n, lo, hi), (name, per, first) in zip(
        counts,
        (
            ("branch", 1, b0),
            ("teller", s.tellers_per_branch, b0 * s.tellers_per_branch),
            ("account", s.accounts_per_branch, b0 * s.accounts_per_branch),
        ),
        strict=True,
    ):
        size = s.branches_per_partition * per
        if (n, lo, hi) != (size, first, first + size - 1):
            return f"{path.name}: {name} holds {n} rows [{lo}, {hi}], sized {size} from {first}"
    return None


def pending_halves(paths: list[Path]) -> int:
    """Distributed transactions decided on their home partition whose remote half is not
    applied (what a kill -9 between the two commits leaves)."""
    con = duckdb.connect(config={"threads": 1})
    try:
        for i, path in enumerate(paths):
            con.execute(f"ATTACH ? AS p{i} (READ_ONLY)", [db_path(path)])
        decided = " UNION ALL ".join(
            f"SELECT txid, remote_part FROM p{i}.history WHERE remote_part >= 0"
            for i in range(len(paths))
        )
        applied = " UNION ALL ".join(
            f"SELECT txid, {i} AS part FROM p{i}.remote_applied" for i in range(len(paths))
        )
        (n,) = con.execute(
            f"SELECT count(*) FROM ({decided}) d ANTI JOIN ({applied}) a "
            "ON d.txid = a.txid AND d.remote_part = a.part"
        ).fetchone()
    finally:
        con.close()
    return int(n)


def inspect(db_dir: str | os.PathLike) -> DatabaseState:
    """Read a database (read-only) and say what state it is in; never writes."""
    m = read_manifest(db_dir)
    paths = [Path(db_dir) / f for f in m.files]
    damaged = {p: why for p, path in enumerate(paths) if (why := _file_problem(path, p, m))}
    if damaged:
        return DatabaseState(m, damaged, 0, None)
    pending = pending_halves(paths)
    if pending:
        return DatabaseState(m, {}, pending, None)
    log = ack_log_dir(db_dir)
    return DatabaseState(m, {}, 0, audit.check(paths, log if log.is_dir() else None))


def info(db_dir: str | os.PathLike) -> tuple[list[str], str | None]:
    """`wisconsin info` on a DebitCredit database: (lines, None, or wisconsin.DAMAGED when it
    is damaged, holds pending halves or fails its invariants)."""
    with lock.hold_tables([db_dir], shared=True):
        st = inspect(db_dir)
    m = st.manifest
    lines = [
        f"{Path(db_dir).name}: DebitCredit database, {m.partitions} partitions, "
        f"{m.branches_per_partition} branches x {m.tellers_per_branch} tellers and "
        f"{m.accounts_per_branch:,} accounts per branch per partition, created {m.created_utc}"
    ]
    if st.damaged:
        lines += [f"problem: {p}" for p in st.problems]
        lines.append(
            "damaged: a DebitCredit database holds its run's transactions, so no generator "
            "can rebuild it; `wisconsin bench --workload debitcredit` builds a new one"
        )
        return lines, DAMAGED
    if st.pending:
        lines.append(
            f"update pending: {st.pending} decided remote half(s) not yet applied (left by "
            f"a crash); run `wisconsin repair {db_dir}`"
        )
        return lines, DAMAGED
    a = st.audit
    if a.problems:
        lines += [f"problem: {p}" for p in a.problems]
        return lines, DAMAGED
    lines.append(
        f"verified: account = teller = branch = history sums ({a.account_sum:,}), "
        f"{a.history_rows:,} history rows, {a.distributed_rows:,} distributed, every "
        "remote half applied"
        + (f"; all {a.acknowledged:,} acknowledged transactions present" if a.begun else "")
    )
    return lines, None


@dataclass(frozen=True)
class RepairOutcome:
    redone: int
    audit: audit.Audit


def repair(db_dir: str | os.PathLike) -> RepairOutcome:
    """Apply decided remote halves (each exactly once) and check the invariants; a healthy
    database is left untouched (not even opened for writing)."""
    with lock.hold_tables([db_dir]):
        st = inspect(db_dir)
        if st.damaged:
            raise TableDamaged(
                f"{db_dir}: {st.problems[0]}; a DebitCredit database holds its run's "
                "transactions, so no generator can rebuild it: `wisconsin bench --workload "
                "debitcredit` builds a new one"
            )
        redone = 0
        if st.pending:
            redone = audit.recover([Path(db_dir) / f for f in st.manifest.files])
            st = inspect(db_dir)
        if st.pending or st.audit is None:
            raise StoreError(f"{db_dir}: {st.pending} remote half(s) still pending after repair")
        if st.audit.problems:
            raise TableDamaged(f"{db_dir}: invariants fail: {st.audit.problems[0]}")
        return RepairOutcome(redone, st.audit)
