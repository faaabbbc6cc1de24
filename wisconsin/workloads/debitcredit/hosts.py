"""DebitCredit on a Dask cluster: one partition per worker, built, served, recovered and
audited on its own host (`bench --workload debitcredit --cluster ADDR`).

Each worker builds its partition under its own data directory; the partition servers run
there (oltp.hosted); after the run each host redoes the decided remote halves it lacks,
reports its figures for the audit and runs the independent check on its own files. No
partition file crosses the network: the coordinator combines what the hosts report.
"""

from __future__ import annotations

import time
from pathlib import Path

import duckdb

from wisconsin.oltp import cpu, hosted
from wisconsin.oltp import runfile as oltp_runfile
from wisconsin.oltp.failures import naming_storage
from wisconsin.sqltext import db_path
from wisconsin.workloads.debitcredit import audit, check, schema, transaction
from wisconsin.workloads.debitcredit.coordinator import PartitionServers
from wisconsin.workloads.debitcredit.driver import read_records
from wisconsin.workloads.debitcredit.runfile import AuditRecord, PartitionResult
from wisconsin.workloads.debitcredit.schema import WORKLOAD


def _log_path(path: str | Path, part: int) -> Path:
    return schema.ack_log_dir(Path(path).parent) / f"driver-p{part:03d}.log"


# --------------------------------------------------------------------------- on a host


def task_build(root: str, key: str, part: int, partitions: int, sizing: schema.Sizing) -> dict:
    """On a worker: build partition `part` from a zero start under root/debitcredit/key
    (key: hosted.database_key of the client's database)."""
    path = schema.partition_file(Path(root) / "debitcredit" / key, part, partitions)
    for old in (path, Path(f"{path}.wal"), _log_path(path, part)):
        old.unlink(missing_ok=True)
    t0 = time.perf_counter()
    schema.build_partition(path, part, partitions, sizing)
    return {
        "path": str(path),
        "seconds": time.perf_counter() - t0,
        "bytes": schema.database_bytes([path]),
    }


def task_decided(path: str, part: int) -> list[tuple]:
    """On a worker: its decided distributed transactions, (remote part, (txid, home, aid,
    delta))."""
    con = schema.connect(path, read_only=True)
    try:
        rows = con.execute(
            "SELECT txid, aid, delta, remote_part FROM history WHERE remote_part >= 0"
        ).fetchall()
    finally:
        con.close()
    return [(remote, (txid, part, aid, delta)) for txid, aid, delta, remote in rows]


def task_redo(path: str, part: int, rows: list[tuple]) -> int:
    """On a worker: redo the decided remote halves (txid, home, aid, delta) it lacks."""
    con = schema.connect(path)
    try:
        have = {t for (t,) in con.execute("SELECT txid FROM remote_applied").fetchall()}
        return sum(
            transaction.redo_remote(con, txid, home, aid, delta)
            for txid, home, aid, delta in rows
            if txid not in have
        )
    finally:
        con.close()


_BAD = (
    "SELECT count(*) FROM {table} r LEFT JOIN (SELECT {key}, sum(delta) AS s FROM ({deltas}) "
    "GROUP BY {key}) x USING ({key}) WHERE r.{col} <> coalesce(x.s, 0)"
)


