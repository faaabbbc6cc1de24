"""The audit's machinery: a rule's verdict, running rules so malformed evidence fails in one
line, the text of a verdict list, and the rules every Wisconsin-schema run file shares (its
rounds re-derived from the recorded stop rule's seeds). Each workload supplies its own rules
(wisconsin.workloads.<name>.audit)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from wisconsin import WisconsinError
from wisconsin.analysis import schedule
from wisconsin.runfiles.runfile import Measurement, Run


@dataclass(frozen=True)
class Rule:
    name: str
    ok: bool
    detail: str


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
    placed = [(step_label(m), m) for m in run.measurements]
    if not _own_baseline(run):
        placed += [(f"{schedule.BASELINE}:{step_label(m)}", m) for m in run.baseline]
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


def checked(rule: Callable[[Run], Rule], run: Run, names: Mapping) -> Rule:
    """A rule whose evidence is malformed (a position past its round, an order label that
    is not table/query, ...) fails in one line instead of raising. names: rule -> its name."""
    try:
        return rule(run)
    except (ArithmeticError, IndexError, KeyError, TypeError, ValueError, WisconsinError) as exc:
        name = names.get(rule, rule.__name__)
        return Rule(name, False, f"malformed evidence ({type(exc).__name__}: {exc})")


def format_rules(rules: list[Rule]) -> str:
    lines = [f"{'PASS' if r.ok else 'FAIL'}  {r.name}: {r.detail}" for r in rules]
    failed = sum(not r.ok for r in rules)
    lines.append(
        f"{len(rules) - failed} of {len(rules)} rules pass" + (f"; {failed} FAIL" if failed else "")
    )
    return "\n".join(lines) + "\n"
