"""CPU of an OLTP step, split by what it served: local transactions, the home side of the
distributed ones, and the remote halves a partition serves for the others.

A partition server is one process whose terminals and peer sessions are threads, and its
DuckDB runs each statement on the calling thread (threads = 1): so a thread's CPU clock
(time.thread_time) read around one transaction, or one peer message, is that work's CPU,
and the process's clock (time.process_time, the step's cpu_s) is the total it must fit in.
What no transaction is charged (the engine sampler, open mode's arrival thread, failed
transactions, a Delivery queued to its worker, the interpreter) stays unattributed.

Extra CPU per remote half, per transaction type k with local and distributed commits:
(home CPU of k's distributed ones - k's CPU per local one x their number) / the halves
they decided, plus the serving partitions' CPU per remote half. A DebitCredit distributed
transaction moves the account update to the remote side, so the sum is what distributing
adds: the messages, the marker row, the second transaction.
"""

from __future__ import annotations

import math
import statistics
import threading
import time

from wisconsin.oltp import twophase
from wisconsin.oltp.runfile import CpuFigure, KindCpu, PartitionCpu, RemoteCpu

# A partition-step enters the spread only with this many of each (fewer: noise, not CPU).
MIN_LOCAL = 10
MIN_HALVES = 5
# The thread clocks and the process clock are read at different instants: a transaction
# or a peer message running when the step starts is charged whole to it. The audit allows
# this much over the process's total before it calls the split broken.
OVER_SHARE = 0.02
OVER_S = 0.010
# A recorded summary and its re-derivation agree to rounding (JSON keeps 17 digits).
REL = 1e-9


class Account:
    """A partition's running CPU sums, charged by its threads (one lock: a charge is rare
    beside a transaction's own work)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._kinds: dict[str, list] = {}  # kind -> [local_s, local, home_s, dist, sent]
        self._halves = [0.0, 0]

    def transaction(self, kind: str, seconds: float, distributed: bool, sent: int) -> None:
        with self._lock:
            k = self._kinds.setdefault(kind, [0.0, 0, 0.0, 0, 0])
            if distributed:
                k[2] += seconds
                k[3] += 1
                k[4] += sent
            else:
                k[0] += seconds
                k[1] += 1

    def half(self, seconds: float, committed: bool) -> None:
        with self._lock:
            self._halves[0] += seconds
            self._halves[1] += committed

    def snapshot(self) -> tuple[dict, list]:
        with self._lock:
            return {k: list(v) for k, v in self._kinds.items()}, list(self._halves)


def step_record(before, after, total_s: float) -> dict:
    """The step's figures (two snapshots apart) as the JSON of one PartitionCpu."""
    (k0, h0), (k1, h1) = before, after
    kinds = []
    for kind, v in sorted(k1.items()):
        b = k0.get(kind, [0.0, 0, 0.0, 0, 0])
        d = [max(0, x - y) for x, y in zip(v, b, strict=True)]
        kinds.append(
            dict(
                zip(("local_s", "local", "home_s", "distributed", "sent"), d, strict=True),
                kind=kind,
            )
        )
    return {
        "total_s": total_s,
        "kinds": kinds,
        "halves_s": max(0.0, h1[0] - h0[0]),
        "halves": max(0, h1[1] - h0[1]),
    }


def begin() -> float:
    """A transaction starts on this thread: its CPU clock now, the halves counted afresh (a
    failed transaction's decided halves are not the next one's)."""
    twophase.take_sent()
    return time.thread_time()


def charged(node, kind: str, since: float, distributed: bool) -> None:
    """Charge this thread's CPU since `since` (begin()) to one committed
    transaction of `kind`, with the remote halves it decided (twophase.take_sent)."""
    sent = twophase.take_sent()
    account = getattr(node, "cpu", None)
    if account is not None:  # a test's bare node has none
        account.transaction(kind, time.thread_time() - since, distributed, sent)


def record(d: dict) -> PartitionCpu:
    return PartitionCpu(
        total_s=d["total_s"],
        kinds=tuple(KindCpu(**k) for k in d["kinds"]),
        halves_s=d["halves_s"],
        halves=d["halves"],
    )


# --------------------------------------------------------------------------- derivation


def _sum(parts: list[PartitionCpu]) -> PartitionCpu:
    """Several partition-steps pooled into one (their sums, kind by kind)."""
    kinds: dict[str, list] = {}
    for p in parts:
        for k in p.kinds:
            v = kinds.setdefault(k.kind, [0.0, 0, 0.0, 0, 0])
            for i, x in enumerate((k.local_s, k.local, k.home_s, k.distributed, k.sent)):
                v[i] += x
    return PartitionCpu(
        total_s=sum(p.total_s for p in parts),
        kinds=tuple(KindCpu(kind, *v) for kind, v in sorted(kinds.items())),
        halves_s=sum(p.halves_s for p in parts),
        halves=sum(p.halves for p in parts),
    )


def attributed(p: PartitionCpu) -> float:
    return sum(k.local_s + k.home_s for k in p.kinds) + p.halves_s


def local_per(p: PartitionCpu, minimum: int = 1) -> float | None:
    n = sum(k.local for k in p.kinds)
    return sum(k.local_s for k in p.kinds) / n if n >= max(1, minimum) else None


