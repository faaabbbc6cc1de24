"""The audit's machinery: a rule's verdict, running rules so malformed evidence fails in one
line, the text of a verdict list, and the rules every Wisconsin-schema run file shares (its
rounds re-derived from the recorded stop rule's seeds). Each workload supplies its own rules
(wisconsin.workloads.<name>.audit)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace

from wisconsin import WisconsinError
from wisconsin.analysis import schedule
from wisconsin.runfiles.facts import StopRule
from wisconsin.runfiles.runfile import Measurement, Run


@dataclass(frozen=True)
class Rule:
    name: str
    ok: bool
    detail: str
    # the figures the verdict was judged on (name -> number), for `audit --format json`
    figures: tuple[tuple[str, float], ...] = ()
    # held on an incomplete run's evidence so far: not a pass (ok is then False)
    incomplete: bool = False

    @property
    def verdict(self) -> str:
        return "incomplete" if self.incomplete else ("pass" if self.ok else "fail")


def mark_incomplete(rules: list[Rule], status_rule: str) -> list[Rule]:
    """An incomplete run's rules: what held so far, and the rule naming the status, say
    "incomplete", never PASS; a rule its evidence already breaks still fails."""
    return [
        replace(r, ok=False, incomplete=True, detail=f"incomplete run: {r.detail}")
        if r.ok
        else replace(r, incomplete=True)
        if r.name == status_rule
        else r
        for r in rules
    ]


def overall(rules: list[Rule]) -> str:
    """The audit's one word: incomplete if the run is (whatever else failed: it is no
    result), else pass if every rule passes, else fail."""
    if any(r.incomplete for r in rules):
        return "incomplete"
    return "pass" if all(r.ok for r in rules) else "fail"


def summary(bad: list[str]) -> str:
    """The first three problems, and how many more."""
    return "; ".join(bad[:3]) + (f" (+{len(bad) - 3})" if len(bad) > 3 else "")


def step_label(m: Measurement) -> str:
    return f"{m.table}/{m.query}"


def coverage(what: str, want: list[str], have: list[str]) -> list[str]:
    """What a list of step labels lacks, adds or repeats against the config's."""
    missing = [x for x in want if x not in have]
    extra = sorted({x for x in have if x not in want})
    twice = sorted({x for x in have if have.count(x) > 1})
    bad = []
    if missing:
        bad.append(
            f"{what} missing {', '.join(missing[:4])}" + (" ..." if len(missing) > 4 else "")
        )
    if extra:
        bad.append(f"{what} not in the config: {', '.join(extra[:4])}")
    if twice:
        bad.append(f"{what} measured twice: {', '.join(twice[:4])}")
    return bad


def _own_baseline(run: Run) -> bool:
    """shared-memory on F1 is its own baseline: no separate baseline steps ran."""
    return run.config.mode == "shared-memory" and any(m.table == "F1" for m in run.measurements)


def _steps(run: Run) -> list[schedule.Step]:
    """The steps every round must run: each measurement, plus the baseline's own steps
    where it ran separately (the runner's steps, from the file alone)."""
    steps = [schedule.Step(m.table, m.query) for m in run.measurements]
    if not _own_baseline(run):
        steps += [schedule.Step(m.table, m.query, True) for m in run.baseline]
    return steps


def _placed(run: Run) -> list[tuple[str, Measurement]]:
    """Every step's measurement under its round-order label (the baseline's prefixed)."""
    placed = [(step_label(m), m) for m in run.measurements]
    if not _own_baseline(run):
        placed += [(f"{schedule.BASELINE}:{step_label(m)}", m) for m in run.baseline]
    return placed


