"""TPC-C on a Dask cluster: one partition per worker, built, served, recovered and checked
on its own host (`bench --workload tpcc --cluster ADDR`), on the OLTP core's oltp.hosted.

Each worker builds its partition's file under its own data directory from the manifest the
coordinator made; after the window each host redoes the decided remote halves it lacks,
checks consistency conditions 3.3.2.1-12 on its own partition (condition 10 with H_AMOUNT
summed over every host's HISTORY, which the hosts report per customer) and runs the
independent check on its own files. No partition file crosses the network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import duckdb

from wisconsin.oltp import hosted
from wisconsin.oltp import runfile as oltp_runfile
from wisconsin.oltp.failures import naming_storage
from wisconsin.sqltext import db_path
from wisconsin.workloads.tpcc import consistency, load, remote
from wisconsin.workloads.tpcc.check import independent_check
from wisconsin.workloads.tpcc.schema import connect, partition_file

PAID = "SELECT w, d, c, s FROM temp.main.paid_all"


# --------------------------------------------------------------------------- on a host


def task_build(root: str, name: str, part: int, m: load.TpccManifest) -> dict:
    """On a worker: partition part's file under root/tpcc/name, from a zero start."""
    db_dir = Path(root) / "tpcc" / name
    db_dir.mkdir(parents=True, exist_ok=True)
    path = partition_file(db_dir, part)
    for old in (path, Path(f"{path}.wal")):
        old.unlink(missing_ok=True)
    load.build_partition(db_dir, part, m, load.BUILD_MEMORY)
    return {"path": str(path), "bytes": path.stat().st_size}


def task_next_o(path: str) -> int:
    con = connect(path, read_only=True)
    try:
        return int(con.execute("SELECT sum(d_next_o_id) FROM district").fetchall()[0][0])
    finally:
        con.close()


def task_decided(path: str) -> list[tuple]:
    """On a worker: its decided remote halves, (remote partition, half)."""
    con = connect(path)
    try:
        remote.create(con)
        rows = con.execute("SELECT remote, half FROM tpcc_decided").fetchall()
    finally:
        con.close()
    return [(r, tuple(json.loads(half))) for r, half in rows]


def task_redo(path: str, halves: list[tuple]) -> int:
    """On a worker: apply the decided halves it lacks (remote.redo: exactly once)."""
    con = connect(path)
    try:
        remote.create(con)
        return sum(remote.redo(con.cursor(), half) for half in halves)
    finally:
        con.close()


def task_paid(path: str) -> list[tuple]:
    """On a worker: H_AMOUNT per customer paid for in its HISTORY (condition 10)."""
    con = connect(path, read_only=True)
    try:
        return con.execute(consistency.LOCAL_PAID).fetchall()
    finally:
        con.close()


def task_consistency(path: str, scale, delivered: dict, paid: list[tuple]) -> list:
    """On a worker: the twelve conditions on its partition, condition 10 against paid
    (every host's H_AMOUNT per customer, summed)."""
    import pyarrow as pa

    con = duckdb.connect(config={"threads": 1})
    try:
        con.execute("ATTACH ? AS p0 (READ_ONLY)", [db_path(path)])
        cols = list(zip(*paid, strict=True)) if paid else [(), (), (), ()]
        table = pa.table(
            {
                "w": pa.array(cols[0], pa.int64()),
                "d": pa.array(cols[1], pa.int64()),
                "c": pa.array(cols[2], pa.int64()),
                "s": pa.array(cols[3], pa.decimal128(38, 2)),
            }
        )
        con.register("paid_rows", table)
        con.execute("CREATE TEMP TABLE paid_all AS SELECT * FROM paid_rows")
        con.unregister("paid_rows")
        con.execute("USE p0")
        return consistency.check_partition(con, scale, delivered, paid=PAID)
    finally:
        con.close()


def task_independent(db_dir: str) -> tuple[bool, list[str]]:
    return independent_check(db_dir)


# --------------------------------------------------------------------------- the coordinator


@dataclass(frozen=True)
class Built:
    """A database built on the hosts: each partition's place, path and bytes."""

    places: list
    paths: list[str]
    sizes: list[int]

    @property
    def bytes(self) -> int:
        return sum(self.sizes)


def build(on: hosted.Session, db_dir: Path, placement, seed: int, scale):
    """The manifest, and each partition built on its worker: (manifest, Built)."""
    places = hosted.place(on.client, placement.partitions, str(Path(db_dir).absolute().parents[1]))
    m = load.new_manifest(placement, seed, scale)
    found = on.on_each(places, task_build, lambda p: (places[p].root, Path(db_dir).name, p, m))
    parts = [found[p] for p in range(placement.partitions)]
    return m, Built(places, [b["path"] for b in parts], [b["bytes"] for b in parts])


def run_window(on: hosted.Session, db_dir: Path, m, built: Built, step, say):
    """The window on the hosts' servers: (tallies, sum of D_NEXT_O_ID before, the cluster
    record)."""
    from wisconsin.workloads.tpcc.server import PartitionServers

    places, paths = built.places, built.paths
    log_dirs = [load.ack_log_dir(Path(p).parent) for p in paths]
    before = sum(on.on_each(places, task_next_o, lambda p: (paths[p],)).values())
    hosts = hosted.Hosts(on.client, places, on.target.tls, log_dirs)
    with PartitionServers(db_dir, m, log_dirs[0], hosts=hosts, paths=paths) as servers:
        for line in hosts.link_lines():
            say(line)
        tallies = servers.run(step)
    where = oltp_runfile.cluster_record(hosts, on.target.address, on.target.tls is not None, paths)
    hosted.note_where(Path(db_dir), "tpcc", where)
    return tallies, before, where


def check_all(on: hosted.Session, m, built: Built, delivered: dict):
    """Recovery and the checks on every host: (redone, sum of D_NEXT_O_ID, the twelve
    conditions' verdicts, the independent check's (ok, lines))."""
    places, paths = built.places, built.paths
    per = lambda p: (paths[p],)  # noqa: E731
    with naming_storage("checking the TPC-C database on its hosts"):
        recovered = on.redo_decided(places, task_decided, task_redo, per)
        after = sum(on.on_each(places, task_next_o, per).values())
        paid: dict = {}
        for rows in on.on_each(places, task_paid, per).values():
            for w, d, c, s in rows:
                paid[(w, d, c)] = paid.get((w, d, c), Decimal(0)) + s
        rows = [(*k, s) for k, s in paid.items()]
        args = lambda p: (paths[p], m.scale, delivered, rows)  # noqa: E731
        checked = on.on_each(places, task_consistency, args)
        verdicts = [
            consistency._summed(n, [checked[p][i] for p in range(len(places))])
            for i, n in enumerate(consistency.CONDITIONS)
        ]
        return recovered, after, verdicts, _independent(on, places, paths)


def _independent(on, places, paths) -> tuple[bool, list[str]]:
    """The independent check on each host's own files, its lines named by host."""
    found = on.on_each(places, task_independent, lambda p: (str(Path(paths[p]).parent),))
    lines = [f"{places[p].host}: {line}" for p in sorted(found) for line in found[p][1]]
    ok = all(found[p][0] for p in found)
    return ok, [*lines, "independent check: " + ("OK" if ok else "FAILED")]
