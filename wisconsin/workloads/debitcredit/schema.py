"""DebitCredit tables, their sizing rule, who owns which branch, and building a partition file.

The rule (Datamation 1985, as Tandem ran it): per 1 tps of rated throughput, 10 branches,
100 tellers (10 per branch) and 100,000 accounts (10,000 per branch). TPC-B and pgbench use
1 branch / 10 tellers per scale unit instead; we keep the original ten branches, which spreads
the hot branch rows ten times wider. Branches are numbered globally; partition p owns the
contiguous block [p*B, (p+1)*B), with its tellers and accounts (Tandem's key-range partitions).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb

from wisconsin import WisconsinError, atomic
from wisconsin.jsonfields import AtLeastOne, utc_now
from wisconsin.sqltext import db_path
from wisconsin.store import lock

TELLERS_PER_BRANCH = 10
ACCOUNTS_PER_BRANCH = 10_000
BRANCHES_PER_TPS = 10
NO_REMOTE = -1  # history.remote_part of a transaction that touched one partition


@dataclass(frozen=True)
class Sizing:
    """How big each partition's database is; the whole database scales with P."""

    branches_per_partition: AtLeastOne = 100
    tellers_per_branch: AtLeastOne = TELLERS_PER_BRANCH
    accounts_per_branch: AtLeastOne = ACCOUNTS_PER_BRANCH

    def __post_init__(self):
        if min(self.branches_per_partition, self.tellers_per_branch, self.accounts_per_branch) < 1:
            raise WisconsinError("DebitCredit sizes must be at least 1")

    @property
    def rated_tps_per_partition(self) -> float:
        """The throughput this database is sized for by the rule (accounts / 100,000)."""
        return self.branches_per_partition * self.accounts_per_branch / 100_000

    @property
    def by_the_rules(self) -> bool:
        """True when the teller and account ratios per branch are the standard's."""
        return (self.tellers_per_branch, self.accounts_per_branch) == (
            TELLERS_PER_BRANCH,
            ACCOUNTS_PER_BRANCH,
        )

    def branches(self, partitions: int) -> int:
        return self.branches_per_partition * partitions

    def accounts(self, partitions: int) -> int:
        return self.branches(partitions) * self.accounts_per_branch

    def tellers(self, partitions: int) -> int:
        return self.branches(partitions) * self.tellers_per_branch

    def branch_of_account(self, aid: int) -> int:
        return aid // self.accounts_per_branch

    def branch_of_teller(self, tid: int) -> int:
        return tid // self.tellers_per_branch

    def partition_of_branch(self, bid: int) -> int:
        return bid // self.branches_per_partition


DDL = (
    # 100-byte rows: 4 + 4 + 8 + 84 filler (the standard's record sizes).
    "CREATE TABLE account (aid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, "
    "abalance BIGINT NOT NULL, filler VARCHAR NOT NULL)",
    "CREATE TABLE teller (tid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, "
    "tbalance BIGINT NOT NULL, filler VARCHAR NOT NULL)",
    "CREATE TABLE branch (bid INTEGER PRIMARY KEY, bbalance BIGINT NOT NULL, "
    "filler VARCHAR NOT NULL)",
    # ~50-byte insert-only rows. txid names the transaction; remote_part is the partition
    # holding the account when it is not this one: this row IS the commit decision of a
    # distributed transaction (see transaction.py). No index: an append stays cheap.
    "CREATE TABLE history (txid BIGINT NOT NULL, tid INTEGER NOT NULL, bid INTEGER NOT NULL, "
    "aid INTEGER NOT NULL, delta INTEGER NOT NULL, tstamp TIMESTAMP NOT NULL, "
    "remote_part SMALLINT NOT NULL, filler VARCHAR NOT NULL)",
    # The remote half of a distributed transaction, committed with the account update; the
    # primary key makes a redo after a crash exactly-once.
    "CREATE TABLE remote_applied (txid BIGINT PRIMARY KEY, home_part SMALLINT NOT NULL, "
    "aid INTEGER NOT NULL, delta INTEGER NOT NULL)",
    "CREATE TABLE dc_meta (part INTEGER, partitions INTEGER, branches_per_partition INTEGER, "
    "tellers_per_branch INTEGER, accounts_per_branch INTEGER)",
)


WORKLOAD = "debitcredit"
MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
ACK_LOG = "_acklog"


@dataclass(frozen=True)
class DcManifest:
    """What a DebitCredit database's manifest.json holds (read back by tables.read_manifest)."""

    workload: str
    schema_version: int
    partitions: int
    branches_per_partition: int
    tellers_per_branch: int
    accounts_per_branch: int
    files: tuple[str, ...]
    created_utc: str

    @property
    def sizing(self) -> Sizing:
        return Sizing(
            self.branches_per_partition, self.tellers_per_branch, self.accounts_per_branch
        )


def ack_log_dir(db_dir: str | os.PathLike) -> Path:
    """Where the drivers log what they acknowledged: with the tables it is evidence about
    (never a diagnostic log to delete)."""
    return Path(db_dir) / ACK_LOG


def write_manifest(db_dir: str | os.PathLike, partitions: int, sizing: Sizing) -> Path:
    m = DcManifest(
        workload=WORKLOAD,
        schema_version=MANIFEST_VERSION,
        partitions=partitions,
        branches_per_partition=sizing.branches_per_partition,
        tellers_per_branch=sizing.tellers_per_branch,
        accounts_per_branch=sizing.accounts_per_branch,
        files=tuple(f"part-{p:03d}.duckdb" for p in range(partitions)),
        created_utc=utc_now(),
    )
    path = Path(db_dir) / MANIFEST
    atomic.write_text(path, json.dumps(dataclasses.asdict(m), indent=1) + "\n")
    return path


