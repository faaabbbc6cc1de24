"""Executing the run: one execution (prepare, evict or warm, time, verify, undo), one step
of a round, and the rounds until the stopping rule says enough (wisconsin.analysis.schedule).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from wisconsin import WisconsinError, interrupts, store
from wisconsin.analysis import schedule
from wisconsin.analysis.schedule import Step
from wisconsin.engines import commit
from wisconsin.engines.base import Engine, StepResult, harness_overhead
from wisconsin.measure import journal
from wisconsin.runfiles import runfile
from wisconsin.runfiles.runfile import CacheState, PartitionSample, Repetition
from wisconsin.store.expect import TableExpect

if TYPE_CHECKING:
    from wisconsin.measure.catalog import TimedQuery
    from wisconsin.measure.options import RunOptions
    from wisconsin.measure.progress import Job

Progress = Callable[[str, int, int], None]
COLD_SCAN_MIN = 0.90  # a cold full-row scan reads at least this share of its data


class ColdNotProven(WisconsinError):
    """A repetition run as cold that read (almost) nothing from storage: not a number."""


class Spent(dict):
    """Seconds by what they went to (runfile.TimeSpent's fields, without their _s)."""

    @contextlib.contextmanager
    def on(self, what: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self[what] = self.get(what, 0.0) + time.perf_counter() - t0


_NOT_COUNTED = Spent()  # what an execution outside a run's rounds spends: not kept


# --------------------------------------------------------------------------- one execution


@dataclass
class Target:
    """A table as one engine measures it, with what the run learnt about it."""

    engine: Engine
    manifest: store.Manifest
    table_dir: str
    expect: TableExpect
    data_bytes: dict[int, int] | None = None  # per partition, measured at first open


def _samples(step: StepResult, t: Target, evicted: dict | None) -> tuple[PartitionSample, ...]:
    placement = t.engine.placement
    data = t.data_bytes or {}
    out = []
    for part, u in sorted(step.units.items()):
        c = step.commit.get(part)
        whole = part < 0  # one statement over every partition (shared-memory)
        out.append(
            PartitionSample(
                part=part,
                engine_s=u.engine_s + (c.engine_s if c else 0.0),
                cpu_s=u.cpu_s + (c.cpu_s if c else 0.0),
                rows_scanned=u.rows_scanned,
                peak_rss_bytes=u.peak_rss_bytes,
                start_delay_s=max(0.0, u.start_delay_s),
                worker=placement.get(part, "") if not whole else "engine",
                bytes_read=u.bytes_read,  # a COMMIT's own reads are not measured
                projections=tuple(tuple(p) for p in u.projections),
                data_bytes=sum(data.values()) if whole and data else data.get(part),
                resident_bytes=_resident(evicted, part),
            )
        )
    return tuple(out)


def _resident(evicted: dict | None, part: int) -> int | None:
    if not evicted:
        return None
    vals = [v.get("resident_bytes") for p, v in evicted.items() if part < 0 or p == part]
    return None if not vals or any(v is None for v in vals) else sum(vals)


def check_cold(t: Target, q: TimedQuery, variant: str, rep: Repetition) -> None:
    """A cold execution must have read from storage: a full-row scan >= 90% of its data,
    any other query something (the as-written scan reads nothing by design: it is answered
    from statistics). Otherwise the measurement fails (one line)."""
    m, query, scan = t.manifest, q.name, q.scan
    if scan and variant == "as-written":
        return
    unsplit = all(s.bytes_read is None for s in rep.partitions) and rep.bytes_read is not None
    if unsplit and q.transactional:
        # units that shared one process (shared-memory update): the step's total; no other
        # step records its reads only for the whole repetition (wisconsin.workloads.wisconsin.audit agrees)
        if rep.bytes_read == 0:
            raise ColdNotProven(
                f"{m.name} {query} (round {rep.round}): a cold execution read 0 bytes"
            )
        return
    if not rep.partitions:
        raise ColdNotProven(f"{m.name} {query} (round {rep.round}): no partition recorded reads")
    for s in rep.partitions:
        where = f"{m.name} {query} (round {rep.round}, partition {s.part})"
        if s.bytes_read is None:
            raise ColdNotProven(
                f"{where}: bytes read from storage are not measurable here, so a cold read "
                "cannot be proven; use --cache warm"
            )
        if scan and variant == "full-row" and s.data_bytes:
            if s.bytes_read < COLD_SCAN_MIN * s.data_bytes:
                raise ColdNotProven(
                    f"{where}: a cold full-row scan read {s.bytes_read:,} bytes from storage, "
                    f"less than {COLD_SCAN_MIN:.0%} of its {s.data_bytes:,} data bytes: the "
                    "data was cached, the time is not a cold time"
                )
        elif s.bytes_read == 0:
            raise ColdNotProven(f"{where}: a cold execution read 0 bytes from storage")


def execute_once(
    t: Target,
    query: str,
    opts: RunOptions,
    *,
    index: int,
    cold: bool,
    profile: bool,
    spent: Spent = _NOT_COUNTED,
) -> Repetition:
    """One execution from the same starting state: prepare (untimed), time, verify, undo.
    spent: where its seconds went, added to."""
    eng, m, q = t.engine, t.manifest, opts.catalog.get(query)
    if q.writes_result:
        with spent.on("resets"):
            eng.reset_result(q.result_table)
    with spent.on("eviction"):
        evicted = eng.make_cold() if cold else None  # after the reset: it wrote to the file
    with spent.on("empty_statements"):
        overhead = harness_overhead(eng)
    stmts = {
        p: replace(s, profile=profile) for p, s in eng.statements(q, m, opts.scan_variant).items()
    }
    answer = None
    dispatched = time.time()
    if q.transactional:
        tx_update, tx_undo = (f"u{uuid.uuid4().hex[:16]}" for _ in range(2))
        undo = eng.statements(q, m, opts.scan_variant, delta=-opts.catalog.update_delta)
        # One recoverable unit: a crash anywhere in it leaves the generated table.
        with commit.update_pair(eng.table_dir, tx_update, tx_undo, undo):
            with spent.on("timed"):
                step = eng.update(tx_update, stmts)
            with spent.on("verify"):
                rows, answer = q.check(q, eng, m, t.expect, step, opts.scan_variant)
                q.check_state(eng, m, t.expect, applied=True)
            with spent.on("undo"):
                eng.update(tx_undo, undo)
        with spent.on("undo"):
            q.check_state(eng, m, t.expect, applied=False)
    else:
        with spent.on("timed"):
            step = eng.execute(stmts)
        with spent.on("verify"):
            rows, answer = q.check(q, eng, m, t.expect, step, opts.scan_variant)
    samples = _samples(step, t, evicted)
    # The update's critical path in the database: its slowest partition (update, marker,
    # COMMIT) plus the coordinator's durable commit decision; only dispatch is harness.
    share = runfile.engine_share([s.engine_s for s in samples], step.decision_s, step.wall_s)
    return Repetition(
        index=index,
        cold=cold,
        wall_s=step.wall_s,
        rows=rows,
        partitions=samples,
        answer=answer,
        verified=True,
        dispatched_unix=dispatched,
        overhead_s=overhead,
        engine_share=share,
        bytes_read=step.bytes_read,
        commit_decision_s=step.decision_s,
    )


# --------------------------------------------------------------------------- steps and rounds


def _shell(t: Target, query: str, opts: RunOptions, ram: int) -> dict:
    """A measurement without repetitions (journaled with its first execution)."""
    m, q = t.manifest, opts.catalog.get(query)
    table_bytes = sum(t.data_bytes.values()) if t.data_bytes else None
    return {
        "table": m.name,
        "kind": m.kind,
        "partitions": m.partitions,
        "rows": m.rows,
        "query": query,
        "variant": opts.scan_variant if q.scan else "",
        "expected_rows": q.expected_rows(t.expect),
        "startup_s": 0.0,
        "cache": opts.cache,
        "table_bytes": table_bytes,
        "fits_in_ram": None if table_bytes is None else table_bytes < ram,
    }


def run_step(
    t: Target,
    query: str,
    opts: RunOptions,
    round_index: int,
    position: int,
    spent: Spent = _NOT_COUNTED,
):
    """[(repetition, is_warmup)] of one step of one round, on an open table. Round 0 is the
    cold warm-up round; in warm mode the warm-ups run right before the timed execution.
    spent: where the seconds went (a warm-up's all to "warmups")."""
    cold = opts.cache == CacheState.COLD
    if t.data_bytes is None:
        with spent.on("opens"):
            t.data_bytes = t.engine.data_bytes()
    out = []
    warmups = opts.warmup if round_index == 0 else (0 if cold else max(1, opts.warmup))
    for _ in range(warmups):
        with spent.on("warmups"):
            rep = execute_once(t, query, opts, index=0, cold=cold, profile=True)
        out.append((replace(rep, round=round_index, position=position), True))
    if round_index > 0:
        # Profile scans (the proof they read everything); other timed executions run
        # unprofiled, their warm-up carries the profile.
        rep = execute_once(
            t,
            query,
            opts,
            index=round_index,
            cold=cold,
            profile=opts.catalog.get(query).scan,
            spent=spent,
        )
        out.append((replace(rep, round=round_index, position=position), False))
    if cold:
        for rep, _ in out:
            check_cold(t, opts.catalog.get(query), opts.scan_variant, rep)
    return out


@dataclass
class Loop:
    state: journal.RunState
    targets: dict[str, Target]  # step label prefix -> target ("F4", "baseline:F1")
    steps: list[Step]
    opts: RunOptions
    ram: int
    progress: Job | None  # fed each step as it starts, and the steps planned
    elapsed_before: float = 0.0
    new_block: Callable[[], float | None] | None = None  # fresh workers: their start seconds
    spent: Spent = field(default_factory=Spent)  # where the rounds' seconds went
    done: int = 0
    _fresh_s: float | None = None  # recorded with the next round (the block's first)
    _started: float | None = None  # perf_counter when loop() began
    _round_s: float = 0.0  # the last round's seconds (0: none yet)

    def expected_rounds(self, most: bool = False) -> int:
        """Timed rounds the run is expected to take: --min-reps, or once past them (the
        stopping rule asked for more) to the end of the next round's block; never more than
        --max-reps, nor than the time budget holds at the last round's pace. most: the
        rounds the stopping rule may yet ask for (--max-reps, within the budget)."""
        lo, hi = self.opts.reps
        k = self.block_rounds or 1
        n = self.timed_rounds_done()
        rounds = hi if most else min(hi, -(-max(lo, n + 1) // k) * k)  # asked at block ends
        budget = self.opts.time_budget_s
        if budget and self._round_s > 0 and self._started is not None:
            left = budget - self.elapsed_before - (time.perf_counter() - self._started)
            rounds = min(rounds, max(n + 1, n + int(max(0.0, left) / self._round_s)))
        return rounds

    def expected_total(self) -> int:
        """Steps the rounds will take (expected_rounds, and the cold warm-up round's)."""
        return len(self.steps) * (self.expected_rounds() + (self.opts.cache == CacheState.COLD))

    def _plan(self, index: int, done_here: int) -> None:
        """Tell the job the steps and fresh workers still to come, from round `index` on
        (done_here of its steps already done: a resumed round)."""
        rounds, k = self.expected_rounds(), self.block_rounds or 1
        most = max(rounds, self.expected_rounds(most=True))
        past = max(index, self.timed_rounds_done())
        later, most_later = max(0, rounds - past), max(0, most - past)
        steps = len(self.steps)
        here = max(0, steps - done_here)
        if index == 0:
            self.progress.plan("warm-up step", here)
            self.progress.plan("step", later * steps, like="warm-up step", most=most_later * steps)
        else:
            self.progress.plan("step", here + later * steps, most=here + most_later * steps)

        def fresh(last: int) -> int:
            return sum(1 for r in range(index + 1, last + 1) if r > 1 and (r - 1) % k == 0)

        self.progress.plan(
            "fresh workers",
            fresh(rounds) if self.new_block else 0,
            most=fresh(most) if self.new_block else 0,
        )

    @property
    def block_rounds(self) -> int:
        return self.state.base["config"].get("block_rounds") or 0

    def block_of(self, index: int) -> int:
        """Round index -> its block (the warm-up round 0 belongs to the first)."""
        k = self.block_rounds
        return 1 if not k or index == 0 else (index - 1) // k + 1

    def target(self, step: Step) -> Target:
        return self.targets[f"{schedule.BASELINE}:{step.table}" if step.baseline else step.table]

    def run_round(self, index: int) -> float:
        t0 = time.perf_counter()
        st = self.state
        existing = next((r for r in st.rounds if r["index"] == index), None)
        if existing is not None:  # resuming inside this round: its order is fixed
            order = [Step.parse(label) for label in existing["order"]]
        else:
            seed = schedule.round_seed(st.base["config"]["order_seed"], index)
            order = schedule.round_order(self.steps, seed)
            st.add_round(
                runfile.Round(
                    index, seed, tuple(s.label for s in order), store.utc_now(),
                    self.block_of(index), self._fresh_s,
                )
            )  # fmt: skip
            self._fresh_s = None
        done = st.done_in_round(index)
        total = max(self.expected_total(), self.done + len(self.steps))
        if self.progress:
            self._plan(index, len(done))
        current, open_s = None, 0.0
        try:
            for pos, step in enumerate(order):
                if step.label in done:
                    continue
                interrupts.check()  # a ^C discarded where it was raised (e.g. a weakref callback)
                what = "warm-up round" if index == 0 else f"round {index}"
                if self.progress:
                    kind = "warm-up step" if index == 0 else "step"
                    label = f"{self.opts.mode} {what}: {step.label}"
                    self.progress.start(kind, label, done=self.done, total=total)
                t = self.target(step)
                if t is not current:  # a table's steps are one block of the round
                    with self.spent.on("opens"):
                        if current is not None:
                            current.engine.close_table()
                            current = None
                        open_s = t.engine.open_table(t.manifest, t.table_dir)
                    current = t
                reps = run_step(t, step.query, self.opts, index, pos, self.spent)
                shell = _shell(t, step.query, self.opts, self.ram)
                for rep, warm in reps:
                    if not warm or step.label not in st.warmups:
                        st.add_rep(step.label, shell, rep, warm, open_s)
                self.done += 1
        finally:
            if current is not None:
                with self.spent.on("opens"):
                    current.engine.close_table()
        return time.perf_counter() - t0

    def timed_rounds_done(self) -> int:
        labels = {s.label for s in self.steps}
        return sum(
            1
            for r in self.state.rounds
            if r["index"] > 0 and labels <= self.state.done_in_round(r["index"])
        )

    def loop(self) -> runfile.Stop:
        """Timed rounds in whole blocks until the stopping rule, asked at block ends only
        (a block is a replicate: a part of one would weigh like a whole)."""
        o = self.opts
        lo, hi = o.reps
        k = self.block_rounds or 1
        start = self._started = time.perf_counter()
        last = 0.0
        if o.cache == CacheState.COLD and o.warmup > 0:
            last = self._round_s = self.run_round(0)
        while True:
            interrupts.check()  # before the stopping rule can call a run complete
            n = self.timed_rounds_done()
            if n % k == 0 or n >= hi:
                run = self.state.to_run()
                reason = schedule.stop_rule(
                    run.measurements,
                    n,
                    min_reps=lo,
                    max_reps=hi,
                    target_ci=o.target_ci,
                    elapsed_s=self.elapsed_before + time.perf_counter() - start,
                    next_round_s=last * k,
                    time_budget_s=o.time_budget_s,
                    blocks=run.times_by_block,
                    max_flag="--repeat" if o.repeat is not None else "--max-reps",
                )
                if reason:
                    if self.progress:  # the total expected more rounds: say it is over
                        for kind in ("warm-up step", "step", "fresh workers"):
                            self.progress.plan(kind, 0)
                        self.progress.end(f"{o.mode} rounds: done", self.done, self.done)
                    return reason
                if n > 0 and self.block_rounds and self.new_block is not None:
                    if self.progress:
                        label = f"{o.mode} block {self.block_of(n + 1)}: fresh workers"
                        total = max(self.expected_total(), self.done)
                        self.progress.start("fresh workers", label, done=self.done, total=total)
                    with self.spent.on("fresh_workers"):
                        self._fresh_s = self.new_block()
            last = self._round_s = self.run_round(n + 1)