def rule_interleaved(run: Run) -> Rule:
    name = "repetitions interleaved"
    if not run.config.interleaved or not run.rounds:
        return Rule(name, False, "repetitions ran back to back (no rounds recorded)")
    order_seed = run.config.order_seed
    if order_seed is None:
        return Rule(name, False, "order seed not recorded")
    steps = _steps(run)
    labels = [s.label for s in steps]
    bad = []
    if len(set(labels)) != len(labels):
        bad.append("a (table, query) is measured twice")
    indices = [rnd.index for rnd in run.rounds]
    if len(set(indices)) != len(indices):
        bad.append(f"round indices repeat: {sorted(indices)}")
    rounds = {rnd.index: rnd for rnd in run.rounds}
    for rnd in run.rounds:
        want = schedule.round_seed(order_seed, rnd.index)
        if rnd.seed != want:
            bad.append(
                f"round {rnd.index}: seed {rnd.seed} is not the one order seed {order_seed} "
                f"gives it ({want})"
            )
        elif [s.label for s in schedule.round_order(steps, want)] != list(rnd.order):
            bad.append(
                f"round {rnd.index}: order is not the shuffle seed {want} gives the run's "
                f"{len(steps)} steps"
            )
    placed = _placed(run)
    taken: dict[tuple[int, int], tuple[int, str]] = {}
    for label, m in placed:
        seen: set[int] = set()
        for r in m.repetitions:
            where = f"{label} rep {r.index}"
            rnd = rounds.get(r.round) if r.round is not None else None
            if rnd is None or r.round == 0:
                bad.append(f"{where}: round {r.round} is not a recorded timed round")
                continue
            if r.position is None or not 0 <= r.position < len(rnd.order):
                bad.append(
                    f"{where}: position {r.position} is outside round {r.round}'s "
                    f"{len(rnd.order)} steps"
                )
                continue
            if rnd.order[r.position] != label:
                bad.append(
                    f"{where}: round {r.round} position {r.position} ran "
                    f"{rnd.order[r.position]}, not {label}"
                )
            held, other = taken.setdefault((r.round, r.position), (id(r), where))
            if held != id(r):
                bad.append(f"{where}: round {r.round} position {r.position} also holds {other}")
            if r.round in seen:
                bad.append(f"{where}: a second timed repetition of {label} in round {r.round}")
            seen.add(r.round)
    if bad:
        return Rule(name, False, summary(bad))
    timed = sum(1 for r in run.rounds if r.index > 0)
    return Rule(
        name,
        True,
        f"{timed} timed rounds, each the shuffle of all {len(steps)} steps by its seed "
        f"derived from order seed {order_seed}; every timed repetition at its own place, "
        "one per round",
    )


def _truncated(run: Run, k: int) -> list[Measurement]:
    """The measurements as the stop rule saw them after timed round k."""
    return [
        replace(m, repetitions=tuple(r for r in m.repetitions if (r.round or 0) <= k))
        for m in run.measurements
    ]


def _stop_problems(run: Run, done: int) -> list[str]:
    """The recorded stop against the stop rule re-run on the file's own times after each
    round: it must not have stopped earlier, and must stop here for the reason recorded
    (the same rule, rounds and setting: the same stop reason in words). A time budget's stop
    is checked for its round count only (elapsed time is the clock's)."""
    c, stop = run.config, run.stop
    if c.min_reps is None or c.max_reps is None or c.target_ci is None:
        return ["the stop rule's settings (--min-reps, --max-reps, --target-ci) not recorded"]
    if stop is None or stop.rounds is None:
        return [f"stop reason {run.stop_reason!r} names no round count"]
    if stop.rounds != done:
        return [f"stop reason says {stop.rounds} rounds, the file holds {done}"]

    def rule_at(k: int) -> str:
        cut = replace(run, measurements=_truncated(run, k))
        return schedule.stop_reason(
            cut.measurements,
            k,
            min_reps=c.min_reps,
            max_reps=c.max_reps,
            target_ci=c.target_ci,
            elapsed_s=0.0,
            next_round_s=0.0,
            time_budget_s=None,  # a budget only stops sooner: earlier rounds must go on
            blocks=cut.times_by_block if c.blocks else None,
            max_flag=stop.flag or "--max-reps",  # as the user typed it
        )

    per_block = c.block_rounds or 1  # the runner asks the rule at the end of a block only
    for k in range(1, done):
        if k % per_block:
            continue
        early = rule_at(k)
        if early:
            return [f"the stop rule stops after round {k} ({early}), yet {done} rounds are held"]
    if stop.rule == StopRule.TIME_BUDGET:
        return []
    again = rule_at(done)
    if again != run.stop_reason:
        return [
            f"after {done} rounds the stop rule gives {again or 'another round'!r}, the file "
            f"says {run.stop_reason!r}"
        ]
    return []


