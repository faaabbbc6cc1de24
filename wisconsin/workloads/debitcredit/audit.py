"""Recovery and the auditor's checks, on the partition files themselves (servers stopped).

recover(): every distributed transaction whose decision (the home's history row) committed
but whose remote half did not, is redone on the account's partition (exactly once, by the
remote_applied key). check(): the invariants that make a run valid:

- sum(account) = sum(teller) = sum(branch) = sum(history.delta), from a zero start, and
  row by row: every account, teller and branch balance equals the sum of its history deltas;
- every distributed transaction is on both partitions or on neither;
- against the driver's log: every transaction the driver saw commit is in history, none it
  saw abort is, none it never began is; count(history) = committed (acknowledged, plus those
  whose answer was lost in a crash: begun, neither acknowledged nor aborted, yet present).

audit_run() / audit_file(): `wisconsin audit` of a run file: the recorded invariants,
verdict, independent check and commit protocol, and the OLTP rules (rules_oltp).
"""

from __future__ import annotations

import dataclasses
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import duckdb

from wisconsin.analysis.audit import Rule, mark_incomplete
from wisconsin.sqltext import db_path
from wisconsin.workloads.debitcredit import driver, independent, runfile, transaction
from wisconsin.workloads.debitcredit.rules_oltp import (  # noqa: F401  (re-exported)
    MIN_DISK_BYTES_PER_ACCOUNT,
    OLTP_RULES,
    REMOTE_SIGMAS,
    oltp_rules,
    rule_delivered,
    rule_memory,
    rule_pinned,
    rule_remote,
    rule_scale,
    rule_steady,
)
from wisconsin.workloads.debitcredit.schema import connect


def recover(paths: list[Path]) -> int:
    """Redo decided remote halves that are missing; returns how many were redone."""
    cons = [connect(p) for p in paths]
    try:
        want: dict[int, list[tuple]] = defaultdict(list)
        for home, con in enumerate(cons):
            for txid, aid, delta, remote in con.execute(
                "SELECT txid, aid, delta, remote_part FROM history WHERE remote_part >= 0"
            ).fetchall():
                want[remote].append((txid, home, aid, delta))
        redone = 0
        for remote, rows in want.items():
            con = cons[remote]
            have = {t for (t,) in con.execute("SELECT txid FROM remote_applied").fetchall()}
            for txid, home, aid, delta in rows:
                if txid not in have:
                    redone += transaction.redo_remote(con, txid, home, aid, delta)
        return redone
    finally:
        for con in cons:
            con.close()


@dataclass(frozen=True)
class Audit:
    account_sum: int
    teller_sum: int
    branch_sum: int
    history_sum: int
    history_rows: int
    distributed_rows: int
    bad_accounts: int  # rows whose balance differs from the sum of their history deltas
    bad_tellers: int
    bad_branches: int
    half_committed: int  # distributed transactions present on one partition only
    begun: int = 0  # from the driver's log
    acknowledged: int = 0
    aborted: int = 0
    acknowledged_missing: int = 0  # the driver saw commit, history lacks it
    aborted_present: int = 0  # the driver saw abort, history has it
    unknown_present: int = 0  # in history, never begun by the driver
    in_doubt_committed: int = 0  # begun, answer lost in a crash, committed

    @property
    def committed(self) -> int:
        return self.acknowledged + self.in_doubt_committed

    @property
    def problems(self) -> tuple[str, ...]:
        out = []
        sums = {self.account_sum, self.teller_sum, self.branch_sum, self.history_sum}
        if len(sums) != 1:
            out.append(
                f"balances differ: account {self.account_sum}, teller {self.teller_sum}, "
                f"branch {self.branch_sum}, history {self.history_sum}"
            )
        for name in ("bad_accounts", "bad_tellers", "bad_branches", "half_committed"):
            if getattr(self, name):
                out.append(f"{name.replace('_', ' ')}: {getattr(self, name)}")
        for name in ("acknowledged_missing", "aborted_present", "unknown_present"):
            if getattr(self, name):
                out.append(f"{name.replace('_', ' ')}: {getattr(self, name)}")
        if self.begun and self.history_rows != self.committed:
            out.append(f"history rows {self.history_rows} != committed {self.committed}")
        return tuple(out)

    @property
    def ok(self) -> bool:
        return not self.problems


def _union(n: int, select: str) -> str:
    return " UNION ALL ".join(select.format(p=f"p{i}") for i in range(n))


def read_log(log_dir: str | os.PathLike) -> tuple[set[int], set[int], set[int]]:
    """(begun, acknowledged, aborted) txids from every partition's driver log."""
    log = driver.read_log(log_dir)  # whole records only (a cut line is none)
    return set(log.begun), set(log.acknowledged), set(log.aborted)