def task_figures(path: str, part: int) -> dict:
    """On a worker: what the audit needs of its partition (read-only): the sums, the rows
    whose balance is not the sum of their deltas (an account's deltas are its local
    transactions' and the remote halves applied here; a teller's and a branch's are all
    home), the txids of history, of its distributed transactions and of its remote halves,
    and its driver's log."""
    con = duckdb.connect(config={"threads": 1})
    try:
        con.execute("ATTACH ? AS p (READ_ONLY)", [db_path(path)])
        sums = con.execute(
            "SELECT (SELECT coalesce(sum(abalance), 0) FROM p.account), "
            "(SELECT coalesce(sum(tbalance), 0) FROM p.teller), "
            "(SELECT coalesce(sum(bbalance), 0) FROM p.branch), "
            "(SELECT coalesce(sum(delta), 0) FROM p.history), (SELECT count(*) FROM p.history)"
        ).fetchone()
        local = "SELECT aid, delta FROM p.history WHERE remote_part < 0"
        deltas = {
            "account": f"{local} UNION ALL SELECT aid, delta FROM p.remote_applied",
            "teller": "SELECT tid, delta FROM p.history",
            "branch": "SELECT bid, delta FROM p.history",
        }
        keys = {"account": ("aid", "abalance"), "teller": ("tid", "tbalance")}
        keys["branch"] = ("bid", "bbalance")
        bad = [
            con.execute(_BAD.format(table=f"p.{t}", key=k, col=c, deltas=deltas[t])).fetchone()[0]
            for t, (k, c) in keys.items()
        ]
        history = {t for (t,) in con.execute("SELECT txid FROM p.history").fetchall()}
        remote = {
            t
            for (t,) in con.execute("SELECT txid FROM p.history WHERE remote_part >= 0").fetchall()
        }
        halves = {t for (t,) in con.execute("SELECT txid FROM p.remote_applied").fetchall()}
    finally:
        con.close()
    log = {"B": set(), "C": set(), "A": set()}
    if _log_path(path, part).exists():
        for kind, txid in read_records(_log_path(path, part)):
            log[kind].add(txid)
    return {"sums": [int(x) for x in sums], "bad": bad, "history": history, "remote": remote,
            "halves": halves, "log": log}  # fmt: skip


def combine(figures: list[dict]) -> audit.Audit:
    """The audit of every host's figures (audit.check's invariants, summed over hosts)."""
    sums = [sum(f["sums"][i] for f in figures) for i in range(5)]
    bad = [sum(f["bad"][i] for f in figures) for i in range(3)]
    history = set().union(*(f["history"] for f in figures))
    remote = set().union(*(f["remote"] for f in figures))
    halves = set().union(*(f["halves"] for f in figures))
    begun, acked, aborted = (set().union(*(f["log"][k] for f in figures)) for k in "BCA")
    return audit.Audit(
        *sums, len(remote), *bad, len(remote ^ halves),
        begun=len(begun), acknowledged=len(acked), aborted=len(aborted),
        acknowledged_missing=len(acked - history), aborted_present=len(aborted & history),
        unknown_present=len(history - begun),
        in_doubt_committed=len((begun - acked - aborted) & history),
    )  # fmt: skip


# --------------------------------------------------------------------------- the coordinator