def extra_per_half(p: PartitionCpu, minimum: int = 1) -> float | None:
    """Extra CPU per remote half (module docstring); None without enough halves on both
    sides, or a type distributed but never local (nothing to take its extra from)."""
    sent = sum(k.sent for k in p.kinds)
    if sent < max(1, minimum) or p.halves < max(1, minimum):
        return None
    home = 0.0
    for k in p.kinds:
        if not k.distributed:
            continue
        if not k.local:
            return None
        home += k.home_s - k.local_s / k.local * k.distributed
    return home / sent + p.halves_s / p.halves


def _figure(values: list[float]) -> CpuFigure | None:
    if not values:
        return None
    return CpuFigure(statistics.median(values), min(values), max(values), len(values))


def summary(steps: list[tuple[PartitionCpu, ...]]) -> RemoteCpu | None:
    """A P's figures from its steps' records (None: none recorded)."""
    parts = [p for step in steps for p in step]
    if not parts:
        return None
    pooled = _sum(parts)
    locals_ = [v for p in parts if (v := local_per(p, MIN_LOCAL)) is not None]
    extras = [v for p in parts if (v := extra_per_half(p, MIN_HALVES)) is not None]
    return RemoteCpu(
        local_s=local_per(pooled),
        extra_s=extra_per_half(pooled),
        local_spread=_figure(locals_),
        extra_spread=_figure(extras),
        halves=pooled.halves,
        attributed_s=attributed(pooled),
        total_s=pooled.total_s,
    )


# --------------------------------------------------------------------------- audit


def allowed(total_s: float) -> float:
    """The most CPU that may be charged against a process total (OVER_SHARE, OVER_S)."""
    return total_s * (1 + OVER_SHARE) + OVER_S


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, CpuFigure):
        return a.n == b.n and all(
            _same(getattr(a, f), getattr(b, f)) for f in ("median", "low", "high")
        )
    return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)


def problems(steps: list[tuple[PartitionCpu, ...]], recorded: RemoteCpu | None) -> list[str]:
    """What breaks the CPU split of a P's steps ([]: it holds): a partition-step charged
    more than its process spent; a recorded summary its steps do not re-derive; extra CPU
    per remote half times the halves beyond the processes' total."""
    out = []
    for i, step in enumerate(steps):
        for p, part in enumerate(step):
            got = attributed(part)
            if got > allowed(part.total_s):
                out.append(
                    f"step {i + 1} partition {p}: {got * 1e3:.1f} ms charged to transactions "
                    f"and halves, its process spent {part.total_s * 1e3:.1f} ms "
                    f"(allowed {allowed(part.total_s) * 1e3:.1f})"
                )
    derived = summary(steps)
    if (derived is None) != (recorded is None):
        out.append(
            "the CPU summary is " + ("missing" if recorded is None else "recorded without steps")
        )
    elif recorded is not None:
        bad = [
            f for f in ("local_s", "extra_s", "local_spread", "extra_spread", "halves",
                        "attributed_s", "total_s")
            if not _same(getattr(recorded, f), getattr(derived, f))
        ]  # fmt: skip
        if bad:
            out.append(f"the recorded CPU summary's {', '.join(bad)} not what its steps give")
        if recorded.extra_s is not None and recorded.extra_s * recorded.halves > allowed(
            recorded.total_s
        ):
            out.append(
                f"extra CPU per remote half {recorded.extra_s * 1e3:.3f} ms x "
                f"{recorded.halves} halves is past the processes' "
                f"{recorded.total_s:.3f} s"
            )
    return out


def line(r: RemoteCpu | None) -> str:
    """The report's line: CPU per local transaction and extra CPU per remote half, in ms."""
    if r is None:
        return "CPU per transaction: not recorded (a run file from before the split)"

    def ms(v, spread) -> str:
        if v is None:
            return "-"
        text = f"{v * 1e3:.3f} ms"
        if spread is not None and spread.n > 1:
            text += f" (range {spread.low * 1e3:.3f} to {spread.high * 1e3:.3f} over {spread.n})"
        return text

    share = r.attributed_s / r.total_s if r.total_s else 0.0
    return (
        f"CPU per local transaction {ms(r.local_s, r.local_spread)}; extra CPU per remote "
        f"half {ms(r.extra_s, r.extra_spread)} ({r.halves:,} halves); "
        f"{share:.0%} of the servers' CPU charged (ranges over partition-steps)"
    )


def rule(name: str, steps: list[tuple[PartitionCpu, ...]], recorded, extra: list[str] = ()):
    """The audit's rule on a CPU split (problems(), then a workload's own: extra); a run
    file from before the split passes, saying so."""
    from wisconsin.analysis.audit import Rule
    from wisconsin.analysis.audit import summary as first_few

    if not any(steps) and recorded is None:
        return Rule(name, True, "not recorded (a run file from before the CPU split)")
    bad = problems(steps, recorded) + list(extra)
    if bad:
        return Rule(name, False, first_few(bad))
    figures = () if recorded is None else (
        ("local_ms", (recorded.local_s or 0.0) * 1e3),
        ("extra_per_half_ms", (recorded.extra_s or 0.0) * 1e3),
        ("charged_share", recorded.attributed_s / recorded.total_s if recorded.total_s else 0.0),
    )  # fmt: skip
    return Rule(name, True, line(recorded), figures)
