"""TPC-C on a Dask cluster: one partition per worker, built, served, recovered and checked
on its own host (`bench --workload tpcc --cluster ADDR`), on the OLTP core's oltp.hosted.

Each worker builds its partition's file under its own data directory from the manifest the
coordinator made; after the window each host redoes the decided remote halves it lacks,
checks consistency conditions 3.3.2.1-12 on its own partition (condition 10 with H_AMOUNT
summed over every host's HISTORY, which the hosts report per customer), looks up the
acknowledged transactions whose rows it holds (each host's log read there, every receipt
sent to the host of its warehouse) and runs the independent check on its own files. No
partition file crosses the network. `wisconsin repair DIR --cluster ADDR` does the same
after a crash (repair_on_cluster), from the note the bench left in DIR.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import duckdb

from wisconsin import DAMAGED, WisconsinError, jsonfields
from wisconsin.oltp import hosted
from wisconsin.oltp import runfile as oltp_runfile
from wisconsin.oltp.failures import naming_storage
from wisconsin.sqltext import db_path
from wisconsin.workloads.tpcc import consistency, load, receipts, remote
from wisconsin.workloads.tpcc.check import independent_check
from wisconsin.workloads.tpcc.runfile import Receipts
from wisconsin.workloads.tpcc.schema import connect, partition_file

PAID = "SELECT w, d, c, s FROM temp.main.paid_all"


# --------------------------------------------------------------------------- on a host


def task_build(root: str, key: str, name: str, part: int, m: load.TpccManifest) -> dict:
    """On a worker: partition part's file under root/tpcc/key/name, from a zero start (key:
    hosted.database_key of the client's database)."""
    db_dir = Path(root) / "tpcc" / key / name
    db_dir.mkdir(parents=True, exist_ok=True)
    path = partition_file(db_dir, part)
    # an earlier run's log speaks of the tables this build replaces (the driver appends)
    log = load.ack_log_dir(db_dir) / f"driver-p{part:03d}.log"
    for old in (path, Path(f"{path}.wal"), log):
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


def task_consistency(path: str, scale, delivered, paid: list[tuple], numbers) -> list:
    """On a worker: the conditions numbered on its partition, condition 10 against paid
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
        return consistency.check_partition(con, scale, delivered, numbers, PAID)
    finally:
        con.close()


def task_independent(db_dir: str) -> tuple[bool, list[str]]:
    return independent_check(db_dir)


def task_log(path: str):
    """On a worker: what its drivers' log says (receipts.read_log), none if it has none."""
    return receipts.read_log(load.ack_log_dir(Path(path).parent))


def task_receipts(path: str, part: int, acked: dict) -> dict:
    """On a worker: the receipts whose rows are on its partition, looked up there."""
    return receipts.look_up({part: path}, acked)


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
    key, name = hosted.database_key(Path(db_dir).parent), Path(db_dir).name
    found = on.on_each(places, task_build, lambda p: (places[p].root, key, name, p, m))
    parts = [found[p] for p in range(placement.partitions)]
    return m, Built(places, [b["path"] for b in parts], [b["bytes"] for b in parts])


def run_window(on: hosted.Session, db_dir: Path, m, built: Built, step, say):
    """The window on the hosts' servers: (tallies, sum of D_NEXT_O_ID before, the cluster
    record). The note of where the partitions are (and the manifest) is left in db_dir
    before any transaction: after a lost partition, repair --cluster reads it."""
    from wisconsin.workloads.tpcc.server import PartitionServers

    places, paths = built.places, built.paths
    log_dirs = [load.ack_log_dir(Path(p).parent) for p in paths]
    before = sum(on.on_each(places, task_next_o, lambda p: (paths[p],)).values())
    repair = hosted.repair_command(Path(db_dir), on.target)
    hosts = hosted.Hosts(on.client, places, on.target.tls, log_dirs, repair)
    with PartitionServers(db_dir, m, log_dirs[0], hosts=hosts, paths=paths) as servers:
        where = oltp_runfile.cluster_record(
            hosts, on.target.address, on.target.tls is not None, paths
        )
        hosted.note_where(Path(db_dir), load.WORKLOAD, where, manifest=dataclasses.asdict(m))
        for line in hosts.link_lines():
            say(line)
        tallies = servers.run(step)
    return tallies, before, where


def conditions(on, places, paths, scale, delivered, numbers=consistency.CONDITIONS) -> list:
    """The conditions numbered, each host checking its own partition, summed."""
    per = lambda p: (paths[p],)  # noqa: E731
    paid: dict = {}
    for rows in on.on_each(places, task_paid, per).values():
        for w, d, c, s in rows:
            paid[(w, d, c)] = paid.get((w, d, c), Decimal(0)) + s
    rows = [(*k, s) for k, s in paid.items()]
    args = lambda p: (paths[p], scale, delivered, rows, numbers)  # noqa: E731
    checked = on.on_each(places, task_consistency, args)
    return [
        consistency._summed(n, [checked[p][i] for p in range(len(places))])
        for i, n in enumerate(numbers)
    ]


