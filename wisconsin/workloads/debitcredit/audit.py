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
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import duckdb

from wisconsin.analysis.audit import Rule, checked, summary
from wisconsin.sqltext import db_path
from wisconsin.workloads.debitcredit import metrics, transaction
from wisconsin.workloads.debitcredit.driver import read_records
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
    begun, acked, aborted = set(), set(), set()
    for path in sorted(Path(log_dir).glob("driver-p*.log")):
        for kind, txid in read_records(path):  # whole records only (a cut line is none)
            {"B": begun, "C": acked, "A": aborted}[kind].add(txid)
    return begun, acked, aborted


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


# OLTP rules on the run file: re-derived from its per-second series and counts, never from a
# verdict it records. workload.audit_file runs them beside the balance invariants.


def _where(s) -> str:
    return f"{s.mode} r{s.repeat}" + (f" {s.offered_tps:.1f}" if s.mode == "open" else "")


def _steps_named(result, steps) -> str:
    return ", ".join(f"{_where(s)}: {metrics.steadiness(s).why}" for s in steps)


def _retry_problems(run, attempts: dict) -> list[str]:
    """A closed window is measured again only after an unsteady one, at most
    Config.closed_retries times: no picking the best of several."""
    allowed = 1 + run.config.closed_retries
    out = []
    for rep, steps in attempts.items():
        if len(steps) > allowed:
            out.append(f"closed r{rep}: measured {len(steps)} times, the run allows {allowed}")
        for before in steps[:-1]:
            if metrics.steadiness(before).steady is not False:
                out.append(f"closed r{rep}: measured again after a window not judged unsteady")
    return out


def rule_steady(run, result) -> Rule:
    """Most closed windows (the peak's repeats, each its last attempt) are steady; a window
    measured again followed an unsteady one; the unsteady steps are named."""
    name = f"P={result.partitions} steady"
    verdicts = [(s, metrics.steadiness(s)) for s in result.steps]
    attempts = metrics.closed_attempts(result)
    steady = sum(bool(v.steady) for _, v in verdicts)
    if not attempts:
        return Rule(name, False, "no closed step measured the peak")
    retried = _retry_problems(run, attempts)
    if retried:
        return Rule(
            name, False, "closed steps measured again against the rule: " + summary(retried)
        )
    closed_bad = [s[-1] for s in attempts.values() if not metrics.steadiness(s[-1]).steady]
    if 2 * len(closed_bad) > len(attempts):  # the peak would rest on a minority of its repeats
        again = sum(len(s) - 1 for s in attempts.values())
        return Rule(
            name,
            False,
            f"{len(closed_bad)} of {len(attempts)} closed (peak) steps not steady"
            + (f" ({again} measured again)" if again else "")
            + ": "
            + _steps_named(result, closed_bad),
        )
    other = [s for s, v in verdicts if not v.steady]
    return Rule(
        name,
        True,
        f"{steady} of {len(verdicts)} steps steady (delivered tps within "
        f"{metrics.DRIFT_LIMIT:.0%} first to last third, or its noise up to "
        f"{metrics.DRIFT_CAP:.0%}; memory flat, no spill)"
        + (f"; unsteady, kept off the headline: {_steps_named(result, other)}" if other else ""),
    )


def rule_delivered(run, result) -> Rule:
    """Throughput is what committed in the window, and the headline was delivered."""
    name = f"P={result.partitions} delivered, not offered"
    bad = []
    for s in result.steps:
        where = _where(s)
        if s.duration_s <= 0 or abs(s.throughput_tps - s.in_window / s.duration_s) > 1e-6:
            bad.append(
                f"{where}: tps {s.throughput_tps:.1f} is not {s.in_window} committed "
                f"in {s.duration_s:g} s"
            )
        if s.tps_series:
            widths = [min(1.0, s.duration_s - i) for i in range(len(s.tps_series))]
            counted = sum(t * w for t, w in zip(s.tps_series, widths, strict=True))
            if abs(counted - s.in_window) > 0.5:
                bad.append(
                    f"{where}: the per-second series add up to {counted:.0f}, "
                    f"not {s.in_window} committed"
                )
    cfg = run.config
    short = 1 - metrics.DELIVERY_SHORTFALL
    for s in metrics.headline_steps(result, cfg.rule_share, cfg.rule_limit_s).values():
        offered = s.arrivals / s.duration_s if s.duration_s > 0 else 0.0
        if not metrics.steadiness(s).steady:
            bad.append(f"{_where(s)}: sets the rule's tps but is not steady")
        if s.mode == "open" and s.throughput_tps < short * offered:
            bad.append(
                f"{_where(s)}: sets the rule's tps with {s.throughput_tps:.1f} delivered "
                f"of {offered:.1f} offered (< {short:.0%})"
            )
    if bad:
        return Rule(name, False, summary(bad))
    rule = metrics.rule_tps(result, cfg.rule_share, cfg.rule_limit_s)
    return Rule(
        name,
        True,
        f"every step's tps is its commits in the window; tps by the rule {rule.fmt()} "
        + (
            "delivered by steady steps" if rule.n else "(no steady step met the rule: none printed)"
        ),
    )


REMOTE_SIGMAS = 4.0  # the distributed share may differ from its expectation by this much