def check(paths: list[Path], log_dir: str | os.PathLike | None = None) -> Audit:
    """Read every partition file (read-only) and the driver log; never writes."""
    con = duckdb.connect(config={"threads": 1})
    try:
        for i, path in enumerate(paths):
            con.execute(f"ATTACH ? AS p{i} (READ_ONLY)", [db_path(path)])
        n = len(paths)
        con.execute(
            f"CREATE TEMP VIEW h AS {_union(n, 'SELECT txid, aid, tid, bid, delta, remote_part FROM {p}.history')}"
        )
        sums = con.execute(
            f"SELECT (SELECT coalesce(sum(abalance), 0) FROM ({_union(n, 'SELECT abalance FROM {p}.account')})), "
            f"(SELECT coalesce(sum(tbalance), 0) FROM ({_union(n, 'SELECT tbalance FROM {p}.teller')})), "
            f"(SELECT coalesce(sum(bbalance), 0) FROM ({_union(n, 'SELECT bbalance FROM {p}.branch')})), "
            "(SELECT coalesce(sum(delta), 0) FROM h), (SELECT count(*) FROM h), "
            "(SELECT count(*) FROM h WHERE remote_part >= 0)"
        ).fetchone()
        bad = []
        for table, key, col in (
            ("account", "aid", "abalance"),
            ("teller", "tid", "tbalance"),
            ("branch", "bid", "bbalance"),
        ):
            rows = _union(n, f"SELECT {key}, {col} AS balance FROM {{p}}.{table}")
            bad.append(
                con.execute(
                    f"SELECT count(*) FROM ({rows}) r LEFT JOIN "
                    f"(SELECT {key}, sum(delta) AS s FROM h GROUP BY {key}) x USING ({key}) "
                    "WHERE r.balance <> coalesce(x.s, 0)"
                ).fetchone()[0]
            )
        markers = _union(n, "SELECT txid FROM {p}.remote_applied")
        (half,) = con.execute(
            f"SELECT count(*) FROM (SELECT txid FROM h WHERE remote_part >= 0) d "
            f"FULL JOIN ({markers}) m USING (txid) WHERE d.txid IS NULL OR m.txid IS NULL"
        ).fetchone()
        history_ids = {t for (t,) in con.execute("SELECT txid FROM h").fetchall()}
    finally:
        con.close()
    audit = Audit(*[int(x) for x in sums], *bad, half)
    if log_dir is None:
        return audit
    begun, acked, aborted = read_log(log_dir)
    in_doubt = begun - acked - aborted
    return dataclasses.replace(
        audit,
        begun=len(begun),
        acknowledged=len(acked),
        aborted=len(aborted),
        acknowledged_missing=len(acked - history_ids),
        aborted_present=len(aborted & history_ids),
        unknown_present=len(history_ids - begun),
        in_doubt_committed=len(in_doubt & history_ids),
    )


# --------------------------------------------------------------------------- the run file


def audit_file(path: str | os.PathLike) -> list[Rule]:
    """Re-check each partition count's audit from the run file alone (`wisconsin audit`)."""
    return audit_run(runfile.load(path))


def audit_run(run) -> list[Rule]:
    """The invariants recomputed from the recorded sums and counts (not taken from its
    verdict), the recorded verdict against them, the independent check, then the OLTP
    rules. A run missing what its configuration asks for is incomplete: no rule passes."""
    gaps = runfile.missing(run)
    asked = ",".join(map(str, run.config.partitions))
    rules = [
        Rule(
            "run complete",
            not gaps,
            "incomplete: " + "; ".join(gaps)
            if gaps
            else f"every P of --partitions {asked} measured, each with its schedule's windows",
        ),
        rule_durability(run),
    ]
    for r in run.results:
        rules += _result_rules(r)
    rules += oltp_rules(run)  # steadiness, delivered vs offered, memory: from the series
    return mark_incomplete(rules, "run complete") if gaps else rules


def rule_durability(run) -> Rule:
    """The commit protocol recorded is the one the bench runs with."""
    d = run.config.durability
    if d == runfile.DURABILITY:
        return Rule("durability stated", True, runfile.durability_text(d))
    if d:
        return Rule("durability stated", False, f"not the setting this tool runs with: {d!r}")
    return Rule(
        "durability stated", False, "the run file does not say how commits were made durable"
    )


def _result_rules(r) -> list[Rule]:
    """One partition count's invariants, recorded verdict and independent check."""
    rec = r.audit
    names = {f.name for f in dataclasses.fields(Audit)}
    problems = Audit(**{k: getattr(rec, k) for k in names}).problems
    agree = tuple(rec.problems) == problems
    disagree = independent.disagreements(r)
    return [
        Rule(
            f"P={r.partitions} invariants",
            not problems,
            "; ".join(problems)
            or f"balances agree ({rec.account_sum:,}), no bad or half-committed rows; "
            f"{rec.acknowledged:,} acknowledged transactions all in history, "
            f"{rec.aborted:,} aborted ones absent",
        ),
        Rule(
            f"P={r.partitions} verdict matches",
            agree,
            "the recorded problems are the ones the figures imply"
            if agree
            else f"recorded {list(rec.problems)}, the figures imply {list(problems)}",
        ),
        Rule(
            f"P={r.partitions} independent check",
            not disagree,
            "; ".join(disagree) if disagree else "; ".join(rec.independent[:3]),
        ),
    ]