def rule_blocks(run: Run) -> Rule:
    """Blocks as recorded: each timed round's block follows from its index and the recorded
    rounds per block, and a local shared-nothing run started fresh workers before each block
    but the first (their start-up seconds in that round), and never within a block. Files
    from before blocks: one block, run-to-run variation unknown (not a failure)."""
    name = "blocks"
    c = run.config
    if not c.blocks:
        return Rule(
            name, True, "a file from before blocks: one block; run-to-run variation unknown"
        )
    k = c.block_rounds or 0
    want_k = max(1, (c.min_reps or 1) // c.blocks)
    if k != want_k:
        return Rule(
            name, False, f"{k} rounds per block recorded; --min-reps {c.min_reps} over "
            f"{c.blocks} blocks gives {want_k}",
        )  # fmt: skip
    timed = [r for r in run.rounds if r.index > 0]
    bad = [
        f"round {r.index} in block {r.block}, not {(r.index - 1) // k + 1}"
        for r in timed
        if r.block != (r.index - 1) // k + 1
    ]
    fresh = c.mode == "shared-nothing" and not c.cluster
    firsts = {r.index for r in timed if r.index > 1 and (r.index - 1) % k == 0}
    for r in timed:
        if r.index in firsts and fresh and not r.fresh_workers_s:
            bad.append(f"round {r.index} starts block {r.block} without fresh workers recorded")
        if r.index not in firsts and r.fresh_workers_s:
            bad.append(f"round {r.index} restarted the workers inside block {r.block}")
    if bad:
        return Rule(name, False, summary(bad))
    n = len({r.block for r in timed})
    how = "fresh worker processes before each" if fresh else "one set of processes throughout"
    return Rule(
        name,
        True,
        f"{n} block(s) of {k} round(s), {how}"
        + ("" if n > 1 else "; one block: run-to-run variation unknown"),
        (("blocks", float(n)),),
    )


def rule_rounds_complete(run: Run) -> Rule:
    """Every step has one timed repetition in each timed round 1..R, R the rounds the run
    says it ran, and the stop rule re-run on the file stops exactly at R: a repetition or a
    round deleted (the slowest, say) breaks it. Files from before rounds: repetitions
    1..repeat."""
    name = "rounds complete"
    finished = run.status == "complete"
    placed = (
        _placed(run) if run.config.interleaved else [(step_label(m), m) for m in run.measurements]
    )
    bad: list[str] = []
    if not run.config.interleaved:
        want = list(range(1, run.config.repeat + 1))
        for label, m in placed:
            have = sorted(r.index for r in m.repetitions)
            if have != want:
                bad.append(
                    f"{label}: repetitions {have[:6]}, the run's --repeat gives 1..{len(want)}"
                )
        if bad:
            return Rule(name, False, summary(bad))
        return Rule(
            name,
            True,
            f"every measurement holds repetitions 1..{len(want)} (--repeat {len(want)})",
            (("rounds", float(len(want))),),
        )
    timed = sorted(r.index for r in run.rounds if r.index > 0)
    done = run.config.repeat if finished else max(timed, default=0)
    if timed != list(range(1, done + 1)):
        bad.append(f"timed rounds {timed[:8]}, the run's {done} rounds are 1..{done}")
    for label, m in placed:
        rounds = sorted(r.round or 0 for r in m.repetitions)
        whole = list(range(1, done + 1))
        if rounds != whole and not (not finished and rounds == whole[:-1]):
            missing = sorted(set(whole) - set(rounds))
            bad.append(
                f"{label}: timed in rounds {rounds[:8]}"
                + (f", none in round {', '.join(map(str, missing[:4]))}" if missing else "")
            )
        elif any(r.index != r.round for r in m.repetitions):
            bad.append(f"{label}: a repetition's index is not its round")
    if finished and not bad:
        bad += _stop_problems(run, done)
    figures = (("rounds", float(done)), ("steps", float(len(placed))))
    if bad:
        return Rule(name, False, summary(bad), figures)
    partial = any(done not in {r.round for r in m.repetitions} for _, m in placed)
    whole = done - partial
    how = (
        f"the stop rule re-run on these times stops after round {done}: {run.stop_reason}"
        if finished
        else f"round {done} partial (the run stopped in it)"
        if partial
        else "then the run stopped"
    )
    return Rule(
        name,
        True,
        f"all {len(placed)} steps timed once in each of rounds 1..{whole}; {how}",
        figures,
    )


def checked(rule: Callable[[Run], Rule], run: Run, name: str) -> Rule:
    """A rule whose evidence is malformed (a position past its round, an order label that
    is not table/query, ...) fails in one line, under its name, instead of raising."""
    try:
        return rule(run)
    except (ArithmeticError, IndexError, KeyError, TypeError, ValueError, WisconsinError) as exc:
        return Rule(name, False, f"malformed evidence ({type(exc).__name__}: {exc})")


def format_rules(rules: list[Rule]) -> str:
    lines = [f"{r.verdict.upper()}  {r.name}: {r.detail}" for r in rules]
    failed = sum(r.verdict == "fail" for r in rules)
    unfinished = sum(r.incomplete for r in rules)
    lines.append(
        f"{sum(r.ok for r in rules)} of {len(rules)} rules pass"
        + (f"; {failed} FAIL" if failed else "")
        + (f"; {unfinished} INCOMPLETE (an incomplete run passes nothing)" if unfinished else "")
    )
    return "\n".join(lines) + "\n"


def rules_json(rules: list[Rule]) -> str:
    """`audit --format json`: the overall verdict and each rule's verdict and figures."""
    return (
        json.dumps(
            {
                "verdict": overall(rules),
                "rules": [
                    {
                        "rule": r.name,
                        "verdict": r.verdict,
                        "detail": r.detail,
                        "figures": dict(r.figures),
                    }
                    for r in rules
                ],
            },
            indent=1,
        )
        + "\n"
    )