def receipts_on_hosts(on, places, paths, placement) -> Receipts:
    """The acknowledged transactions looked up on the hosts: every host's log read there
    and merged here, each receipt sent to the host of its warehouse, the counts combined."""
    logs = on.on_each(places, task_log, lambda p: (paths[p],))
    log = receipts.merge([logs[p] for p in sorted(logs)])
    routed, nowhere = receipts.route(log.acknowledged, placement)
    found = on.on_each(places, task_receipts, lambda p: (paths[p], p, routed[p]))
    return receipts.summarize(log, [found[p] for p in sorted(found)], nowhere)


def check_all(on: hosted.Session, m, built: Built, delivered: dict):
    """Recovery and the checks on every host: (redone, sum of D_NEXT_O_ID, the twelve
    conditions' verdicts, the independent check's (ok, lines), the receipts)."""
    places, paths = built.places, built.paths
    per = lambda p: (paths[p],)  # noqa: E731
    with naming_storage("checking the TPC-C database on its hosts"):
        recovered = on.redo_decided(places, task_decided, task_redo, per)
        after = sum(on.on_each(places, task_next_o, per).values())
        verdicts = conditions(on, places, paths, m.scale, delivered)
        acked = receipts_on_hosts(on, places, paths, m.placement)
        return recovered, after, verdicts, _independent(on, places, paths), acked


def _independent(on, places, paths) -> tuple[bool, list[str]]:
    """The independent check on each host's own files, its lines named by host."""
    found = on.on_each(places, task_independent, lambda p: (str(Path(paths[p]).parent),))
    lines = [f"{places[p].host}: {line}" for p in sorted(found) for line in found[p][1]]
    ok = all(found[p][0] for p in found)
    return ok, [*lines, "independent check: " + ("OK" if ok else "FAILED")]


# --------------------------------------------------------------------------- repair --cluster

# 11 counts the deliveries the run made, which a crash takes with the coordinator's tallies
AFTER_CRASH = tuple(n for n in consistency.CONDITIONS if n != 11)


def noted(table_dir) -> tuple[list, list[str], load.TpccManifest]:
    """The places, paths and manifest a TPC-C cluster bench noted in table_dir."""
    note = hosted.read_note(table_dir)
    if note is None or note.get("workload") != load.WORKLOAD or "manifest" not in note:
        raise WisconsinError(f"{table_dir}: no TPC-C cluster note ({hosted.CLUSTER_NOTE})")
    try:
        m = jsonfields.read(load.TpccManifest, note["manifest"], ranges=load._RANGES, strict=True)
    except jsonfields.FieldError as exc:
        raise WisconsinError(f"{table_dir}: its cluster note's manifest: {exc}") from None
    places, paths = hosted.noted_places(note)
    return places, paths, m


def repair_on_cluster(table_dir, target: hosted.Target) -> tuple[list[str], str | None]:
    """`wisconsin repair DIR --cluster ADDR`: redo the decided remote halves on their
    hosts, then conditions 3.3.2.1-12 (11 aside), the receipts and the independent check,
    each host on its own partitions (lines, None or wisconsin.DAMAGED)."""
    places, paths, m = noted(table_dir)
    per = lambda p: (paths[p],)  # noqa: E731
    with hosted.Session(target) as on, naming_storage("repairing the TPC-C database on its hosts"):
        on.check_hosts(places)
        redone = on.redo_decided(places, task_decided, task_redo, per)
        verdicts = conditions(on, places, paths, m.scale, None, AFTER_CRASH)
        acked = receipts_on_hosts(on, places, paths, m.placement)
        ind_ok, ind_lines = _independent(on, places, paths)
    where = ", ".join(f"{pl.host}:{path}" for pl, path in zip(places, paths, strict=True))
    ok = not consistency.failed(verdicts)
    state = (
        f"{table_dir}: {redone} decided remote half(s) applied on the hosts ({where})"
        if redone
        else f"{table_dir}: nothing pending on the hosts ({where}), nothing changed"
    )
    state += "; conditions 3.3.2.1-12 (11 aside) hold" if ok else "; a condition FAILED"
    state += "; no acknowledged transaction lost" if acked.ok else "; acknowledged LOST"
    lines = [state, *consistency.lines(verdicts), acked.line(), *ind_lines]
    return lines, None if ok and acked.ok and ind_ok else DAMAGED