def rule_remote(run, result) -> Rule:
    """The tables hold the distributed share the sizing implies: each transaction picks
    another branch with probability 15%, remote when that branch lives on another partition
    (metrics.expected_remote); history's share is binomial about it, within 4 sigma. A driver
    that kept its transactions local, or a run file whose sizing is not its tables', fails."""
    name = f"P={result.partitions} remote share"
    expected = metrics.expected_remote(run.config.sizing, result.partitions)
    rows, distributed = result.audit.history_rows, result.audit.distributed_rows
    if rows <= 0:
        return Rule(name, False, "no transaction in history: the share cannot be judged")
    observed = distributed / rows
    allowed = REMOTE_SIGMAS * math.sqrt(expected * (1 - expected) / rows)
    steps = sum(s.distributed for s in result.steps)
    detail = (
        f"{observed:.2%} of {rows:,} history rows distributed, {expected:.2%} expected "
        f"(+-{allowed:.2%}, {REMOTE_SIGMAS:g} sigma)"
    )
    if steps > distributed:
        return Rule(name, False, f"the steps count {steps:,} distributed, history {distributed:,}")
    return Rule(name, abs(observed - expected) <= allowed, detail)


def rule_memory(run, result) -> Rule:
    """No partition's engine memory kept growing in a step, and nothing spilled."""
    name = f"P={result.partitions} engine memory and spill"
    unrecorded = [s for s in result.steps if not s.memory_bytes]
    if unrecorded:
        return Rule(
            name,
            False,
            f"engine memory not recorded in {len(unrecorded)} of {len(result.steps)} steps",
        )
    # one sampled series per partition, none empty, the three of a step sampled together
    shape = [[len(x) for x in s.memory_bytes] for s in result.steps]
    bad = [
        f"{_where(s)}: memory series of lengths {n}, not one non-empty per partition like "
        "its transaction-memory and temp-file series"
        for s, n in zip(result.steps, shape, strict=True)
        if len(n) != result.partitions
        or 0 in n
        or any(k and [len(x) for x in k] != n for k in (s.txn_memory_bytes, s.temp_bytes))
    ]
    if bad:
        return Rule(name, False, summary(bad))
    most, top = 0, 0
    for s in result.steps:
        v = metrics.steadiness(s)
        where = _where(s)
        if v.memory_growth > v.memory_allowed:
            bad.append(f"{where}: memory grew {v.memory_growth / 2**20:.0f} MB")
        if v.spilled > 0:
            bad.append(f"{where}: spilled {v.spilled / 2**20:.1f} MB to temp files")
        most = max(most, v.memory_growth)
        top = max([top, *(max(m, default=0) for m in s.memory_bytes)])
    if bad:
        return Rule(name, False, summary(bad))
    return Rule(
        name,
        True,
        f"engine memory at most {top / 2**20:.0f} MB, growth within a step at most "
        f"{most / 2**20:+.0f} MB; no temp files",
    )


# Bytes on disk an account row takes at least with the varying filler (measured 55 bytes:
# 1,000,000 accounts in 55 MB); a constant filler compressed to about 10.
MIN_DISK_BYTES_PER_ACCOUNT = 40


def rule_scale(run, result) -> Rule:
    """The scale label holds: the recorded database is the one its sizing makes (branches,
    tellers, accounts re-derived), and its bytes on disk are those of that many rows."""
    name = f"P={result.partitions} scale label"
    s, P = run.config.sizing, result.partitions
    want = (s.branches(P), s.tellers(P), s.accounts(P))
    have = (result.branches, result.tellers, result.accounts)
    if have != want:
        return Rule(
            name,
            False,
            f"recorded branches/tellers/accounts {have} are not the sizing's {want}: the label "
            "would rest on a database that was not built",
        )
    if result.db_bytes is not None and result.db_bytes < MIN_DISK_BYTES_PER_ACCOUNT * want[2]:
        return Rule(
            name,
            False,
            f"{result.db_bytes:,} bytes on disk for {want[2]:,} accounts: under "
            f"{MIN_DISK_BYTES_PER_ACCOUNT} bytes an account, not rows of the standard's size",
        )
    scaled, verdict = metrics.scaled_verdict(run, result)
    return Rule(name, True, verdict)


def rule_pinned(run, result) -> Rule:
    """Processors as Tandem counted them: at P up to the machine's usable cores (re-derived
    from the run's environment) each partition ran on a core of its own; beyond them the
    point is oversubscribed and must say so."""
    name = f"P={result.partitions} pinned"
    parts, cores = result.partitions, run.environment.get("usable_cores")
    if not isinstance(cores, int) or cores < 1:
        return Rule(name, False, "usable cores not recorded: pinning cannot be judged")
    if parts > cores:
        if not result.oversubscribed or result.pinned_cores:
            return Rule(name, False, f"P={parts} > {cores} cores must be oversubscribed, unpinned")
        return Rule(name, True, f"P={parts} > {cores} cores: oversubscribed, not pinned")
    pins = result.pinned_cores
    if len(pins) != parts or len(set(pins)) != parts:
        return Rule(
            name,
            False,
            f"P={parts} <= {cores} cores but partitions pinned to {list(pins) or 'none'}: "
            "the scaleup would not measure added processors",
        )
    return Rule(name, True, f"partition p on core {list(pins)} (one core each)")


def oltp_rules(run) -> list[Rule]:
    """Steadiness, delivered vs offered, memory and spill, the remote share, the scale label
    and the pinning, per partition count; a rule whose evidence is malformed fails in one
    line."""
    out = []
    for result in run.results:
        for rule in (
            rule_steady, rule_delivered, rule_memory, rule_remote, rule_scale, rule_pinned
        ):  # fmt: skip
            one = functools.partial(rule, run, result)

            def wrapped(_run, one=one):
                return one()

            label = f"P={result.partitions} {rule.__name__.removeprefix('rule_')}"
            out.append(checked(wrapped, run, label))
    return out
