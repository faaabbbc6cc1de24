"""Run files with one field mutated, run through the verbs that read them (issue 43).

Shared by tests/test_runfile_fuzz.py (hypothesis, a bounded budget) and
benchmarks/runfile_fuzz.py (every field, 10,000+ cases). A case is (path, mutation): the
JSON node at path is replaced by a hostile value (or deleted), the file is written, and each
verb runs in-process through click's CliRunner. What a case must never show:

- a traceback: an exception other than SystemExit escaping, or an exit code outside {0, 1, 2};
- an audit that passes what it should fail: every rule that passed on the untouched file still
  passes, and at least one of those rules' details changed (the mutation reached a rule's
  input: the audit read the hostile value and let it through).
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from wisconsin.cli import cli

DELETE = object()  # the mutation that removes the key (or list element)
SWAP = object()  # a list becomes {} and anything else []

# (name, value): every value is one a real run never records in a field of another type, or
# an absurd one in a field of its own type
MUTATIONS: tuple[tuple[str, object], ...] = (
    ("string", "x"),
    ("null", None),
    ("zero", 0),
    ("minus one", -1),
    ("NaN", math.nan),
    ("Infinity", math.inf),
    ("10**400", 10**400),
    ("1e308", 1e308),
    ("empty string", ""),
    ("huge string", "x" * 100_000),
    ("true", True),
    ("list<->dict", SWAP),
    ("empty list", []),
    ("deleted", DELETE),
)
NAMES = tuple(name for name, _ in MUTATIONS)


def paths(data, at: tuple = ()) -> list[tuple]:
    """Every node's path (keys and list indices), the root's children first."""
    out = []
    items = data.items() if isinstance(data, dict) else enumerate(data)
    for k, v in items:
        out.append((*at, k))
        if isinstance(v, dict | list):
            out.extend(paths(v, (*at, k)))
    return out


def pattern(path: tuple) -> str:
    """A path with its list indices generalised: 'measurements[].repetitions[].wall_s'."""
    return "".join(f".{p}" if isinstance(p, str) else "[]" for p in path).lstrip(".")


def show(path: tuple) -> str:
    return "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in path).lstrip(".")


def mutate(data, path: tuple, name: str):
    """A deep copy of data with the node at path mutated (None if the mutation is a no-op)."""
    value = dict(MUTATIONS)[name]
    out = copy.deepcopy(data)
    parent = out
    for p in path[:-1]:
        parent = parent[p]
    key, old = path[-1], parent[path[-1]]
    if value is DELETE:
        del parent[key]
    elif value is SWAP:
        parent[key] = {} if isinstance(old, list) else []
    else:
        if type(old) is type(value) and old == value:
            return None  # the file already holds it: nothing mutated
        parent[key] = value
    return out


@dataclass
class Outcome:
    verb: str
    exit_code: int
    traceback: str  # "" when none escaped
    output: str


def dump(data) -> str:
    # Python's writer spells NaN and Infinity as the JSON extensions its reader accepts
    return json.dumps(data)


def run_verbs(
    runner: CliRunner, path: Path, other: Path, verbs=("audit", "report", "compare", "resume")
) -> dict[str, Outcome]:
    """Each verb on the file at path (other: a distinct valid run of the same workload, the
    A side of compare). The audit runs with --format json: its rules are compared."""
    argv = {
        "audit": ["audit", "--format", "json", str(path)],
        "report": ["report", "--full", str(path)],
        "compare": ["compare", "--force", str(other), str(path)],
        "resume": ["run", "--resume", str(path)],
        "plot": ["plot", "--force", str(path)],
    }
    out = {}
    for verb in verbs:
        r = runner.invoke(cli, argv[verb])
        tb = ""
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            import traceback

            tb = "".join(traceback.format_exception(r.exception)).strip().splitlines()[-1]
        elif r.exit_code not in (0, 1, 2):
            tb = f"exit code {r.exit_code}"
        out[verb] = Outcome(verb, r.exit_code, tb, r.output)
    return out


def rules_of(audit_output: str) -> dict[str, tuple[bool, str]] | None:
    """name -> (passed, detail) from `audit --format json`; None if it printed no rules."""
    try:
        doc = json.loads(audit_output)
    except ValueError:
        return None
    rules = doc.get("rules") if isinstance(doc, dict) else None
    if not isinstance(rules, list):
        return None
    # figures (medians, counts) that differ between runs of one file are not in the detail
    return {
        r["rule"]: (r["verdict"] == "pass", _steady(r["detail"]) + json.dumps(r["figures"]))
        for r in rules
    }


def _steady(detail: str) -> str:
    return re.sub(r"\s+", " ", detail)


def verdict(outcome: Outcome) -> str:
    """The audit's verdict on a case: PASS (exit 0), FAIL (1) or refused (2: the file)."""
    return {0: "PASS", 1: "FAIL", 2: "refused"}.get(outcome.exit_code, "crash")


def passes_what_it_should_fail(base: dict, mutated: dict | None) -> list[str]:
    """The rules that passed on the untouched file and still pass, when at least one of them
    saw the mutation (its detail changed) and none of them failed: [] otherwise."""
    if mutated is None:
        return []
    held = [n for n, (ok, _) in base.items() if ok]
    if any(not mutated.get(n, (False, ""))[0] for n in held):
        return []  # a rule that passed now fails (or is gone): caught
    return [n for n in held if mutated[n][1] != base[n][1]]
