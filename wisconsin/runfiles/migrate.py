"""Older Wisconsin run files brought to the current schema, on load, as JSON dicts.

Schema 1 -> 2: what version 1 did not record stays None/"" (never guessed). Schema 2 -> 3:
the facts version 2 said in sentences (the durability text, the stop reason, notes on the
transport, the memory limit and the baseline) are read into fields, here and only here;
the notes themselves are kept as written, and the file says its notes state those facts
(Run.notes_say_facts), so a report does not say them twice. Schema 3 -> 4: the progress
estimate at half the job was not recorded (None). Only well-formed parts are
migrated: anything else is left for validation to name.
"""

from __future__ import annotations

import re

from wisconsin.runfiles.facts import DURABILITY_TEXT, StopRule, stop_text, transport_text

SCHEMA_1_NOTE = (
    "migrated from run-file schema 1: cache state, bytes read, scan projections, harness "
    "overhead and repetition order were not recorded (repetitions ran back to back)"
)


def migrate(data: dict) -> dict:
    """data (a run file of a readable version) as the current schema."""
    if data.get("schema_version") == 1:
        data = _v1_to_v2(data)
    if data.get("schema_version") == 2:
        data = _v2_to_v3(data)
    if data.get("schema_version") == 3:
        data = _v3_to_v4(data)
    return data


def _v3_to_v4(data: dict) -> dict:
    """Version 3 did not record the progress estimate: it stays None (not recorded)."""
    return dict(data, schema_version=4, estimate=None)


# --------------------------------------------------------------------------- 1 -> 2


def _v1_to_v2(data: dict) -> dict:
    """v1's `cold` flag marked the warm-up whatever the cache held (its data was resident),
    so it becomes False."""
    out = dict(data, schema_version=2)
    meas = data.get("measurements")
    if isinstance(meas, list):
        out["measurements"] = [_v1_cold(m) for m in meas]
    notes = data.get("notes", [])
    out["notes"] = [*(notes if isinstance(notes, list) else [notes]), SCHEMA_1_NOTE]
    return out


def _v1_cold(m):
    if not isinstance(m, dict):
        return m
    m = dict(m)
    if isinstance(m.get("warmup"), dict):
        m["warmup"] = dict(m["warmup"], cold=False)
    if isinstance(m.get("repetitions"), list):
        m["repetitions"] = [
            dict(r, cold=False) if isinstance(r, dict) else r for r in m["repetitions"]
        ]
    return m


# --------------------------------------------------------------------------- 2 -> 3

_DURABILITY_CODE = {text: code.value for code, text in DURABILITY_TEXT.items()}
_FRACTION = re.compile(r"^DuckDB memory_limit: (\d+)% of each host's RAM split ")
NO_F1 = "no single-thread baseline: F1 is not generated in "
OWN_BASELINE = "baseline: the F1 measurements themselves"


def _v2_to_v3(data: dict) -> dict:
    out = dict(data, schema_version=3, notes_say_facts=True)
    notes = data.get("notes") if isinstance(data.get("notes"), list) else []
    notes = [n for n in notes if isinstance(n, str)]
    config = data.get("config")
    if isinstance(config, dict):
        out["config"] = config = _v2_config(config, notes, data)
    if "stop_reason" in data:
        out["stop"] = _v2_stop(out.pop("stop_reason"), config)
    return out


def _v2_config(config: dict, notes: list[str], data: dict) -> dict:
    config = dict(config)
    said = config.get("durability")
    if isinstance(said, str):
        config["durability"] = _DURABILITY_CODE.get(said, said)  # other words: kept
    config.update(_transport(config, notes))
    fraction = next((m for n in notes if (m := _FRACTION.match(n))), None)
    if fraction is not None:
        config["memory_fraction"] = int(fraction.group(1)) / 100
    config["single_thread"] = _single_thread(notes, data)
    return config


def _transport(config: dict, notes: list[str]) -> dict:
    """A shared-nothing file from before `config.transport` said it in a note only: the
    transport asked for ("direct" unless the note says dask) and the one used."""
    if config.get("mode") != "shared-nothing":
        return {}
    used = next(
        (u for n in notes for u in ("direct", "dask") for a in ("direct", "dask")
         if n == transport_text(a, u)),
        "",
    )  # fmt: skip
    asked = "dask" if any(n.endswith("(--transport dask)") for n in notes) else "direct"
    return {"transport": config.get("transport", asked), "transport_used": used}


