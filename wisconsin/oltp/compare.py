"""What comparing two OLTP runs (or two sets of runs) shares: a ratio of throughputs with the
interval that pairs extremes, one side's runs pooled into one interval, what else differs
between the sides (the machine first), the verdict word, and the side-by-side table in text,
markdown or JSON. A workload brings its figures (DebitCredit per P, TPC-C per type)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence

from wisconsin import WisconsinError
from wisconsin.oltp.series import Interval, as_json

FORMATS = ("text", "markdown", "json")
MACHINE = (("host", "hostname"), ("CPU", "cpu_model"), ("usable cores", "usable_cores"),
           ("DuckDB", "duckdb"), ("git commit", "git_commit"))  # fmt: skip


def ratio(base: Interval, new: Interval) -> Interval:
    """NewThroughput / OldThroughput; the interval pairs the extremes (worst and best case).
    Unset ("-") when either side is: a rate no steady step set is not a scaleup of 0."""
    if base.n == 0 or new.n == 0 or base.median <= 0 or base.low <= 0:
        return Interval(0.0, 0.0, 0.0, 0)
    n = max(base.n, new.n)  # spread on either side makes an interval
    return Interval(new.median / base.median, new.low / base.high, new.high / base.low, n)


def pooled(per_run: Sequence[Interval]) -> Interval:
    """One side's figure: a single run's own interval; several runs' median, from the lowest
    run to the highest (run-to-run spread, which a single run's interval does not show)."""
    runs = [i for i in per_run if i.n]
    if len(runs) <= 1:
        return runs[0] if runs else Interval(0.0, 0.0, 0.0, 0)
    points = [i.median for i in runs]
    return Interval(statistics.median(points), min(points), max(points), len(points))


def differences(
    env_a: Sequence[dict], env_b: Sequence[dict], facts_a: dict, facts_b: dict
) -> list[str]:
    """What else differs between the sides, the machine first: each fact whose values
    (over a side's runs) are not the same on both sides, as 'name: x in A, y in B'."""

    def values(items) -> str:
        seen = sorted({str(v) for v in items})
        return ", ".join(seen) if seen else "-"

    out = []
    for name, key in MACHINE:
        a, b = values(e.get(key) for e in env_a), values(e.get(key) for e in env_b)
        if a != b:
            out.append(f"machine {name}: {a} in A, {b} in B")
    for name in facts_a:
        a, b = values(facts_a[name]), values(facts_b.get(name, ()))
        if a != b:
            out.append(f"{name}: {a} in A, {b} in B")
    return out


def verdict_word(r: Interval) -> str:
    """B against A from the ratio's interval: only an interval clear of 1 says which."""
    if r.n == 0:
        return "nothing to compare"
    if r.low > 1.0:
        return "B higher"
    if r.high < 1.0:
        return "B lower"
    return "no difference this can tell (the interval spans 1)"


def render(title: str, head: list[str], rows: list[dict], fmt: str) -> str:
    """The header lines, then one row per figure: A, B and B/A side by side. rows: name,
    a, b, ratio (Intervals; ratio None where a ratio means nothing), digits."""
    if fmt not in FORMATS:
        raise WisconsinError(f"unknown compare format {fmt!r}")
    if fmt == "json":
        keep = ("name", "a", "b", "ratio")
        body = {"title": title, "header": head,
                "rows": [{k: as_json(r[k]) for k in keep} for r in rows]}  # fmt: skip
        return json.dumps(body, indent=1) + "\n"
    table = [["", "A", "B", "B/A"]] + [
        [r["name"], r["a"].fmt(r["digits"]), r["b"].fmt(r["digits"]),
         r["ratio"].fmt(2) if r["ratio"] is not None else ""]
        for r in rows
    ]  # fmt: skip
    if fmt == "markdown":
        out = [f"# {title}", "", *(f"- {x}" for x in head), ""]
        out += ["| " + " | ".join(table[0]) + " |", "|---|---:|---:|---:|"]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in table[1:]]) + "\n"
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    out = [title, *head, ""]
    out += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                      enumerate(zip(r, widths, strict=True))).rstrip() for r in table]  # fmt: skip
    return "\n".join(out) + "\n"