def measure(cfg, partitions: int, say, job, on: hosted.Session, steps_of, said) -> PartitionResult:
    """One P on the cluster, as pipeline._measure_partitions does it on this machine:
    steps_of(servers, cfg, P, say, job) measures, said(say, P, record, steps) tells."""
    client = on.client
    fallback = str(Path(cfg.data_dir).absolute().parent)  # --data, as the batch builds
    places = hosted.place(client, partitions, fallback)
    job.start("build", f"P={partitions}: building the database on its hosts", units=partitions)
    t0 = time.perf_counter()
    key = hosted.database_key(cfg.data_dir)
    built = on.on_each(
        places, task_build, lambda p: (places[p].root, key, p, partitions, cfg.sizing)
    )
    build_s = time.perf_counter() - t0
    paths = [built[p]["path"] for p in range(partitions)]
    log_dirs = [schema.ack_log_dir(Path(path).parent) for path in paths]
    local = schema.partition_file(cfg.data_dir, 0, partitions).parent
    hosts = hosted.Hosts(
        client, places, on.target.tls, log_dirs, hosted.repair_command(local, on.target)
    )
    job.start("start", f"P={partitions}: starting the partition servers", units=partitions)
    with PartitionServers(
        cfg.data_dir, partitions, cfg.sizing, log_dirs[0], hosts=hosts, paths=paths
    ) as servers:
        where = oltp_runfile.cluster_record(
            hosts, on.target.address, on.target.tls is not None, paths
        )
        hosted.note_where(local, WORKLOAD, where)  # before any transaction: repair reads it
        for line in hosts.link_lines():
            say(f"P={partitions} {line}")
        warmup_committed, steps = steps_of(servers, cfg, partitions, say, job)
    job.start("audit", f"P={partitions}: auditing on every host", units=partitions)
    with naming_storage(f"P={partitions}: auditing the database on its hosts"):
        record = audit_on_hosts(on, places, paths)
    said(say, partitions, record, steps)
    return PartitionResult(
        partitions=partitions,
        # more partitions than the machines' cores (simulated hosts on one machine share it)
        oversubscribed=partitions > hosted.machine_cores(places),
        branches=cfg.sizing.branches(partitions),
        tellers=cfg.sizing.tellers(partitions),
        accounts=cfg.sizing.accounts(partitions),
        build_s=build_s,
        db_bytes=sum(built[p]["bytes"] for p in range(partitions)),
        pinned_cores=(),
        warmup_committed=warmup_committed,
        steps=tuple(steps),
        audit=record,
        cluster=where,
        remote_cpu=cpu.summary([s.cpu for s in steps]),
    )


def audit_on_hosts(on: hosted.Session, places: list, paths: list[str]) -> AuditRecord:
    """Redo the decided remote halves on their hosts, then each host's figures and its
    independent check, combined here."""
    recovered = on.redo_decided(places, task_decided, task_redo, lambda p: (paths[p], p))
    a = combine(
        [f for _, f in sorted(on.on_each(places, task_figures, lambda p: (paths[p], p)).items())]
    )
    reports = on.on_each(places, check.host_report, lambda p: ([paths[p]],))
    where = ", ".join(f"{pl.host}:{Path(paths[p]).parent}" for p, pl in enumerate(places))
    ok, lines = check.combine([r for _, r in sorted(reports.items())], where)
    return AuditRecord(
        **{k: getattr(a, k) for k in a.__dataclass_fields__},
        problems=a.problems,
        recovered=recovered,
        independent=tuple(lines),
        independent_ok=ok,
    )


def repair_on_cluster(table_dir, target: hosted.Target) -> list[str]:
    """`wisconsin repair DIR --cluster ADDR` of a database a cluster bench left (DIR holds
    its note): redo the decided remote halves on their hosts, then the audit (against the
    drivers' logs: no acknowledged transaction lost) and the independent check per host."""
    from wisconsin import WisconsinError
    from wisconsin.store import TableDamaged

    note = hosted.read_note(table_dir)
    if note is None or note.get("workload") != WORKLOAD:
        raise WisconsinError(f"{table_dir}: no DebitCredit cluster note ({hosted.CLUSTER_NOTE})")
    places, paths = hosted.noted_places(note)
    with hosted.Session(target) as on:
        on.check_hosts(places)
        record = audit_on_hosts(on, places, paths)
    if not record.ok:
        why = (record.problems or record.independent)[0]
        raise TableDamaged(f"{table_dir}: invariants fail on the hosts: {why}")
    where = ", ".join(f"{pl.host}:{path}" for pl, path in zip(places, paths, strict=True))
    return [
        f"{table_dir}: {record.recovered} decided remote half(s) applied on the hosts ({where})"
        if record.recovered
        else f"{table_dir}: nothing pending on the hosts ({where}), nothing changed",
        f"verified on every host: account = teller = branch = history sums "
        f"({record.account_sum:,}), {record.history_rows:,} history rows; "
        f"{record.acknowledged:,} acknowledged transactions all in history, "
        f"{record.in_doubt_committed:,} in doubt committed, {record.aborted:,} aborted absent",
        record.independent[-1] + " (" + record.independent[2] + ")",
    ]