def _single_thread(notes: list[str], data: dict) -> str:
    """How the single-thread baseline ran, from the notes or the rounds' step labels."""
    if any(n.startswith(NO_F1) for n in notes):
        return "no-f1"
    if any(n.startswith(OWN_BASELINE) for n in notes):
        return "own"
    rounds = data.get("rounds") if isinstance(data.get("rounds"), list) else []
    orders = [r.get("order") for r in rounds if isinstance(r, dict)]
    labels = [x for o in orders if isinstance(o, list) for x in o if isinstance(x, str)]
    if any(x.startswith("baseline:") for x in labels) or data.get("baseline"):
        return "separate"
    return "not-asked" if labels else ""


_NUM = r"(\d+(?:\.\d+)?)"
_STOPS = (
    (StopRule.MAX_REPS, rf"max reps: (\d+) rounds \((--max-reps|--repeat) {_NUM}\)"),
    (
        StopRule.TIME_BUDGET,
        rf"time budget: (\d+) rounds in (\d+) s; another \(~(\d+) s\) would pass "
        rf"--time-budget {_NUM} s(?: \(fewer than --min-reps (\d+)\))?",
    ),
    (StopRule.MIN_REPS, rf"min reps: (\d+) rounds \(--min-reps {_NUM}\); .*"),
    (StopRule.TARGET_CI, rf"target CI met: all (\d+) headline ratios within \+-{_NUM}% after (\d+) rounds"),
    (StopRule.INTERRUPTED, r"interrupted \(\^C\)"),
    (StopRule.FAILED, r"failed: (.*)"),
)  # fmt: skip
SETTING = {
    StopRule.MAX_REPS: "max_reps",
    StopRule.TIME_BUDGET: "time_budget_s",
    StopRule.MIN_REPS: "min_reps",
    StopRule.TARGET_CI: "target_ci",
}
ROUNDS_SAID = re.compile(r"(\d+) rounds")


def _v2_stop(reason, config):
    """A stop reason's sentence as a Stop whose fields render the very same words (its
    setting as the config records it, else as the sentence says it); other words are kept
    as worded."""
    if not isinstance(reason, str):
        return reason  # validation names it
    if not reason:
        return None
    for rule, pattern in _STOPS:
        found = re.fullmatch(pattern, reason, re.S)
        if found is None:
            continue
        stop = _stop_of(rule, found.groups())
        recorded = config.get(SETTING.get(rule, "")) if isinstance(config, dict) else None
        for limit in (recorded, stop.get("limit")):
            tried = dict(stop, limit=limit) if rule in SETTING else stop
            if stop_text(_Fields(tried)) == reason:
                return tried
        break
    rounds = ROUNDS_SAID.search(reason)
    return {
        "rule": StopRule.WORDED.value,
        "rounds": int(rounds.group(1)) if rounds else None,
        "text": reason,
    }


def _stop_of(rule: StopRule, g: tuple) -> dict:
    """The fields a stop reason's words give (its setting as the words say it)."""
    rule_ = {"rule": rule.value}
    if rule == StopRule.MAX_REPS:
        return rule_ | {"rounds": int(g[0]), "flag": g[1], "limit": float(g[2])}
    if rule == StopRule.TIME_BUDGET:
        short = {"short_of": int(g[4])} if g[4] else {}
        times = {"elapsed_s": float(g[1]), "next_round_s": float(g[2])}
        return rule_ | {"rounds": int(g[0]), "limit": float(g[3])} | times | short
    if rule == StopRule.MIN_REPS:
        return rule_ | {"rounds": int(g[0]), "limit": float(g[1])}
    if rule == StopRule.TARGET_CI:
        return rule_ | {"rounds": int(g[2]), "headlines": int(g[0]), "limit": float(g[1]) / 100}
    if rule == StopRule.FAILED:
        return rule_ | {"text": g[0]}
    return rule_


class _Fields:
    """A Stop's dict read as its attributes (stop_text reads attributes)."""

    def __init__(self, d: dict):
        self.rule, self.rounds, self.limit = d["rule"], d.get("rounds"), d.get("limit")
        self.flag, self.headlines = d.get("flag", ""), d.get("headlines")
        self.elapsed_s, self.next_round_s = d.get("elapsed_s"), d.get("next_round_s")
        self.short_of, self.text = d.get("short_of"), d.get("text", "")