# 84 characters of hex from three MD5s of the key: 4 bits of entropy a character, which
# DuckDB's string compression cannot take back to a constant's few bytes.
_FILLER = (
    "substr(md5(({key})::VARCHAR) || md5(({key})::VARCHAR || 'b') || md5(({key})::VARCHAR "
    "|| 'c'), 1, 84)"
)


def database_bytes(paths: list[Path]) -> int:
    """The database's bytes on disk (its partition files and any WAL)."""
    return sum(
        p.stat().st_size for path in paths for p in (path, Path(f"{path}.wal")) if p.exists()
    )


def partition_file(data_dir: str | os.PathLike, part: int, partitions: int) -> Path:
    return Path(data_dir) / f"dc{partitions}" / f"part-{part:03d}.duckdb"


ENGINE_MEMORY_MIN = 512 * 2**20


def engine_memory_limit(path: str | os.PathLike) -> int:
    """A partition's engine memory limit in bytes: 512 MB, or its file's size if larger.
    Under 512 MB a scaled partition (45 M accounts, 2.4 GB) failed its commits under 8
    streams ('could not allocate block': its primary-key index and the pages it works on
    do not fit); under its file's size (2.27 GB) one connection's engine memory grew 350 ->
    1,441 MB in its first 40 s, so the warm-up (up to 2 minutes) fills it first."""
    p = Path(path)
    return max(ENGINE_MEMORY_MIN, p.stat().st_size if p.exists() else 0)


def connect(
    path: str | os.PathLike, read_only: bool = False, build: bool = False
) -> duckdb.DuckDBPyConnection:
    """One DuckDB instance per partition process: one thread, engine_memory_limit (build:
    DuckDB's default, 80% of RAM)."""
    config: dict = {"threads": 1}
    if not build:
        config["memory_limit"] = f"{engine_memory_limit(path) // 2**20}MB"
    con = duckdb.connect(db_path(path), read_only=read_only, config=config)
    con.execute("SET enable_progress_bar = false")  # a build's bar would reach the terminal
    return con


def build_partition(path: Path, part: int, partitions: int, sizing: Sizing) -> None:
    """Write one partition's file from a zero start (all balances 0, history empty).

    Written to a temporary name and renamed, so a half-built file is never used.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    for stale in (tmp, Path(f"{tmp}.wal")):
        stale.unlink(missing_ok=True)
    b0 = part * sizing.branches_per_partition
    nb = sizing.branches_per_partition
    tpb, apb = sizing.tellers_per_branch, sizing.accounts_per_branch
    # The build, one partition at a time, may use DuckDB's default memory: the primary-key
    # index of a scaled partition (45 M accounts at --scaled 450) does not fit in 512 MB
    # ("could not allocate block" at commit). The servers run under engine_memory_limit.
    con = connect(tmp, build=True)
    try:
        for stmt in DDL:
            con.execute(stmt)
        con.execute(
            "INSERT INTO branch SELECT $b0 + i, 0, repeat('b', 88) FROM range($n) t(i)",
            {"b0": b0, "n": nb},
        )
        con.execute(
            "INSERT INTO teller SELECT $t0 + i, ($t0 + i) // $tpb, 0, "
            f"{_FILLER.format(key='$t0 + i')} FROM range($n) t(i)",
            {"t0": b0 * tpb, "tpb": tpb, "n": nb * tpb},
        )
        # The filler differs row to row (hex of a hash of the key): a constant one is
        # compressed away by DuckDB, and the database would be a fraction of its rows' size.
        con.execute(
            "INSERT INTO account SELECT $a0 + i, ($a0 + i) // $apb, 0, "
            f"{_FILLER.format(key='$a0 + i')} FROM range($n) t(i)",
            {"a0": b0 * apb, "apb": apb, "n": nb * apb},
        )
        con.execute(
            "INSERT INTO dc_meta VALUES ($1, $2, $3, $4, $5)", [part, partitions, nb, tpb, apb]
        )
        con.execute("CHECKPOINT")
    finally:
        con.close()
    atomic.publish(tmp, path, overwrite=True)


def build(data_dir: str | os.PathLike, partitions: int, sizing: Sizing) -> list[Path]:
    """Build every partition file of a P-partition database afresh (balances start at zero),
    under the database's lock; its manifest is written last, so a database without one was
    never completely built. The drivers' log of an earlier database goes with it."""
    paths = [partition_file(data_dir, p, partitions) for p in range(partitions)]
    db_dir = paths[0].parent
    with lock.hold_tables([db_dir], create=True):
        (db_dir / MANIFEST).unlink(missing_ok=True)
        shutil.rmtree(ack_log_dir(db_dir), ignore_errors=True)
        for p, path in enumerate(paths):
            for old in (path, Path(f"{path}.wal")):
                old.unlink(missing_ok=True)
            build_partition(path, p, partitions, sizing)
        write_manifest(db_dir, partitions, sizing)
    return paths


def read_sizing(path: str | os.PathLike) -> tuple[int, int, Sizing]:
    """(part, partitions, sizing) recorded in a partition file."""
    con = connect(path, read_only=True)
    try:
        row = con.execute("SELECT * FROM dc_meta").fetchone()
    finally:
        con.close()
    part, partitions, nb, tpb, apb = row
    return part, partitions, Sizing(nb, tpb, apb)
